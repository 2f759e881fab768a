import contextlib

import pytest
import torch

from normbench.configuration.config import to_config
from normbench.records.record import RecordWriter
from normbench.training import measures
from normbench.training.loggers import Hook
from normbench.training.probes import Probes
from normbench.training.recording import RecordHook
from normbench.training.run import prepare
from normbench.training.train import Trainer, learning_rate
from tests.conftest import registered_norm


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_warmup_then_schedule(compose, schedule):
    cfg = to_config(compose("lr=1.0", "steps=100", "warmup_steps=10", f"optim.schedule={schedule}"))
    assert learning_rate(cfg, 1) == pytest.approx(0.1)
    assert learning_rate(cfg, 10) == pytest.approx(1.0)
    if schedule == "constant":
        assert learning_rate(cfg, 100) == 1.0
    else:
        assert learning_rate(cfg, 55) == pytest.approx(0.5) and learning_rate(cfg, 100) == pytest.approx(0.0)


class Calls(Hook):
    """A hook object that writes down which hook was called at which step."""

    def __init__(self):
        self.calls = []

    def on_step_start(self, trainer, step):
        self.calls.append(("step_start", step))

    def on_log(self, trainer, step, **scalars):
        self.calls.append(("log", step))

    def on_probe_start(self, trainer, step):
        self.calls.append(("probe_start", step))

    def on_probe(self, trainer, step, stats, activations):
        self.calls.append(("probe", step))

    def on_step_end(self, trainer, step):
        self.calls.append(("step_end", step))

    def on_eval(self, trainer, step, **scalars):
        self.calls.append(("eval", step))


def test_hooks_are_called_in_the_loops_order(compose, tmp_path):
    cfg, task, model, device = prepare(compose("log_every=2", "steps=4", "probe_every=2", "eval_every=4"))
    record = RecordWriter(tmp_path)
    record.start(config={}, overrides=[], seed=cfg.seed)
    logger, clock = Calls(), Calls()
    try:
        Trainer(cfg, task, model, device, [Probes(), RecordHook(record), logger, clock]).fit()
    finally:
        record.finish("ok", None)
    step = [("step_start", 1), ("step_end", 1)]
    probe = [("step_start", 2), ("log", 2), ("probe_start", 2), ("probe", 2), ("step_end", 2)]
    assert logger.calls == clock.calls == [*step, *probe, ("step_start", 3), ("step_end", 3),
                                          *[(kind, n + 2) for kind, n in probe], ("eval", 4)]


def test_the_record_sections_carry_every_registered_metric_in_its_order(compose, tmp_path):
    """normbench/records/metrics.py is the record's table of contents: each key the Trainer fills, in its order."""
    from normbench.records.metrics import BY_KEY, keys

    cfg, task, model, device = prepare(compose("steps=2", "eval_every=2", "probe_every=2"))
    record = RecordWriter(tmp_path)
    record.start(config={}, overrides=[], seed=cfg.seed)
    trainer = Trainer(cfg, task, model, device, [Probes(), RecordHook(record)])
    try:
        trainer.fit()
    finally:
        record.finish("ok", None)
    # every key but the verdicts the analysis decides from the record (at_chance, failed_to_learn, held_at: analysis/rules.py)
    written = [k for k in keys("metrics") if not BY_KEY[k].computed_in.startswith("normbench.analysis")]
    assert list(measures.metrics(trainer)) == written and not {"at_chance", "failed_to_learn", "held_at"} & set(written)
    assert list(measures.throughput(trainer)) == list(keys("throughput"))


def _trainer(compose, run_dir, *overrides):
    cfg, task, model, device = prepare(compose("steps=3", "eval_every=3", *overrides))
    record = RecordWriter(run_dir)
    record.start(config={}, overrides=[], seed=cfg.seed, config_hash="h")
    return Trainer(cfg, task, model, device, [Probes(), RecordHook(record)])


def test_the_trainer_owns_its_state_and_a_fresh_one_takes_it_back_whole(compose, tmp_path):
    """state_dict() is what a checkpoint holds besides its step and the process's generators (saved
    and read back through every check); load_state_dict puts it all back, or refuses and changes nothing."""
    import torch

    from normbench.training import checkpoint

    trained = _trainer(compose, tmp_path / "a")
    trained.fit()
    state = trained.state_dict()
    checkpoint.save(trained, tmp_path / "a" / checkpoint.FILE, 3, "h")
    saved = checkpoint.read(tmp_path / "a" / checkpoint.FILE, "h", 3)
    assert set(saved) == {"config_hash", "step", "rng", *state} and saved["curves"] == state["curves"]
    fresh = _trainer(compose, tmp_path / "b")
    fresh.load_state_dict(state, 3)
    again = fresh.state_dict()
    assert fresh.start_step == 3 and again["measured"] == state["measured"] and again["curves"] == state["curves"]
    assert all(torch.equal(v, state["model"][k]) for k, v in again["model"].items())
    assert torch.equal(again["batches"]["generator"], state["batches"]["generator"])
    other = _trainer(compose, tmp_path / "c", "model.hidden=12")
    built = {k: v.clone() for k, v in other.master.state_dict().items()}
    with pytest.raises(ValueError, match="its model is not this run's"):
        other.load_state_dict(state, 3)
    assert other.start_step == 0 and other.measured.losses == []
    assert all(torch.equal(v, built[k]) for k, v in other.master.state_dict().items())


