"""A sweep's compositions (studies/validation.py): every override and every pair of overrides is composed
before the first job runs, each job is composed once in all where the launcher composes in this process, and
what makes a composition cheaper changes no config."""

from __future__ import annotations

import dataclasses
import typing
from itertools import combinations, product

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.types import RunMode
from omegaconf import OmegaConf

from normbench.configuration.config import config_dir
from normbench.studies import validation
from normbench.studies.validation import covering_jobs
from tests.conftest import TINY, TINY_TASK


def _pairs(jobs):
    return {pair for overrides in jobs for pair in combinations(sorted(overrides), 2)}


def test_the_covering_jobs_hold_every_value_and_every_pair_of_the_batch():
    batch = [[f"a={a}", f"b={b}", f"c={c}", "steps=2"] for a, b, c in product(range(3), range(2), range(4))]
    chosen = covering_jobs(batch)
    picked = [batch[i] for i in chosen]
    assert _pairs(picked) == _pairs(batch) and {o for j in picked for o in j} == {o for j in batch for o in j}
    assert chosen == sorted(chosen) and chosen[0] == 0
    assert len(chosen) < len(batch)  # 24 jobs; a∘c alone has 12 pairs, so 12 to 24 are needed and fewer taken


def test_a_job_that_brings_one_new_value_is_composed_even_late():
    batch = [["norm=ln", "seed=0"], ["norm=ln", "seed=1"], ["norm=ln", "seed=0"], ["norm=bogus", "seed=0"]]
    assert covering_jobs(batch) == [0, 1, 3]  # job 2 repeats job 0; job 3's norm was never composed
    assert covering_jobs([[]]) == [0] and covering_jobs([]) == []


def test_a_bad_value_in_the_last_job_still_refuses_the_sweep_before_any_job(cli, tmp_path):
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1,2", "norm=ln,rms,nope", "hydra.sweep.dir=sw", "report=false")
    assert code == 2 and err.count("\n") == 1 and "nope" in err, err
    assert not (tmp_path / "sw").exists()


def test_a_sweep_composes_its_jobs_fewer_than_twice_each(cli, tmp_path, monkeypatch):
    calls = []
    real = ConfigLoaderImpl.load_sweep_config
    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config",
                        lambda self, *a, **k: calls.append(k.get("sweep_overrides", a[1] if len(a) > 1 else None))
                        or real(self, *a, **k))
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1", "norm=ln,rms", "lr=0.01,0.02", "hydra.sweep.dir=sw",
                       "report=false", "steps=2")
    assert code == 0, err
    # 8 jobs run, each composed once to run; the check before them composes only those that brought a new pair
    assert 8 + 4 <= len(calls) < 16, len(calls)


def test_each_job_of_a_sweep_is_composed_once_in_all(cli, tmp_path, monkeypatch):
    composed = []
    real = ConfigLoaderImpl.load_configuration
    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration",
                        lambda self, *a, **k: composed.append(k.get("run_mode")) or real(self, *a, **k))
    code, _, err = cli("-m", *TINY, *TINY_TASK, "seed=0,1", "norm=ln,rms", "lr=0.01,0.02", "hydra.sweep.dir=sw",
                       "report=false", "steps=2")
    assert code == 0, err
    assert composed.count(RunMode.RUN) == 8, composed  # the check's 7 are the ones 7 of the 8 jobs run
    assert not validation._composed  # each kept config was taken


def test_a_kept_config_is_taken_once_by_the_same_job_of_the_same_master_config():
    master, other, made = object(), object(), []
    load = validation._taking_kept(lambda self, m, o: made.append(o) or ("composed", tuple(o)))
    validation._composed[(id(master), ("a=1",))] = (master, "kept")
    assert load(None, other, ["a=1"]) == ("composed", ("a=1",)) and made == [["a=1"]]
    assert load(None, master, ["a=2"]) == ("composed", ("a=2",))
    assert load(None, master, ["a=1"]) == "kept"
    assert load(None, master, ["a=1"]) == ("composed", ("a=1",))  # taken once: a second launch composes anew
    validation._composed.clear()


