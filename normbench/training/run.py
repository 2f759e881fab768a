"""One run: config -> task -> model -> training -> record. Every way a run can end writes its summary."""

from __future__ import annotations

import copy
import logging
import os
import signal
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

import torch
from filelock import lock_descriptor  # flock on POSIX, LockFileEx on Windows: dies with its process
from omegaconf import DictConfig, OmegaConf

from normbench.checks import cores
from normbench.configuration import study_info
from normbench.configuration.config import ConfigError, to_config
from normbench.configuration.contract import RECORD_FORMAT, identity
from normbench.configuration.schema import with_present_names
from normbench.models import build_model, cell_kernel_in_use
from normbench.records.reading import record_paths
from normbench.records.record import RecordWriter, RunRecord, read_summary, write_run_text
from normbench.tasks.tensors import load_task
from normbench.training import checkpoint, machine, measures, saved_model
from normbench.training.environment import environment
from normbench.training.logfile import RunLogHandler
from normbench.training.loggers import build_logger
from normbench.training.muon import MuonAdamW
from normbench.training.probes import Probes
from normbench.training.recording import ProgressBar, RecordHook
from normbench.training.tracking import as_recorded, env_secrets, hidden, interpolated_secrets
from normbench.training.train import AUTOCAST_DTYPES, Trainer

log = logging.getLogger("normbench")


def resolve_device(name: str, job_num: int = 0) -> torch.device:
    """auto: CUDA when present. Jobs side by side on a host with several GPUs each take their own
    (round-robin by job number); under SLURM each job sees only its own GPU, so that is cuda:0.
    cuda:N: that GPU, for every job; an index the host does not have is the user's input."""
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={name} but no CUDA device is available here; use device=auto or device=cpu")
    if name.startswith("cuda:"):
        index, count = int(name.split(":")[1]), torch.cuda.device_count()
        if index >= count:
            raise ConfigError(f"device={name} but this host has {count} CUDA device(s): cuda:0..cuda:{count - 1}")
        return torch.device("cuda", index)
    if name == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", job_num % torch.cuda.device_count())


