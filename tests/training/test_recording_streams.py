"""A run whose standard streams are closed still trains (hostile E06: `normbench ... 2>&-` ended in
"'NoneType' object has no attribute 'isatty'" and a failed record)."""

from types import SimpleNamespace

from normbench.training import recording


def test_the_progress_bar_is_off_when_stderr_is_closed(monkeypatch):
    monkeypatch.setattr(recording.sys, "stderr", None)
    bar = recording.ProgressBar(SimpleNamespace(steps=10, progress=True), SimpleNamespace(metric="accuracy"))
    assert bar.bar is None
