"""Display tables: the aggregated frames as rows of formatted strings, ready for either template.

Both templates get the same Table objects, so the Markdown and the HTML report can never disagree
about a number; escaping is the templates' job (Jinja2 autoescape for HTML, a pipe-table filter for
Markdown).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from normbench.analysis.result import (
    AT_CHANCE_RUN,
    CONTRADICTED,
    INCONCLUSIVE,
    NO_STUDY,
    NOT_APPLICABLE,
    NOT_TESTABLE,
    RANKING_RULE,  # noqa: F401  (the answer section quotes it)
    REPORT_STATUSES,
    SUPPORTED,
    TRAINED,
    ClaimResult,
    Effect,
    Part,
    headline_reading,
    score_words,
    shown_status,
    undecided_text,
)
from normbench.records import metrics as metric_table
from normbench.records.metrics import TIMING_NOISY
from normbench.records.values import format_value

PART_COLUMNS = ["part", "test", "effect [interval]", "verdict"]

MAX_ROWS = 200  # a table past this length is cut, with a pointer to the CSV


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    wrap: tuple[str, ...] = ()  # columns whose cells may wrap (long text); every other cell stays on one line
    keep: tuple[str, ...] = ()  # columns a reader must see whole at any width (arm, metric, interval, verdict)
    lead: int = 1  # the first columns, which name a row: repeated in each part of a table split for width


@dataclass(frozen=True)
class Leaderboard:
    task: str
    metric: str
    higher_is_better: bool
    table: Table
    constant: str = ""  # "model=lstm, batch_size=32": settings shared by every row, so not a column
    study: str = ""     # the study's title: its sweep file's name (or "command line")
    purpose: str = ""   # the study's question, from its sweep file
    unranked: Table | None = None  # groups with one seed: what they scored, not ranked


@dataclass
class ClaimView:
    id: str
    statement: str
    citation: str
    status: str
    effect: str
    more_effects: list[str]
    n_per_arm: str
    explanation: str
    evidence: Table
    css: str = field(default="")
    parts: Table | None = None  # one row per part (PART_COLUMNS)
    study: str = ""
    anchor: str = ""  # the section's HTML id: one per claim and study
    study_id: str = ""  # the study whose runs judged it ("" when none)
    quote: str = ""  # the source's own words, where the claim records them
    where: str = ""  # where in the source
    scale: str = ""  # the scale the verdict was measured at, where it says
    shown: str = ""  # the status as printed: "contradicted" reads "not reproduced in this setup"
    figures: dict = field(default_factory=dict)  # claims.csv's referee columns: effect, its interval, seeds, lr
    fdr: str = ""  # "not kept by Benjamini–Hochberg …" for a directional verdict the multiplicity rule does not keep
    tested: str = ""  # a not-testable verdict's parts that were tested, and what they read (parts_tested)


def display_path(path: str | Path, base: Path) -> str:
    """A run directory relative to base when it lies below it, else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def number(value, digits: int = 4) -> str:
    if value is None:
        return "—"
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    if 10**digits <= abs(value) < 1e15:  # 15360 reads better than 1.536e+04
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def interval(low, high, digits: int = 3) -> str:
    """"low–high" with as many significant digits as it takes for each printed end to lie within a
    quarter of the interval's width of the true one: never "1–1" (both ends rounded alike) nor
    "0.999–1" for 0.9991–0.9996 (one end rounded across most of the interval)."""
    def close(shown: str, value: float) -> bool:
        try:
            return abs(float(shown) - value) <= abs(high - low) / 4
        except ValueError:  # "∞", "—": nothing to round
            return True

    shown = (number(low, digits), number(high, digits))
    while digits < 8 and low != high and not (close(shown[0], low) and close(shown[1], high)):
        digits += 1
        shown = (number(low, digits), number(high, digits))
    return f"{shown[0]}–{shown[1]}"