def threads_for(requested: int, parallel_jobs: int, free: int | None = None) -> int:
    """0 = share the cores among the jobs running side by side, so N workers never oversubscribe, and
    use no more than ``free`` (the cores other work left free when the run or sweep started,
    machine.free_cores): torch's threads on cores another process holds wait on each other at every
    op (the default run at load 10 on 2 cores: 259 ms/step with 2 threads, 21.6 with 1)."""
    if requested:
        return requested
    share = max(1, cores() // max(parallel_jobs, 1))
    return share if free is None else max(1, min(share, free))


def free_cores_for(sweep_dir: Path | None) -> int | None:
    """The free cores a job's thread count reads: a single run's now; a sweep's job the count taken
    once when the sweep started (machine.SWEEP_FREE_CORES, set by studies/progress.py), so every arm
    of a sweep runs on the same threads and a job never counts the sweep's own earlier jobs as other work."""
    if sweep_dir is None:
        return machine.free_cores()
    text = os.environ.get(machine.SWEEP_FREE_CORES, "")
    return int(text) if text.isdigit() and int(text) > 0 else None


def unsupported_precision(model, task, device: torch.device, dtype: str) -> str | None:
    """Why this device cannot run the model under ``dtype`` autocast, or None if it can.

    Tried on a copy with two examples, so a refusal by PyTorch (e.g. fp16 fused LSTM on CPU)
    becomes status ``skipped`` with PyTorch's own words, and a working setup is not touched.
    """
    if dtype not in AUTOCAST_DTYPES:
        return None
    probe = copy.deepcopy(model).to(device)
    x = task.train.x[:2].to(device)
    try:
        with torch.autocast(device.type, dtype=AUTOCAST_DTYPES[dtype]):
            out = probe(x)
        out.float().sum().backward()
    except (RuntimeError, NotImplementedError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"{dtype} autocast on {device.type} is not supported for this model: {first[:200]}"
    return None


# The signals that end a run as Ctrl-C does: a cluster's time limit or kill (SIGTERM), a closed terminal
# or ssh session (SIGHUP, POSIX only). Left to their defaults they kill the process with its record `running`.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


IMPORT_WAIT_S = 0.05   # a stop that lands in an import is sent again this much later, until the import has ended
IMPORT_WAIT_MAX_S = 10.0  # and raised wherever it lands after this long (an import that never ends)


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an import (a module's first execution, torch's lazy ones included)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextmanager
def sigterm_as_interrupt():
    """SIGTERM or SIGHUP ends the run like Ctrl-C: summary written, status interrupted. Not in the middle of an
    import: raised there it leaves a half-made module behind (torch's lazy ``import sympy``), and a sweep's worker
    that goes on after a stop of its own (studies/app.py) failed its next job on it (hostile h16 N10); the stop is
    put off until the import ends.

    Yields ``stop_put_off()``: raises the stop still waiting for an import's end, if any. The run calls it when
    loading failed: the failure would otherwise end the run (`invalid`) before the stop is sent again (hostile
    h26 n08: SIGTERM in a user norm's import that then fails)."""
    put_off: dict = {}  # "since": when the stop now waiting for an import's end first arrived; "signum": which

    def stopped(signum):
        put_off.clear()
        stop = KeyboardInterrupt(f"signal {signum}")
        stop.signum = signum  # the command's last line names the signal that stopped it (__main__.subcommand)
        return stop

    def send_again(signum):
        if put_off.get("signum") == signum:  # not raised by stop_put_off meanwhile
            os.kill(os.getpid(), signum)

    def handler(signum, frame):
        now = time.monotonic()
        if _importing(frame) and now - put_off.setdefault("since", now) < IMPORT_WAIT_MAX_S:
            put_off["signum"] = signum
            threading.Timer(IMPORT_WAIT_S, send_again, (signum,)).start()
            return
        raise stopped(signum)

    def stop_put_off():
        if "signum" in put_off:
            raise stopped(put_off["signum"])

    try:
        previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    except ValueError:  # not the main thread: leave signals alone
        yield lambda: None
        return
    try:
        yield stop_put_off
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


def finished_record(run_dir: Path, sweep_dir: Path | None, digest: str) -> Path | None:
    """A finished record of run ``digest`` in this run's folder or anywhere in its sweep.

    Identity is recomputed from each record's config, so records written by an earlier version
    (another hash) are still found.
    """
    candidates = [run_dir / "summary.json"]
    if sweep_dir is not None:
        candidates += record_paths(sweep_dir)
    for path in candidates:
        if _final_digest(path) == digest:
            return path
    return None


# path -> (its lstat's inode, size, mtime, the digest of the final record it held then, or None). Each job
# of a sweep looks through every record of the sweep: without this, a worker's k-th job parses k files, and
# a sweep of N jobs N^2/2. A record is replaced by a rename (write_json_atomic), which changes its inode.
_seen: dict[Path, tuple[tuple, str | None]] = {}


def _final_digest(path: Path) -> str | None:
    try:
        info = os.lstat(path)
        key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode)
    except OSError:
        return None
    known = _seen.get(path)
    if known is not None and known[0] == key:
        return known[1]
    record = read_summary(path)  # a malformed, linked or FIFO record anywhere is passed over
    digest = record.run_digest() if isinstance(record, RunRecord) and record.final else None
    _seen[path] = (key, digest)
    return digest


class SweepClaim:
    """One effective config's claim within a sweep: an exclusive lock on ``<sweep>/.claims/<config_hash>``,
    held by the job that executes it until its record is final, the lock file naming that job's folder.

    Two jobs of a sweep with one effective config (``norm=none`` makes ``norm.gamma_init`` inert, so
    ``gamma_init=1.0,0.1`` is one run twice) must execute once: the second finds the lock held (the
    original is running) or, once it is free, the original's finished record. A lock dies with its
    process, so a killed job's config is free to run again.
    """

    def __init__(self, sweep_dir: Path, digest: str):
        folder = Path(sweep_dir) / ".claims"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / digest
        self.fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        if not lock_descriptor(self.fd, blocking=False):
            os.close(self.fd)
            self.fd = None

    @property
    def held(self) -> bool:
        """Whether this job holds the claim (False: another job of the sweep runs this config now)."""
        return self.fd is not None

    def holder(self) -> str:
        """The folder of the job that holds the claim, as it wrote it."""
        try:
            return os.fsdecode(self.path.read_bytes()).strip() or "another job of this sweep"  # a path in any encoding
        except OSError:
            return "another job of this sweep"

    def name(self, run_dir: Path) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, os.fsencode(run_dir), 0)  # the bytes of the path, valid UTF-8 or not

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def duplicate_of_running(plain: dict, run_identity, holder: str) -> dict:
    """What a duplicate job of a sweep returns while its original runs: nothing is written for it."""
    return {"schema": RECORD_FORMAT, "status": "skipped", "reason": f"duplicate of the run in progress in {holder}",
            "config": plain, "config_hash": run_identity.config_hash, "group_hash": run_identity.group_hash,
            "seed": plain.get("seed"), "axes": run_identity.settings, "metrics": {}, "run_dir": holder,
            "duplicate_of": holder}


