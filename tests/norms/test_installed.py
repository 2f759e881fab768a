"""The normbench.norms entry points of installed packages: a package's mistake is left out in one line
naming it, and never stops normbench (normbench/norms/installed.py)."""

import os
import subprocess
import sys
from pathlib import Path

from normbench.norms import installed
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def _distribution(site: Path, name: str, entry_points: bytes | None = None) -> Path:
    """A dist-info as pip leaves it; entry_points.txt with the given bytes (none: the caller makes it)."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_bytes(entry_points)
    return info


def test_a_name_two_packages_declare_is_neither_and_the_others_stay(tmp_path, monkeypatch, capsys):
    _distribution(tmp_path, "one", b"[normbench.norms]\ntwin = goodmod:C\nsolo = goodmod:S\n")
    _distribution(tmp_path, "two", b"[normbench.norms]\ntwin = goodmod2:C\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert installed.usable({}) == [("solo", "entry:goodmod:S")]
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "twin" in line and "one-1.0.dist-info" in line and "two-1.0.dist-info" in line


def test_the_same_declaration_twice_is_one_norm(tmp_path, monkeypatch, capsys):
    _distribution(tmp_path / "a", "one", b"[normbench.norms]\ntwin = goodmod:C\n")
    _distribution(tmp_path / "b", "other", b"[normbench.norms]\ntwin = goodmod:C\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "a"), str(tmp_path / "b")])
    assert installed.usable({}) == [("twin", "entry:goodmod:C")]
    assert capsys.readouterr().err == ""


def test_a_non_utf8_entry_points_file_is_named_and_skipped(tmp_path, monkeypatch, capsys):
    broken = _distribution(tmp_path, "broken", b"[normbench.norms]\nbad = \xe7\xff:C\n")
    _distribution(tmp_path, "good", b"[normbench.norms]\ngood = goodmod:C\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.delenv("TORCH_DEVICE_BACKEND_AUTOLOAD", raising=False)
    assert installed.usable({}) == [("good", "entry:goodmod:C")]
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and str(broken / "entry_points.txt") in line and "UTF-8" in line
    assert os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0"  # torch's own read would fail on it


def test_a_fifo_entry_points_file_neither_hangs_normbench_nor_torch(tmp_path):
    fifo = _distribution(tmp_path, "piped") / "entry_points.txt"
    os.mkfifo(fifo)
    _distribution(tmp_path, "good", b"[normbench.norms]\ngood = goodmod:C\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    done = subprocess.run([sys.executable, "-c", "import normbench.norms.kinds as k, torch; print(k.kind_names())"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert "'good'" in done.stdout
    assert done.stderr.count("\n") == 1 and f"{fifo}: not a regular file" in done.stderr
