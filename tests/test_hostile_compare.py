"""compare on overflowing and relabelled records (issue 50): a non-finite difference fails, runs pair by
the hash of their own config, and a record whose stored hash is not its config's is named and fails."""

from __future__ import annotations

import json

import pytest

from normbench.studies.compare import main
from tests.report.conftest import write_record


def edit(run_dir, change):
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary))


def runs(root, values, task="adding"):
    return [write_record(root, f"run-{seed}", seed=seed, axes={"task": task}, best_val=v)
            for seed, v in enumerate(values)]


def set_final(value):
    return lambda s: s["metrics"].update(final_val=value, best_val=value)


@pytest.mark.parametrize(("base", "new"), [(-1.7e308, 1.7e308), (1.7e308, -1.7e308), (-1e308, 1e308)])
def test_a_difference_that_is_not_finite_fails(tmp_path, capsys, base, new):
    for root, value in (("base", base), ("new", new)):
        for run in runs(tmp_path / root, [0.05]):
            edit(run, set_final(value))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    assert "not a finite number" in capsys.readouterr().out


def test_one_overflowing_pair_among_finite_ones_fails_and_warns_nothing(tmp_path, capsys):
    # C012/C031: the overflowing pair's difference was dropped from the mean, and the other seeds passed it
    for root, value in (("base", -1.7e308), ("new", 1.7e308)):
        first, *_ = runs(tmp_path / root, [0.05, 0.05, 0.05])
        edit(first, set_final(value))
    for extra in ([], ["--tolerance", "0.01"]):
        assert main([str(tmp_path / "base"), str(tmp_path / "new"), *extra]) == 1
        out, err = capsys.readouterr()
        assert "not a finite number" in out and "RuntimeWarning" not in err


def test_relabelled_records_are_named_and_fail(tmp_path, capsys):
    runs(tmp_path / "base", [0.05, 0.06])
    swapped = runs(tmp_path / "new", [0.05, 0.06])
    labels = [json.loads((r / "summary.json").read_text())["config_hash"] for r in swapped]
    for run, label in zip(swapped, labels[::-1]):  # each claims the other's identity
        edit(run, lambda s, label=label: s.update(config_hash=label))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    out = capsys.readouterr().out
    assert "stored config_hash is not their config's" in out and str(swapped[0]) in out


def test_pairs_follow_the_config_not_the_label(tmp_path, capsys):
    """A NEW record labelled as the baseline's seed 0 but trained as seed 1 pairs with seed 1."""
    runs(tmp_path / "base", [0.05])
    (other,) = [write_record(tmp_path / "new", "run-1", seed=1, axes={"task": "adding"}, best_val=0.05)]
    base_label = json.loads((tmp_path / "base" / "run-0" / "summary.json").read_text())["config_hash"]
    edit(other, lambda s: s.update(config_hash=base_label))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 2  # no pair: nothing in common
    assert "no run in" in capsys.readouterr().err


def test_unedited_records_pass(tmp_path):
    runs(tmp_path / "base", [0.05, 0.06])
    runs(tmp_path / "new", [0.05, 0.06])
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 0


def test_a_second_finished_record_of_a_seed_is_named_and_fails(tmp_path, capsys):
    """C07: NEW holds two records of seed 0 (a ``<folder>-<hash>`` sibling), the second much worse:
    which of them is compared must not be silent."""
    runs(tmp_path / "base", [0.05, 0.06])
    runs(tmp_path / "new", [0.05, 0.06])
    twin = write_record(tmp_path / "new", "run-0-dup", seed=0, axes={"task": "adding"}, best_val=0.05)
    edit(twin, set_final(9.0))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    out = capsys.readouterr().out
    assert "cannot vouch for" in out and "a second finished record" in out


def test_a_record_set_aside_is_named_and_fails(tmp_path, capsys):
    """C13: NEW's seed-0 record whose metric is a string is set aside; the remaining pair must not pass alone."""
    runs(tmp_path / "base", [0.05, 0.06])
    kept, odd = runs(tmp_path / "new", [0.05, 0.06])
    edit(odd, set_final("0.99"))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    out = capsys.readouterr().out
    assert "cannot vouch for" in out and str(odd) in out and "set aside" in out