def follow_logs(old_dir: Path, new_dir: Path) -> None:
    """Point the log files Hydra opened in ``old_dir`` (the folder it chose) at ``new_dir`` (the one claimed)."""
    if old_dir.resolve() == new_dir.resolve():
        return
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, (logging.FileHandler, RunLogHandler)) and Path(handler.baseFilename).parent == old_dir.resolve():
            moved = RunLogHandler(new_dir / Path(handler.baseFilename).name, delay=True)
            moved.setFormatter(handler.formatter)
            moved.setLevel(handler.level)
            root.removeHandler(handler)
            handler.close()
            root.addHandler(moved)


def execute(node: DictConfig, run_dir: Path, overrides: list[str], *, sweep_dir: Path | None = None,
            parallel_jobs: int = 1, job_num: int = 0, extra: dict | None = None, own_stop=None) -> dict:
    """Run one job and return its summary. Never raises for a run's own failure; re-raises Ctrl-C.

    A job of a sweep whose effective config another job of the sweep has finished or is running is
    not run again, with or without ``resume`` (SweepClaim): it writes nothing and returns the
    original's summary with ``duplicate_of`` (its folder); while the original runs, a ``skipped``
    summary naming it. With ``resume``, a single run with a finished record in ``run_dir`` is not run
    again either. A new attempt claims ``run_dir``, or a folder beside it when that one holds another run's record or a
    live job (record.claim_run_dir): a finished record is never overwritten. The summary's
    ``run_dir`` says where the record is. ``extra`` adds fields to the record (a rerun's origin).
    ``own_stop(stop)``, given: the reason a stop (a KeyboardInterrupt) fails this run alone instead of ending
    it ``interrupted`` and going on up, or None (a sweep's worker signalled by itself: studies/app.py).
    """
    wall_start = time.perf_counter()
    plain = OmegaConf.to_container(node, resolve=True)
    plain.pop("hydra", None)
    plain = with_present_names(plain)  # model.cell_kernel=cpp is recorded as compiled (its hash is the same)
    run_identity = identity(plain)
    digest = run_identity.config_hash
    # what the record keeps: a string read from the environment as its ${oc.env:...} text, never the value
    # (tracking.as_recorded); the reason masks it (RecordWriter.secrets)
    secrets = tuple(sorted({*interpolated_secrets(node), *env_secrets(overrides)}, key=len, reverse=True))
    written = OmegaConf.to_container(node, resolve=False)
    written.pop("hydra", None)
    recorded = as_recorded(plain, written, secrets)
    shown = identity(recorded).settings
    axes = {k: hidden(shown.get(k, v), secrets) for k, v in run_identity.settings.items()}
    claim = SweepClaim(sweep_dir, digest) if sweep_dir is not None else None
    try:
        if claim is not None and not claim.held:
            holder = claim.holder()
            log.info("duplicate: this config runs in %s now, not run again", holder)
            return duplicate_of_running(plain, run_identity, holder)
        done = finished_record(run_dir, sweep_dir, digest) if claim is not None or plain.get("resume") else None
        if done is not None:
            log.info("%s: already finished in %s, not run again", "resume" if plain.get("resume") else "duplicate",
                     done.parent)
            found = read_summary(done)
            summary = found.summary if isinstance(found, RunRecord) else {}
            return {**summary, "run_dir": str(done.parent), "duplicate_of": str(done.parent)}
        with sigterm_as_interrupt() as stop_put_off:  # from here on, SIGTERM leaves an `interrupted` record, even while loading
            record = RecordWriter.claim(run_dir, digest)
            if claim is not None:
                claim.name(record.run_dir)
            follow_logs(run_dir, record.run_dir)
            # resume: an interrupted attempt's checkpoint (this folder first, else anywhere in the sweep)
            resume_from = checkpoint.find(record.run_dir, sweep_dir, digest, plain.get("steps")) if plain.get("resume") else None
            if resume_from is not None:
                node, recorded = evaluated_as_before(resume_from[0], node, recorded)
            fields = {"study": study_info.current(), **(extra or {})}  # a rerun keeps its original's study
            record.secrets = secrets
            record.start(config=recorded, overrides=[hidden(o, secrets) for o in overrides], config_hash=digest,
                         group_hash=run_identity.group_hash, seed=recorded.get("seed"), axes=axes, task={}, metrics={},
                         profiles={}, throughput={}, environment={}, **fields)
            summary = _attempt(record, node, parallel_jobs, job_num, wall_start, resume_from, sweep_dir=sweep_dir,
                               own_stop=own_stop, stop_put_off=stop_put_off)
            return {**summary, "run_dir": str(record.run_dir)}
    finally:  # after the record is final: a duplicate that comes later finds it finished
        if claim is not None:
            claim.release()