def split_wide(table: Table, limit: int | None = None) -> list[Table]:
    """A table wider than ``limit`` (MAX_COLUMNS) as several, each repeating the first ``lead``
    columns (what names the row), so that no table on the page needs more than a screen's columns."""
    limit = limit or MAX_COLUMNS
    lead = min(table.lead, limit - 1)
    if len(table.columns) <= limit:
        return [table]
    width = limit - lead
    parts = []
    for start in range(lead, len(table.columns), width):
        columns = table.columns[:lead] + table.columns[start:start + width]
        rows = [row[:lead] + row[start:start + width] for row in table.rows]
        parts.append(Table(columns, rows, table.note if start + width >= len(table.columns) else "",
                           tuple(c for c in table.wrap if c in columns), tuple(c for c in table.keep if c in columns),
                           lead))
    return parts


def _cut(rows: list[list[str]], what: str) -> tuple[list[list[str]], str]:
    if len(rows) <= MAX_ROWS:
        return rows, ""
    return rows[:MAX_ROWS], f"First {MAX_ROWS} of {len(rows)} {what}; all are in runs.csv."


def status_table(runs: pd.DataFrame) -> Table:
    counts = runs["status"].value_counts()
    rows = [[status, str(int(counts.get(status, 0)))] for status in REPORT_STATUSES]
    rows += [[str(status), str(int(n))] for status, n in counts.items() if status not in REPORT_STATUSES]
    return Table(["status", "runs"], rows)


def environment_table(runs: pd.DataFrame, condition: list[list[str]] = ()) -> Table:
    """The runs' environment; ``condition``: how busy the machine was (StudyResult.machine_rows)."""
    rows = []
    for key in ("device_name", "device", "torch", "python", "normbench_version", "git_commit"):
        column = f"environment.{key}"
        if column not in runs:
            continue
        for value, n in runs[column].fillna("not recorded").astype(str).value_counts().items():
            rows.append([key, value, str(int(n))])
    rows += list(condition)  # how busy the machine was (normbench/training/machine.py)
    return Table(["setting", "value", "runs"], rows, wrap=("value",))


def date_range(runs: pd.DataFrame) -> str:
    started = pd.to_datetime(runs.get("time.started"), errors="coerce", utc=True).dropna()
    ended = pd.to_datetime(runs.get("time.ended"), errors="coerce", utc=True).dropna()
    if started.empty and ended.empty:
        return "not recorded"
    first = (started if not started.empty else ended).min()
    last = (ended if not ended.empty else started).max()
    return f"{first:%Y-%m-%d %H:%M} – {last:%Y-%m-%d %H:%M} UTC"


def _axis_header(axes: list[str]) -> list[str]:
    return [a.removeprefix("axes.") for a in axes] or ["group"]


def _axis_cells(row: pd.Series, axes: list[str]) -> list[str]:
    """The axis values of one summary row (whose columns are the bare axis names)."""
    if not axes:
        return [str(row["group"])]
    return [format_value(row[a.removeprefix("axes.")]) for a in axes]


def mean_with_interval(row: pd.Series, name: str = "best_val") -> str:
    n = int(row[f"{name}_n"]) if pd.notna(row.get(f"{name}_n")) else 0
    if n == 0:
        return "—"
    if n == 1:
        return f"{number(row[f'{name}_mean'])} (n=1)"
    half = row[f"{name}_ci_high"] - row[f"{name}_mean"]
    return f"{number(row[f'{name}_mean'])} ± {number(half, 2)}"


def to_target(value: float) -> str:
    return number(value) if math.isfinite(value) else "not reached"


def varying_within(rows: pd.DataFrame, axes: list[str]) -> tuple[list[str], dict[str, str]]:
    """(axes whose value differs between `rows`, {axis: value} of the ones that do not)."""
    varying, constant = [], {}
    for axis in axes:
        name = axis.removeprefix("axes.")
        values = rows[name].map(format_value) if name in rows else pd.Series(["n/a"])
        if values.nunique() > 1:
            varying.append(axis)
        elif values.iloc[0] != "n/a":
            constant[name] = values.iloc[0]
    return varying, constant