def test_a_failed_attempt_beside_its_finished_run_is_no_doubt(tmp_path):
    runs(tmp_path / "base", [0.05, 0.06])
    runs(tmp_path / "new", [0.05, 0.06])
    attempt = write_record(tmp_path / "new", "run-0-again", seed=0, axes={"task": "adding"}, best_val=0.05)
    edit(attempt, lambda s: s.update(status="failed", reason="killed"))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 0


def blanked(missing):
    """An edit that leaves a record's final_val missing: null (None), NaN, Infinity, or the key dropped."""
    def blank(summary):
        if missing == "drop":
            summary["metrics"].pop("final_val", None)
        else:
            summary["metrics"]["final_val"] = {None: None, "nan": float("nan"), "inf": float("inf")}[missing]
    return blank


@pytest.mark.parametrize("missing", [None, "nan", "drop"])
def test_a_baseline_without_its_metric_fails_rather_than_hiding_a_regression(tmp_path, capsys, missing):
    # N106/N107/N114: the baseline pair with no metric was left out of the difference, and NEW's 100 passed
    base = runs(tmp_path / "base", [0.05, 0.05])
    new = runs(tmp_path / "new", [0.05, 0.05])

    edit(base[0], blanked(missing))
    edit(new[0], set_final(100.0))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    assert "missing in BASELINE" in capsys.readouterr().out


@pytest.mark.parametrize("missing", [None, "nan", "inf", "drop"])
@pytest.mark.parametrize("seeds", [[0], [0, 1]])
def test_a_pair_without_its_metric_in_both_sets_fails_and_is_named(tmp_path, capsys, missing, seeds):
    # h26 x03/y02/y04: the pair was dropped ("pairs 2", a mean over the other), or a setting read "n/a ... ok"
    base = runs(tmp_path / "base", [0.05, 0.05])
    new = runs(tmp_path / "new", [0.05, 0.05])

    blank = blanked(missing)
    for seed in seeds:
        edit(base[seed], blank)
        edit(new[seed], blank)
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out.splitlines()[0]
    assert f"missing or not a finite number in both sets for {len(seeds)} of 2 finished pairs" in out
    assert ("seeds 0, 1" if len(seeds) == 2 else "seed 0)") in out


def test_two_diverged_runs_without_the_metric_are_compared_by_status(tmp_path):
    for root in ("base", "new"):
        for run in runs(tmp_path / root, [0.05, 0.05])[:1]:
            edit(run, lambda s: (s.update(status="diverged"), s["metrics"].update(final_val=None)))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 0


@pytest.mark.parametrize(("base_status", "new_status"), [
    ("ok", "invalid"), ("ok", "skipped"), ("failed", "failed"), ("invalid", "invalid"), ("skipped", "skipped"),
    ("invalid", "ok"), ("failed", "ok"), ("interrupted", "diverged")])
def test_a_record_that_is_not_a_result_fails_its_setting_and_is_named(tmp_path, capsys, base_status, new_status):
    # P249/P268/P141/P251: invalid, skipped or failed records passed the gate; P248/P270: a baseline marked
    # invalid or failed left its pair out of the difference, and NEW's 100x worse metric passed
    for root, status, value in (("base", base_status, 0.05), ("new", new_status, 5.0)):
        for run in runs(tmp_path / root, [0.05, 0.05]):  # each set's own reason: not one refusal in both
            edit(run, lambda s: (s.update(status=status, reason=f"{root}: why"), set_final(value)(s)))
    for exact in ([], ["--exact"]):
        assert main([str(tmp_path / "base"), str(tmp_path / "new"), *exact]) == 1
        out = capsys.readouterr().out
        assert "FAIL" in out.splitlines()[0]
        for side, status in (("baseline", base_status), ("new", new_status)):
            assert (f"{side} record status {status} (seeds 0, 1)" in out) == (status not in ("ok", "diverged"))


