"""Each figure saved as PNG, once per layout: laid out, checked (checks.layout_problems), its
findings and smallest text written into the file, and quantized to a small palette.

Within ``in_parallel`` (the report's build), each figure is drawn in a child process forked when the report
asks for it, while the report goes on: drawing is half a large report's time. A figure function hands ``render``
a draw that reads what the report computed and changes nothing the report reads afterwards (a caption's text is
computed beside the draw, not in it), so the child's work is only the files it writes, and leaving
``in_parallel`` waits for them. Outside it (and where fork is not there), the figure is drawn where it is asked for.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from PIL import Image, PngImagePlugin  # matplotlib's own dependency

from normbench.checks import cores
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
    """`draw` once per layout, each saved where its layout's PNGs go (`smooth`: it has a colour scale); in a
    child process within ``in_parallel``."""
    def work() -> None:
        with matplotlib.rc_context(drawing.STYLE):
            for layout in LAYOUTS:
                save(draw(layout), out, name, layout, smooth)

    if _drawing is None:
        work()
    else:
        _drawing.start(name, work)


@dataclass
class _Noted:
    """The stop signals that arrived while their handlers were swapped for ones that only note them."""

    handlers: dict = field(default_factory=dict)  # signal -> the handler it had
    arrived: list = field(default_factory=list)

    def note(self, signum, frame) -> None:
        self.arrived.append(signum)

    def restore(self) -> None:
        """The handlers back, then each noted signal raised again: handled now, where the caller stands."""
        for signum, handler in self.handlers.items():
            signal.signal(signum, handler)
        self.handlers = {}
        arrived, self.arrived = self.arrived, []
        for signum in arrived:
            signal.raise_signal(signum)


@contextlib.contextmanager
def _stops_noted() -> Iterator[_Noted]:
    """Within, each stop signal with a Python handler is noted instead of handled; leaving restores the handlers
    and raises the noted ones. Outside the main thread (where no handler runs) nothing is swapped."""
    noted = _Noted()
    if threading.current_thread() is threading.main_thread():
        for signum in _ASYNC_SIGNALS:
            if callable(signal.getsignal(signum)):
                noted.handlers[signum] = signal.signal(signum, noted.note)
    try:
        yield noted
    finally:
        noted.restore()


class FigureNotDrawn(RuntimeError):
    """A figure's child process failed (other than by an OSError, raised as one); its traceback is the message."""


# the signals that arrive from outside at any moment, and that a report's handlers may turn into exceptions
_ASYNC_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1",
                                                     "SIGUSR2") if hasattr(signal, name)}
MESSAGE_BYTES = 4096  # a failed child's message: under PIPE_BUF, so its one write never waits on the reader
POLL_S = 0.005
LIVE_PER_JOB = 4  # children alive at once, per job: forked ahead of their slot, so the report need not wait
DEFAULT_JOBS_MAX = 4  # the default's ceiling: a large machine's cores would each hold a copy of the report


@dataclass
class _Child:
    pid: int
    name: str
    errors: int  # the read end of the pipe its failure is written to


