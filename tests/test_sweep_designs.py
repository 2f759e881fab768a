"""What the precision and batch-size sweeps run: the settings each job's record will hold."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from normbench.configuration.config import to_config


@pytest.mark.parametrize("batch, steps, eval_every", [(4, 2400, 300), (16, 600, 75), (64, 150, 19)])
def test_batch_size_sweep_trains_every_batch_on_equal_data(compose, batch, steps, eval_every):
    node = compose("+sweep=batch_size", f"batch_size={batch}", tiny=False)
    recorded = OmegaConf.to_container(node, resolve=True)  # what run.execute records and hashes
    assert recorded["steps"] == steps and recorded["steps"] * batch >= 9600 > (recorded["steps"] - 1) * batch
    assert recorded["eval_every"] == eval_every
    assert to_config(node).steps == steps


def test_eps_sweep_puts_an_fp16_norm_where_zero_rows_occur(compose):
    cfg = to_config(compose("+sweep=eps_fp16", "norm.eps=1e-8", "norm.fp32=false", tiny=False))
    assert cfg.precision.dtype == "fp16_pure" and cfg.norm.impl == "reference" and cfg.norm.kind == "ln"
    assert cfg.model.family == "lstm" and cfg.placement.name == "in_cell"  # norm on U·h_{t-1}, 0 at t = 1


@pytest.mark.parametrize("sweep, norm", [("bn_converges", "bn")])
def test_convergence_sweeps_compare_a_normalized_lstm_with_the_plain_one(compose, sweep, norm):
    arm = to_config(compose(f"+sweep={sweep}", f"norm={norm}", tiny=False))
    plain = to_config(compose(f"+sweep={sweep}", "norm=none", tiny=False))
    for cfg in (arm, plain):
        assert cfg.model.family == "lstm" and cfg.model.hidden == 64 and cfg.task.name == "digits"
        assert cfg.task.pixels_per_step == 1 and cfg.steps >= 400 and cfg.steps // cfg.eval_every >= 10
    assert arm.placement.name == "in_cell" and arm.norm.kind == norm
    if norm == "bn":  # Cooijmans et al.'s gamma = 0.1, evaluated with population statistics
        assert arm.norm.gamma_init == 0.1 and arm.norm.bn_reestimate


def test_ln_converges_is_a_character_language_model_on_real_text_with_each_arm_at_its_own_lr(compose):
    from normbench.studies.study import lr_plan

    arm = to_config(compose("+sweep=ln_converges", "norm=ln", tiny=False))
    plain = to_config(compose("+sweep=ln_converges", "norm=none", tiny=False))
    for cfg in (arm, plain):
        assert cfg.model.family == "lstm" and cfg.model.hidden == 64 and cfg.task.name == "fortunes_lm"
        assert cfg.optim.schedule == "cosine" and cfg.steps // cfg.eval_every >= 8
    assert arm.placement.name == "in_cell" and arm.norm.kind == "ln"
    plan = lr_plan(["+sweep=ln_converges"])
    assert plan.kind == "tuned" and plan.grid == (0.01, 0.03, 0.1)


def test_warmup_sweep_runs_where_post_ln_fails_without_warm_up(compose):
    cfg = to_config(compose("+sweep=warmup_depth", "placement=post", "warmup_steps=0", tiny=False))
    assert cfg.lr >= 0.01 and cfg.model.layers >= 6 and cfg.steps // cfg.eval_every >= 10  # the pilot's regime
    assert cfg.task.name == "fortunes_lm"  # off mqar's 1/n_pairs plateau, where its trained arms once stopped


@pytest.mark.parametrize("arm, norm, placement", [
    ("plain", "none", None), ("ln_post", "ln", "post"), ("ln_in_cell", "ln", "in_cell")])
@pytest.mark.parametrize("task", ["digits", "fortunes_lm"])
def test_gru_arms_are_the_norms_at_the_placements_a_gru_has_on_two_tasks(compose, arm, norm, placement, task):
    """The GRU family on two tasks, one of them real text (issue 44)."""
    cfg = to_config(compose("+sweep=gru", f"+gru_task={task}", f"+gru_arm={arm}", tiny=False))
    assert cfg.model.family == "gru" and cfg.norm.kind == norm and cfg.task.name == task
    assert placement is None or cfg.placement.name == placement
    assert cfg.task.pixels_per_step == 4 if task == "digits" else cfg.optim.schedule == "cosine"


@pytest.mark.parametrize("sweep, norms, grid", [
    ("rms_vs_ln", ("ln", "rms"), (0.003, 0.01, 0.03)),
    ("derf_vs_norms", ("derf", "ln", "rms", "dyt", "none"), (0.003, 0.01, 0.03, 0.1))])
def test_transformer_norm_sweeps_are_character_language_models_with_each_arm_at_its_own_lr(compose, sweep, norms, grid):
    """Off mqar's 1/n_pairs plateau and its ceiling (issue 44): real text, each arm's lr tuned over a grid."""
    from normbench.studies.study import lr_plan

    for norm in norms:
        cfg = to_config(compose(f"+sweep={sweep}", f"norm={norm}", tiny=False))
        assert cfg.model.family == "transformer" and cfg.placement.name == "pre" and cfg.norm.kind == norm
        assert cfg.task.name == "fortunes_lm" and cfg.optim.schedule == "cosine" and cfg.steps // cfg.eval_every >= 8
    plan = lr_plan([f"+sweep={sweep}"])
    assert plan.kind == "tuned" and plan.grid == grid


def test_dyt_vs_ln_is_a_character_language_model_with_each_arm_at_its_own_lr(compose):
    """Real text, off the trivial solutions in the pilot (unigram 4.81, bigram 3.78; arms 2.9-3.3 bits)."""
    from normbench.studies.study import lr_plan

    for norm in ("ln", "dyt", "none"):
        cfg = to_config(compose("+sweep=dyt_vs_ln", f"norm={norm}", tiny=False))
        assert cfg.task.name == "fortunes_lm" and cfg.model.family == "transformer" and cfg.norm.kind == norm
        assert cfg.optim.schedule == "cosine" and cfg.steps // cfg.eval_every >= 8
    plan = lr_plan(["+sweep=dyt_vs_ln"])
    assert plan.kind == "tuned" and plan.grid == (0.003, 0.01, 0.03, 0.1)


def test_grad_depth_measures_at_init_in_short_runs_at_every_depth(compose):
    for layers in (2, 16):
        cfg = to_config(compose("+sweep=grad_depth", "placement=post", f"model.layers={layers}", tiny=False))
        assert cfg.model.family == "transformer" and cfg.model.layers == layers and cfg.steps <= 50


def test_the_example_make_sh_runs_every_listed_study_from_a_shipped_sweep_within_60_minutes():
    """Issue 44's budget: the whole example, the 2026 studies with it, in 60 minutes of expected study time."""
    import re
    from pathlib import Path

    from normbench.studies.study import budget_seconds

    root = Path(__file__).resolve().parents[1]
    text = (root / "reports" / "example" / "make.sh").read_text()
    listed = re.search(r"^ALL=\((.*?)\)", text, re.S | re.M).group(1).split()
    lines = {m.group(1): m.group(0) for m in re.finditer(r"^\s*(\w+)\)\s+study .*$", text, re.M)}
    total = 0.0
    for name in listed:
        line = lines[name]
        budget = re.search(rf"study {name} (\d+s) ", line).group(1)  # the expected time; the budget is 3x it
        total += budget_seconds(budget)
        sweep = re.search(r"\+sweep=(\w+)", line).group(1)
        assert (root / "sweeps" / f"{sweep}.yaml").is_file(), line
        pilot, most = (int(re.search(rf"--{key} (\d+)", line).group(1)) for key in ("pilot", "max-seeds"))
        assert 2 <= pilot <= most, line
    assert len(listed) == len(set(listed)) >= 15 and total <= 60 * 60
    # every shipped study's sweep file has a line (run by name when it is not in ALL)
    studies = {p.stem for p in (root / "sweeps").glob("*.yaml")} - {"smoke", "tuned"}
    assert studies <= set(lines), sorted(studies - set(lines))
    header_sum = float(re.search(r"expected times sum to ([\d.]+) minutes", text).group(1))
    assert abs(header_sum - total / 60) < 0.05, (header_sum, total / 60)
    # no study writes its own report (--no-report), so the script must end with the one that reads them all
    runners = re.findall(r"^\s*python -m normbench study .*$", text, re.M)
    assert runners and all("--no-report" in runner for runner in runners)
    last = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")][-1]
    assert last == 'python -m normbench.report "$R" --out reports/example'
