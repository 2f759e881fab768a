"""Bad input is refused up front in one line with exit status 2, and error lines are safe to print.

Tables: extreme values for every float setting, tune and bench arguments, error lines carrying
secrets, long values and control characters; and compare's rule that a run failing in both sets is
not a regression.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from normbench.bench import __main__ as bench
from normbench.configuration.config import to_config
from normbench.studies import compare, tune
from normbench.studies.app import message_text
from tests.waiting import HANG_S  # waits end on a hang, never on a slow machine

_spec = importlib.util.spec_from_file_location("record_factory", Path(__file__).parent / "report" / "conftest.py")
factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(factory)

EXTREME = ["1e308", "-1e308", "inf", "-inf", "nan", "3.5e38"]
FLOAT_KEYS = ["lr", "norm.eps", "norm.gamma_init", "norm.alpha_init", "grad_clip", "optim.weight_decay",
              "optim.norm_weight_decay", "task.target"]


@pytest.mark.parametrize("value", EXTREME)
@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_extreme_floats_are_refused_naming_the_key(compose, key, value):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        to_config(compose(f"{key}={value}"))


def test_float32_extremes_that_fit_pass(compose):
    to_config(compose("norm.gamma_init=3e38", "lr=1e30"))


# (key, value): a positive setting that is 0 once float32 holds it (below half of 2**-149)
ZERO_IN_FLOAT32 = [("lr", "1e-46"), ("norm.eps", "1e-50"), ("grad_clip", "1e-50"), ("norm.eps", "7e-46"),
                   ("norm.eps", "1e-320")]


@pytest.mark.parametrize(("key", "value"), ZERO_IN_FLOAT32)
def test_a_positive_setting_that_rounds_to_0_in_float32_is_refused(compose, key, value):
    with pytest.raises(ValueError, match=rf"{key.replace('.', '[.]')} must be > 0 in float32"):
        to_config(compose(f"{key}={value}"))


def test_the_smallest_positive_float32_values_pass(compose):
    to_config(compose("lr=1e-45", "norm.eps=1.5e-45", "grad_clip=8e-46"))


@pytest.mark.parametrize("args", [
    ["lr=1e308"], ["norm.gamma_init=1e308"], ["norm.eps=1e300"], ["logger=tensorboard", "logger.tensorboard.dir=../../x"],
    ["logger=csv", "logger.csv.file=/tmp/x"], ["logger=mlflow", "logger.mlflow.dir=metrics.jsonl"], ["model.layers=1000000000"],
])
def test_refused_runs_exit_2_in_one_line(cli, tiny_args, args):
    code, out, err = cli(*tiny_args, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def assert_refused(main, argv, tmp_path, capsys):
    """``main(argv)`` (``{file}`` naming an existing file) exits 2, without a traceback."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as exit_:
        main([a.format(file=tmp_path / "file") for a in argv])
    assert exit_.value.code == 2 and "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["--evaluation-seeds", "a,b"], ["--evaluation-seeds", "-1"], ["--evaluation-seeds", ","],
    ["--evaluation-seeds", "1" * 30], ["--out", "{file}"], ["--out", "a\\b"],
])
def test_tune_arguments_are_checked_before_anything_runs(argv, tmp_path, capsys):
    assert_refused(tune.main, argv, tmp_path, capsys)


@pytest.mark.parametrize("path", ["/tmp/a,b", "/tmp/${oc.env:HOME}/x", "/tmp/it's", "/tmp/[x]", "/tmp/a=b"])
def test_tune_out_reaches_hydra_as_one_literal_string(path):
    override = OverridesParser.create().parse_override(f"hydra.sweep.dir={tune.hydra_quoted(path)}")
    assert not override.is_sweep_override()
    resolved = OmegaConf.to_container(OmegaConf.create({"x": override.value()}), resolve=True)["x"]
    assert resolved == path


@pytest.mark.parametrize("argv", [
    ["kernels", "--dtypes", "fp64"], ["kernels", "--repeats", "0"], ["kernels", "--hidden", "0"],
    ["kernels", "--hidden", "-4"], ["kernels", "--kinds", "nope"], ["kernels", "--threads", "-1"],
    ["cells", "--batch", "0"], ["cells", "--length", "-1"], ["cells", "--hidden", "x"], ["cells", "--family", "cnn"],
    ["cells", "--candidates", "magic"], ["cells", "--norm", "foo"], ["harness", "--steps", "0"],
    ["harness", "--trials", "0"], ["harness", "--probe-every", "-1"], ["sweep", "--runs", "0"], ["sweep", "--jobs", "-2"],
    ["kernels", "--out", "{file}"], ["all", "--repeats", "0"],
])
def test_bench_arguments_are_checked_before_anything_runs(argv, tmp_path, capsys):
    assert_refused(bench.main, argv, tmp_path, capsys)


