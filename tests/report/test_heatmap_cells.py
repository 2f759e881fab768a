"""The heatmap's cells, drawn with matplotlib alone: blank where a value is missing, text in the shade
that reads on its colour, row names across when short, along the axis when long."""

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from normbench.report.figures import heatmap


def drawn(table: pd.DataFrame, annotations):
    figure = Figure(figsize=(6, 3))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    heatmap._cells(ax, table, "viridis", 0.0, 1.0, annotations, "score")
    return ax


def test_cells_are_blank_where_missing_and_their_text_reads_on_their_colour():
    table = pd.DataFrame([[0.0, 1.0], [np.nan, 0.5]], index=["ln", "bn"], columns=["pre", "post"])
    texts = np.array([["dark cell", "light cell"], ["missing", "middle"]])
    ax = drawn(table, texts)
    shown = {t.get_text(): t.get_color() for t in ax.texts}
    assert set(shown) == {"dark cell", "light cell", "middle"}  # nothing written on the missing cell
    assert shown["dark cell"] == heatmap.LIGHT_TEXT and shown["light cell"] == heatmap.DARK_TEXT  # viridis: 0 dark, 1 yellow
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ln", "bn"]  # the first row on top
    assert ax.yaxis_inverted() and {t.get_rotation() for t in ax.get_yticklabels()} == {0.0}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pre", "post"] and ax.get_xticks().tolist() == [0.5, 1.5]


def test_long_row_names_run_along_the_axis_and_no_annotations_draw_no_text():
    table = pd.DataFrame([[0.2], [0.8]], index=["norm=ln, placement=in_cell", "norm=bn, placement=in_cell"], columns=["x"])
    ax = drawn(table, None)
    assert not ax.texts and {t.get_rotation() for t in ax.get_yticklabels()} == {90.0}


def test_luminance_orders_black_grey_and_white():
    assert heatmap._luminance((0, 0, 0)) == 0 and abs(heatmap._luminance((1, 1, 1)) - 1) < 1e-12
    assert 0.15 < heatmap._luminance((0.5, 0.5, 0.5)) < 0.25  # sRGB's mid grey is dark in light terms
