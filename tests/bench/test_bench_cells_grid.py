"""`bench cells --grid axes`: each axis walked from one point, targets beside ratios, the lower bound beside a miss,
and the masked variable-length point (timed where the layer takes lengths, skipped with the reason where not)."""

import json

from normbench.bench import cells
from normbench.bench.__main__ import main
from normbench.models.recurrent import InCellLayer
from normbench.norms import NormSpec

TINY_AXES = {"hidden": ((4, 6), {"batch": 2, "length": 3}), "length": ((3, 5), {"hidden": 4, "batch": 2})}
TINY_MASKED = {"batch": 3, "length": 4, "hidden": 4}


class TakesLengths(InCellLayer):
    """An in-cell layer whose forward accepts per-example lengths, as the variable-length models will."""

    def forward(self, x, trace=None, lengths=None):
        self.seen_lengths = lengths
        return super().forward(x, trace)


def test_the_axes_walk_each_axis_from_the_middle_point_not_the_product():
    points = {(p["batch"], p["length"], p["hidden"]): axis for axis, p in cells.axis_points()}
    assert set(points) == {(32, 64, h) for h in (64, 128, 256, 512, 1024)} | {(b, 64, 256) for b in (1, 8, 128)} \
        | {(32, 512, 128)}
    assert points[(32, 64, 128)] == "hidden+length" and points[(32, 64, 256)] == "hidden+batch"


def test_a_tiny_grid_prints_each_ratio_beside_its_target_and_times_the_masked_point():
    section = cells.run_grid(family="lstm", input_size=3, quick=True, repeats=1, axes=TINY_AXES,
                             masked_point=TINY_MASKED)
    grid = section.extra["grid"]
    assert [(g["batch"], g["length"], g["hidden"]) for g in grid if g["axis"] != "masked"] == [
        (2, 3, 4), (2, 3, 6), (2, 5, 4)]
    assert all(g["target"] == cells.TARGETS["lstm"] for g in grid if g["axis"] != "masked")
    masked = [g for g in grid if g["axis"] == "masked"]
    # the models take lengths (issue 23): the masked point is timed against the same layer at fixed length
    assert len(masked) == 1 and masked[0]["skipped"] is None and masked[0]["target"] == cells.MASKED_TARGET
    assert masked[0]["ratio"] > 0 and "| lstm | masked |" in section.markdown
    assert any("variable-length batch" in r.name for r in section.ratios)


def test_a_point_that_misses_shows_the_lower_bound(monkeypatch):
    monkeypatch.setattr(cells, "TARGETS", {"lstm": 1e-9, "gru": 1e-9})  # nothing can meet this
    section = cells.run_grid(family="lstm", input_size=3, quick=True, repeats=1, axes=TINY_AXES, masked=False)
    grid = section.extra["grid"]
    assert all(g["met"] is False and g["lower_bound"] > 0 for g in grid)
    in_cell_lines = [r for r in section.ratios if r.name.startswith("in-cell")]
    assert in_cell_lines and all("lower bound" in r.note for r in in_cell_lines)


def test_the_masked_candidate_runs_where_the_layer_takes_lengths(monkeypatch):
    monkeypatch.setattr(cells, "InCellLayer", TakesLengths)
    shape = cells.CellShape("lstm", 3, 4, 2, 4)
    steps, facts = cells.build_steps(shape, NormSpec("ln"), candidates=("in_cell", cells.MASKED))
    assert facts["skipped"] == {} and cells.MASKED in steps
    steps[cells.MASKED]()
    lengths = steps[cells.MASKED].model.layer.seen_lengths
    assert int(lengths.max()) == 4 and int(lengths.min()) >= 2
    section = cells.run_grid(family="lstm", input_size=2, quick=True, repeats=1,
                             axes={"hidden": ((4,), {"batch": 2, "length": 3})}, masked_point=TINY_MASKED)
    masked = [g for g in section.extra["grid"] if g["axis"] == "masked"][0]
    assert masked["skipped"] is None and masked["ratio"] > 0 and masked["target"] == cells.MASKED_TARGET


def test_without_mask_support_the_masked_candidate_is_skipped_not_failed(monkeypatch):
    assert cells.mask_keyword(InCellLayer("lstm", 2, 4, NormSpec("ln"))) == "lengths"  # this checkout's models
    monkeypatch.setattr(cells, "mask_keyword", lambda layer: None)  # a layer that takes no lengths
    steps, facts = cells.build_steps(cells.CellShape("lstm", 2, 3, 2, 4), NormSpec("ln"),
                                     candidates=("in_cell", cells.MASKED))
    assert cells.MASKED not in steps and cells.MASKED in facts["skipped"]


def test_the_grid_cli_writes_its_own_files(tmp_path, monkeypatch, rising_load):
    monkeypatch.setattr(cells, "QUICK_AXES", {"hidden": ((4,), {"batch": 2, "length": 3})})
    assert main(["cells", "--grid", "axes", "--quick", "--repeats", "1", "--family", "gru", "--input-size", "2",
                 "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "cells-grid.json").read_text())
    assert data["section"] == "cells-grid" and data["grid"][0]["target"] == cells.TARGETS["gru"]
    assert {"load_1m", "cpu_pressure"} <= set(data["environment"])
    assert data["environment"]["load_1m"] == {"start": 1.25, "end": 8.75}
    markdown = (tmp_path / "cells-grid.md").read_text()
    assert "Machine: 1-minute load 1.25 at start, 8.75 at the end;" in markdown and markdown.count("load") == 1