def timing_noise(row: pd.Series) -> str:
    ratio = row.get("timing_noise_median")
    if ratio is None or pd.isna(ratio):
        return "—"
    return f"{ratio:.2g}" + (" ⚠" if ratio > TIMING_NOISY else "")


MAX_COLUMNS = 12  # a leaderboard wider than this cannot be read on a phone


def _board_columns(metric: str, arms: list[str], score: str = "final_val") -> list[tuple[str, object]]:
    """(header, cell function) of a leaderboard: the arm settings first, the ranked metric next,
    then as many of the secondary columns as fit in MAX_COLUMNS. ``score``: the primary score the
    comparison ranked on (analysis/rules.py); the other validation score is the labelled secondary."""
    secondary = "best_val" if score == "final_val" else "final_val"
    def cell_of(axis: str):
        return lambda row: format_value(row.get(axis.removeprefix("axes."))) if axis else str(row["arm"])
    columns: list[tuple[str, object]] = [(a.removeprefix("axes."), cell_of(a)) for a in arms] or [("arm", cell_of(""))]
    columns += [
        ("rank", lambda row: (number(row["rank"]) + ("=" if row.get("tie") else "")) if pd.notna(row["rank"]) else "—"),
        ("★", lambda row: "★" if row["best"] else ""),
        (f"{score_words(score)} {metric} (mean ± 95% CI)", lambda row: mean_with_interval(row, score)),
        ("test", lambda row: mean_with_interval(row, "test")),
        ("seeds", lambda row: str(int(row["seeds"])) if pd.notna(row.get("seeds")) else "—"),
        ("diverged · at chance", lambda row: f"{int(row['n_diverged'])} · {int(row.get('at_chance') or 0)} / {int(row['n'])}"),
    ]
    optional = [
        (f"{secondary.replace('_', ' ')} (secondary{', flatters' if secondary == 'best_val' else ': the last evaluation'})",
         lambda row: mean_with_interval(row, secondary)),
        (metric_table.metric("samples_per_s").label,
         lambda row: number(row["samples_per_s_median"]) + (" ⚠" if _noisy(row) else "")),
        ("steps to target (reached)", lambda row: f"{to_target(row['steps_to_target_median'])} "
                                                  f"({int(row['reached'])}/{int(row['n'])})"),
        (metric_table.metric("peak_memory_mb").label, lambda row: number(row["peak_memory_mb_median"])),
    ]
    return columns + optional[:max(0, MAX_COLUMNS - len(columns))]


def _noisy(row: pd.Series) -> bool:
    ratio = row.get("timing_noise_median")
    return ratio is not None and pd.notna(ratio) and ratio > TIMING_NOISY


