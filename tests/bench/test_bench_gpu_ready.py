"""The kernel benchmark's GPU figures: datasheet peaks by device name, tensors sized past L2, the compiled RMSNorm in the grid."""

import torch

from normbench.bench import kernels


def test_datasheet_peak_by_device_name():
    assert kernels.datasheet_peak_gbps("NVIDIA H200") == 4800
    assert kernels.datasheet_peak_gbps("NVIDIA H100 80GB HBM3") == 3350
    assert kernels.datasheet_peak_gbps("NVIDIA H100 PCIe") == 2000
    assert kernels.datasheet_peak_gbps("NVIDIA A100-SXM4-80GB") == 2039
    assert kernels.datasheet_peak_gbps("Intel(R) Xeon(R) Processor") is None


def test_cpu_grid_keeps_its_size_and_no_peak():
    assert kernels.target_bytes_for(torch.device("cpu")) == (kernels.TARGET_BYTES, None)


def test_compiled_rmsnorm_is_a_candidate_only_for_rms():
    rows = kernels.measure_shape(32, 64, "fp32", torch.device("cpu"), kinds=("ln", "rms"),
                                 impls=("native", "compiled"), repeats=1, min_loop_s=1e-4)
    impls = {(r["kind"], r["impl"]) for r in rows if r["pass"] == "fwd+bwd"}
    assert ("rms", "compiled") in impls and ("ln", "compiled") not in impls
    best = kernels.best_ratios(rows, "cmd")
    assert best and best[0].value > 0 and "best against best" in best[0].note
