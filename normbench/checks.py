"""Range checks of config values, and the one error they raise.

The lowest floor: the schema's groups and the tasks' configs (normbench/tasks/) both check their
values with these, so a bad setting anywhere is a ``ConfigError``: one line naming the key, which
the app prints and exits with status 2. A value the line shows is cut (``shown``): a 2 MB string
makes an 80-character line, not a 2 MB one.
"""

import argparse
import errno
import math
import os
import sys
import tempfile

# Below half the smallest positive float32 (2**-149, a subnormal) a number rounds to 0 in float32,
# where the model and optimizer compute: lr=1e-46 or eps=1e-50 would be 0 there, not small.
FLOAT32_ZERO_BELOW = 2.0**-150


class ConfigError(ValueError):
    """A config value out of range; the message is one line naming the key."""


class ArgumentRefused(Exception):
    """A command-line argument no command can use; one line, exit status 2 (normbench/__main__.py).

    Not a ValueError on purpose: argparse turns those into its usage text, two lines or more."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with its own errors (an unknown flag, a bad choice, a missing argument) in one line on
    standard error and exit status 2, as every other refusal: its default prints the usage block first."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {' '.join(str(message).split())}\n")
        raise SystemExit(2)


def whole_number(minimum: int, maximum: int, unit: str = ""):
    """An integer argument's type: a whole number from ``minimum`` to ``maximum`` (``unit``, say "pixels", named
    in the refusal of a word), refused in one line (--jobs 0, --height 1e9, --hidden 64x)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number{' of ' + unit if unit else ''}") \
                from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum} and <= {maximum}{' ' + unit if unit else ''}, "
                                             f"got {str(value)[:40]}")
        return value
    return parse


def out_path(text: str):
    """``--out``'s type: a path, never the empty string (``Path('')`` is the working folder, so
    ``--out ''`` from an unset shell variable would write a report or a record among your files)."""
    return given_path(text, "--out")


def given_path(text: str, what: str = "a PATH argument"):
    """A path argument's type, ``what`` naming it: never empty or blank (``Path('')`` is the working folder, so
    ``''`` from an unset shell variable would report on, compare or rerun whatever is there; hostile Z10)."""
    from pathlib import Path

    if not text.strip():
        raise ArgumentRefused(f"{what} is empty; name a folder (an unset shell variable?)")
    too_long = name_too_long(text)
    if too_long:
        raise ArgumentRefused(f"{what} {shown(text, 200)}: {too_long}")
    return Path(text)


def _limit(name: str, default: int) -> int:
    try:
        return os.pathconf("/", name)
    except (OSError, ValueError):
        return default


def name_too_long(text: str) -> str | None:
    """Why the filesystem would refuse the path ``text`` as too long (ENAMETOOLONG), or None: a name
    (one component) longer than NAME_MAX bytes, or the whole longer than PATH_MAX. Counted in bytes,
    as the kernel does: 130 × 'ü' is 260. Every stat of such a path raises (hostile h15 B5)."""
    encoded = os.fsencode(text)
    name_max, path_max = _limit("PC_NAME_MAX", 255), _limit("PC_PATH_MAX", 4096)
    if any(len(part) > name_max for part in encoded.split(b"/")):
        return f"a name longer than the filesystem allows ({name_max} bytes)"
    if len(encoded) >= path_max:
        return f"a path longer than the filesystem allows ({path_max - 1} bytes)"
    return None


def claims_path(text: str):
    """``--claims``' type: a folder, never the empty string (given_path)."""
    return given_path(text, "--claims")