def leaderboards(summary: pd.DataFrame, axes: list[str]) -> list[Leaderboard]:
    """One table per comparison (a study's groups on one task): the arm settings first, then the
    ranked metric; the settings shared by every row go to the caption. Groups with one seed are not
    ranked: they follow in their own table, with what they scored."""
    axes = [a for a in axes if a != "axes.task"]
    boards = []
    keys = "comparison" if "comparison" in summary else "task"
    for _, rows in summary.groupby(keys, sort=False):
        metric = str(rows["metric"].iloc[0])
        higher = bool(rows["higher_is_better"].iloc[0])
        arms, constant = varying_within(rows, axes)
        columns = _board_columns(metric, arms, str(rows["score"].iloc[0]) if "score" in rows else "final_val")
        ranked, single = rows[rows["rank"].notna()], rows[rows["rank"].isna()]
        body = [[cell(row) for _, cell in columns] for _, row in ranked.iterrows()]
        body, note = _cut(body, "groups")
        unranked = None
        if len(single):
            lone = [[cell(row) for name, cell in columns if name not in ("rank", "★")] for _, row in single.iterrows()]
            lone, lone_note = _cut(lone, "groups")
            lone_columns = [name for name, _ in columns if name not in ("rank", "★")]
            lead = max(len(arms), 1)
            unranked = Table(lone_columns, lone, lone_note or "1 seed (or no finished run): not comparable yet, so not ranked.",
                             keep=(*lone_columns[:lead], lone_columns[lead]), lead=lead)
        shared = ", ".join(f"{k}={v}" for k, v in constant.items())
        first = rows.iloc[0]
        names = [n for n, _ in columns]
        lead = max(len(arms), 1)  # the arm settings, then rank, ★ and the ranked metric
        board = Table(names, body, note, keep=(*names[:lead], names[lead + 2]), lead=lead)
        boards.append(Leaderboard(str(first["task"]), metric, higher, board, shared,
                                  study="" if first.get("study_name") in (None, NO_STUDY) else str(first["study_name"]), purpose=str(first.get("study_purpose", "") or ""),
                                  unranked=unranked))
    return boards


def unfinished_reasons(runs: pd.DataFrame) -> Table:
    """Runs that did not end ok, counted by status and reason: the short view of unfinished_table."""
    others = runs[runs["status"] != "ok"]
    if others.empty:
        return Table([], [])
    counts = (others.assign(reason=others["reason"].fillna("no reason recorded").astype(str))
              .groupby(["status", "reason"], sort=False).size().sort_values(ascending=False, kind="stable"))
    rows = [[str(status), reason, str(int(n))] for (status, reason), n in counts.items()]
    return Table(["status", "reason", "runs"], rows, wrap=("reason",))


# (summary.csv column, title) of every grouped metric with a gradient-table title (normbench/records/metrics.py)
_GRADIENT_COLUMNS = [(stat.column(m.prefix), stat.title)
                     for m in metric_table.grouped() for stat in m.group if stat.title]


def gradient_table(summary: pd.DataFrame, axes: list[str]) -> Table:
    """One row per arm (its study's arm settings: the study is the heading), split for width by the
    templates (split_wide), the arm repeated in each part."""
    present = [(c, title) for c, title in _GRADIENT_COLUMNS if c in summary and summary[c].notna().any()]
    task_column = ["task"] if summary["task"].nunique() > 1 else []
    by_arm = "arm" in summary
    columns = [*task_column, *(["arm"] if by_arm else _axis_header([a for a in axes if a != "axes.task"])), "runs",
               *[title for _, title in present]]
    body = []
    for _, row in summary.iterrows():
        body.append([*([str(row["task"])] if task_column else []),
                     *([str(row["arm"])] if by_arm else _axis_cells(row, [a for a in axes if a != "axes.task"])),
                     str(int(row["n"])), *[number(row[c]) for c, _ in present]])
    body, note = _cut(body, "groups")
    lead = len(task_column) + (1 if by_arm else len(_axis_header([a for a in axes if a != "axes.task"])))
    return Table(columns, body, note, wrap=("arm",), keep=("arm",), lead=lead)


def bn_gap_table(summary: pd.DataFrame) -> Table | None:
    """Every BatchNorm arm's train/eval gap: how far evaluation (the statistics it evaluates with) sits
    from training mode (batch statistics), and the same with the running averages of training."""
    if summary.empty or "bn_gap_mean" not in summary or not summary["bn_gap_mean"].notna().any():
        return None
    rows = summary[summary["bn_gap_mean"].notna()]
    several = rows["study_name"].nunique() > 1 if "study_name" in rows else False
    columns = [*(["study"] if several else []), "task", "arm", "runs", "gap: val loss train mode − eval mode",
               "the same with training's running averages"]
    body = [[*([str(r["study_name"])] if several else []), str(r["task"]), str(r["arm"]), str(int(r["n"])),
             number(r["bn_gap_mean"], 3), number(r.get("bn_gap_running_mean"), 3)] for _, r in rows.iterrows()]
    body, note = _cut(body, "groups")
    return Table(columns, body, note or (
        "Near 0: evaluation sees what training saw. norm.bn_reestimate (on by default) evaluates with population "
        "statistics of the evaluated weights; the last column (— when the option is off) shows what the running "
        "averages alone would give."))


