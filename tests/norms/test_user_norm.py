"""Your own norm: register_norm in a script, and the normbench.norms entry point group in every process."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import normbench
from normbench.checks import ConfigError
from normbench.norms import build_norm, kinds, norm_parameters, user
from tests.conftest import registered_norm
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
TINY = ["task=adding", "task.length=6", "task.n_train=64", "task.n_val=32", "task.n_test=32", "steps=6",
        "batch_size=16", "eval_every=3", "log_every=1", "probe_every=3", "timing_warmup=1", "model.hidden=8",
        "model.embed=8", "model.heads=2", "threads=1"]


class ToyNorm(nn.Module):
    """x / RMS(x) times a learned gain: a toy built as cls(dim)."""

    def __init__(self, dim):
        super().__init__()
        self.gain = nn.Parameter(torch.full((dim,), 2.0))

    def forward(self, x):
        return self.gain * x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6)


@pytest.fixture
def toy():
    with registered_norm("toy_script", ToyNorm) as name:
        yield name


def test_registered_norm_builds_as_its_class_and_its_parameters_are_norm_parameters(toy):
    layer = build_norm(toy, 4, impl="reference", fp32=False)
    x = torch.randn(3, 4, dtype=torch.float64)
    expected = 2.0 * x / torch.sqrt(x.square().mean(-1, keepdim=True) + 1e-6)
    assert torch.allclose(layer.to(torch.float64)(x), expected)
    names = [name for name, _ in norm_parameters(nn.Sequential(layer))]
    assert names == ["0.norm.inner.gain"]  # no weight decay, as every kind's gain
    # none of normbench's norm settings reach a class that owns its parameters: they stay out of identity
    inert = kinds.inert_settings(toy, affine=True, gain_offset=False, bn_reestimate=False)
    assert {"norm.eps", "norm.gamma_init", "norm.affine", "norm.alpha_init"} <= set(inert)
    assert "optim.norm_weight_decay" not in inert
    assert user.sources()[toy] == f"{__name__}:ToyNorm"


def test_register_norm_refuses_taken_names_bad_names_and_non_modules(toy):
    normbench.register_norm(toy, ToyNorm)  # the same class again: nothing to do
    for name, cls, says in (("ln", ToyNorm, "already registered"), (toy, nn.Identity, "already registered"),
                            ("My-Norm", ToyNorm, "lower-case"), ("fine", object, "nn.Module subclass"),
                            ("fine", len, "nn.Module subclass")):
        with pytest.raises(ConfigError, match=says):
            normbench.register_norm(name, cls)
    assert "fine" not in kinds.kind_names()


def test_script_registers_and_runs_through_normbench_main(tmp_path):
    script = ROOT / "examples" / "my_norm_script.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), "norm=halfscale", *TINY, "hydra.run.dir=run"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["config"]["norm"]["kind"] == "halfscale"
    assert summary["environment"]["user_norms"]["halfscale"] == "__main__:HalfScaleNorm"
    # a bad override is the CLI's one line and exit 2, returned by normbench.main, not raised
    bad = subprocess.run([sys.executable, str(script), "norm=halfscale", "steps=-1"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=HANG_S)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "steps" in bad.stderr


def test_a_script_registered_norm_in_joblib_workers_is_an_invalid_run_naming_the_entry_point(tmp_path):
    script = ROOT / "examples" / "my_norm_script.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), "-m", "hydra/launcher=local", "hydra.launcher.n_jobs=2",
                           "norm=halfscale", *TINY, "seed=0,1", "hydra.sweep.dir=sweep", "report=false"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=HANG_S)
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("summary.json")]
    assert len(records) == 2 and {r["status"] for r in records} == {"invalid"}, done.stderr[-2000:]
    assert all("your own norm in every process: an entry point" in r["reason"] for r in records)


def _installed_package(where: Path) -> Path:
    """A package installed as pip would leave it: its module and a dist-info declaring the entry point."""
    where.mkdir()
    (where / "toynorm_pkg.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn

        class ToyNorm(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.gain = nn.Parameter(torch.ones(dim))

            def forward(self, x):
                return self.gain * x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6)
    '''))
    info = where / "toynorm_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toynorm-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[normbench.norms]\ntoy = toynorm_pkg:ToyNorm\nln = toynorm_pkg:ToyNorm\n")
    return where


def test_entry_point_norm_runs_in_joblib_workers_and_resume_and_appears_in_records(tmp_path):
    site = _installed_package(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    sweep = [sys.executable, "-m", "normbench", "-m", "hydra/launcher=local", "hydra.launcher.n_jobs=2", *TINY,
             "norm=toy,ln", "hydra.sweep.dir=sweep", "report=false"]
    first = subprocess.run([*sweep, "seed=0"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert first.returncode == 0, first.stderr[-2000:]
    # a name already taken (ln) is left out with one line, never replacing the built-in kind
    assert "left out: ln (toynorm_pkg:ToyNorm in toynorm_pkg-0.1.dist-info): the name is taken" in first.stderr
    again = subprocess.run([*sweep, "seed=0,1", "resume=true"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=HANG_S)
    assert again.returncode == 0, again.stderr[-2000:]
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("summary.json")]
    assert sorted((r["config"]["norm"]["kind"], r["seed"], r["status"]) for r in records) == [
        ("ln", 0, "ok"), ("ln", 1, "ok"), ("toy", 0, "ok"), ("toy", 1, "ok")]
    toy_pids = {r["environment"]["user_norms"].get("toy") for r in records}
    assert toy_pids == {"toynorm_pkg:ToyNorm"}  # every worker had it, from the metadata
    runs = normbench.load_runs(tmp_path / "sweep")
    assert set(runs["axes.norm.kind"]) == {"toy", "ln"}
    report = subprocess.run([sys.executable, "-m", "normbench", "report", "sweep", "--out", "out"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=HANG_S)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "norm=toy" in (tmp_path / "out" / "report.html").read_text()


class BoomNorm(nn.Module):
    def __init__(self, dim):
        raise ValueError("ctor boom")


def test_a_norm_whose_constructor_raises_is_named_with_where_it_comes_from(monkeypatch):
    """Hostile h21 B7 (N148): 'normbench: invalid: ctor boom', naming neither the norm nor its entry point."""
    import types

    module = types.ModuleType("boomnorm_pkg")
    module.BoomNorm = BoomNorm
    monkeypatch.setitem(sys.modules, "boomnorm_pkg", module)
    kinds.register(kinds.user_kind("boomy", "entry:boomnorm_pkg:BoomNorm"))
    normbench.register_norm("boomy_script", BoomNorm)
    try:
        with pytest.raises(ConfigError, match=r"^the norm boomy \(boomnorm_pkg:BoomNorm, entry point group "
                                              r"normbench.norms\) cannot be built as BoomNorm\(4\): ValueError: ctor boom$"):
            build_norm("boomy", 4, impl="reference", fp32=False)
        with pytest.raises(ConfigError, match=r"^the norm boomy_script \(normbench.register_norm\) cannot be built"):
            build_norm("boomy_script", 4, impl="reference", fp32=False)
    finally:
        for name in ("boomy", "boomy_script"):
            kinds.unregister(name)
        user._registered.pop("boomy_script", None)


def test_an_entry_point_module_that_calls_sys_exit_at_import_cannot_be_loaded(tmp_path, monkeypatch):
    """Hostile h26 n07: sys.exit(0) at the module's import ended the run `failed` without naming the entry point."""
    (tmp_path / "exitnorm_pkg.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "exitnorm_pkg", raising=False)
    with pytest.raises(ConfigError, match=r"^the norm exitnorm_pkg:C \(entry point group normbench.norms\) cannot be "
                                          r"loaded: its import called sys.exit\(0\)$"):
        user.load("entry:exitnorm_pkg:C")