MESSAGES = [
    ("Value 'hunter2-secret' could not be converted", ["hunter2-secret"], "hunter2-secret"),
    ("x" * 10_000, [], "x" * 200),
    ("a\u202eb\x1b[31mred\x00", [], "\u202e"),
    ("two\nlines\r\nhere", [], "\n"),
]


@pytest.mark.parametrize(("raw", "secrets", "absent"), MESSAGES)
def test_error_lines_are_bounded_one_line_and_never_show_a_secret(raw, secrets, absent):
    line = message_text(raw, secrets)
    assert absent not in line and "\n" not in line and len(line) <= 400
    assert line.isprintable()


def test_a_secret_from_the_environment_is_not_echoed(cli, tiny_args, monkeypatch):
    monkeypatch.setenv("NORMBENCH_TEST_SECRET", "s3cr3t-value")
    for override in ("lr=${oc.env:NORMBENCH_TEST_SECRET}", "norm=${oc.env:NORMBENCH_TEST_SECRET}",
                     "task.name=${oc.env:NORMBENCH_TEST_SECRET}"):
        code, out, err = cli(*tiny_args, override)
        assert code == 2 and "s3cr3t-value" not in err + out and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("override", ["norm=\uff4c\uff4e", "lr=\u202e1", "model=\U0001F600"])
def test_odd_unicode_is_one_line(cli, tiny_args, override):
    code, out, err = cli(*tiny_args, override)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_hydra_help_into_a_closed_pipe_is_quiet(tmp_path):
    done = subprocess.run(f"{sys.executable} -m normbench --hydra-help | head -1", shell=True, capture_output=True,
                          text=True, cwd=tmp_path, timeout=HANG_S,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() and done.stderr == ""


def test_a_run_failed_in_both_sets_fails_the_gate(tmp_path, capsys):
    # P141 (issue 50): a run that failed in both sets has no metric on either side; the gate cannot vouch
    # for it, even compared with itself
    for name in ("a", "b"):
        factory.write_record(tmp_path / name, "ok", seed=0)
        factory.write_record(tmp_path / name, "crash", seed=1, status="failed")
        factory.write_record(tmp_path / name, "dead", seed=2, status="interrupted")
    for new in ("a", "b"):
        assert compare.main([str(tmp_path / "a"), str(tmp_path / new)]) == 1
        out = capsys.readouterr().out
        assert "baseline record status failed (seed 1)" in out and "new record status interrupted (seed 2)" in out
    factory.write_record(tmp_path / "c", "ok", seed=0, status="failed")  # finished in a, failed in c
    factory.write_record(tmp_path / "c", "crash", seed=1, status="failed")
    factory.write_record(tmp_path / "c", "dead", seed=2, status="interrupted")
    assert compare.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert "new record status failed (seeds 0, 1)" in capsys.readouterr().out


SECRET = "s3cr3t-value"
# name -> (overrides of a one-job sweep, its user sweep file or None): the job is invalid, and no
# line printed may show the secret or be longer than about 2000 characters
SWEEP_LINES = {
    "secret_in_an_override": (["optim.name=${oc.env:NORMBENCH_TEST_SECRET}"], None),
    "secret_in_a_sweep_file": (["+sweep=mine"], "# @package _global_\noptim:\n  name: ${oc.env:NORMBENCH_TEST_SECRET}\n"),
    "long_value": ([f"norm.kind={'x' * 100_000}"], None),
    "two_mb_value": ([f"norm.kind={'x' * 2_000_000}"], None),  # Hydra takes ~25 s to parse it: slow
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "two_mb_value" else c
                                  for c in SWEEP_LINES])
def test_a_sweeps_invalid_run_line_is_masked_and_bounded(cli, tmp_path, monkeypatch, tiny_args, case):
    overrides, sweep_file = SWEEP_LINES[case]
    monkeypatch.setenv("NORMBENCH_TEST_SECRET", SECRET)
    if sweep_file is not None:
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "mine.yaml").write_text(sweep_file)
        monkeypatch.setenv("NORMBENCH_SWEEPS", str(tmp_path / "mine"))
    code, out, err = cli("-m", *tiny_args, *overrides, "seed=0", "hydra.sweep.dir=sw", "report=false")
    assert code == 2, err[-2000:]  # its one job invalid: nothing ran, the sweep's settings are bad input (M02)
    lines = (out + err).splitlines()
    assert any("invalid |" in line for line in lines), err[-2000:]
    assert SECRET not in out + err and max(map(len, lines)) <= 2100
    reason = json.loads(next((tmp_path / "sw").rglob("summary.json")).read_text())["reason"]
    assert len(reason) < 300
