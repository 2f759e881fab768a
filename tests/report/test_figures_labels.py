"""Direct labels name their own point, checked on the drawn artists; figures that would say nothing
are not drawn; speed is labelled by what it rests on; captions point to one glossary."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pandas as pd
from PIL import Image

from normbench.report import figures
from normbench.report.figures import LAYOUTS, PROBLEMS_KEY, WIDE, drawing, png, tradeoffs

METRICS = {"adding": ("mse", False)}


def _arms(timing: str = "per-run") -> pd.DataFrame:
    """Three arms of one task: two whose points nearly coincide on the page, one far from both."""
    return pd.DataFrame({
        "task": "adding", "label": ["norm=ln, placement=pre", "norm=rms, placement=pre", "norm=bn, placement=post"],
        "samples_per_s_median": [1000.0, 1012.0, 3000.0], "final_val_mean": [0.100, 0.101, 0.30],
        "final_val_n": 5, "final_val_ci_low": [0.09, 0.09, 0.28], "final_val_ci_high": [0.11, 0.11, 0.32],
        "rank": [1.0, 2.0, 3.0], "best": [True, True, False], "divergence_rate": 0.0, "timing": timing})


def _panel(arms: pd.DataFrame):
    figure, (ax,) = drawing.grid(WIDE, 1, 3.8)
    ax.scatter(arms["samples_per_s_median"], arms["final_val_mean"], s=70, marker="*")
    figure.draw_without_rendering()
    return figure, ax


def test_a_label_on_another_arms_point_is_found_and_the_placement_avoids_it():
    arms = _arms()
    with matplotlib.rc_context(drawing.STYLE):
        figure, ax = _panel(arms)
        near = ax.transData.transform([[1000.0, 0.100], [1012.0, 0.101]])
        assert np.hypot(*(near[0] - near[1])) < 15  # close on the page: a label beside one is near the other
        # arm 1's label written over arm 2's point: its box covers that marker
        ax.annotate("1: norm=ln, placement=pre", (1000.0, 0.100), xytext=(1012.0, 0.101), textcoords="data",
                    ha="center", va="center", gid="label")
        found = figures.layout_problems(figure)
        assert any("sits on another point" in p for p in found), found
        # beside its own point but on the side of the other point, clear of both markers: nearer the other
        for note in list(ax.texts):
            note.remove()
        ax.annotate("1", (1000.0, 0.100), xytext=(13, -5), textcoords="offset points", gid="label")
        found = figures.layout_problems(figure)
        assert any("nearer another point" in p for p in found), found

        for note in list(ax.texts):
            note.remove()
        tradeoffs.label_points(ax, arms, "final_val")
        assert figures.layout_problems(figure) == []
        labels = [t.get_text() for t in ax.texts if t.get_gid() == "label"]
        assert len(labels) == 3, labels  # every point keeps a label (its rank at least)


def test_the_trade_off_figure_passes_its_own_check_with_close_points(tmp_path, monkeypatch):
    legends = []
    save = png.save

    def keep_legend(figure, *rest):
        legends.append([t.get_text() for legend in figure.legends for t in legend.get_texts()])
        save(figure, *rest)

    monkeypatch.setattr(png, "save", keep_legend)
    figure = figures.tradeoff(_arms(), METRICS, tmp_path)
    for layout in LAYOUTS:
        with Image.open(tmp_path / "figures" / layout.folder / "tradeoff.png") as image:
            assert image.text[PROBLEMS_KEY] == "", (layout.key, image.text[PROBLEMS_KEY])
    # the fast arm is also the worse one: two arms on the front, so a line is drawn and named
    assert all("Pareto front" in entries for entries in legends), legends
    assert figure.speed == "unpaired" and "unpaired per-run throughput" in figure.caption


def test_a_one_point_pareto_front_is_neither_drawn_nor_named(tmp_path, monkeypatch):
    legends = []
    save = png.save
    monkeypatch.setattr(png, "save", lambda figure, *rest: (legends.append(
        [t.get_text() for legend in figure.legends for t in legend.get_texts()]), save(figure, *rest)))
    dominant = _arms("paired").assign(samples_per_s_median=[3000.0, 1000.0, 1012.0])  # fastest and best
    figure = figures.tradeoff(dominant, METRICS, tmp_path)
    assert legends and not any("Pareto front" in entries for entries in legends), legends
    assert figure.speed == "paired" and figure.title == "Metric against speed"


def test_throughput_is_labelled_unpaired_unless_every_bar_is_paired(tmp_path):
    bars = _arms().assign(samples_per_s_min=900.0, samples_per_s_max=3100.0, noisy=False)
    unpaired = figures.throughput(bars, tmp_path, "", 1.5)
    paired = figures.throughput(bars.assign(timing="paired"), tmp_path, "", 1.5, suffix="-2")
    assert unpaired.speed == "unpaired" and unpaired.title == "Unpaired per-run throughput"
    assert paired.speed == "paired" and "paired timing" in paired.title


def test_whole_process_memory_draws_no_chart_and_gpu_memory_does(tmp_path):
    bars = _arms().assign(peak_memory_mb_median=[300.0, 301.0, 420.0])
    assert figures.peak_memory(bars.assign(memory_kind="process_rss_sampled"), tmp_path, "") is None
    assert figures.peak_memory(bars.assign(memory_kind="cuda_max_allocated", peak_memory_mb_median=50.0),
                               tmp_path, "") is None  # every arm the same: no information
    assert figures.peak_memory(bars.assign(memory_kind="cuda_max_allocated"), tmp_path, "") is not None


def test_one_memory_table_pools_the_settings_that_vary(runs_of):
    runs = runs_of(*[{"seed": i % 2, "axes": {"norm": norm, "placement": "pre"},
                      "throughput": {"peak_memory_mb": 1.0, "memory_kind": "process_rss_sampled"}}
                     for i, norm in enumerate(["ln", "ln", "bn", "bn"])])
    runs["throughput.peak_memory_mb"] = [100.0, 102.0, 150.0, 150.0]
    table = figures.memory_table(runs)
    assert list(table["norm"]) == ["ln", "bn"] and list(table["runs"]) == [2, 2]
    assert "placement" not in table  # one value everywhere: not a column
    assert list(table["min–max MB"]) == ["100–102", "150"] and len(table.columns) <= 12


def test_no_divergence_map_when_no_run_diverged(tmp_path):
    class Grid:
        def __init__(self, diverged):
            index = pd.Index(["ln", "bn"], name="norm")
            columns = pd.Index(["pre", "post"], name="placement")
            self.metric = pd.DataFrame([[0.1, 0.2], [0.3, 0.4]], index=index, columns=columns)
            self.half_width = self.metric * 0.1
            self.n = self.metric * 0 + 3
            self.diverged = pd.DataFrame(diverged, index=index, columns=columns)

    calm = figures.heatmaps([figures.HeatmapPanel("adding", "adding", Grid([[0.0, 0.0], [0.0, np.nan]]))],
                            "axes.norm", "axes.placement", METRICS, tmp_path, "")
    assert [f.name for f in calm] == ["heatmap_primary"] and "No run diverged" in calm[0].caption
    stormy = figures.heatmaps([figures.HeatmapPanel("adding", "adding", Grid([[0.0, 0.5], [0.0, 0.0]]))],
                              "axes.norm", "axes.placement", METRICS, tmp_path, "", "-2")
    assert [f.name for f in stormy] == ["heatmap_primary-2", "heatmap_divergence-2"]


def test_captions_are_short_and_name_only_glossary_terms(small_crafted_report):
    """Each figure the report draws refers to the glossary for its long explanations."""
    html = small_crafted_report.read_text()
    terms = re.findall(r"[Ss]ee the glossary: ([^.()<]+)", html)
    assert terms and "see the glossary" not in re.sub(r"[Ss]ee the glossary: [^.()<]+", "", html).lower()
    for term in terms:
        for name in term.split(","):
            assert name.strip() in figures.GLOSSARY, name
    assert set(figures.STUDY_FIGURE_ORDER) <= {n for n in dir(figures) if callable(getattr(figures, n))}


def test_the_smaller_pngs_keep_every_plotted_colour_exact(tmp_path):
    """The reduced palette the PNGs are saved with still holds each line's colour as drawn (a coarser one
    would merge neighbouring arms' colours)."""
    def draw(layout):
        figure, (ax,) = drawing.grid(layout, 1, 3.0)
        for index in range(6):
            ax.plot(np.arange(50), np.sin(np.arange(50) / (index + 2)) + index, linewidth=1.6,
                    **drawing.line_style(index))
        return figure

    png.render(tmp_path, "lines", draw)
    with Image.open(tmp_path / "figures" / "lines.png") as image:
        assert image.mode == "P"
        palette = np.asarray(image.getpalette()[:768], dtype=float).reshape(-1, 3)
    for colour in figures.PALETTE[:6]:
        assert np.abs(palette - np.asarray(colour) * 255).sum(axis=1).min() <= 3, colour
