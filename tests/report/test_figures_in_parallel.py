"""Figures drawn in forked children while the report goes on (png.in_parallel): the same files as drawn in the
report's own process, at most jobs - 1 drawing beside the report, a failure said with its traceback, and no child
left behind when the report stops."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from matplotlib.figure import Figure as MplFigure

from normbench.report import build_report
from normbench.report.figures import png
from normbench.report.figures.drawing import LAYOUTS
from tests.waiting import HANG_S

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="figures are drawn in forked children only with fork")


def tiny(layout) -> MplFigure:
    figure = MplFigure(figsize=(3, 2), layout="constrained")
    figure.add_subplot().plot([0, 1, 2], [1, 0, 2])
    return figure


def files(out: Path, name: str) -> list[Path]:
    return [out / "figures" / layout.folder / f"{name}.png" for layout in LAYOUTS]


def marking(folder: Path, name: str, seconds: float = 0.0):
    """A draw that notes when it started and ended (in files: it runs in a child)."""
    def draw(layout) -> MplFigure:
        (folder / f"{name}-{layout.folder}.start").write_text(repr(time.monotonic()))
        time.sleep(seconds)
        (folder / f"{name}-{layout.folder}.end").write_text(repr(time.monotonic()))
        return tiny(layout)
    return draw


def test_a_figure_asked_for_within_is_on_disk_once_drawn_says_so(tmp_path):
    with png.in_parallel(2):
        png.render(tmp_path, "tiny", tiny)
        png.drawn()
        assert all(path.is_file() for path in files(tmp_path, "tiny"))
        png.render(tmp_path, "later", tiny)  # a figure asked for after a wait is still drawn
    assert all(path.is_file() for path in files(tmp_path, "later"))
    assert png._drawing is None


def test_one_job_draws_in_the_reports_own_process(tmp_path):
    seen = []

    def draw(layout) -> MplFigure:
        seen.append(os.getpid())
        return tiny(layout)

    with png.in_parallel(1):
        png.render(tmp_path, "here", draw)
        assert seen == [os.getpid()] * len(LAYOUTS)  # drawn when asked, not at the end


def test_children_draw_one_at_a_time_beside_the_report_at_two_jobs(tmp_path):
    first, last = LAYOUTS[0].folder, LAYOUTS[-1].folder
    with png.in_parallel(2):
        for name in ("a", "b", "c"):
            png.render(tmp_path, name, marking(tmp_path, name, 0.1))
        deadline = time.monotonic() + HANG_S
        while not (tmp_path / f"b-{first}.start").exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the report goes on, holding its own slot, until a second child has started
        waiting = time.monotonic()
    spans = sorted((float((tmp_path / f"{n}-{first}.start").read_text()),
                    float((tmp_path / f"{n}-{last}.end").read_text())) for n in ("a", "b", "c"))
    before = [span for span in spans if span[0] < waiting]
    assert len(before) >= 2
    assert all(earlier[1] <= later[0] for earlier, later in zip(before, before[1:])), spans  # one slot: in turn


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_figure_that_fails_says_which_and_why_and_the_others_stop(tmp_path):
    def broken(layout) -> MplFigure:
        raise ValueError("no such column: mean")

    with pytest.raises(png.FigureNotDrawn, match=r"figure broken was not drawn: ValueError: no such column: mean\n"):
        with png.in_parallel(3):  # two slots: both draw at once
            png.render(tmp_path, "broken", broken)
            png.render(tmp_path, "slow", marking(tmp_path, "slow", HANG_S))
            pids = [child.pid for child in png._drawing.children]
    assert png._drawing is None
    assert all(gone(pid) for pid in pids)  # the slow one stopped and reaped, not left drawing


def test_an_os_error_in_a_child_is_an_os_error_as_drawn_here(tmp_path):
    (tmp_path / "figures").write_text("a file where the folder goes")
    with pytest.raises(OSError, match="figure tiny was not drawn"):
        with png.in_parallel(2):
            png.render(tmp_path, "tiny", tiny)


def test_a_report_stopped_mid_way_leaves_no_child_drawing(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with png.in_parallel(3):
            png.render(tmp_path, "slow", marking(tmp_path, "slow", HANG_S))
            pids = [child.pid for child in png._drawing.children]
            raise KeyboardInterrupt
    assert png._drawing is None and all(gone(pid) for pid in pids)
    assert not (tmp_path / f"slow-{LAYOUTS[0].folder}.end").exists()


def comparable(out: Path) -> dict[str, bytes]:
    """Every file of a report, its date and its own folder's name taken out of the pages."""
    found = {}
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name != ".normbench-report.json":  # the manifest holds the pages' hashes
            data = path.read_bytes().replace(str(out).encode(), b"OUT")
            if path.suffix in (".md", ".html"):
                data = b"\n".join(line for line in data.split(b"\n") if b"Generated " not in line)
            found[str(path.relative_to(out))] = data
    return found


