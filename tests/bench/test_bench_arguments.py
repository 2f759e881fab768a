"""The benchmarks' arguments refused in one line and exit status 2, before anything is timed: the module
spellings ``python -m normbench.bench.kernels`` (cells, harness, ...) are ``normbench bench kernels`` with its
parser, where they used to import and exit 0 having done nothing (hostile B31, M01, M02); an option that acts
only beside another (B14, B15); --out at the filesystem's root or your home folder (R15's rule, shared)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.bench.__main__ import main
from tests.bench.test_bench_out import _refused
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv", [["kernels", "--dtypes", "fp7"], ["cells", "--bogus"], ["sweep", "--help"], ["--help"],
                                  ["sweep", "--quick", "--rounds", "2"], ["sweep", "--profile", "--against", "nowhere"]])
def test_the_arguments_are_answered_before_torch_is_imported(argv):
    """The parser and the refusals that need no benchmark are torch-free (bench/options.py): a mistyped option or
    --help took 5-7 s of torch's import here."""
    code = ("import sys\nfrom normbench.bench.__main__ import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit as stop:\n    print(stop.code, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=HANG_S,
                          cwd=ROOT)
    assert done.stdout.splitlines()[-1] == ("0 False" if "--help" in argv else "2 False"), (done.stdout, done.stderr)


@pytest.mark.parametrize("argv, named", [
    (["kernels", "--quick", "--hidden", "0"], "--hidden"),
    (["cells", "--hidden", "-4"], "--hidden"),
    (["harness", "--steps", "0"], "--steps"),
])
def test_a_module_spelling_refuses_what_the_command_refuses(argv, named, tmp_path):
    module, *args = argv
    done = subprocess.run([sys.executable, "-m", f"normbench.bench.{module}", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and named in done.stderr and "must be >= 1" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_main_in_a_thread_refuses_as_in_the_main_thread(tmp_path):
    """Only the command line's run guards the benchmarks' import with stop handlers (normbench/__main__.imported),
    which Python sets in the main thread alone: main() in another thread (a notebook's, a server's) was a
    ValueError, not the refusal."""
    import threading

    ended = []

    def call():
        try:
            main(["kernels", "--quick", "--out", str(tmp_path)])  # refused once the benchmarks are imported
        except BaseException as stop:  # noqa: BLE001 - the thread's outcome, whatever it is, for the assert
            ended.append(stop)
    (tmp_path / "kernels.md").write_text("a file this benchmark did not write")
    thread = threading.Thread(target=call)
    thread.start()
    thread.join(HANG_S)
    assert len(ended) == 1 and isinstance(ended[0], SystemExit) and ended[0].code == 2, ended


@pytest.mark.parametrize("argv, option, needed", [
    (["sweep", "--quick", "--subset", "norm=ln"], "--subset", "--profile"),
    (["sweep", "--quick", "--rounds", "2"], "--rounds", "--against"),
    (["sweep", "--profile", "--rounds", "3"], "--rounds", "--against"),
    (["sweep", "--profile", "--no-parts"], "--no-parts", "--against"),
    (["sweep", "--quick", "--keep", "{tmp}/kept"], "--keep", "--profile"),
    (["all", "--quick", "--subset", "norm=ln"], "--subset", "--profile"),
])
def test_an_option_without_the_one_it_acts_with_is_refused(argv, option, needed, tmp_path, capsys):
    err = _refused(capsys, [a.format(tmp=tmp_path) for a in argv])
    assert f"{option} acts only with {needed}" in err
    assert list(tmp_path.iterdir()) == []


def test_out_at_the_home_folder_itself_is_refused(tmp_path, monkeypatch, capsys):
    """The same rule as the report's (checks.out_folder_problem, tested there at the root, where a broken guard
    here would write a benchmark's files)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "home folder" in _refused(capsys, ["kernels", "--quick", "--out", str(tmp_path)])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("blank", ["", " "])
def test_an_empty_sweep_dir_for_arms_is_refused(blank, tmp_path, monkeypatch, capsys):
    import normbench.__main__ as entry

    monkeypatch.chdir(tmp_path)
    assert entry.subcommand("bench", ["arms", blank]) == 2
    assert capsys.readouterr().err == "normbench bench: SWEEP_DIR is empty; name a folder (an unset shell variable?)\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("keep, said", [("${oc.env:HOME}", "holds ${"), ("", "is empty"), (" ", "is empty")])
def test_keep_is_a_plain_folder_of_its_own(keep, said, capsys, tmp_path, monkeypatch):
    """Hostile h14 N18, P37: `--keep '${oc.env:HOME}'` was resolved by the child sweeps' Hydra and wrote them into
    $HOME itself; `--keep ''` was the working folder. Refused before any sweep runs, as study's --out is."""
    from normbench.checks import ArgumentRefused  # said in one line, exit 2, by `normbench bench` (__main__.subcommand)

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgumentRefused, match=r"--keep .*" + said.replace("$", r"\$")):
        main(["sweep", "--quick", "--profile", "--keep", keep])
    assert not any(tmp_path.iterdir())


def test_keep_at_the_root_or_home_is_refused_by_the_shared_rule(tmp_path, monkeypatch):
    # checked on the rule itself: through the command, a broken guard would run sweeps at /
    from normbench.checks import ArgumentRefused, runs_folder

    monkeypatch.setenv("HOME", str(tmp_path))
    for folder, said in (("/", "filesystem's root"), (str(tmp_path), "home folder itself")):
        with pytest.raises(ArgumentRefused, match=said):
            runs_folder(folder)
    assert runs_folder(str(tmp_path / "keep")) == tmp_path / "keep"