def out_folder_problem(out, what: str = "--out") -> str | None:
    """Why ``out`` may not be a folder a command writes its files into (a report, a study, a benchmark's, a run's
    or sweep's: ``what`` names the setting), or None: the filesystem's root or your home folder itself, where
    ``--out "$OUT/"`` with OUT unset lands (hostile R15): the files would be strewn among everything there. A
    relative ``out`` is taken from the current folder."""
    from pathlib import Path

    try:
        folder = Path(out).expanduser().resolve()
    except (OSError, RuntimeError):  # a link loop: the writer refuses it in its own line
        return None
    home = os.environ.get("HOME", "").strip()
    if folder == Path(folder.anchor):
        return f"{what} {shown(str(out), 200)} is the filesystem's root; name a folder of its own"
    if home and folder == Path(home).resolve():
        return f"{what} {shown(str(out), 200)} is your home folder itself; name a folder of its own inside it"
    return None


def runs_folder_problem(out, what: str = "--out") -> str | None:
    """Why ``out`` cannot be a folder that child sweeps write their runs into (a study's or tune's rounds, bench
    sweep --keep), or None: out_folder_problem's, or a name holding ``${``, which the children's Hydra resolves in
    the runs' paths (hostile O03, U03; h14 N18: ``--keep '${oc.env:HOME}'`` wrote the sweeps into $HOME)."""
    if "${" in str(out):
        return f"{what} {shown(str(out), 200)} holds ${{, which Hydra would resolve in the runs' paths; choose a plain path"
    return out_folder_problem(out, what)


def runs_folder(text: str, what: str = "--keep"):
    """A folder argument child sweeps write into, as an argparse type: given_path's, then runs_folder_problem's."""
    folder = given_path(text, what)
    problem = runs_folder_problem(folder, what)
    if problem:
        raise ArgumentRefused(problem)
    return folder


def temp_folder_problem() -> str | None:
    """Why no temporary folder can be used (every candidate full, unwritable, or past a file-size limit),
    or None. matplotlib's config folder (report/mplconfig.py) and torch's temporary files need one; without
    it their first use ended report, compare and evaluate in a traceback (hostile h19 J4)."""
    try:
        tempfile.gettempdir()  # writes a test file in each candidate: TMPDIR, /tmp, /var/tmp, the current folder
    except OSError:
        return ("no usable temporary folder ($TMPDIR, /tmp, /var/tmp and the current folder are full or not "
                "writable): set TMPDIR to a writable folder with free space")
    return None


# The subcommands this process runs from the command line now (normbench/__main__.subcommand; here, not there:
# `python -m normbench` runs that file as __main__, and a subcommand imports it again as normbench.__main__)
COMMANDS_RUNNING: list[str] = []

# A cgroup's CPU bandwidth limit: v2's "QUOTA PERIOD" ("max" for none), else v1's two files (quota -1 for none)
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def cores() -> int:
    """Cores this process may run on: its affinity mask (taskset, a cgroup's cpuset, SLURM's), os.cpu_count()
    where the platform has none, and no more than its cgroup's CPU quota allows (``docker --cpus=4``, a
    Kubernetes limit: quota / period, rounded up), which joblib's own count reads too. The one count a run's
    threads, a sweep's workers, the config's thread bound, a report's drawing processes and a record's
    ``environment.cpu_count`` read: 64 threads on a 4-CPU quota would wait on each other at every op."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(count, quota)) if quota else count


def cpu_quota() -> int | None:
    """The CPUs this process's cgroup may use by its bandwidth limit, rounded up; None where there is no limit
    (or no cgroup, or a file it cannot read or parse: the affinity mask alone then counts)."""
    try:
        quota, period = _text(CGROUP_CPU_MAX).split()[:2]
    except (OSError, ValueError):
        try:
            quota, period = map(_text, CGROUP_V1_QUOTA)
        except OSError:
            return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:  # "max": no limit
        return None
    return math.ceil(quota_us / period_us) if quota_us > 0 and period_us > 0 else None


def _text(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def shown(value: object, limit: int = 80) -> str:
    """``value`` as an error line shows it: its repr, at most ``limit`` characters, ending in "…" when cut."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(value: object, limit: int = 400, longest: int = 120) -> str:
    """An error line made safe to print (studies/app.py's message_text, for the floors below it): characters a
    terminal would act on, a newline in an echoed path among them, escaped (hostile R27), a word longer than
    ``longest`` cut, and the whole at most ``limit`` characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))  # a space is printable
    text = " ".join(word if len(word) <= longest else word[: longest - 1] + "…" for word in text.split(" "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def positive(value: object) -> bool:
    """A finite number > 0 that stays > 0 in float32."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and value > FLOAT32_ZERO_BELOW


