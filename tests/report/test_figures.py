"""The figures as a reader meets them: sized by content, nothing drawn over anything, text legible.

Every PNG records what `layout_problems` found on its laid-out matplotlib figure (tick-label and
text bounding boxes, panel heights, legend entries) and its smallest text; these tests read that
back on a crafted report of 40 arms, so they need no browser.
"""

from __future__ import annotations

import matplotlib
import pytest
from PIL import Image

from normbench.report import figures
from normbench.report.figures import LAYOUTS, MIN_FONT_KEY, NARROW, PROBLEMS_KEY, WIDE, drawing


def _pngs(report):
    folder = report.parent / "figures"
    return {layout.key: sorted((folder / layout.folder).glob("*.png")) for layout in LAYOUTS}


@pytest.fixture(params=["small", pytest.param("40 arms", marks=pytest.mark.slow)])
def report(request):
    return request.getfixturevalue("small_crafted_report" if request.param == "small" else "crafted_report")


def test_every_figure_has_both_renderings_and_no_layout_problem(report):
    pngs = _pngs(report)
    assert {p.name for p in pngs["wide"]} == {p.name for p in pngs["narrow"]}
    names = {p.stem for p in pngs["wide"]}
    # one set per study (adding_norms sorts first; the other study's files carry "-2")
    assert {"tradeoff", "tradeoff-2", "curves_loss_vs_step", "curves_loss_vs_step-2", "throughput-2",
            "grad_flow_through_time", "heatmap_primary-2", "grad_norm_vs_step-2"} <= names, names
    for layout in LAYOUTS:
        for png in pngs[layout.key]:
            with Image.open(png) as image:
                assert image.text[PROBLEMS_KEY] == "", (layout.key, png.name, image.text[PROBLEMS_KEY])


COLUMN_PX = {"wide": 1170, "narrow": 400}  # the page column each layout is drawn for (the report's CSS)


def test_text_stays_legible_where_each_rendering_is_shown(report):
    """Shown at its column's width (1170 px at a desktop, 400 px on a phone), no text is below 9 px,
    and no PNG is so narrow that it would be blown up past 1.5x."""
    for layout in LAYOUTS:
        for png in _pngs(report)[layout.key]:
            with Image.open(png) as image:
                scale = COLUMN_PX[layout.key] / image.width
                assert float(image.text[MIN_FONT_KEY]) * scale >= 9, (layout.key, png.name, image.width)
                assert scale <= 1.5, (layout.key, png.name, image.width)


def test_panel_heights_follow_the_panel_count(small_crafted_report):
    """8 arms make small multiples (one panel per arm), so that figure is much taller than the
    4-arm study's single panel, and its narrow rendering (2 panels a row) taller than the wide one (4 a row)."""
    folder = small_crafted_report.parent / "figures"
    # one curves figure per study (their numbers follow the studies' order): the 8-arm one is the tallest
    sizes = {p.name: Image.open(p).size for p in (folder / "narrow").glob("curves_val_vs_step*.png")}
    tallest = max(sizes, key=lambda name: sizes[name][1])
    many, few = sizes[tallest], min(sizes.values(), key=lambda size: size[1])
    assert len(sizes) == 3 and many[1] > 2 * few[1]
    assert Image.open(folder / tallest).size[1] < many[1]


def test_the_check_finds_overlapping_tick_labels_and_repeated_legend_labels():
    with matplotlib.rc_context(drawing.STYLE):
        figure, (ax,) = drawing.grid(NARROW, 1, 3.0)
        ax.set_xticks(range(40), [f"label number {i}" for i in range(40)])
        ax.set_xlim(0, 39)
        ax.plot([0, 1], [0, 1], label="norm=ln, placement=…")
        ax.plot([0, 1], [1, 0], label="norm=ln, placement=…")
        ax.legend()
        figure.draw_without_rendering()
        found = figures.layout_problems(figure)
    assert any("tick labels" in p and "overlap" in p for p in found), found
    assert any("legend repeats" in p for p in found) and any("cuts a label short" in p for p in found), found


@pytest.mark.filterwarnings("ignore:constrained_layout not applied")
def test_the_check_finds_a_squashed_panel():
    with matplotlib.rc_context(drawing.STYLE):
        figure, panels = drawing.grid(WIDE, 8, 0.35, columns=1)
        figure.draw_without_rendering()
        assert any("squashed" in p for p in figures.layout_problems(figure))


@pytest.mark.parametrize("count", [3, 30])
def test_legends_keep_every_label_whole(count):
    labels = [f"norm=ln, placement=pre, lr={i}, warmup_steps=100, gamma_init=0.1, batch_size=32" for i in range(count)]
    plan = drawing.legend_plan(labels, NARROW)
    assert [w.replace("\n", " ") for w in plan.labels] == labels
    assert plan.height >= 0.2 * sum(w.count("\n") + 1 for w in plan.labels) / plan.ncols
