"""Your own claims as YAML files: read, validated as data, judged by the engine, shown in your report."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from normbench.analysis.claims import CLAIMS, SUPPORTED, evaluate_claims, yaml_claims
from normbench.analysis.claims.yaml_claims import CLAIMS_ENV, ClaimFileError, parse, read_file, read_folders
from tests.waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "claims" / "ln_simple_as_good.yaml"
GOOD = {"id": "mine", "statement": "A is not worse than B.", "source": "Me 2026",
        "arms": {"a": {"norm": "ln", "norm.affine": False}, "b": {"norm": "ln", "norm.affine": True}},
        "parts": [{"kind": "not_worse", "assertion": "a is not worse than b", "a": "a", "b": "b"}]}


def with_(**changes):
    doc = {**GOOD, **changes}
    return {k: v for k, v in doc.items() if v is not None}


def test_the_example_claim_reads_as_the_engine_claim_it_describes():
    claim = read_file(EXAMPLE, {c.id for c in CLAIMS})
    assert claim.id == "ln_simple_as_good" and claim.source.startswith("Xu, Sun, Zhang, Zhao & Lin 2019")
    assert [p.kind for p in claim.parts] == ["not_worse"] and claim.parts[0].a == "ln-simple"
    assert claim.arms["ln-simple"] == {"norm": "ln", "norm.affine": False}
    assert "LayerNorm-simple" in claim.quote


@pytest.mark.parametrize("doc, says", [
    (with_(_target_="os.system"), "_target_ names code"),
    (with_(arms={"a": {"norm": {"_target_": "builtins.eval"}}, "b": {"norm": "ln"}}), "_target_ names code"),
    (with_(prepare="normbench.analysis.claims.specs:equal_data"), "names code"),
    (with_(design="os:system"), r"names code \(module:attribute\)"),
    (with_(parts=[{"kind": "better", "assertion": "x", "a": "a", "b": "b", "function": "f"}]), "function names code"),
    (with_(prepare="my_hook"), "prepare must be one of"),
    (with_(requires=["gpu_cluster"]), "requires 'gpu_cluster' is not one of"),
    (with_(parts=[{"kind": "wins", "assertion": "x", "a": "a", "b": "b"}]), "kind must be one of"),
    (with_(parts=[{"kind": "better", "assertion": "x", "a": "a", "b": "c"}]), "b='c' is not an arm"),
    (with_(parts=[{"kind": "better", "assertion": "x", "a": "a", "b": "b", "measure": "luck"}]), "measure 'luck'"),
    (with_(arms={"a": {"lr": {"between": [1, 2]}}, "b": {"norm": "ln"}}), "a predicate is one of"),
    (with_(id="postln_needs_warmup"), "already a claim's"),
    (with_(id="Bad Id"), "id must be"),
    (with_(statement=None), "statement is required"),
    (with_(colour="red"), "unknown key 'colour'"),
    ([1, 2], "holds one mapping"),
    (with_(parts=[{"kind": "not_worse", "assertion": "x", "a": "a", "b": "b", "margin": float("nan")}]),
     "margin needs a finite number"),
    (with_(parts=[{"kind": "not_worse", "assertion": "x", "a": "a", "b": "b", "margin": float("inf")}]),
     "margin needs a finite number"),
    (with_(arms={"a": {"hydra.callbacks.x": 1}, "b": {"norm": "ln"}}), "'hydra.callbacks.x' is not a result-affecting"),
    (with_(arms={"a": {"logger.mlflow.experiment": "x"}, "b": {"norm": "ln"}}), "is not a result-affecting"),
    # issue 50, Y13: a key under a known setting must be one too; Y18: a margin is > 0
    (with_(arms={"a": {"norm": "ln", "norm.__class__": True}, "b": {"norm": "ln"}}), "'norm.__class__' is not a setting"),
    (with_(arms={"a": {"task.nope": 1}, "b": {"norm": "ln"}}), "'task.nope' is not a setting"),
    (with_(parts=[{"kind": "equivalent", "assertion": "x", "a": "a", "b": "b", "margin": -1}]), "margin must be > 0"),
    (with_(parts=[{"kind": "not_worse", "assertion": "x", "a": "a", "b": "b", "margin": 0}]), "margin must be > 0"),
])
def test_a_bad_claim_is_one_line_naming_the_file_and_the_key(doc, says):
    with pytest.raises(ClaimFileError, match=says) as error:
        parse(doc, "mine.yaml", {c.id for c in CLAIMS})
    assert "\n" not in str(error.value) and str(error.value).startswith("mine.yaml")


def test_python_tags_and_oversized_files_are_refused_before_any_object_is_made(tmp_path):
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("id: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ClaimFileError, match="not a claim file's YAML"):
        read_file(tagged)
    big = tmp_path / "big.yaml"
    big.write_text("design: " + "x" * (yaml_claims.MAX_BYTES + 1))
    with pytest.raises(ClaimFileError, match="larger than"):
        read_file(big)
    with pytest.raises(ClaimFileError, match="not a folder"):
        read_folders([tmp_path / "missing"], CLAIMS)
    twice = tmp_path / "twice"
    twice.mkdir()
    shutil.copy(EXAMPLE, twice / "one.yaml")
    shutil.copy(EXAMPLE, twice / "two.yaml")
    with pytest.raises(ClaimFileError, match="already a claim's"):
        read_folders([twice], CLAIMS)


def test_known_settings_under_a_group_stay_selectable():
    parse(with_(arms={"a": {"task.length": 6, "model.hidden": 8, "optim.name": "adamw"}, "b": {"norm": "ln"}}),
          "mine.yaml", {c.id for c in CLAIMS})


def test_an_integer_python_cannot_read_is_one_line(tmp_path):
    """Issue 50, Y20: a 5000-digit integer made PyYAML raise ValueError: a traceback."""
    huge = tmp_path / "huge.yaml"
    huge.write_text("id: " + "9" * 5000 + "\n")
    with pytest.raises(ClaimFileError, match="not a claim file's YAML") as error:
        read_file(huge)
    assert "\n" not in str(error.value)
    # hostile h14 B14 (K10): Python's own line, its advice to call sys.set_int_max_str_digits() cut mid-word
    assert str(error.value) == f"{huge}: not a claim file's YAML: a number has more than 4300 digits"


def test_a_nesting_past_the_parsers_recursion_is_one_line(tmp_path):
    """Hostile pass 4, Y24: 5,000 nested lists made PyYAML's parser raise RecursionError: a traceback."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("id: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ClaimFileError, match="nested deeper") as error:
        read_file(deep)
    assert "\n" not in str(error.value)


