"""The whole report from records on disk: files, sections, escaping, self-containment, the CLI."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from normbench.report import NoUsableRecords, build_report

INJECTION = "<script>alert(1)</script>"
FIGURES = {"heatmap_primary", "heatmap_divergence", "curves_loss_vs_step", "curves_val_vs_step", "curves_val_vs_seconds",
           "grad_norm_vs_step", "grad_flow_through_time", "throughput", "tradeoff"}  # CPU memory: no chart (figures.memory_table)
SECTIONS = ["Synthesis: which norm, where, per model family", "Study runs without a study", "Failures", "Memory",
            "What was run", "Legend", "How to reproduce"]


@pytest.fixture(scope="module")
def report(tmp_path_factory, write_record):
    """A small sweep with every kind of trouble the report must survive, and its report."""
    sweep = tmp_path_factory.mktemp("sweep")
    index = 0

    def add(**fields):
        nonlocal index
        write_record(sweep, f"multirun/{index}", **fields)
        index += 1

    for norm in ("ln", "bn"):
        for placement in ("pre", "post"):
            for seed in (0, 1):
                diverged = norm == "bn" and placement == "post" and seed == 1
                add(seed=seed, best_val=0.5 if (norm, placement) == ("bn", "pre") else 0.93 + 0.01 * seed,
                    status="diverged" if diverged else "ok",
                    reason="loss became NaN at step 40 <b>boom</b>" if diverged else None,
                    axes={"norm": norm, "placement": placement},
                    metrics={"diverged_at_step": 40, "last_finite_loss": 7.5} if diverged else None)
    add(seed=0, best_val=0.97, axes={"norm": "rms", "placement": INJECTION})  # a single-seed group
    for seed in (0, 1):
        add(seed=seed, best_val=0.91, recurrent=True, axes={"model": "lstm", "norm": "ln", "placement": "in_cell"})
    add(seed=5, status="running", axes={"norm": "ln", "placement": "pre"})
    (sweep / "multirun" / "corrupt").mkdir()
    (sweep / "multirun" / "corrupt" / "summary.json").write_text('{"schema": "normbench.run/1", "stat')
    (sweep / "multirun" / "foreign").mkdir()
    (sweep / "multirun" / "foreign" / "summary.json").write_text(json.dumps({"schema": "other/1"}))

    out = tmp_path_factory.mktemp("out")
    stderr = io.StringIO()  # capsys is per test; this fixture is per module
    with contextlib.redirect_stderr(stderr):
        html_path = build_report([sweep], out)
    return {"sweep": sweep, "out": out, "html_path": html_path, "stderr": stderr.getvalue(),
            "html": html_path.read_text(), "md": (out / "report.md").read_text()}


def test_outputs_exist(report):
    out = report["out"]
    assert report["html_path"] == out / "report.html"
    for name in ("report.md", "report.html", "runs.csv", "summary.csv"):
        assert (out / name).is_file(), name
    assert {p.stem for p in (out / "figures").glob("*.png")} == FIGURES


def test_one_warning_line_names_every_record_set_aside(report):
    lines = report["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("normbench.report: warning")
    for name in ("corrupt", "foreign", "multirun/11"):
        assert name in lines[0]


def test_csvs_have_the_expected_rows(report):
    runs = pd.read_csv(report["out"] / "runs.csv")
    assert len(runs) == 12  # 11 finished + 1 incomplete; corrupt and foreign are not runs
    assert runs["status"].value_counts().to_dict() == {"ok": 10, "diverged": 1, "incomplete": 1}
    summary = pd.read_csv(report["out"] / "summary.csv")
    assert len(summary) == 6
    assert set(summary["group"]) == {
        "model=transformer, norm=ln, placement=pre", "model=transformer, norm=ln, placement=post",
        "model=transformer, norm=bn, placement=pre", "model=transformer, norm=bn, placement=post",
        f"model=transformer, norm=rms, placement={INJECTION}", "model=lstm, norm=ln, placement=in_cell"}
    single = summary[summary["n"] == 1]  # one run is never ranked nor starred: listed after the ranked groups
    assert len(single) and single["rank"].isna().all() and not single["best"].any()
    assert summary["rank"].notna().tolist() == sorted(summary["rank"].notna().tolist(), reverse=True)
    bn_post = summary[(summary["norm"] == "bn") & (summary["placement"] == "post")].iloc[0]
    assert (bn_post["n"], bn_post["n_diverged"], bn_post["divergence_rate"]) == (2, 1, 0.5)


def test_sections_in_both_formats(report):
    for title in SECTIONS:
        assert f"## {title}" in report["md"]
        assert title in report["html"]


def test_what_was_run_lists_incomplete_and_set_aside(report):
    md = report["md"]
    assert "| incomplete |" in md
    assert re.search(r"\| incomplete \| transformer \| ln \| pre \| 5 \|", md)
    assert "unreadable summary.json" in md and "schema 'other/1'" in md
    assert "test-cpu" in md and "2.5.1" in md and "2025-01-02" in md


def test_leaderboard_marks_best_and_single_seed(report):
    md = report["md"]
    assert "★" in md
    assert "0.97 (n=1)" in md
    # the unranked arm's metric is a cell a phone must show whole, as a ranked one's
    assert 'data-label="final val accuracy (mean ± 95% CI)" class="keep">0.97 (n=1)</td>' in report["html"]
    assert "not reached" in md  # bn/pre never reaches the 0.9 target


def test_divergence_table(report):
    """Arm first: the failed run's arm as its study names it, then seed, step, last loss and reason."""
    section = report["md"].split("## Failures")[1].split("## Memory")[0]
    assert re.search(r"\| model=transformer, norm=bn, placement=post \| 1 \| 40 \| 7\.5 \| loss became NaN", section)