def _run_table(runs: pd.DataFrame, axes: list[str], base: Path, extra: list[tuple[str, str]]) -> list[list[str]]:
    body = []
    for _, row in runs.iterrows():
        cells = [row.get(c) for c, _ in extra]
        body.append([*[format_value(row[a]) for a in axes], format_value(row["seed"]),
                     *[c if isinstance(c, str) else number(c) for c in cells],
                     display_path(row["run_dir"], base)])
    return body


def divergence_table(runs: pd.DataFrame, axes: list[str], base: Path) -> Table:
    """The failed runs: diverged, and finished without leaving the chance band ("stayed at chance",
    analysis/rules.py), which count against their arm alike."""
    stuck = runs[metric_table.path("at_chance")].eq(1.0)  # the analysis's verdict (rules.at_chance_column)
    diverged = runs[(runs["status"] == "diverged") | stuck].assign(
        reason=lambda f: f["reason"].where(~stuck[f.index],
                                           AT_CHANCE_RUN + ": its best evaluation never left the chance band"))
    extra = [*[(metric_table.path(key), metric_table.metric(key).label) for key in ("diverged_at_step", "last_finite_loss")],
             ("reason", "reason")]
    several = "study.name" in diverged and diverged["study.name"].nunique() > 1
    lead = (["study.name"] if several else []) + (["arm"] if "arm" in diverged else axes)
    columns = [*(["study"] if several else []), *(["arm"] if "arm" in diverged else [a.removeprefix("axes.") for a in axes]),
               "seed", *[t for _, t in extra], "run dir"]
    body, note = _cut(_run_table(diverged, lead, base, extra), "diverged runs")
    return Table(columns, body, note, wrap=("arm", "reason", "run dir"), keep=("arm",), lead=len(lead) + 1)


def unfinished_table(runs: pd.DataFrame, axes: list[str], base: Path) -> Table:
    """Every run that did not end ok, incomplete ones included, with the record's reason."""
    others = runs[runs["status"] != "ok"]
    columns = ["status", *[a.removeprefix("axes.") for a in axes], "seed", "reason", "run dir"]
    body = [[row["status"], *cells] for (_, row), cells in
            zip(others.iterrows(), _run_table(others, axes, base, [("reason", "reason")]))]
    body, note = _cut(body, "runs")
    return Table(columns, body, note, wrap=("reason", "run dir"))


def effect_text(effect: Effect | None) -> str:
    if effect is None:
        return "—"
    level = f"{effect.level * 100:.4g}%"
    shown = (f"{level} interval undefined" if effect.interval is None else
                "no spread: every seed gave the same value" if effect.interval[0] == effect.interval[1] else
                f"{level} interval [{interval(*effect.interval).replace('–', ', ')}]")
    return f"{effect.label}: {number(effect.estimate, 3)} ({shown})"


def verdict_text(part: Part) -> str:
    """The verdict cell of a part: status, and for an undecided part the way it leans and what would decide it
    (vocabulary.undecided_text: the part's line in the explanation reads the same words)."""
    if part.status == NOT_TESTABLE:
        return part.note.strip() or NOT_TESTABLE  # "not testable here: REASON — testable with WHAT"
    if part.status != INCONCLUSIVE:
        return shown_status(part.status) + (f": {part.note.strip()}" if part.status == NOT_APPLICABLE and part.note else "")
    reading = undecided_text(part)
    if part.near and part.mde is not None:
        reading += f"; MDE {part.mde:.3g}"
    plain = not (part.within or part.near)
    return f"inconclusive ({reading})" + (f": {part.note.strip()}" if plain and part.note else "")


