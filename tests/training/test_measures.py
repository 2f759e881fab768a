"""The memory probe closes what it opens: under ``PYTHONWARNINGS=error`` an unclosed /proc/self/statm
printed "Exception ignored ... ResourceWarning: unclosed file" twice per run (hostile E39)."""

from __future__ import annotations

import gc
import warnings

import torch

from normbench.training.measures import PeakMemory


def test_sampling_the_memory_leaves_no_file_open():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        probe = PeakMemory(torch.device("cpu"))
        probe.sample()
        peak, what = probe.peak()
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert peak > 0 and what == "process_rss_sampled"