def test_claims_never_supported_by_a_single_seed(report):
    md = report["md"]
    for claim in ("ln_batch_robust", "postln_needs_warmup", "rms_faster_than_ln", "in_cell_most_stable"):
        assert claim in md
    assert "### rms_faster_than_ln: supported" not in md  # rms has one seed, and no setting pairs it with ln


def test_config_strings_are_escaped(report):
    html, md = report["html"], report["md"]
    assert INJECTION not in html and "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>boom</b>" not in html and "&lt;b&gt;boom&lt;/b&gt;" in html
    assert INJECTION not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md


def test_html_is_self_contained_and_embeds_every_figure(report):
    html, out = report["html"], report["out"]
    assert 'src="http' not in html and "<link" not in html and "url(" not in html
    images = re.findall(r"<img [^>]*>", html)
    assert images and all('src="data:image/png;base64,' in tag for tag in images)
    embedded = {png.stem for png in (out / "figures").glob("*.png")
                if base64.b64encode(png.read_bytes()).decode() in html}
    # one study: its 6 most informative figures; memory is a table, never a chart per study
    assert len(images) == len(embedded) == 6 and "peak_memory" not in embedded
    assert embedded <= FIGURES


def test_markdown_references_figures_and_uses_pipe_tables(report):
    md = report["md"]
    shown = set(re.findall(r"\]\(figures/([^)]+)\.png\)", md))
    assert len(shown) == 6 and shown <= FIGURES - {"peak_memory"}  # the same figures as the page
    embedded = {png.stem for png in (report["out"] / "figures").glob("*.png")
                if base64.b64encode(png.read_bytes()).decode() in report["html"]}
    assert shown == embedded
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            assert re.fullmatch(r"\|(---\|)+", lines[i + 1]), line  # a header is followed by its rule
            width = lines[i + 1].count("|")
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                assert len(re.findall(r"(?<!\\)\|", lines[j])) == width, lines[j]
                j += 1


def test_few_varying_axes_skip_heatmaps(tmp_path, write_record):
    for seed in (0, 1):
        for norm in ("ln", "rms"):
            write_record(tmp_path / "sweep", f"{norm}{seed}", seed=seed, axes={"norm": norm})
    build_report([tmp_path / "sweep"], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "heatmap" not in md
    assert not (tmp_path / "out" / "figures" / "heatmap_primary.png").exists()


def test_nothing_trained_still_builds(tmp_path, write_record):
    write_record(tmp_path, "a", status="invalid", reason="bn cannot go in_cell")
    html = build_report([tmp_path], None)
    assert html == tmp_path / "report.html"
    assert "No run trained" in (tmp_path / "report.md").read_text()


def test_no_usable_records_raises(tmp_path, write_record):
    write_record(tmp_path, "dead", status="running")
    with pytest.raises(NoUsableRecords):
        build_report([tmp_path], tmp_path / "out")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "normbench.report", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])


