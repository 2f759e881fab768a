"""argparse's own refusals (a bad choice, an unknown flag, a missing argument) are one line on standard
error and exit status 2 in every command, as every other refusal (hostile pass 5: 16 cases printed the
usage block first). And a documented tool given a page that is not there says so in one line (M001)."""

from __future__ import annotations

import importlib

import pytest

CASES = [
    ("normbench.studies.compare", ["--metric", "bogus", "a", "b"]),
    ("normbench.studies.compare", []),
    ("normbench.training.evaluate", ["run", "--split", "train"]),
    ("normbench.bench.__main__", ["kernels", "--dtypes", "fp7"]),
    ("normbench.bench.__main__", ["nosuch"]),
    ("normbench.bench.__main__", ["arms", "sw", "--quick"]),
    ("normbench.bench.__main__", ["cells", "--quick", "--hidden", "999999999"]),  # B005: an allocator traceback
    ("normbench.studies.tune", ["--evaluation-seeds", "x"]),
    ("normbench.training.rerun", []),
    ("normbench.report.__main__", ["--no-such-flag", "x"]),
    ("normbench.page_check.facts", []),
]


@pytest.mark.parametrize(("module", "argv"), CASES, ids=[f"{m.rsplit('.', 1)[-1]}-{' '.join(a) or 'none'}" for m, a in CASES])
def test_an_argument_argparse_refuses_is_one_line_and_exit_2(module, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(module).main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and ": error: " in err, err


def test_the_page_facts_tool_says_in_one_line_that_a_page_is_missing(tmp_path, capsys):
    from normbench.page_check import facts

    assert facts.main([str(tmp_path / "nope.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err and "Traceback" not in err