def _composed(overrides):
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=True)


def test_a_packaged_config_parsed_once_is_a_fresh_copy_for_each_composition():
    validation.install()
    first = _composed(["norm=ln"])
    first.hydra.job_logging.version = 99  # Hydra's own logging settings, from pkg://hydra.conf
    first.hydra.help.app_name = "edited"
    second = _composed(["norm=ln"])
    assert second.hydra.job_logging.version == 1 and second.hydra.help.app_name != "edited"
    assert validation._packaged  # it was kept


def test_a_defaults_list_interpolation_still_resolves_its_choice(tmp_path):
    validation.install()
    (tmp_path / "db").mkdir()
    (tmp_path / "schema").mkdir()
    (tmp_path / "db" / "mysql.yaml").write_text("port: 3306\n")
    (tmp_path / "db" / "pg.yaml").write_text("port: 5432\n")
    (tmp_path / "schema" / "mysql.yaml").write_text("dialect: mysql\n")
    (tmp_path / "schema" / "pg.yaml").write_text("dialect: pg\n")
    (tmp_path / "config.yaml").write_text("defaults:\n  - db: mysql\n  - schema: ${db}\n  - _self_\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        assert compose("config").schema.dialect == "mysql"
        assert compose("config", overrides=["db=pg"]).schema.dialect == "pg"


def test_the_same_file_at_two_packages_keeps_its_own_values_at_each(tmp_path):
    """Hostile review of fc4b3ee (a packaged config moved, not copied, under its package): what ``_self_`` merged into
    the first place leaked into the second, dst.port 1 where Hydra gives the file's 3306."""
    validation.install()
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "mysql.yaml").write_text("port: 3306\nopts:\n  ssl: true\n")
    (tmp_path / "config.yaml").write_text("defaults:\n  - db@src: mysql\n  - _self_\n  - db@dst: mysql\n"
                                          "src:\n  port: 1\n  opts:\n    ssl: false\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        composed = compose("config")
    assert (composed.src.port, composed.src.opts.ssl) == (1, False)
    assert (composed.dst.port, composed.dst.opts.ssl) == (3306, True)
    composed.src.opts.ssl = True
    composed.dst.port = 9
    assert composed.src.port == 1 and composed.dst.opts.ssl is True  # two nodes, not one in two places


def test_an_interpolation_parsed_once_resolves_as_one_parsed_each_time(monkeypatch):
    from omegaconf import base as omegaconf_base
    from omegaconf import grammar_parser
    from omegaconf.errors import GrammarParseError, InterpolationResolutionError

    validation.install()
    assert getattr(omegaconf_base.parse, "trees_kept", False)
    monkeypatch.setenv("NB_TREES_X", "from-env")
    spec = {"a": 2, "b": "${a}", "c": "x_${b}_${a}", "d": "${oc.env:NB_TREES_X,none}", "e": "\\${a}",
            "f": "${oc.select:nope,${a}}", "g": {"h": "${..a}", "i": "${c}-${g.h}"}, "l": ["${a}", "${c}", "${b}"]}
    kept = [OmegaConf.to_container(OmegaConf.create(spec), resolve=True) for _ in range(3)]
    cfg = OmegaConf.create(spec)
    cfg.a = 5  # a tree kept for "${a}" resolves against the config it is read in, now
    assert cfg.c == "x_5_5" and cfg.g.i == "x_5_5-5"
    monkeypatch.setattr(omegaconf_base, "parse", grammar_parser.parse)
    assert kept[0] == kept[1] == kept[2] == OmegaConf.to_container(OmegaConf.create(spec), resolve=True)
    assert kept[0]["d"] == "from-env" and kept[0]["e"] == "${a}"
    monkeypatch.undo()
    for _ in range(2):  # a failure is not kept: it fails each time
        with pytest.raises(InterpolationResolutionError):
            _ = OmegaConf.create({"x": "${oc.env:}"}).x
        with pytest.raises(GrammarParseError):
            OmegaConf.create({"x": "${a"})


@dataclasses.dataclass
class StoredDb:
    port: int = 5432
    opts: typing.Dict[str, bool] = dataclasses.field(default_factory=lambda: {"ssl": True})


# the hostile review of the unguarded move (fc4b3ee), cases a-e, and one file placed once (moved): each config path,
# the files beside it, and the command line
PLACED = {
    "a: _self_ between two places": ({"config.yaml": "defaults:\n  - db@src: mysql\n  - _self_\n  - db@dst: mysql\n"
                                                     "src:\n  port: 1\n  opts:\n    ssl: false\n"}, []),
    "b: a _global_ config between": ({"config.yaml": "defaults:\n  - db@src: mysql\n  - glob\n  - db@dst: mysql\n",
                                      "glob.yaml": "# @package _global_\nsrc:\n  port: 7\n"}, []),
    "c: one file in two configs' defaults": ({"config.yaml": "defaults:\n  - one\n  - two\n  - _self_\n",
                                              "one.yaml": "defaults:\n  - /db@x: mysql\n  - _self_\nx:\n  port: 1\n",
                                              "two.yaml": "defaults:\n  - /db@y: mysql\n"}, []),
    "d: a second place on the command line": ({"config.yaml": "defaults:\n  - db@src: mysql\n  - _self_\n"
                                                              "src:\n  port: 2\n"}, ["+db@dst=mysql"]),
    "e: a ConfigStore node twice": ({"config.yaml": "defaults:\n  - stored@one: validation_db\n  - _self_\n"
                                                    "  - stored@two: validation_db\none:\n  port: 1\n"}, []),
    "placed once, moved": ({"config.yaml": "defaults:\n  - db@src: mysql\n  - _self_\nsrc:\n  port: 4\n"}, []),
}


@pytest.mark.parametrize("case", sorted(PLACED))
def test_a_config_moved_where_placed_once_composes_as_hydras_copy(case, tmp_path, monkeypatch):
    from hydra.core.config_store import ConfigStore

    from normbench.configuration.templates import same_tree

    ConfigStore.instance().store(group="stored", name="validation_db", node=StoredDb)
    files, overrides = PLACED[case]
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "mysql.yaml").write_text("port: 3306\nopts:\n  ssl: true\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    validation.install()

    def composed():
        with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
            return compose("config", overrides=overrides)

    moves = []
    moving = ConfigLoaderImpl._embed_result_config

    def recorded(ret, package):  # whether the loaded config itself now sits at its package: moved, not copied
        loaded, place = ret.config, ret.header["package"] if package is None else package
        embedded = moving(ret, package)
        if place and OmegaConf.select(embedded.config, place) is loaded:
            moves.append(place)
        return embedded

    monkeypatch.setattr(ConfigLoaderImpl, "_embed_result_config", staticmethod(recorded))
    ours = composed()
    monkeypatch.setattr(ConfigLoaderImpl, "_embed_result_config", staticmethod(moving.hydras))
    hydras = composed()
    for config in (ours, hydras):  # ${now:...} as each composition resolved it: a second apart at times
        config._metadata.resolver_cache.pop("now", None)
    assert same_tree(ours, hydras), (OmegaConf.to_yaml(ours), OmegaConf.to_yaml(hydras))
    moved = {place for place in moves if not place.startswith("hydra")}  # Hydra's own configs sit once each: moved
    assert moved == ({"src"} if case == "placed once, moved" else set())  # a file placed twice is copied at each place
    for a, b in (("src", "dst"), ("x", "y"), ("one", "two")):
        if a in ours and b in ours:
            ours[a].port = 11
            assert ours[b].port != 11  # two nodes, not one in two places