def test_cli_exit_status(tmp_path, write_record):
    write_record(tmp_path / "sweep", "a")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "summary.json").write_text("{")
    ok = _cli(str(tmp_path / "sweep"), "--out", str(tmp_path / "out"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == str(tmp_path / "out" / "report.html")
    assert (tmp_path / "out" / "report.html").is_file()
    empty = _cli(str(tmp_path / "junk"))
    assert empty.returncode == 2
    assert len(empty.stderr.strip().splitlines()) == 1 and "no usable run records" in empty.stderr
    mistyped = _cli(str(tmp_path / "sweep"), str(tmp_path / "nothing-here"))  # a slip, not a record (hostile R07)
    assert mistyped.returncode == 2 and "nothing-here' does not exist" in mistyped.stderr


# What the report may import from the rest of normbench: the record and the descriptions it is read
# by (contract, schema, the norm kinds, the model families, the metric registry, the task configs), all torch-free.
TORCH_FREE = ("normbench.records.record", "normbench.configuration.contract", "normbench.configuration.schema", "normbench.checks",
              "normbench.records.metrics", "normbench.norms", "normbench.norms.kinds", "normbench.norms.spec",
              "normbench.configuration.placements", "normbench.configuration.families", "normbench.records.reading",
              "normbench.norms.user", "normbench.norms.installed")  # the users' norm kinds, read from package metadata: torch only when one is built
TORCH_FREE_PACKAGES = ("normbench.report", "normbench.analysis", "normbench.tasks")
TORCH_FREE += ("normbench.records", "normbench.configuration")  # packages by role: their __init__ is a docstring


def test_report_imports_neither_torch_nor_the_rest_of_normbench():
    """The report's own code needs neither torch nor normbench's models: only the record and what describes it.

    The parent package `normbench` is replaced by an empty one here, because its __init__ belongs to
    the library and may import torch for the library's users; what is checked is that nothing in
    normbench.report does.
    """
    root = Path(__file__).resolve().parents[2]
    code = ("import sys, types; parent = types.ModuleType('normbench'); "
            f"parent.__path__ = [{str(root / 'normbench')!r}]; sys.modules['normbench'] = parent; "
            "import normbench.report, normbench.report.__main__; "
            "bad = [m for m in sys.modules if m == 'torch' or m.startswith('torch.') or "
            f"(m.startswith('normbench.') and not m.startswith({TORCH_FREE_PACKAGES!r}) "
            f"and m not in {TORCH_FREE!r})]; print(bad)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    allowed = "|".join(re.escape(m.removeprefix("normbench.")) + r"\b" for m in TORCH_FREE + TORCH_FREE_PACKAGES)
    for path in (root / "normbench" / "report").rglob("*.py"):
        for line in path.read_text().splitlines():
            if re.match(rf"\s*(from|import)\s+(torch|normbench\.(?!{allowed}))", line):
                pytest.fail(f"{path.name}: {line.strip()}")


def test_each_task_gets_its_own_leaderboard_and_direction(tmp_path, write_record):
    for seed in (0, 1):
        for norm, accuracy, mse in (("ln", 0.95, 0.02), ("rms", 0.9, 0.01)):
            write_record(tmp_path, f"copy-{norm}-{seed}", seed=seed, best_val=accuracy,
                         axes={"task": "copy", "norm": norm})
            write_record(tmp_path, f"adding-{norm}-{seed}", seed=seed, best_val=mse,
                         axes={"task": "adding", "norm": norm})
    build_report([tmp_path], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "**Task adding**: mse, lower is better." in md and "**Task copy**: accuracy, higher is better." in md
    # the arm settings come first (norm), then rank, ★, final val, test, seeds
    assert re.search(r"\| rms \| 1 \| ★ \| 0\.01 ± 0 \| 0\.01 ± 0 \| 2 \|", md)  # lowest mse wins
    assert re.search(r"\| ln \| 1 \| ★ \| 0\.95 ± 0 \| 0\.95 ± 0 \| 2 \|", md)  # highest accuracy
    assert "Same in every row: model=transformer" not in md  # model does not vary in this report at all


def test_figures_stay_legible_on_a_phone(report):
    """Scaled to a 420 px wide screen, the smallest text in every figure's narrow rendering (the one
    a phone gets) is still at least 9 px tall."""
    from PIL import Image

    from normbench.report.figures import MIN_FONT_KEY

    pngs = list((report["out"] / "figures" / "narrow").glob("*.png"))
    assert {p.stem for p in pngs} == FIGURES
    for png in pngs:
        with Image.open(png) as image:
            smallest = float(image.text[MIN_FONT_KEY])
            assert smallest * 400 / image.width >= 9, (png.name, image.width, smallest)


def test_synthesis_first_then_each_study_with_its_answer(report):
    html = report["html"]
    assert html.index('id="answer"') < html.index('class="study"') < html.index('id="what"')
    synthesis = html.split('id="answer"')[1].split('class="study"')[0]
    # one line per model family the records ran; the families no study ran are not listed (rnn and gru here)
    for family in ("LSTM", "Transformer"):
        assert f"<td data-label=\"family\" class=\"keep\">{family}</td>" in synthesis
    for family in ("RNN", "GRU"):
        assert f"<td data-label=\"family\" class=\"keep\">{family}</td>" not in synthesis
    assert "no evidence yet" not in synthesis and synthesis.index("recommendation") < synthesis.index("Per study")
    study = html.split('class="study"')[1].split('id="failures"')[0]
    # ln/pre and ln/post score exactly alike (0.93, 0.94): a tie, named as one, in the study's own section
    assert "On copy, " in study and "tie for first: final val" in study and "95% CI" in study and "seeds" in study
    assert "test " in study and "chance " in study
    # claims the runs cannot address are counted, not listed, on the first screen
    assert "not run here" in synthesis and 'href="#claim-ln_batch_robust"' not in synthesis
    # referee 26: the note under the table states both rules, the ★'s over all arms and "or X"'s paired test, in
    # both pages; it had said "leave tied" and the ★ alone after the rows began offering fewer arms than the ★ set
    for page in (synthesis, report["md"]):
        assert "★, the leaderboard's rule over all of a study's arms" in page and "its own paired test against the " \
            "first choice (at the study's α, one comparison, on the ranking's runs and score)" in page
        # referee 26: one rule for "or X"; a claim part is named in "how sure" and decides nothing there
        assert "nor a claim part" not in page and "leave tied" not in page and "decides nothing here" in page
        # referee 26: every study of a family the row does not use is named there, with why
        assert "the row names each such study with why" in page


def test_the_batchnorm_train_eval_gap_is_shown_wherever_bn_is_evaluated(tmp_path, write_record):
    for seed in (0, 1):
        for norm, gap in (("bn", -0.02), ("ln", None)):
            write_record(tmp_path, f"{norm}-{seed}", seed=seed, best_val=0.9, axes={"norm": norm},
                         metrics={"bn_train_eval_gap": gap, "bn_train_eval_gap_running": -1.5 if gap else None})
    build_report([tmp_path], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    section = md.split("**BatchNorm: evaluation against training**")[1].split("## ")[0]
    assert "| norm=bn | 2 | -0.02 | -1.5 |" in section and "norm=ln" not in section


def test_a_sequential_study_is_judged_at_its_last_looks_level(tmp_path, write_record):
    """sequential.json (normbench.studies.study) says the last look tested at 0.001: a difference that is
    supported at 0.05 is not yet supported at that level, in that study only."""
    import json

    study = {"schema": "normbench.study/1", "id": "abc", "name": "dropout", "arms": ["model.dropout_at"], "command": ""}
    for seed in (0, 1, 2):
        for at, value in (("after_norm", 0.90), ("before_norm", 0.88)):
            write_record(tmp_path / "s", f"{at}-{seed}", seed=seed, best_val=value + 0.003 * seed, study=study,
                         axes={"model": "lstm", "norm": "bn", "placement": "post", "model.dropout": 0.3, "model.dropout_at": at})
    build_report([tmp_path / "s"], tmp_path / "full")
    assert "(#claim-dropout_after_norm-abc) (supported" in (tmp_path / "full" / "report.md").read_text()
    (tmp_path / "s" / "sequential.json").write_text(json.dumps(
        {"schema": "normbench.sequential/2", "study": "abc", "final_level": 0.0001}))
    build_report([tmp_path], tmp_path / "spent")
    md = (tmp_path / "spent" / "report.md").read_text()
    assert "(#claim-dropout_after_norm-abc) (supported" not in md and "α = 0.0001" in md
    # the ranking and the answer use the same level (analysis/rules.py: one level per study)
    assert set(pd.read_csv(tmp_path / "spent" / "summary.csv")["level"]) == {0.0001}
    assert "last look spent, 0.0001" in md


def test_the_report_names_a_cell_kernel_recorded_before_the_rename_by_its_present_name(tmp_path, write_record):
    """Records that say model.cell_kernel=cpp (compiled's name before issue 47's rename) are shown as compiled."""
    in_cell = {"model": "lstm", "task": "adding", "placement": "in_cell", "layers": 1}
    for seed in (0, 1):
        for kernel, mse in (("cpp", 0.02), ("python", 0.03)):
            write_record(tmp_path, f"{mse}-{seed}", seed=seed, best_val=mse, axes={**in_cell, "model.cell_kernel": kernel})
    build_report([tmp_path], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert re.search(r"\| compiled \| 1 \| ★ \|", md) and "| python |" in md
    assert "cpp" not in md
    assert "cpp" not in (tmp_path / "out" / "runs.csv").read_text()


def test_a_claim_the_runs_cannot_judge_names_the_arms_it_needs_and_the_sweep_that_runs_them(report):
    """The example listed "dropout_after_norm, deepnorm_trains_deep: the runs lack the arms they need", naming
    neither the arms nor the shipped sweep that would judge them (referee, issue 45)."""
    for text in (report["md"], report["html"]):
        entry = text[text.index("dropout_after_norm: not run here: no study in this report has the arms it needs "
                                "together: after norm (norm=bn, model.dropout_at=after_norm)"):][:2000]
        assert "+sweep=dropout_placement" in entry.split("deepnorm_trains_deep")[0]
    line = next(line for line in report["md"].splitlines() if "dropout_after_norm: not run here" in line)
    assert line.startswith("- dropout_after_norm: not run here") and line.count(" needs ") == 1, line  # one claim a line