def evaluated_as_before(checkpoint_path: Path, node: DictConfig, recorded: dict) -> tuple[DictConfig, dict]:
    """(node, recorded config) of a run resumed from ``checkpoint_path``, evaluating as its interrupted leg did: that
    leg's record's eval_positions (0 where it has none, a record from before the key), whatever the command line
    says now. The key is outside the config hash that matched the checkpoint, so the two legs could otherwise
    cut their evaluations differently under one record that names one way."""
    found = read_summary(checkpoint_path.parent / "summary.json")
    before = (found.summary.get("config") or {}) if isinstance(found, RunRecord) else {}
    positions = before.get("eval_positions", 0)
    if type(positions) is not int or positions < 0 or positions == recorded.get("eval_positions"):
        return node, recorded
    log.info("resume: evaluating as the interrupted leg did, eval_positions=%d", positions)
    node = copy.deepcopy(node)
    node.eval_positions = positions
    return node, {**recorded, "eval_positions": positions}


def _attempt(record: RecordWriter, node: DictConfig, parallel_jobs: int, job_num: int, wall_start: float,
             resume_from: tuple[Path, dict] | None = None, sweep_dir: Path | None = None, own_stop=None,
             stop_put_off=lambda: None) -> dict:
    trainer = None
    fields: dict = {}
    try:
        try:
            cfg, task, model, device = prepare(node, parallel_jobs, job_num, fields, free=free_cores_for(sweep_dir))
        except ValueError as err:  # ConfigError, InvalidCombination, TaskDataError, a task's range check
            stop_put_off()  # a stop that came while a failed import ran (a user's norm module) is the run's end
            return _finish(record, None, fields, "invalid", " ".join(str(err).split()), wall_start)
        except BaseException:
            stop_put_off()
            raise
        skip = unsupported_precision(model, task, device, cfg.precision.dtype)
        if skip:
            return _finish(record, None, fields, "skipped", skip, wall_start)
        saving = [checkpoint.Checkpointer(cfg.checkpoint_every, record.run_dir / checkpoint.FILE,
                                          record.summary["config_hash"])] if cfg.checkpoint_every else []
        try:  # a logger's package missing or its server not answering is the user's input, refused before step 1
            loggers = build_logger(cfg.logger, record.run_dir, {**record.summary, **fields}, sweep_dir=sweep_dir,
                                   secrets=interpolated_secrets(node))
        except ConfigError as err:
            return _finish(record, None, fields, "invalid", " ".join(str(err).split()), wall_start)
        keeper = saved_model.ModelSaver(record.run_dir) if cfg.save_model else None
        # the hooks in the order the loop calls them: the probes' readings are kept before anything writes
        trainer = Trainer(cfg, task, model, device, [Probes(), RecordHook(record), ProgressBar(cfg, task), loggers,
                                                     *saving, *([keeper] if keeper else [])])
        if resume_from is not None and checkpoint.restore(trainer, *resume_from, device):
            fields["resumed_from_step"] = trainer.start_step
        with machine.on_record(fields["environment"], parallel_jobs):  # load and CPU pressure over the steps
            measured = trainer.fit()
        if keeper is not None:
            fields["saved_model"] = keeper.finish(trainer, ended_ok=measured.diverged_at_step is None)
    except KeyboardInterrupt as err:
        alone = own_stop(err) if own_stop is not None else None
        if alone:
            return _finish(record, trainer, fields, "failed", alone, wall_start)
        _finish(record, trainer, fields, "interrupted", f"interrupted ({str(err) or 'Ctrl-C'})", wall_start)
        raise
    except BaseException as err:  # one failed run must never take a sweep down: record it
        # SystemExit, GeneratorExit or another BaseException from the run's code (a registered norm calling
        # sys.exit) too: let through, it left the record `running` and the command's status 0 (hostile h25 wh009)
        try:
            write_run_text(record.run_dir / "traceback.txt", traceback.format_exc())
        except OSError as error:  # the record below still says why the run failed
            log.warning("traceback.txt not written: %s", error)
        return _finish(record, trainer, fields, "failed", failure_reason(err), wall_start)
    if measured.diverged_at_step is not None:
        reason = f"non-finite loss or gradient at step {measured.diverged_at_step}"
        if measured.test is not None:  # trained to the end, then evaluated non-finite (train.evaluation_overflowed)
            reason = (f"non-finite final evaluation at step {measured.diverged_at_step} (val {measured.final_val:.4g}, "
                      f"test {measured.test:.4g}); the training loss and gradients stayed finite")
        summary = _finish(record, trainer, fields, "diverged", reason, wall_start)
    else:
        summary = _finish(record, trainer, fields, "ok", None, wall_start)
    for path in {record.run_dir / checkpoint.FILE, *([resume_from[0]] if resume_from else [])}:
        checkpoint.discard(path)  # a finished run is never continued: its checkpoint has served
    return summary