def part_rows(result: ClaimResult) -> list[list[str]]:
    """The per-part table of a verdict (PART_COLUMNS)."""
    # every measure a part read, the deciding one first: a verdict set by a second measure shows it
    return [[p.assertion, p.test, "; ".join(effects), verdict_text(p)]
            for p, effects in zip(result.verdict.parts, result.effects)]


def parts_tested(verdict) -> str:
    """What the tested parts of a not-testable verdict read ("part 3 supported, parts 1–2 lean toward
    not reproduced"), so its headline does not hide them (referee 17); "" for any other verdict or none tested."""
    if verdict.status != NOT_TESTABLE:
        return ""
    readings: dict[str, list[int]] = {}
    for i, part in enumerate(verdict.parts or (), 1):
        if part.status == INCONCLUSIVE:
            said = headline_reading(part)
        elif part.status in (SUPPORTED, CONTRADICTED):
            said = shown_status(part.status)
        else:
            continue
        readings.setdefault(said, []).append(i)
    return ", ".join(f"part{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} {said}"
                     for said, ids in readings.items())


NOT_RUN = "not run here"  # a claim whose arms no run has (the sweep that runs them is named)


def verdict_words(status: str) -> str:
    """A claim's status in the words every surface prints (report.md, report.html, claims.csv's verdict column,
    the synthesis, the multiplicity paragraph, the study runner's last lines): a claim the runs lack the arms or
    the model of reads "not run here" (referee 18: "not applicable" read as if the claim did not apply),
    "contradicted" reads "not reproduced in this setup" (shown_status), every other status as it is. The
    machine value is kept only where a program reads it (claims.csv's verdict_code)."""
    return NOT_RUN if status == NOT_APPLICABLE else shown_status(status)


def shown_as(verdict) -> str:
    """The status of ``verdict`` as the page prints it (verdict_words)."""
    return verdict_words(verdict.status)


def claim_view(result: ClaimResult, titles: dict[str, str] | None = None) -> ClaimView:
    """`titles`: study id -> the title the report gives it (StudyResult.titles)."""
    claim, verdict = result.claim, result.verdict
    evidence = verdict.evidence
    table = Table([str(c) for c in evidence.columns],
                  [[number(v, 4) if not isinstance(v, str) else v for v in row]
                   for row in evidence.itertuples(index=False, name=None)])
    arms = ", ".join(f"{name}: {n}" for name, n in verdict.n_per_arm.items()) or "—"
    return ClaimView(claim.id, claim.statement, claim.citation, verdict.status, effect_text(verdict.effect),
                     [effect_text(e) for e in verdict.more_effects], arms, verdict.context or verdict.explanation, table,
                     verdict.status.split(" on ")[0].replace(" ", "-"),
                     Table(list(PART_COLUMNS), part_rows(result), wrap=tuple(PART_COLUMNS),
                           keep=tuple(PART_COLUMNS[2:])),
                     (titles or {}).get(verdict.study, verdict.study),
                     f"claim-{claim.id}" + (f"-{re.sub(r'[^A-Za-z0-9_-]+', '-', verdict.study)}" if verdict.study else ""),
                     str(verdict.study or ""), _text(getattr(claim, "quote", None)), _text(getattr(claim, "where", None)),
                     _text(getattr(verdict, "scale", None)), shown_as(verdict), dict(result.figures),
                     tested=parts_tested(verdict))


def _text(value) -> str:
    """An optional attribute (a claim's quote, a verdict's scale) as text; "" when absent."""
    return "" if value is None else str(value)


def trained_count(runs: pd.DataFrame) -> int:
    return int(runs["status"].isin(TRAINED).sum())


