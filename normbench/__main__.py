"""`normbench` and `python -m normbench`: the Hydra application (normbench/studies/app.py), and the commands
beside it (``normbench report DIR``, ``normbench compare A B``, ...: SUBCOMMANDS).

A subcommand is the first word and never a Hydra override (an override always holds ``=``), so it
is dispatched here, before Hydra parses anything: ``normbench report DIR`` is
``python -m normbench.report DIR``. Shell completion and ``--help`` only read the configs, so they
are answered here without the training code: no torch import, so a TAB answers in a fraction of a
second.
"""

import errno
import functools
import importlib
import os
import signal
import sys

CONFIG_ONLY = ("-sc", "--shell-completion", "-h", "--help", "--hydra-help")

# name: (module with main(argv) -> exit status, what it does). `--help` and completion list these.
SUBCOMMANDS = {
    "report": ("normbench.report.__main__", "the report of sweeps or runs: normbench report DIR [DIR ...] [--out DIR]"),
    "compare": ("normbench.studies.compare_command", "has NEW got worse than BASELINE? normbench compare BASELINE NEW (exit 1 if so)"),
    "study": ("normbench.studies.study", "run a study's sweep and add seeds in rounds until it is decided: normbench study +sweep=NAME"),
    "tune": ("normbench.studies.tune", "a tuned study: lr selection, then evaluation at the chosen lr"),
    "bench": ("normbench.bench.__main__", "speed benchmarks: normbench bench {kernels,cells,harness,sweep,arms,all}"),
    "rerun": ("normbench.training.rerun", "run a recorded run again and say whether it reproduced: normbench rerun RUN_DIR"),
    "evaluate": ("normbench.training.evaluate", "score a run's saved model (save_model=true): normbench evaluate RUN_DIR"),
}