def failure_reason(err: BaseException) -> str:
    """The record's reason for a run ended by ``err``, an exception that is not a stop."""
    if isinstance(err, SystemExit):  # its text is its code alone ("0", or nothing for sys.exit())
        return (f"SystemExit (exit code {repr(err.code)[:100]}) raised by the run's code: sys.exit or exit there "
                f"ends the run as failed, not normbench (see traceback.txt)")
    return f"{type(err).__name__}: {' '.join(str(err).split())[:300]} (see traceback.txt)"


def prepare(node: DictConfig, parallel_jobs: int = 1, job_num: int = 0, fields: dict | None = None,
            free: int | None = None):
    """(cfg, task, model, device) as a run builds them, seeded. A ValueError here is the user's input.

    ``fields`` collects what the record says about the run as soon as it is known (axes first,
    so that even an invalid run's record names its settings).
    """
    fields = {} if fields is None else fields
    cfg = to_config(node)
    if cfg.deterministic:  # read when cuBLAS starts: set before any CUDA work of this process
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(cfg.deterministic)  # also off again for the next job in this process
    if cfg.model.cell_kernel == "torch_compile":  # dynamo's caches and recompile budget are per process: each run
        torch._dynamo.reset()               # in a sweep's process (basic launcher, joblib worker) starts afresh
    device = resolve_device(cfg.device, job_num)
    torch.set_num_threads(threads_for(cfg.threads, parallel_jobs, free))
    fields["environment"] = environment(device)
    torch.manual_seed(cfg.seed)
    require_memory(cfg.task.tensor_bytes(), "the task's tensors", device)
    task = load_task(cfg.task, cfg.seed)
    if cfg.overfit_batches:  # debug=overfit_batch: these batches alone, over and over (the record's n_train says so)
        if cfg.overfit_batches * cfg.batch_size > len(task.train.y):
            raise ConfigError(f"overfit_batches={cfg.overfit_batches} x batch_size={cfg.batch_size} is more than the "
                              f"{len(task.train.y)} training examples of task {task.name}")
        task = task.first_train_examples(cfg.overfit_batches * cfg.batch_size)
    fields["task"] = {"name": task.name, "metric": task.metric, "higher_is_better": task.higher_is_better,
                      "chance": task.chance, "trivial": dict(task.trivial), "target": task.target, "seq_len": task.seq_len,
                      "n_train": len(task.train.y), "n_val": len(task.val.y), "n_test": len(task.test.y)}
    if cfg.batch_size > len(task.train.y):  # a silent clamp would record a batch size that never ran
        raise ConfigError(f"batch_size={cfg.batch_size} is larger than the {len(task.train.y)} training "
                          f"examples of task {task.name}")

    def build():
        return build_model(cfg.model, cfg.norm, cfg.placement, input_kind=task.input_kind,
                           input_dim=task.input_dim, n_outputs=task.n_outputs, readout=task.readout,
                           max_len=max(task.seq_len, 1))
    activations = cfg.batch_size * max(task.seq_len, 1) * cfg.model.hidden * cfg.model.layers * 16
    # Every layer holds at least one hidden x hidden matrix: a bound known before the model is
    # built, since even the meta build of a million layers takes hours.
    least = cfg.model.hidden * cfg.model.hidden * cfg.model.layers
    require_memory(4 * 4 * least + 4 * activations, "weights, gradients, optimizer state and activations", device)
    with torch.device("meta"):  # the shape alone, no memory: refuse what cannot fit before allocating it
        planned = sum(p.numel() for p in build().parameters())
    require_memory(4 * 4 * planned + 4 * activations, "weights, gradients, optimizer state and activations", device)
    model = build()
    fields["parameters"] = sum(p.numel() for p in model.parameters())
    # compiled now if it will run, so that the build is not in the first step's time
    fields["environment"]["cell_kernel"] = cell_kernel_in_use(model, device, cfg.precision.dtype in AUTOCAST_DTYPES,
                                                              padded=task.variable_length)
    return cfg, task, model, device


