"""Hostile pass 13: what the command line may not take away or point at (h13 B1, B2, B3, B11, B12)."""

import pytest

from normbench.configuration.config import command_line_guard

# B3 (D01, D02, D03, O07, X20, E12): a deletion has no '=' and passed the code gate, dropping the file guard
GUARD_DELETIONS = ["~hydra.callbacks.hydra_files", "~hydra.callbacks.orphans", "~hydra.callbacks.study",
                   "~hydra.callbacks", "~hydra", "~hydra.callbacks.hydra_files=",
                   "~hydra.callbacks.hydra_files={_target_:normbench.configuration.hydra_files.CheckHydraFiles}",
                   "~hydra/job_logging", "~hydra.job_logging.handlers.file", "~hydra.hydra_logging",
                   "~hydra.sweep.dir", "~hydra.run", "~hydra.output_subdir", "~paths.multirun", "~paths"]


@pytest.mark.parametrize("override", GUARD_DELETIONS)
def test_deleting_a_guard_is_refused_in_one_line(override, cli, tmp_path):
    assert command_line_guard([override]) is not None
    code, _, err = cli("-m", override, "steps=2", "task=adding", "task.n_train=64", "report=false",
                       f"hydra.sweep.dir={tmp_path / 'sw'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "remove" in err, err
    assert not (tmp_path / "sw").exists()


@pytest.mark.parametrize("override", ["~tags", "~hydra.job.chdir", "~logger", "hydra.callbacks_x=1", "~pathsx"])
def test_other_deletions_are_not_guards(override):
    assert command_line_guard([override]) is None


def test_allow_code_does_not_open_a_guard(cli, tmp_path):
    code, _, err = cli("--allow-code", "-m", "~hydra.callbacks.hydra_files", "steps=2", f"hydra.sweep.dir={tmp_path / 's'}")
    assert code == 2 and "remove" in err.strip().splitlines()[-1], err
    assert not (tmp_path / "s").exists()