def test_a_report_drawn_in_parallel_is_the_report_drawn_in_one_process(small_crafted_report, tmp_path):
    """The small crafted report is built with its figures in forked children (conftest: jobs=2). A draw that
    changed what the report reads afterwards (the heatmap's caption once took its colour ranges from its draw)
    would leave it different from this one, drawn in the report's own process."""
    sweep = small_crafted_report.parent.parent / "crafted_small"
    serial = build_report([sweep], tmp_path / "serial", jobs=1).parent
    parallel, alone = comparable(small_crafted_report.parent), comparable(serial)
    assert sorted(parallel) == sorted(alone) and any(name.endswith(".png") for name in alone)
    assert [name for name in alone if parallel[name] != alone[name]] == []


@pytest.fixture
def stop_signal():
    """SIGUSR1 raising KeyboardInterrupt, as a report's handlers turn SIGTERM into an exception: SIGINT itself is
    ignored in a pytest-xdist worker, and its children inherit that."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGUSR1, interrupt)
    yield signal.SIGUSR1
    signal.signal(signal.SIGUSR1, before)


def test_stops_are_noted_from_the_fork_until_the_child_handles_them(tmp_path, stop_signal):
    """A stop handled in a child just forked, before its handling, would unwind the report's own stack there (its
    staging folder removed by the child): across the fork the stop handlers only note a stop, the child puts the
    report's handlers back inside its handling, where a stop is the figure's failure, and so does the report."""
    import signal

    handler = signal.getsignal(stop_signal)

    def interrupted(layout) -> MplFigure:
        (tmp_path / "handler").write_text(signal.getsignal(stop_signal).__name__)
        os.kill(os.getpid(), stop_signal)  # in the child: KeyboardInterrupt, handled as the figure's
        time.sleep(HANG_S)
        return tiny(layout)

    with pytest.raises(png.FigureNotDrawn, match="figure stopped was not drawn: KeyboardInterrupt"):
        with png.in_parallel(2):
            png.render(tmp_path, "stopped", interrupted)
            assert signal.getsignal(stop_signal) is handler
    assert (tmp_path / "handler").read_text() == handler.__name__


def free_slots() -> int:
    import fcntl
    import struct
    import termios

    return struct.unpack("i", fcntl.ioctl(png._drawing.slots[0], termios.FIONREAD, b"\0\0\0\0"))[0]


def test_the_report_takes_its_slot_back_after_waiting(tmp_path):
    with png.in_parallel(3):
        assert free_slots() == 2
        png.render(tmp_path, "one", tiny)
        png.drawn()
        assert free_slots() == 2  # not 3: the report works again, its slot its own


def test_children_alive_at_once_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(png, "LIVE_PER_JOB", 2)
    alive = []
    with png.in_parallel(2):
        for index in range(9):
            png.render(tmp_path, f"f{index}", marking(tmp_path, f"f{index}", 0.05))
            alive.append(len(png._drawing.children))
    assert max(alive) <= 4 and all(path.is_file() for i in range(9) for path in files(tmp_path, f"f{i}"))


def test_without_a_process_to_fork_a_figure_is_drawn_here(tmp_path, monkeypatch):
    seen = []

    def draw(layout) -> MplFigure:
        seen.append(os.getpid())
        return tiny(layout)

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    with png.in_parallel(2):
        monkeypatch.setattr(os, "fork", no_fork)
        png.render(tmp_path, "here", draw)
        assert seen == [os.getpid()] * len(LAYOUTS)
    assert all(path.is_file() for path in files(tmp_path, "here"))


def test_a_stop_that_arrives_during_the_fork_ends_the_child_it_made(tmp_path, monkeypatch, stop_signal):
    """The stop is noted while the report forks, and raised once the child is on the list a stop ends, whichever
    of the worker's threads the signal reached (a block of the main thread's mask held it in no other thread)."""
    real_fork, made = os.fork, []

    def fork_then_stop():
        pid = real_fork()
        if pid:
            made.append(pid)
            os.kill(os.getpid(), stop_signal)  # noted: raised once the child is on the list
        return pid

    with pytest.raises(KeyboardInterrupt):
        with png.in_parallel(2):
            monkeypatch.setattr(os, "fork", fork_then_stop)
            png.render(tmp_path, "slow", marking(tmp_path, "slow", HANG_S))
    assert made and all(gone(pid) for pid in made)