def require_memory(needed: int, what: str, device: torch.device) -> None:
    """ConfigError, before anything is allocated, when ``needed`` bytes exceed what ``device`` has free."""
    if device.type == "cuda":
        available = torch.cuda.mem_get_info(device)[0]
    else:
        try:
            meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
            available = int(meminfo["MemAvailable"].split()[0]) * 1024
        except (OSError, KeyError, ValueError):
            return  # no way to tell here: let the allocation decide
    if needed > available:
        raise ConfigError(f"this run needs about {needed / 2**30:.1f} GiB for {what}; "
                          f"{available / 2**30:.1f} GiB are free on {device.type}")


def _finish(record: RecordWriter, trainer: Trainer | None, fields: dict, status: str, reason: str | None,
            wall_start: float) -> dict:
    if trainer is not None:
        # RecordHook writes it as fit starts; a run that failed before then records it as built
        record.summary.setdefault("precision", trainer.precision_summary)
        fields.update(metrics=measures.metrics(trainer), profiles=measures.grad_profiles(trainer),
                      throughput=measures.throughput(trainer))
        fields["time"] = {"train_s": trainer.measured.train_s}
        fields["environment"]["norm_impls"] = trainer.norm_impls()
        optimizer = trainer.optimizer  # optim=muon: the Newton-Schulz arithmetic that ran (muon.ITERATIONS)
        fields["environment"]["muon_iteration"] = optimizer.iteration() if isinstance(optimizer, MuonAdamW) else None
    fields.setdefault("time", {})["wall_s"] = time.perf_counter() - wall_start
    record.finish(status, reason, **fields)
    for hook in trainer.hooks if trainer is not None else ():  # the loggers close their files and runs
        hook.on_end(record.summary)
    return record.summary