def require_positive(key: str, value: object) -> None:
    """Reject a setting that must be > 0 and is not, or is 0 once the model holds it in float32."""
    if isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= FLOAT32_ZERO_BELOW:
        raise ConfigError(f"{key} must be > 0 in float32 (at least 1.4e-45; smaller rounds to 0), got {value}")
    require(positive(value), f"{key} must be > 0, got {shown(value)}")


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def one_of(key: str, value: str, valid: tuple[str, ...]) -> None:
    require(value in valid, f"{key}={shown(value)} is not valid; valid: {', '.join(valid)}")


def require_at_least(key: str, value: int, minimum: int) -> None:
    """Reject a task config value below `minimum`, naming the user's Hydra key."""
    require(value >= minimum, f"task.{key} must be >= {minimum}, got {value}")


def require_name(name: str, expected: str) -> None:
    """Reject a task config whose `name` is not its own task: load_task dispatches on the name."""
    require(name == expected, f"task.name must be {expected!r} for this config, got {shown(name)}")


def require_split_sizes(config) -> None:
    """n_train, n_val and n_test of a task that draws its examples: at least one each."""
    for key in ("n_train", "n_val", "n_test"):
        require_at_least(key, getattr(config, key), 1)


class _DroppedErrors:
    """Standard error whose failed write is dropped: with ``2> /dev/full`` a refusal's line cannot be written,
    and its exit status must still say what it would have (2 for bad input, not 1: hostile Z31, Z32)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError:
            to_devnull(self._stream)
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except OSError:
            to_devnull(self._stream)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def to_devnull(stream) -> None:
    """Points ``stream``'s file at /dev/null, so the interpreter's flush at exit prints no second error (a full
    disk, a reader that has gone): every command's one way of giving up on an output it cannot write."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def print_on_any_terminal() -> None:
    """Standard output and error write a character their encoding lacks as an escape (\\u2212), not a
    UnicodeEncodeError: on a terminal that is not UTF-8 (PYTHONIOENCODING=ascii, LANG=C on an old Python)
    a table's dash or minus sign otherwise lost the whole answer (hostile h21 B2). Every entry point calls it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # closed, replaced by a wrapper without it, or detached
            pass


def stderr_may_fail() -> None:
    """From here on a line that cannot be written to standard error is dropped, not an error that changes
    the exit status: the command's own status (2 bad input, 1 failed) stands."""
    if sys.stderr is not None and not isinstance(sys.stderr, _DroppedErrors):
        sys.stderr = _DroppedErrors(sys.stderr)


def exit_on_full_stdout(prog: str, main) -> int:
    """``main()``'s exit status; standard output that cannot be written (``> /dev/full``, a full disk) is one line
    on stderr and exit status 1, not a traceback (hostile R25, P14, X06, N08), and the interpreter's flush at exit
    prints no second error."""
    if sys.stdout is None:  # standard output closed (>&-): what would be printed goes nowhere (hostile Z09-Z16)
        sys.stdout = open(os.devnull, "w")
    print_on_any_terminal()
    stderr_may_fail()
    try:
        code = main()
        sys.stdout.flush()  # what is still buffered fails here, where it can be said
        return code
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EBADF):
            raise
        to_devnull(sys.__stdout__)
        print(f"{prog}: cannot write to standard output ({os.strerror(error.errno)})", file=sys.stderr)
        return 1
