"""Each figure saved as PNG, once per layout: laid out, checked (checks.layout_problems), its
findings and smallest text written into the file, and quantized to a small palette."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from PIL import Image, PngImagePlugin  # matplotlib's own dependency

from normbench.report.figures import checks, drawing
from normbench.report.figures.checks import layout_problems
from normbench.report.figures.drawing import LAYOUTS, Layout

# The PNG text chunks that carry each figure's check, read back by tests and the browser check
MIN_FONT_KEY = "normbench:min_font_px"
PROBLEMS_KEY = "normbench:layout_problems"


def save(figure: MplFigure, out: Path, name: str, layout: Layout, smooth: bool = False) -> None:
    """Draws the figure once, at drawing.DPI (its constrained layout is done in that draw), checks the layout
    it drew and keeps those pixels: what is checked is what is saved, and the figure is drawn once, not
    laid out in one draw and drawn again by savefig (which took about a third of a report's figure time)."""
    figure.set_dpi(drawing.DPI)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    problems = layout_problems(figure)
    smallest = checks.smallest_text_px(figure)
    folder = out / "figures" / layout.folder
    folder.mkdir(parents=True, exist_ok=True)
    drawn = Image.frombuffer("RGBA", canvas.get_width_height(physical=True), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    # A plot has few colours: a 256-colour palette keeps it sharp at a third of the bytes, and
    # report.html carries every figure twice. The octree quantizer keeps the plotted colours exact
    # (the palette's lines and markers) and cuts another third of the bytes; it bands a continuous
    # colour scale, so a figure with one (`smooth`, the heatmaps' colour bars) keeps median cut.
    info = PngImagePlugin.PngInfo()
    info.add_text(MIN_FONT_KEY, f"{smallest:.2f}")
    info.add_text(PROBLEMS_KEY, "; ".join(problems))
    with drawn as image:
        method = Image.Quantize.MEDIANCUT if smooth else Image.Quantize.FASTOCTREE
        image.convert("RGB").quantize(256, method=method).save(
            folder / f"{name}.png", format="PNG", optimize=True, pnginfo=info)
    figure.clear()


def render(out: Path, name: str, draw: Callable[[Layout], MplFigure], smooth: bool = False) -> None:
    """`draw` once per layout, each saved where its layout's PNGs go (`smooth`: it has a colour scale)."""
    with matplotlib.rc_context(drawing.STYLE):
        for layout in LAYOUTS:
            save(draw(layout), out, name, layout, smooth)