@pytest.mark.parametrize("status", ["invalid", "skipped"])
def test_a_setting_refused_in_both_sets_for_the_same_reason_is_no_change(tmp_path, capsys, status):
    """The smoke sweep's impossible cells (.ci/run compares two smoke sweeps): invalid or skipped in both sets
    for one reason is the same outcome; the gate passes on the settings that ran, and names the others."""
    for root in ("base", "new"):
        runs(tmp_path / root, [0.05, 0.05])
        for run in runs(tmp_path / root / "copy", [0.05, 0.05], task="copy"):
            edit(run, lambda s: s.update(status=status, reason="placement 'x' is invalid for lstm"))
    for exact in ([], ["--exact"]):
        assert main([str(tmp_path / "base"), str(tmp_path / "new"), *exact]) == 0
        assert "not run in either (the same refusal)" in capsys.readouterr().out


def test_a_gate_whose_every_pair_was_refused_in_both_sets_fails(tmp_path, capsys):
    """P251: nothing was compared, so nothing may pass."""
    for root in ("base", "new"):
        for run in runs(tmp_path / root, [0.05, 0.05]):
            edit(run, lambda s: s.update(status="invalid", reason="placement 'x' is invalid for lstm"))
    assert main([str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    assert "nothing was compared" in capsys.readouterr().out


def _refused_in_both(tmp_path):
    for root in ("base", "new"):
        for run in runs(tmp_path / root, [0.05, 0.05]):
            edit(run, lambda s: s.update(status="invalid", reason="placement 'x' is invalid for lstm"))


def _relabelled(tmp_path):
    runs(tmp_path / "base", [0.05, 0.06])
    swapped = runs(tmp_path / "new", [0.05, 0.06])
    labels = [json.loads((r / "summary.json").read_text())["config_hash"] for r in swapped]
    for run, label in zip(swapped, labels[::-1]):
        edit(run, lambda s, label=label: s.update(config_hash=label))


def _set_aside(tmp_path):
    runs(tmp_path / "base", [0.05, 0.06])
    _, odd = runs(tmp_path / "new", [0.05, 0.06])
    (odd / "summary.json").write_text("[1, 2]")  # C17: a JSON array, set aside


def _worse_and_relabelled(tmp_path):
    _relabelled(tmp_path)
    for run in (tmp_path / "new").iterdir():
        edit(run, set_final(9.0))


def _same(tmp_path):
    runs(tmp_path / "base", [0.05, 0.06])
    runs(tmp_path / "new", [0.05, 0.06])


@pytest.mark.parametrize(("make", "code"), [(_refused_in_both, 1), (_relabelled, 1), (_set_aside, 1),
                                            (_worse_and_relabelled, 1), (_same, 0)])
def test_the_first_line_the_last_line_the_out_file_and_the_exit_status_give_one_verdict(tmp_path, capsys, make, code):
    """C04, C10, C15-C21: a gate that failed on nothing compared, a set-aside record or an edited config_hash
    opened its summary with PASS; every surface now reads the one Verdict."""
    make(tmp_path)
    out_file = tmp_path / "compare.md"
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--out", str(out_file)]) == code
    printed = capsys.readouterr().out
    assert out_file.read_text() == printed
    lines = printed.splitlines()
    verdict = lines[0].removeprefix("## normbench compare: ")
    assert verdict.startswith("PASS" if code == 0 else "FAIL")
    assert lines[-1] == f"**{verdict}**"
    assert sum(line.count("PASS") for line in lines) == (2 if code == 0 else 0)


def test_an_ignore_key_that_names_no_setting_is_refused_in_one_line(tmp_path, capsys):
    """C32: ``--ignore gradclip`` (a typo) paired on every setting, and the summary said it had not."""
    _same(tmp_path)
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--ignore", "no.such.key"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "--ignore no.such.key: no setting" in err
    assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--ignore", "task"]) == 0  # a real one still pairs


def test_an_ignore_key_as_typed_is_printed_as_one_safe_bounded_line(tmp_path, capsys):
    """Hostile N16, N17: a key holding a terminal escape and a newline, or 20,000 characters, is echoed in the
    refusal: one line, escapes shown as text, at most a few hundred characters."""
    _same(tmp_path)
    for key in ("\x1b[31mred\nline2", "k" * 20_000):
        assert main([str(tmp_path / "base"), str(tmp_path / "new"), "--ignore", key]) == 2
        err = capsys.readouterr().err
        assert "no setting of either set is named" in err  # the refusal that echoes the key, not an earlier one
        assert err.count("\n") == 1 and "\x1b" not in err and len(err) < 600, err[:200]
