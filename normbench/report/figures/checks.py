"""The checks a laid-out figure must pass before it is saved: tick labels, titles, legend
entries and direct labels not over each other, no squashed panel, no legend that repeats or cuts
a label, every direct label nearer its own point than any other (`layout_problems`)."""

from __future__ import annotations

import itertools
import math

import matplotlib.collections
import matplotlib.text
import numpy as np
from matplotlib.figure import Figure as MplFigure

from normbench.report.figures import drawing
from normbench.report.figures.drawing import MIN_FONT_PT


def visible_texts(figure: MplFigure) -> list[matplotlib.text.Text]:
    return [t for t in figure.findobj(matplotlib.text.Text)
            if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())]


def smallest_text_px(figure: MplFigure) -> float:
    return min((t.get_fontsize() for t in visible_texts(figure)), default=MIN_FONT_PT) * drawing.DPI / 72


def overlap(a, b, slack: float = 1.0) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > slack) and (min(a.y1, b.y1) - max(a.y0, b.y0) > slack)


def scatter_markers(ax, renderer) -> list[tuple[float, float, float]]:
    """Every scatter marker the panel draws: (x, y, radius) in display pixels."""
    found = []
    for collection in ax.collections:
        if not isinstance(collection, matplotlib.collections.PathCollection) or not collection.get_visible():
            continue
        offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
        if not len(offsets):
            continue
        centres = collection.get_offset_transform().transform(offsets)
        sizes = np.resize(np.asarray(collection.get_sizes(), dtype=float), len(centres)) if len(
            collection.get_sizes()) else np.full(len(centres), matplotlib.rcParams["lines.markersize"] ** 2)
        radii = np.sqrt(sizes) / 2 * ax.figure.dpi / 72  # a scatter size is the marker's area in pt²
        found += [(float(x), float(y), float(r)) for (x, y), r in zip(centres, radii) if np.isfinite([x, y]).all()]
    return found


def gap(box, x: float, y: float, radius: float) -> float:
    """Pixels from a text box to the edge of a marker (negative: the box covers part of it)."""
    dx = max(box.x0 - x, 0.0, x - box.x1)
    dy = max(box.y0 - y, 0.0, y - box.y1)
    return math.hypot(dx, dy) - radius


def misplaced(box, own: tuple[float, float], markers: list[tuple[float, float, float]]) -> list[str]:
    """What is wrong with a label's text box `box` for the point at display `own`: it covers a
    marker (its own or another point's), or another point lies nearer to it than its own."""
    mine = [m for m in markers if math.hypot(m[0] - own[0], m[1] - own[1]) <= 0.5]
    others = [m for m in markers if m not in mine]
    found = []
    if any(gap(box, *m) < -0.5 for m in mine):
        found.append("covers its own point")
    if any(gap(box, *m) < -0.5 for m in others):
        found.append("sits on another point")
    nearest_own = min((gap(box, *m) for m in mine), default=gap(box, own[0], own[1], 0.0))
    if any(gap(box, *m) < nearest_own for m in others):
        found.append("is nearer another point than its own")
    return found


def label_point_problems(ax, renderer=None) -> list[str]:
    """A direct label (an annotation with gid "label") must name its own point without doubt: its
    text box covers no marker (its own point's or another's) and lies nearer its own point than
    any other point. Checked on the drawn artists in display pixels: each label's text box from
    the renderer, each point where its scatter collection puts it, with its marker's size."""
    renderer = renderer or ax.figure.canvas.get_renderer()
    markers = scatter_markers(ax, renderer)
    problems = []
    for note in ax.texts:
        if note.get_gid() != "label" or not note.get_visible() or not isinstance(note, matplotlib.text.Annotation):
            continue
        own = tuple(ax.transData.transform(np.asarray(note.xy, dtype=float)))
        problems += [f"label {note.get_text()!r} {what}"
                     for what in misplaced(note.get_window_extent(renderer), own, markers)]
    return problems


def layout_problems(figure: MplFigure) -> list[str]:
    """What would make a laid-out figure hard to read, each in a phrase: tick labels (or any of the
    figure's labels, titles and legend entries) drawn over each other, a panel squashed below
    drawing.MIN_PANEL_PX, a legend that repeats a label or cuts one short, a direct label (gid "label") on
    a point's marker or nearer another point than its own (`label_point_problems`). Heatmap cell
    values are left out (they sit inside their cells by construction)."""
    renderer = figure.canvas.get_renderer()
    problems: list[str] = []
    owned: list[tuple[object, str, object]] = []  # (owner, the text, its box)
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        frame = ax.get_window_extent(renderer)
        if frame.height < drawing.MIN_PANEL_PX and frame.width > frame.height:
            problems.append(f"panel {ax.get_title()!r} squashed to {frame.height:.0f} px")
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            low, high = (frame.x0, frame.x1) if name == "x" else (frame.y0, frame.y1)
            shown = []
            for label in axis.get_ticklabels(which="both"):
                if not (label.get_visible() and label.get_text().strip()):
                    continue
                box = label.get_window_extent(renderer)
                centre = (box.x0 + box.x1) / 2 if name == "x" else (box.y0 + box.y1) / 2
                if low - 1 <= centre <= high + 1:  # ticks outside the view are not drawn
                    shown.append((label.get_text(), box))
            for (a, box_a), (b, box_b) in itertools.combinations(shown, 2):
                if overlap(box_a, box_b):
                    problems.append(f"{name} tick labels {a!r} and {b!r} overlap in panel {ax.get_title()!r}")
            owned += [((ax, name), t, box) for t, box in shown]
        for decoration in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if decoration.get_visible() and decoration.get_text().strip():
                owned.append((decoration, decoration.get_text(), decoration.get_window_extent(renderer)))
        owned += [(t, t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                  if t.get_gid() == "label" and t.get_visible()]
        problems += label_point_problems(ax, renderer)
    legends = list(figure.legends) + [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    for legend in legends:
        entries = [t.get_text() for t in legend.get_texts()]
        repeated = sorted({e for e in entries if entries.count(e) > 1})
        if repeated:
            problems.append(f"legend repeats {repeated[0]!r}")
        if any(e.rstrip().endswith("…") for e in entries):
            problems.append("legend cuts a label short")
        owned += [(t, t.get_text(), t.get_window_extent(renderer)) for t in legend.get_texts()]
    for (owner_a, a, box_a), (owner_b, b, box_b) in itertools.combinations(owned, 2):
        if owner_a is not owner_b and not (isinstance(owner_a, tuple) and owner_a == owner_b) and overlap(box_a, box_b, 2.0):
            problems.append(f"{a!r} and {b!r} overlap")
    return list(dict.fromkeys(problems))
