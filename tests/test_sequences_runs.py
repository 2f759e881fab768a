"""Variable lengths, bidirectional recurrences and dropout through a whole run: records, identity, refusals."""

import pytest

from normbench.configuration.contract import identity
from normbench.training.run import execute

VARLEN = ["task.length=8", "task.min_length=3"]


def test_a_variable_length_run_records_the_masked_recurrence_and_bn_mask_in_its_identity(compose, tmp_path):
    masked = execute(compose(*VARLEN, "model=lstm", "placement=in_cell", "norm=ln"), tmp_path / "ln", [])
    assert masked["status"] == "ok", masked["reason"]
    assert masked["environment"]["cell_kernel"].startswith("compiled-")  # the kernel runs padded batches too
    bn = [execute(compose(*VARLEN, "norm=bn", "placement=post", f"norm.bn_mask={m}", "task.bucket=true"),
                  tmp_path / f"bn{m}", []) for m in ("true", "false")]
    assert all(run["status"] == "ok" for run in bn), [run["reason"] for run in bn]
    assert bn[0]["axes"]["norm.bn_mask"] is True and bn[1]["axes"]["norm.bn_mask"] is False
    assert bn[0]["metrics"]["final_train_loss"] != bn[1]["metrics"]["final_train_loss"]
    assert bn[0]["axes"]["task.bucket"] is True


def test_new_settings_are_inert_where_they_cannot_act(compose):
    def axes(*overrides):
        from omegaconf import OmegaConf

        return identity(OmegaConf.to_container(compose(*overrides), resolve=True)).settings

    fixed = axes("norm=bn", "norm.bn_mask=false", "task.bucket=true")  # no padding: nothing to mask or bucket
    assert "norm.bn_mask" not in fixed and "task.bucket" not in fixed and "task.min_length" not in fixed
    assert "model.bidirectional" not in fixed and "model.dropout" not in fixed and "model.dropout_at" not in fixed
    assert axes("task.min_length=6") == axes()  # min_length = length: the fixed-length task
    assert "norm.bn_mask" not in axes(*VARLEN, "norm=ln")
    assert axes(*VARLEN, "model.dropout=0.1", "placement=in_cell").get("model.dropout_at") is None
    assert axes(*VARLEN, "model.dropout=0.1", "placement=post")["model.dropout_at"] == "after_norm"
    assert "model.dropout_at" not in axes("model.dropout=0.1", "placement=pre")  # one layer: no norm meets an output
    assert axes("model.dropout=0.1", "placement=pre", "model.layers=2")["model.dropout_at"] == "after_norm"
    assert "model.dropout_recurrent" not in axes("model=transformer", "model.dropout=0.1")


def test_bidirectional_and_dropout_runs_train(compose, tmp_path):
    for i, extra in enumerate([("model=gru", "model.bidirectional=true", "model.layers=2", *VARLEN),
                               ("model=lstm", "placement=post", "model.dropout=0.2", "model.dropout_recurrent=true"),
                               ("model=transformer", "model.dropout=0.2", *VARLEN)]):
        summary = execute(compose(*extra), tmp_path / str(i), [])
        assert summary["status"] == "ok", (extra, summary["reason"])
        if "model.dropout=0.2" in extra:  # the masks come from the run's seed: the same run twice is the same
            again = execute(compose(*extra), tmp_path / f"{i}again", [])
            assert again["metrics"]["final_train_loss"] == summary["metrics"]["final_train_loss"]


def test_invalid_sequence_settings_are_refused_in_one_line(compose, tmp_path, cli, tiny_args):
    summary = execute(compose("model=transformer", "model.bidirectional=true"), tmp_path / "t", [])
    assert summary["status"] == "invalid" and "bidirectional" in summary["reason"]
    text = execute(compose("task=text", "task.path=nowhere.txt", "model.bidirectional=true"), tmp_path / "x", [])
    assert text["status"] == "invalid" and "reads the next character" in text["reason"]
    status, _, err = cli(*tiny_args, "model.dropout=1.5")
    assert status == 2 and "model.dropout must be in [0, 1)" in err and len(err.strip().splitlines()) == 1
    status, _, err = cli(*tiny_args, "model.dropout_at=middle")
    assert status == 2 and "model.dropout_at" in err


@pytest.mark.parametrize("sweep,overrides,expect", [
    ("ln_vs_bn_varlen", ["+varlen_arm=bn_unmasked", "task.min_length=4"],
     {"norm.kind": "bn", "norm.bn_mask": False, "task.min_length": 4, "placement.name": "in_cell"}),
    ("ln_vs_bn_varlen", ["+varlen_arm=bn_masked", "task.min_length=12"], {"norm.bn_mask": True}),
    ("dropout_placement", ["model.dropout_at=before_norm", "placement=post"],
     {"model.dropout": 0.3, "model.dropout_at": "before_norm", "task.name": "digits"}),
    ("smoke", ["+smoke=ln_bidirectional", "model=gru"], {"model.bidirectional": True, "task.min_length": 3}),
    ("smoke", ["+smoke=dyt_fp16"], {"model.dropout_at": "before_norm", "model.dropout_recurrent": True}),
])
def test_the_sequence_sweeps_compose_into_the_settings_their_records_will_hold(compose, sweep, overrides, expect):
    from omegaconf import OmegaConf

    from normbench.configuration.config import to_config

    node = compose(f"+sweep={sweep}", *overrides, tiny=False)
    to_config(node)  # valid
    plain = OmegaConf.to_container(node, resolve=True)
    for dotted, value in expect.items():
        group, key = dotted.split(".")
        assert plain[group][key] == value, dotted


@pytest.mark.parametrize("task", ["adding", "imdb", "text"])
def test_records_from_before_these_keys_keep_their_identity(compose, task):
    """A config without the new keys (an earlier record) and today's at their defaults are one run;
    imdb's earlier task is today's variable_length=false."""
    from omegaconf import OmegaConf

    extra = ["task.variable_length=false"] if task == "imdb" else []
    today = OmegaConf.to_container(compose(f"task={task}", "norm=bn", *extra), resolve=True)
    earlier = OmegaConf.to_container(compose(f"task={task}", "norm=bn"), resolve=True)
    for group, keys in {"model": ("bidirectional", "dropout", "dropout_at", "dropout_recurrent"),
                        "norm": ("bn_mask",), "task": ("min_length", "bucket", "examples", "variable_length")}.items():
        for key in keys:
            earlier[group].pop(key, None)
    assert identity(today).config_hash == identity(earlier).config_hash


def test_imdb_reviews_as_long_as_they_are_train_bucketed_with_masked_bn(compose, tmp_path):
    root = tmp_path / "aclImdb"
    for part in ("train", "test"):
        for label, words in (("pos", "good fine great"), ("neg", "bad awful poor")):
            folder = root / part / label
            folder.mkdir(parents=True)
            for i in range(12):
                (folder / f"{i}_1.txt").write_text(" ".join([words] * (1 + i % 5)), encoding="utf-8")
    summary = execute(compose("task=imdb", f"task.path={root}", "task.bucket=true", "norm=bn", "batch_size=8"),
                      tmp_path / "run", [])
    assert summary["status"] == "ok", summary["reason"]
    assert summary["axes"]["task.bucket"] is True and summary["axes"]["norm.bn_mask"] is True
    assert summary["task"]["seq_len"] == 15
