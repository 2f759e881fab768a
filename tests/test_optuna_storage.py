"""hydra/sweeper=optuna_lr with a persistent study: a second command continues the sqlite-stored study."""

import pytest

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason='hydra/sweeper=optuna_lr needs pip install -e ".[optuna]"')
optuna = pytest.importorskip("optuna")


def test_a_sqlite_study_resumes_across_commands(cli, tmp_path, tiny_args):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = ["-m", "hydra/sweeper=optuna_lr", "hydra.sweeper.n_trials=2", f"hydra.sweeper.storage={storage}",
             "hydra.sweeper.study_name=lr_study", *tiny_args, "report=false"]
    # TPE's first trials come from its seeded generator, not from the stored history: a continuing
    # command gives the sampler a new seed, else it proposes the first command's lrs again
    for sweep, seed in (("first", 0), ("second", 1)):
        code, _, err = cli(*study, f"hydra.sweeper.sampler.seed={seed}", f"hydra.sweep.dir={sweep}")
        assert code == 0, err
    trials = optuna.load_study(study_name="lr_study", storage=storage).trials
    assert [t.number for t in trials] == [0, 1, 2, 3] and all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert len({t.params["lr"] for t in trials}) == 4  # four trials of one study, none repeated