def test_the_timed_step_is_one_step_and_nothing_else(compose, tmp_path):
    """What bench arms times: one optimizer step, no log line, nothing measured but the skipped-step count."""
    trainer = _trainer(compose, tmp_path)
    before = {k: v.clone() for k, v in trainer.master.state_dict().items()}
    done = trainer.timed_step(1)
    assert not done.diverged and done.elapsed_s > 0 and done.grad_stats is None
    assert any(not (v == before[k]).all() for k, v in trainer.master.state_dict().items())
    assert trainer.measured.step == 0 and trainer.measured.losses == []
    assert not (tmp_path / "metrics.jsonl").exists() or (tmp_path / "metrics.jsonl").read_text() == ""


def test_the_trainer_is_a_loop_under_250_lines_inheriting_nothing():
    """Issue 47: what it measured is written by its hooks and read off its state elsewhere
    (recording.py, probes.Probes, measures.py, state.py); the class stays the loop and its state."""
    import inspect

    assert Trainer.__mro__ == (Trainer, object)
    assert len(inspect.getsourcelines(Trainer)[0]) < 250


def test_a_trainer_without_hooks_writes_nothing_and_steps(compose, tmp_path, monkeypatch):
    """What ``bench arms`` builds: no record, no bar, no probes; its timed step still trains."""
    monkeypatch.chdir(tmp_path)
    cfg, task, model, device = prepare(compose("steps=3"))
    trainer = Trainer(cfg, task, model, device)
    done = trainer.timed_step(1)
    assert not done.diverged and done.elapsed_s > 0 and trainer.precision_summary["norm_input_dtypes"]
    assert list(tmp_path.iterdir()) == []


def _evaluation(compose, forwards, positions, *overrides):
    """(metric, loss) of a fresh tiny model's evaluation of its val split with eval_positions = ``positions``, the
    examples of each forward it took, and of each batch."""
    from normbench.tasks.scoring import scoring
    from normbench.training import train

    cfg, task, model, device = prepare(compose(*overrides))
    batches = train.fixed_batches(task.val, device)
    forwards.clear()
    result = train.evaluate(model, batches, scoring(task), contextlib.nullcontext, positions)
    return result, list(forwards), [len(x) for x, _ in batches]


ATTENTION_TASKS = {"windows": ("task=mqar", "task.n_train=64", "task.n_val=50", "task.n_test=50"),
                   "padded documents": ("task=fortunes_topic", "task.n_train=64", "task.n_val=40", "task.n_test=8",
                                        "task.max_len=96"),
                   "a regression head": ("task=adding", "task.length=6", "task.n_train=64", "task.n_val=50",
                                         "task.n_test=8")}


@pytest.mark.parametrize("task", ATTENTION_TASKS)
def test_an_attention_models_evaluation_in_parts_scores_as_its_whole_batches_to_rounding(compose, forwards, task):
    """eval_positions cuts a batch's forward, not its score; products over fewer rows may round otherwise (the
    adding task's 64-to-1 head over 7 rows against 50 did, on an AMD EPYC): within 1e-6, relative."""
    overrides = ("model=transformer", "norm=bn", *ATTENTION_TASKS[task])
    whole, taken, sizes = _evaluation(compose, forwards, 0, *overrides)
    assert taken == sizes
    steps = prepare(compose(*overrides))[1].val.x.shape[1]
    parts, taken, sizes = _evaluation(compose, forwards, 7 * steps, *overrides)
    assert sizes == [sizes[0]] and taken == [7] * (sizes[0] // 7) + [sizes[0] % 7]  # 7 examples a forward
    assert parts == pytest.approx(whole, rel=1e-6)


class BatchCentred(torch.nn.Module):
    """A user's norm whose output depends on the other examples of the batch, in evaluation mode too."""

    def __init__(self, dim):
        super().__init__()

    def forward(self, x, step=None):
        return x - x.mean(0, keepdim=True)


@pytest.fixture
def batch_centred():
    with registered_norm("batch_centred", BatchCentred) as name:
        yield name


def test_a_recurrent_model_a_users_norm_and_a_hooked_model_evaluate_whole_batches(compose, forwards, batch_centred):
    from normbench.training import train

    mqar = ATTENTION_TASKS["windows"]
    for overrides in (("model=lstm", *mqar), ("model=transformer", f"norm={batch_centred}", *mqar)):
        _, taken, sizes = _evaluation(compose, forwards, 1, *overrides)
        assert taken == sizes, overrides
    cfg, task, model, device = prepare(compose("model=transformer", *mqar))
    x = task.val.x
    assert train.rows_per_part(model, x, 0) == len(x)  # eval_positions=0: whole batches, as before the key
    assert train.rows_per_part(model, x, 10 * x.shape[1]) == 10 < len(x) \
        == train.rows_per_part(model, x.to("meta"), 10 * x.shape[1])  # a GPU's batches: whole
    model.head.register_forward_hook(lambda *args: None)
    assert train.rows_per_part(model, x, 10 * x.shape[1]) == len(x)


def test_a_run_evaluates_in_parts_of_its_eval_positions(cli, tiny_args, forwards):
    code, _, err = cli(*tiny_args, "model=transformer", "task.n_val=20", "eval_positions=42", "hydra.run.dir=run")
    assert code == 0, err[-2000:]
    # adding's 6 steps: 7 examples a forward; val (20) at steps 3 and 6, then test (32). The others: training
    # batches (16), and probes' passes over 20 val examples (hooks on the norms: whole)
    assert [n for n in forwards if n not in (16, 20)] == [7, 7, 6, 7, 7, 6, 7, 7, 7, 7, 4]