TAKE_OVERRIDES = ("study", "tune")  # their arguments end in normbench overrides, as a run's do
NEED_TEMP = ("report", "compare", "evaluate")  # matplotlib's config folder, torch's temporary files


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, so that its own clean-up (a run's interrupted record, a
    report's staging folder) happens on the way out, as for Ctrl-C."""
    signum = signal.SIGTERM


def _terminated(signum, frame):
    stop = Terminated()
    stop.signum = signum
    raise stop


def subcommand(name: str, args: list[str]) -> int:
    """``normbench NAME ARGS``: its exit status. Ctrl-C, SIGTERM or SIGHUP at any moment (its imports
    included, which take seconds) ends it with one line and 128 + the signal's number, never a
    traceback; a command with handlers of its own (report, study, tune) puts them in place itself."""
    for stop in ("SIGTERM", "SIGHUP"):  # SIGHUP's default killed it without a line (hostile h13 G14, G15, G19-G22)
        if hasattr(signal, stop):
            signal.signal(getattr(signal, stop), _terminated)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:  # from here on, its first imports included (a Ctrl-C there was a traceback: hostile h14 S06, S15)
        return _command(name, args)
    except KeyboardInterrupt as stop:
        # a handler of the command's own (a run's SIGTERM handler) says which signal it turned into this
        signum = getattr(stop, "signum", signal.SIGINT)
        try:  # imported again where the stop cut its first import short
            from normbench.studies.children import ignore_stops, quiet_half_imported_torch  # torch-free

            ignore_stops()
            quiet_half_imported_torch()
            print(f"normbench {name}: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        except (OSError, KeyboardInterrupt):  # nowhere to say it, or a second signal: the status says it
            pass
        return 128 + signum
    finally:
        try:
            from normbench.studies.children import ignore_stops  # torch-free, imported by now

            ignore_stops()  # its outcome decided and said: a stop now would only break the exit (Q26, Q23)
        except KeyboardInterrupt:  # a second stop while a first cut its import short: the status says it
            pass


def _command(name: str, args: list[str]) -> int:
    """Subcommand ``name``'s exit status; a stop (KeyboardInterrupt) is left to the caller."""
    from normbench.checks import (  # torch-free
        COMMANDS_RUNNING,
        ArgumentRefused,
        print_on_any_terminal,
        stderr_may_fail,
        temp_folder_problem,
        to_devnull,
    )
    from normbench.studies import children  # noqa: F401 (torch-free) in place for subcommand()'s last lines

    print_on_any_terminal()  # PYTHONIOENCODING=ascii: compare's minus sign was a traceback (h21 N382)
    stderr_may_fail()  # `2> /dev/full`: bad input still exits 2 (Z31, Z32)

    if sys.stdout is None:  # standard output closed (>&-): what would be printed goes nowhere (hostile Z13)
        sys.stdout = open(os.devnull, "w")
    out = sys.stdout = _WatchedOutput(sys.stdout)
    try:
        no_temp = temp_folder_problem() if name in NEED_TEMP else None
        if no_temp:
            print(f"normbench {name}: {no_temp}", file=sys.stderr)
            return 2
        if name in TAKE_OVERRIDES:
            from normbench.configuration.config import plain_groups  # torch-free, but Hydra: a second

            args = plain_groups(args)
        module = imported(name)
        COMMANDS_RUNNING.append(name)  # its own later imports are guarded as this one was (imported)
        try:
            status = module.main(args)
        except SystemExit as done:  # argparse's --help: printed, then exit 0, a failed write swallowed (Z06)
            status = done.code
        sys.stdout.flush()  # what is still buffered fails here, where it can be said in one line, not at exit
        if out.error is not None:  # a write that failed, and was swallowed on the way (argparse's print_help)
            raise out.error
        return status
    except ArgumentRefused as refused:
        print(f"normbench {name}: {refused}", file=sys.stderr)
        return 2
    except OSError as error:
        if not out.failed:
            raise
        to_devnull(sys.__stdout__)
        print(f"normbench {name}: cannot write to standard output ({os.strerror(error.errno or errno.EIO)})",
              file=sys.stderr)
        return 1
    finally:
        if name in COMMANDS_RUNNING:
            COMMANDS_RUNNING.remove(name)
        if sys.stdout is out:
            sys.stdout = out._stream


def imported(name: str, module: str | None = None):
    """Subcommand ``name``'s module, or ``module``, one it imports once its arguments are parsed (bench's
    benchmarks: its parser is torch-free, so that a mistyped option is answered at once). A stop while it
    imports (torch, numpy, scipy: a second or more) ends the process there with the command's one line and
    128 + the signal: nothing is written yet. Raised there, it was lost or worse: numpy's and scipy's lazy
    imports swallowed it and left a half-made numpy behind (an AttributeError or RecursionError traceback),
    and inside a pybind11 call of torch's import it became a C++ exception that aborted the process (hostile
    h16 N6: `bench`, whose benchmarks import all three). ``module`` is imported so only while ``name`` runs from
    the command line: a caller of its main() in a notebook, a test or a thread keeps its own Ctrl-C."""
    from normbench.checks import COMMANDS_RUNNING  # torch-free

    if module is not None and name not in COMMANDS_RUNNING:
        return importlib.import_module(module)
    stops = [s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s]
    previous = {s: signal.signal(s, functools.partial(_stopped_importing, name)) for s in stops}
    try:
        return importlib.import_module(module or SUBCOMMANDS[name][0])
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stopped_importing(name: str, signum, frame) -> None:
    try:
        print(f"normbench {name}: stopped by {signal.Signals(signum).name}", file=sys.stderr, flush=True)
    finally:  # nowhere to say it: the status says it
        os._exit(128 + signum)


class _WatchedOutput:
    """Standard output that remembers whether writing to it failed: ``> /dev/full`` or a full disk
    is then one line on stderr, told apart from a failed write to some file the command opened."""

    def __init__(self, stream):
        self._stream, self.error = stream, None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as error:
            self.error = error
            raise

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as error:
            self.error = error
            raise

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] in SUBCOMMANDS:
        forward(args[0], args[1:])
    for name in ("SIGTERM", "SIGHUP"):  # while the app imports (Hydra, seconds) a stop is one line too, as
        # Ctrl-C is (G08: SIGTERM then killed it without a word); the app puts its own handlers in place
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stopped)
    try:  # Ctrl-C while the run's modules import (seconds: torch) is one line and 130, as a subcommand's
        from normbench.checks import print_on_any_terminal, stderr_may_fail  # torch-free
        from normbench.configuration.config import command_line_flag, plain_groups  # torch-free

        print_on_any_terminal()  # a sweep's table and answer on a terminal that is not UTF-8 (h21 N186)
        stderr_may_fail()  # `2> /dev/full`: bad input still exits 2 (Z31, Z32)

        sys.argv[1:] = args = plain_groups(args)  # experiment=NAME is +experiment=NAME: Hydra reads sys.argv
        refused = command_line_flag([a for a in args if a != "--allow-code"])  # normbench's flag (studies/app.py)
        if refused:  # `--bogus`: one line, not Hydra's usage block (N04)
            print(f"normbench: error: {refused}", file=sys.stderr)
            sys.exit(2)
        from normbench.checks import exit_on_full_stdout  # torch-free

        if any(arg in CONFIG_ONLY or arg.startswith("--shell-completion=") for arg in args):
            if exit_on_full_stdout("normbench", lambda: _configs_only(args)):  # --hydra-help > /dev/full
                sys.exit(1)
        else:
            from normbench.studies.app import main as run

            if exit_on_full_stdout("normbench", lambda: run(from_process_start=True)):  # --cfg job > /dev/full
                sys.exit(1)
    except KeyboardInterrupt as stop:
        signum = getattr(stop, "signum", signal.SIGINT)  # a run's SIGTERM or SIGHUP (training/run.py) names itself
        try:
            from normbench.studies.children import ignore_stops, runner_says_stops  # torch-free

            ignore_stops()  # the stop is being said: a second one has nothing left to stop
            if not runner_says_stops():  # a study's or tune's round: their line is the one (S19)
                print(f"normbench: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        except (OSError, KeyboardInterrupt):  # nowhere to say it, or a second Ctrl-C: the status says it
            pass
        sys.exit(128 + signum)  # as a subcommand's and the app's (normbench/studies/app.py) stop


def _stopped(signum, frame):
    stop = KeyboardInterrupt(f"signal {signum}")
    stop.signum = signum
    raise stop


def forward(name: str, args: list[str]) -> None:
    """Runs subcommand ``name``: ``normbench NAME ARGS``, and ``python -m normbench.NAME ARGS``, the previous
    release's spelling, which scripts still use (normbench/NAME.py, or the package's __main__.py)."""
    sys.exit(subcommand(name, args))


def commands_help() -> str:
    """What `--help` says before Hydra's part: the two ways to call normbench, and every subcommand."""
    width = max(map(len, SUBCOMMANDS))
    lines = ["normbench [OVERRIDES ...]          one run (-m: a sweep); OVERRIDES are key=value, listed below",
             "normbench COMMAND [ARGS ...]       one of the commands below; normbench COMMAND --help for its arguments",
             "", "== Commands =="]
    lines += [f"{name:<{width}}  {what}" for name, (_, what) in SUBCOMMANDS.items()]
    lines += ["", "The config below is the default composition (norm=ln ...). A group's keys show that option's "
              "defaults: norm.bn_reestimate is false here and acts only with norm=bn, where it is on by default "
              "(normbench norm=bn --help shows true).", ""]
    return "\n".join(lines)


def _completion(args: list[str]) -> bool:
    """Completes the subcommands in the first word; True when the line is a subcommand's (nothing for
    Hydra to complete: the shell then offers file names)."""
    line = os.environ.get("COMP_LINE")
    if not any(a.startswith("query=") for a in args):
        return False
    if line is None:  # Hydra's query reads it and fails with a KeyError traceback (A36)
        raise ValueError("shell completion query needs COMP_LINE (it is run by the shell's completion hook)")
    point = int(os.environ.get("COMP_POINT", len(line)))
    words = line[:point].split()
    typing = line[:point].endswith(" ")
    after_program = words[1:]
    if after_program and (len(after_program) > 1 or typing) and after_program[0] in SUBCOMMANDS:
        return True
    if not after_program or (len(after_program) == 1 and not typing):
        start = after_program[0] if after_program else ""
        fish = "query=fish" in args  # fish reads one candidate a line, bash and zsh a word list
        print(("\n" if fish else " ").join(name for name in SUBCOMMANDS if name.startswith(start)))
    return False


def _configs_only(args: list[str]) -> None:
    import hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from normbench.configuration.config import config_dir, register, sweep_dirs

    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises; one line below instead of its report
    try:
        sweep_dirs()
        register()
        if _completion(args):
            return
        if any(arg in ("-h", "--help") for arg in args):
            from normbench.checks import exit_on_full_stdout

            if exit_on_full_stdout("normbench", lambda: print(commands_help())):  # > /dev/full (X06)
                sys.exit(1)
        hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(_never_called)()
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        print(f"normbench: error: {' '.join(str(err).split('Config search path')[0].split())}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:  # `normbench --help | head`: the reader has what it wanted
        from normbench.checks import to_devnull

        to_devnull(sys.stdout)
        sys.exit(0)


def _never_called(cfg) -> None:  # pragma: no cover - Hydra answers the flag above and returns
    raise RuntimeError("normbench: a configs-only call reached the task function")


if __name__ == "__main__":
    main()