def _lrs(values) -> str:
    return ", ".join(format_value(v) for v in values) if values else "none"


def sensitivity_table(arms: pd.DataFrame, points: pd.DataFrame) -> Table:
    """Per arm: best lr, stable lrs and the stable range, and where runs diverged (tuning.sensitivity)."""
    tasks = arms["task"].nunique() > 1
    columns = [*(["task"] if tasks else []), "arm", "lrs tried", "best lr (★)", "final val at best (mean)",
               "tolerance", "stable lrs", "largest stable lr", "stable range (largest ÷ smallest)", "diverged runs"]
    body = []
    for _, row in arms.iterrows():
        mine = points[(points["task"] == row["task"]) & (points["arm"] == row["arm"])]
        diverged = "; ".join(f"lr {format_value(p.lr)}: {int(p.diverged)}/{int(p.runs)}"
                             for p in mine.itertuples() if p.diverged) or "none"
        top = row["largest_stable"]
        censored = (" (the largest tried: a lower bound)" if row["stable_lrs"] and math.isclose(top, row["grid_high"])
                    else "")
        body.append([*([str(row["task"])] if tasks else []), str(row["arm_label"]),
                     f"{int(row['lrs'])} ({format_value(row['grid_low'])}–{format_value(row['grid_high'])})",
                     format_value(row["best_lr"]) if row["best_lr"] is not None and not pd.isna(row["best_lr"])
                     else f"— ({row['why']})",
                     number(row["best_mean"]), number(row["tolerance"], 3), _lrs(row["stable_lrs"]),
                     (number(top) + censored) if row["stable_lrs"] else "—",
                     f"{number(row['stable_range'], 3)}×" if row["stable_lrs"] else "—", diverged])
    body, note = _cut(body, "arms")
    return Table(columns, body, note)


def tuned_leaderboard_tables(boards: list[dict]) -> list[Leaderboard]:
    """The tuned comparison per task (tuning.tuned_leaderboards): arms on the evaluation runs' test metric."""
    out = []
    for board in boards:
        metric = board["metric"]
        columns = ["★", "arm", "chosen lr (selection runs)", "lr run", f"test {metric} mean ± 95% CI", "runs",
                   "diverged", "p (shown worse by another arm; ★ lost at α/(k − 1))"]
        body = []
        for row in board["rows"]:
            n_ok = row["n"] - row["diverged"]
            if not math.isfinite(row["test_mean"]):
                score = "—"
            elif math.isfinite(row["test_high"]):
                score = f"{number(row['test_mean'])} ± {number(row['test_high'] - row['test_mean'], 2)}"
            else:
                score = f"{number(row['test_mean'])} (n={n_ok})"
            body.append(["★" if row["star"] else "", row["arm_label"],
                         number(row["chosen_lr"]) if row["chosen_lr"] is not None else "—",
                         ", ".join(format_value(v) for v in row["lr_run"]), score, str(row["n"]),
                         str(row["diverged"]), ("best (tie)" if row.get("tie") else "best") if row["best"]
                         else number(row["p"], 3)])
        body, cut = _cut(body, "arms")
        note = "; ".join(board["notes"] + ([cut] if cut else []))
        out.append(Leaderboard(str(board["task"]), metric, bool(board["higher_is_better"]), Table(columns, body, note)))
    return out


def profile_table(summary: pd.DataFrame, taus: tuple[float, ...]) -> Table:
    """ρ at a few τ, the area, and how many tasks each arm reached the target on (performance_profiles.py)."""
    columns = ["arm", *[f"ρ({format_value(t)})" for t in taus], "area (log τ, 1…4)", "tasks reached / tasks"]
    body = [[str(row["arm"]), *[number(row[f"rho_{format_value(t)}"], 3) for t in taus], number(row["area"], 3),
             f"{int(row['reached'])} / {int(row['tasks'])}"] for _, row in summary.iterrows()]
    return Table(columns, body)