def test_an_alias_bomb_is_refused_in_one_line_before_it_is_expanded(tmp_path):
    # nine levels of nine aliases: 9**9 strings once expanded, a few hundred bytes on disk
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(ClaimFileError, match="expands past .* YAML nodes") as error:
        read_file(bomb)
    assert "\n" not in str(error.value)
    recursive = tmp_path / "recursive.yaml"
    recursive.write_text("id: &x [*x, *x]\n")
    with pytest.raises(ClaimFileError):
        read_file(recursive)
    (tmp_path / "none").mkdir()  # a PATH that exists (a missing one is refused first), holding no records
    done = subprocess.run([sys.executable, "-m", "normbench", "report", str(tmp_path / "none"), "--claims",
                           str(tmp_path)], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 2 and "expands past" in done.stderr and "Traceback" not in done.stderr


def test_a_yaml_claim_is_judged_beside_the_shipped_ones(tmp_path, monkeypatch, runs_of):
    folder = tmp_path / "claims"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder)
    runs = runs_of(*[{"seed": s, "best_val": 0.90 + 0.001 * s, "axes": {"norm": "ln", "norm.affine": affine}}
                     for affine in (True, False) for s in range(4)],
                   *[{"seed": s, "best_val": 0.40 + 0.001 * s, "axes": {"norm": "none", "norm.affine": True}}
                     for s in range(4)])
    monkeypatch.delenv(CLAIMS_ENV, raising=False)
    assert "ln_simple_as_good" not in {c.id for c, _ in evaluate_claims(runs)}
    monkeypatch.setenv(CLAIMS_ENV, str(folder))
    verdicts = {c.id: v for c, v in evaluate_claims(runs)}
    assert verdicts["ln_simple_as_good"].status == SUPPORTED  # equal scores: not worse at the metric's margin
    assert {c.id for c in CLAIMS} <= set(verdicts)


