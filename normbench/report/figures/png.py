"""Each figure saved as PNG, once per layout: laid out, checked (checks.layout_problems), its
findings and smallest text written into the file, and quantized to a small palette."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Callable

import matplotlib
from matplotlib.figure import Figure as MplFigure
from PIL import Image, PngImagePlugin  # matplotlib's own dependency

from normbench.report.figures import checks, drawing
from normbench.report.figures.checks import layout_problems
from normbench.report.figures.drawing import LAYOUTS, Layout

# The PNG text chunks that carry each figure's check, read back by tests and the browser check
MIN_FONT_KEY = "normbench:min_font_px"
PROBLEMS_KEY = "normbench:layout_problems"


def save(figure: MplFigure, out: Path, name: str, layout: Layout, smooth: bool = False) -> None:
    """Lays the figure out once (constrained layout), checks it, then freezes that layout and renders it:
    laid out again at save time, the figure could differ from what was checked (and it costs a second layout)."""
    figure.draw_without_rendering()
    problems = layout_problems(figure)
    smallest = checks.smallest_text_px(figure)
    figure.set_layout_engine("none")
    folder = out / "figures" / layout.folder
    folder.mkdir(parents=True, exist_ok=True)
    drawn = io.BytesIO()
    figure.savefig(drawn, dpi=drawing.DPI, format="png")
    figure.clear()
    # A plot has few colours: a 256-colour palette keeps it sharp at a third of the bytes, and
    # report.html carries every figure twice. The octree quantizer keeps the plotted colours exact
    # (the palette's lines and markers) and cuts another third of the bytes; it bands a continuous
    # colour scale, so a figure with one (`smooth`, the heatmaps' colour bars) keeps median cut.
    info = PngImagePlugin.PngInfo()
    info.add_text(MIN_FONT_KEY, f"{smallest:.2f}")
    info.add_text(PROBLEMS_KEY, "; ".join(problems))
    with Image.open(drawn) as image:
        method = Image.Quantize.MEDIANCUT if smooth else Image.Quantize.FASTOCTREE
        image.convert("RGB").quantize(256, method=method).save(
            folder / f"{name}.png", format="PNG", optimize=True, pnginfo=info)


def render(out: Path, name: str, draw: Callable[[Layout], MplFigure], smooth: bool = False) -> None:
    """`draw` once per layout, each saved where its layout's PNGs go (`smooth`: it has a colour scale)."""
    with matplotlib.rc_context(drawing.STYLE):
        for layout in LAYOUTS:
            save(draw(layout), out, name, layout, smooth)