@dataclass
class _Drawing:
    """The figures being drawn in forked children. A pipe holds one byte per free slot: a child takes one
    before it draws and puts it back after, so at most ``jobs`` - 1 draw while the report goes on, and ``jobs``
    while it waits for them. At most LIVE_PER_JOB x ``jobs`` children exist at once (each holds a process and a
    descriptor): past that the report waits for one to end before it forks the next."""

    jobs: int
    children: list[_Child] = field(default_factory=list)
    slots: tuple[int, int] = (-1, -1)
    failure: BaseException | None = None

    def __post_init__(self):
        self.slots = os.pipe()
        os.write(self.slots[1], b"s" * (self.jobs - 1))

    def start(self, name: str, work: Callable[[], None]) -> None:
        self._reap(until=lambda: len(self.children) < LIVE_PER_JOB * self.jobs)
        for stream in (sys.stdout, sys.stderr):  # what the report printed is not the child's to print again
            stream.flush()
        # Python runs a signal's handler in the main thread between any two bytecodes, whichever thread the
        # signal reached. A stop (Ctrl-C, SIGTERM) handled between the fork and the child's place on the list
        # would leave that child drawing unseen; one handled in the child before its own handling would unwind
        # the report's stack there (its staging folder removed, its messages said twice). So the stops are
        # noted, not handled, until then, in both, and raised again after.
        with _stops_noted() as noted:
            forked = self._fork(name, work, noted)
        if not forked:  # no descriptor or process left: drawn here, as without in_parallel
            work()

    def _fork(self, name: str, work: Callable[[], None], noted: _Noted) -> bool:
        """A child drawing ``work``, on the list of children; False where no pipe or process could be had."""
        try:
            errors, report_error = os.pipe()
        except OSError:
            return False
        try:
            with warnings.catch_warnings():  # Python 3.12+ warns of fork in a process with threads: the child
                warnings.simplefilter("ignore", DeprecationWarning)  # only draws (numpy, matplotlib, PIL)
                pid = os.fork()
        except OSError:
            os.close(errors)
            os.close(report_error)
            return False
        if pid == 0:
            _child(work, self.slots, errors, report_error, noted)
        os.close(report_error)
        self.children.append(_Child(pid, name, errors))
        return True

    def wait(self) -> None:
        """Waits for every child started; raises the first failure (FigureNotDrawn, or the child's OSError),
        the other children stopped. The report's slot is a child's while it waits."""
        os.write(self.slots[1], b"s")
        self._reap(until=lambda: not self.children)
        if select.select([self.slots[0]], [], [], 0)[0]:  # every child put its slot back: the report's is its own
            os.read(self.slots[0], 1)

    def _reap(self, until: Callable[[], bool]) -> None:
        """Reaps the children that ended, polling until ``until()`` holds; a failed one stops the rest and
        raises."""
        while True:
            for child in list(self.children):
                pid, status = os.waitpid(child.pid, os.WNOHANG)
                if pid == 0:
                    continue
                self.children.remove(child)
                message = _read_closed(child.errors)
                if status != 0 and self.failure is None:
                    why = message[1:] or f"its process ended with status {os.waitstatus_to_exitcode(status)}"
                    # a full disk or a folder turned read-only is the output's failure, as it is when drawn here
                    kind = OSError if message.startswith("O") else FigureNotDrawn
                    self.failure = kind(f"figure {child.name} was not drawn: {why.strip()}")
            if self.failure is not None:
                self.stop()
                raise self.failure
            if until():
                return
            time.sleep(POLL_S)

    def stop(self) -> None:
        """Ends every child: a figure failed, or the report stopped."""
        for child in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
        for child in self.children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
            _read_closed(child.errors)
        self.children = []

    def close(self) -> None:
        for end in self.slots:
            with contextlib.suppress(OSError):
                os.close(end)


def _child(work: Callable[[], None], slots: tuple[int, int], errors: int, report_error: int, noted: _Noted) -> None:
    """A forked child's whole life: a slot, the figure, the slot back; a failure's traceback to the pipe.
    Never returns, and runs nothing of the report's on its way out (os._exit: no atexit, no finally of the
    caller's stack, no buffers)."""
    status = 1
    try:
        noted.restore()  # the report's own handlers, and a stop noted since the fork raised here, handled
        os.close(errors)
        os.read(slots[0], 1)
        try:
            work()
            status = 0
        finally:
            os.write(slots[1], b"s")
    except BaseException as error:  # noqa: BLE001 - any failure is the figure's, said to the report
        said = "".join(traceback.format_exception_only(error)).strip()  # first, then where: the traceback
        kind = "O" if isinstance(error, OSError) else "E"
        message = kind + said + "\n" + "".join(traceback.format_exception(error))
        with contextlib.suppress(OSError):
            os.write(report_error, message.encode("utf-8", "replace")[:MESSAGE_BYTES])
    finally:  # no flush on the way out: a stream's lock may be held by a thread that is not here (stderr
        os._exit(status)  # writes its lines as they come, and a figure prints nothing to stdout)


def _read_closed(fd: int) -> str:
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, MESSAGE_BYTES):
            chunks.append(chunk)
    with contextlib.suppress(OSError):
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


_drawing: _Drawing | None = None


def jobs_here() -> int:
    """Processes a report draws its figures in by default: the cores this process may run on, at most
    DEFAULT_JOBS_MAX."""
    return max(1, min(cores(), DEFAULT_JOBS_MAX))


@contextlib.contextmanager
def in_parallel(jobs: int | None = None) -> Iterator[None]:
    """Figures rendered within are drawn in forked children, ``jobs`` processes at a time counting the caller
    (default jobs_here()); leaving waits for every one and raises FigureNotDrawn (or a child's OSError) if one
    failed. With one job, or where there is no fork, figures are drawn where they are asked for; within another
    in_parallel, the outer one draws them and waits for them."""
    global _drawing
    jobs = jobs_here() if jobs is None else jobs
    if jobs < 2 or not hasattr(os, "fork") or not sys.platform.startswith("linux") or _drawing is not None:
        yield
        return
    _drawing = drawing_now = _Drawing(jobs)
    try:
        yield
    except BaseException:
        drawing_now.stop()
        raise
    else:
        drawing_now.wait()
    finally:
        _drawing = None
        drawing_now.close()


def drawn() -> None:
    """Waits until every figure asked for so far is on disk (within in_parallel; at once outside it): before
    anything reads a figure's file. Raises as in_parallel does."""
    if _drawing is not None:
        _drawing.wait()