def test_report_with_claims_folder_shows_the_verdict_and_a_bad_file_is_exit_2(tmp_path, write_record):
    for affine in (True, False):
        for seed in range(3):
            write_record(tmp_path / "sweep", f"{affine}-{seed}", seed=seed, best_val=0.9 + 0.001 * seed,
                         axes={"norm": "ln", "norm.affine": affine})
    folder = tmp_path / "claims"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder)
    command = [sys.executable, "-m", "normbench", "report", str(tmp_path / "sweep"), "--claims", str(folder),
               "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-2000:]
    claims = (tmp_path / "out" / "claims.csv").read_text()
    line = next(row for row in claims.splitlines() if row.startswith("ln_simple_as_good"))
    assert "Xu, Sun, Zhang, Zhao & Lin 2019" in line or "Xu et al. 2019" in line
    assert "ln_simple_as_good" in (tmp_path / "out" / "report.html").read_text()

    (folder / "bad.yaml").write_text("id: bad\nstatement: s\nsource: me\n_target_: os.system\narms: {}\nparts: []\n")
    bad = subprocess.run(command, capture_output=True, text=True, timeout=HANG_S)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "_target_ names code" in bad.stderr


def test_study_checks_its_claims_folder_before_any_round(tmp_path):
    bad = tmp_path / "claims"
    bad.mkdir()
    (bad / "x.yaml").write_text("id: x\nstatement: s\nsource: me\narms: {a: {norm: ln}}\n"
                                "parts: [{kind: better, assertion: t, a: a, b: a, module: os}]\n")
    for folder, says in ((tmp_path / "missing", "not a folder"), (bad, "module names code")):
        done = subprocess.run([sys.executable, "-m", "normbench", "study", "+sweep=smoke", "--claims", str(folder),
                               "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=HANG_S)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr[-500:]
    assert not list((tmp_path / "out").rglob("summary.json"))


def test_a_yml_claim_file_is_read_and_a_folder_without_claim_files_is_refused(tmp_path):
    # Y05: a claim saved as .yml was passed over without a word, and the report judged it nowhere
    folder = tmp_path / "claims"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "mine.yml")
    assert [c.id for c in read_folders([folder], [])] == ["ln_simple_as_good"]
    empty = tmp_path / "notes"
    empty.mkdir()
    (empty / "claim.txt").write_text("id: x\n")
    with pytest.raises(ClaimFileError, match="holds no claim files"):
        read_folders([empty], [])


def test_a_claims_paper_scale_reaches_the_external_validity_paragraph(tmp_path):
    from normbench.analysis.claims import SHIPPED
    from normbench.analysis.multiplicity import paper_scale

    by_id = {c.id: c for c in SHIPPED}
    assert "IWSLT14" in paper_scale(by_id["postln_needs_warmup"])  # the spec's field, not only regime prose
    folder = tmp_path / "claims"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder)
    mine = read_folders([folder], [])[0]
    assert paper_scale(mine) == "Transformers and other models on four datasets (Xu et al. 2019)"


def test_a_selector_may_name_a_cell_kernel_by_its_earlier_name():
    """cpp and compile, compiled's and torch_compile's names before issue 47's rename, select the runs the
    settings now name compiled and torch_compile (a run's axes carry the present names)."""
    arms = {"a": {"model.cell_kernel": "cpp"}, "b": {"model.cell_kernel": {"one_of": ["compile", "python"]}}}
    claim = parse(with_(arms=arms), "mine.yaml")
    assert claim.arms["a"] == {"model.cell_kernel": "compiled"}
    chosen = claim.arms["b"]["model.cell_kernel"]
    assert chosen.test("torch_compile") and chosen.test("python") and not chosen.test("compiled")


def test_a_link_in_the_claims_folder_is_refused_and_what_it_points_at_never_echoed(tmp_path):
    """Hostile R09, R30, S16: cl/c.yaml -> a file of passwords; the error quoted its first line as an unknown
    key. A claim is a file of the folder itself; a terminal escape in a file name is shown, not acted on."""
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$saltsalt$FAKEHASH:19000:0:99999:7:::\n")
    folder = tmp_path / "cl"
    folder.mkdir()
    (folder / "c.yaml").symlink_to(secret)
    with pytest.raises(ClaimFileError) as error:
        read_folders([folder], CLAIMS)
    assert "a link, not a claim file" in str(error.value) and "FAKEHASH" not in str(error.value)
    (folder / "c.yaml").unlink()
    odd = folder / "\x1b[31mred.yaml"
    odd.write_text("id: [\n")
    with pytest.raises(ClaimFileError) as error:
        read_folders([folder], CLAIMS)
    assert "\x1b" not in str(error.value) and "\\x1b[31mred.yaml" in str(error.value)


def test_an_unknown_key_that_is_no_name_is_not_echoed(tmp_path):
    """Hostile C24: a hard link to a password file reads as one unknown key, its first line; a typo is named."""
    folder = tmp_path / "cl"
    folder.mkdir()
    (folder / "h.yaml").write_text("root:$6$salt$HASH:19000:0:99999:7:::\n")
    with pytest.raises(ClaimFileError) as error:
        read_folders([folder], CLAIMS)
    assert "HASH" not in str(error.value) and "not shown" in str(error.value)
    (folder / "h.yaml").write_text("stament: x\n")
    with pytest.raises(ClaimFileError, match="unknown key 'stament'"):
        read_folders([folder], CLAIMS)


HUGE = 10 ** 4000  # past a float's range, within the 4300 digits Python reads (hostile h15 B4)


@pytest.mark.parametrize("doc, says", [
    (with_(parts=[{"kind": "not_worse", "assertion": "x", "a": "a", "b": "b", "margin": HUGE}]),
     r"parts\[0\].margin needs a finite number of at most 2\^53 in size, got a 4001-digit integer"),
    (with_(arms={"a": {"lr": {"above": -HUGE}}, "b": {"norm": "ln"}}), "4001-digit integer"),
    (with_(regime_checks=[{"name": "bn_pool_at_most", "n": HUGE}]), r"regime_checks\[0\].n needs .* 4001-digit integer"),
    # hostile h15 B10: claims that cannot mean anything
    (with_(parts=[{"kind": "better", "assertion": "x", "a": "a", "b": "a"}]), "a and b are both 'a'"),
    (with_(regime_checks=[{"name": "bn_pool_at_most", "n": -1}]), "n counts vectors: a whole number of at least 1"),
    (with_(regime_checks=[{"name": "bn_pool_at_most", "n": 2.5}]), "n counts vectors"),
    (with_(regime_checks=[{"name": "unnormalized_grad_grows", "growth": 0}]), "growth must be > 0"),
    (with_(also_compare=["hydra.run.dir"]), "also_compare 'hydra.run.dir' is not a result-affecting setting"),
    (with_(also_compare=["paths.data"]), "also_compare 'paths.data' is not a result-affecting setting"),
    # hostile h15 B15, B16: YAML's bools as arm names, the id's length
    (with_(arms={True: {"norm": "ln"}, "rms": {"norm": "rms"}}), r"arm names must be text; YAML read 'true' as bool"),
    # hostile h16 N2: `null:` (or `~:`) is None to YAML, which next()'s default hid, and the line itself failed
    (with_(arms={None: {"norm": "ln"}, "rms": {"norm": "rms"}}), r"arm names must be text; YAML read 'null' as NoneType"),
    (with_(parts=[{"kind": "better", "assertion": "x", "a": True, "b": "b"}]), r"a=True must be an arm's name as text"),
    (with_(id="a" * 61), "id must be at most 60 lower-case letters"),
    # hostile h16 N7: a regime check's arguments, by what its predicate reads (the report said "The check itself failed")
    (with_(regime_checks=[{"name": "bn_pool_at_most", "n": "3"}]),
     r"claim mine, regime_checks\[0\] bn_pool_at_most: n needs a finite number, got '3'"),
    (with_(regime_checks=[{"name": "unnormalized_grad_grows", "growth": "abc"}]), "growth needs a finite number"),
    (with_(regime_checks=[{"name": "flow_window", "steps": "{0.__class__}"}]), "steps needs a finite number"),
    (with_(regime_checks=[{"name": "setting_is", "key": "hydra.run.dir", "value": "/etc", "default": "x"}]),
     "setting_is: 'hydra.run.dir' is not a result-affecting setting"),
    (with_(regime_checks=[{"name": "setting_is", "key": "norm", "value": "ln"}]),
     "setting_is: needs the argument 'default'"),
    (with_(regime_checks=[{"name": "arm_trains", "arm": "nosucharm"}]), "arm='nosucharm' is not an arm; arms are a, b"),
    (with_(regime_checks=[{"name": "depth_spread", "levels": 2.5, "factor": 2}]), "levels counts depths"),
    (with_(regime_checks=[{"name": "bn_pool_at_most", "n": 3, "bogus_arg": 1}]),
     "unknown argument 'bogus_arg'; bn_pool_at_most takes n"),
    (with_(regime_checks=[{"name": "off_trivial", "remedy": "x"}]), "unknown argument 'remedy'; off_trivial takes no"),
    (with_(regime_checks=[{"name": "lr_top_unstable", "arm": "a", "failure": 1}]), "unknown argument 'failure'"),
    (with_(regime_checks=[{"name": "recorded", "column": 7}]), r"column must be a name or words written as text"),
])
def test_a_claim_that_cannot_mean_anything_is_one_line(doc, says):
    with pytest.raises(ClaimFileError, match=says) as error:
        parse(doc, "mine.yaml", {c.id for c in CLAIMS})
    assert "\n" not in str(error.value) and str(error.value).startswith("mine.yaml")


def test_every_shipped_regime_check_reads_only_the_arguments_a_claim_file_may_give():
    """The argument table (hostile h16 N7) covers every predicate's arguments: each placeholder of its texts is a
    required argument, and every shipped claim's checks meet it."""
    import string

    from normbench.analysis.claims import predicates

    for name, entry in predicates.PREDICATES.items():
        placeholders = {f for text in (entry.holds, entry.remedy) for _, f, _, _ in string.Formatter().parse(text) if f}
        required = {k for k, (_, needed) in yaml_claims.REGIME_ARGUMENTS.get(name, {}).items() if needed}
        assert placeholders <= required, name
    for claim in CLAIMS:
        for need in claim.needs:
            yaml_claims._regime_arguments(need.name, need.arguments, claim.arms, claim.id)


def test_a_valid_regime_check_with_its_arguments_is_read():
    doc = with_(regime_checks=[{"name": "setting_is", "key": "norm", "value": "ln", "default": "ln"},
                               {"name": "arm_trains", "arm": "a", "parts": [1]}, "off_trivial"])
    assert [n.name for n in parse(doc, "mine.yaml", set()).needs] == ["setting_is", "arm_trains", "off_trivial"]


def test_an_axis_name_stays_comparable():
    assert parse(with_(also_compare=["gamma_init", "muon"]), "mine.yaml", set()).also_compare == ("gamma_init", "muon")


HUGE_NUMBERS = ["1" + "0" * 4290, "0x" + "f" * 4000]  # past int's 4300 digits, and a hex int too large for a float


def _claims_with_number(tmp_path: Path, number: str) -> Path:
    """A claims folder whose one file (the example's claim) has ``number`` in a regime check."""
    claims = tmp_path / "cl"
    claims.mkdir()
    # the example's own regime_checks left out: a key written twice is refused on its own (h31 c12)
    kept = [line for line in EXAMPLE.read_text().replace("ln_simple_as_good", "mine").splitlines()
            if not line.startswith(("regime_checks:", "  - off_"))]
    (claims / "c.yaml").write_text("\n".join(kept) + f"\nregime_checks: [{{name: bn_pool_at_most, n: {number}}}]\n")
    return claims


@pytest.mark.parametrize("number", HUGE_NUMBERS)
def test_a_number_too_large_for_a_float_is_refused_by_the_reader_every_door_reads_with(tmp_path, number):
    with pytest.raises(ClaimFileError, match=r"regime_checks\[0\]\.n needs .*-digit integer"):
        read_folders([_claims_with_number(tmp_path, number)], list(CLAIMS))


def test_a_number_too_large_for_a_float_is_one_line_at_every_door(tmp_path):
    """Hostile h15 B4 (K01, K21, K33, Y20, Y21): report --claims, normbench.report, study --claims and a -m
    sweep with NORMBENCH_CLAIMS: each one line, exit 2, before anything runs. Each door reads the folder with
    read_folders, which the test above gives both kinds of number; here the decimal one goes through every door."""
    claims = _claims_with_number(tmp_path, HUGE_NUMBERS[0])
    (tmp_path / "none").mkdir()
    sweep = ["-m", "steps=2", "task=adding", "hydra.sweep.dir=s"]
    commands = [["-m", "normbench", "report", "none", "--claims", "cl"],
                ["-m", "normbench.report", "none", "--claims", "cl"],
                ["-m", "normbench", "study", "steps=2", "norm=ln,rms", "--claims", "cl", "--out", "st"],
                ["-m", "normbench", *sweep]]
    for command in commands:
        env = {**__import__("os").environ, CLAIMS_ENV: str(claims)} if command[-1] == sweep[-1] else None
        done = subprocess.run([sys.executable, *command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=HANG_S)
        assert done.returncode == 2, (command, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, (command, done.stderr)
        assert "digit integer" in done.stderr, (command, done.stderr)
    assert not (tmp_path / "s").exists() and not (tmp_path / "st").exists()


def test_a_claims_folder_named_too_long_in_the_environment_is_said_to_be_so(monkeypatch):
    """Hostile h16 N17 (A27): NORMBENCH_CLAIMS=<300 bytes> read "cannot write the report to o: [Errno 36] ..."."""
    monkeypatch.setenv(CLAIMS_ENV, "x" * 300)
    with pytest.raises(ClaimFileError, match=r"^NORMBENCH_CLAIMS entry 'x+…: a name longer than the filesystem allows"):
        yaml_claims.from_environment(CLAIMS)


def test_a_number_yaml_reads_as_text_is_read_as_the_number_and_a_word_is_still_refused():
    """YAML 1.1 reads 1e-3 (no dot), 1.0e3 and 1e+3 as text (hostile h18 H7: "margin needs a finite number, got
    '1e-3'"): to the file's writer each is a number, as in a margin, a selector's bound and a check's argument."""
    import yaml

    text = ("id: mine\nstatement: A is not worse than B.\nsource: Me 2026\n"
            "arms: {a: {norm: ln, norm.eps: {below: 1e-300}}, b: {norm: ln, norm.eps: {above: 1e-300}}}\n"
            "parts: [{kind: not_worse, assertion: a is not worse than b, a: a, b: b, margin: 1e-3}]\n"
            "regime_checks: [{name: unnormalized_grad_grows, growth: 1.0e3}]\n")
    doc = yaml.safe_load(text)
    assert doc["parts"][0]["margin"] == "1e-3" and doc["regime_checks"][0]["growth"] == "1.0e3"  # YAML's text
    claim = parse(doc, "mine.yaml", set())
    assert claim.parts[0].margin == 0.001
    assert claim.needs[0].arguments == {"growth": 1000.0}
    for word in ("1e", "e-3", "1e-3x", "0x1p3", "nan"):
        with pytest.raises(ClaimFileError, match=f"margin needs a finite number, got '{word}'"):
            parse(with_(parts=[{**GOOD["parts"][0], "margin": word}]), "mine.yaml", set())


@pytest.mark.parametrize("where", ["top", "arm"])
def test_a_key_written_twice_is_one_line_naming_it(tmp_path, where):
    # PyYAML keeps the last of two equal keys: a claim whose id was written twice was judged under the second,
    # no line (hostile h31 c12); sweep files refuse the same mistake
    text = EXAMPLE.read_text()
    text = ("id: first\n" + text) if where == "top" else text.replace("{norm: ln,", "{norm: ln, norm: rms,", 1)
    assert text != EXAMPLE.read_text()
    twice = tmp_path / "twice.yaml"
    twice.write_text(text)
    with pytest.raises(ClaimFileError, match=r"names the key '(id|norm)' \(line \d+\) twice") as refused:
        read_file(twice)
    assert "\n" not in str(refused.value)
