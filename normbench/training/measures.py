"""What a run's record says it measured, read off a Trainer's state: the ``metrics``, ``profiles`` and
``throughput`` sections (normbench/training/run.py writes them into the record), and the memory peak.

Kept apart from the loop (normbench/training/train.py) so that the Trainer holds state and steps, and
a section of the record is one function here.
"""

from __future__ import annotations

import resource
import sys
from statistics import median

import torch

from normbench.records.convergence import convergence
from normbench.records.metrics import in_record_order
from normbench.training import probes


class PeakMemory:
    """The process's resident memory at its highest when sampled (ru_maxrss cannot be reset between
    jobs that share a process, so the run samples it); on CUDA the allocator's own peak, reset here."""

    def __init__(self, device: torch.device):
        self.device, self.rss_mb = device, 0.0
        if device.type == "cuda":  # several jobs may share a process (sequential sweeps, joblib)
            torch.cuda.reset_peak_memory_stats(device)
        self.sample()

    def sample(self) -> None:
        if self.device.type == "cuda":
            return
        try:
            with open("/proc/self/statm") as statm:
                pages = int(statm.read().split()[1])
            rss = pages * resource.getpagesize() / 2**20
        except (OSError, ValueError, IndexError):  # no /proc (macOS): the process-wide high-water mark
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
        self.rss_mb = max(self.rss_mb, rss)

    def peak(self) -> tuple[float, str]:
        """(megabytes, what they count)."""
        if self.device.type == "cuda":
            return torch.cuda.max_memory_allocated(self.device) / 2**20, "cuda_max_allocated"
        self.sample()
        return self.rss_mb, "process_rss_sampled"


def metrics(trainer) -> dict:
    """The record's ``metrics``: what the run measured, none of the analysis's verdicts."""
    p, spikes = trainer.measured, trainer.spikes
    probe = p.last_probe
    acts = probe.get("act_max_abs") or {}
    rms = probe.get("act_rms") or {}
    return in_record_order("metrics", {
        "best_val": p.best_val, "final_val": p.final_val, "test": p.test,
        "final_train_loss": p.losses[-1] if p.losses else None,
        "steps_to_target": p.steps_to_target, "seconds_to_target": p.seconds_to_target,
        "diverged_at_step": p.diverged_at_step, "last_finite_loss": p.last_finite_loss,
        "loss_spikes": len(spikes.steps), "loss_spike_steps": spikes.steps[:100],
        "grad_norm_median": median(p.grad_norms) if p.grad_norms else None,
        "grad_norm_max": max(p.grad_norms) if p.grad_norms else None,
        "grad_std": probe.get("grad_std"), "grad_kurtosis": probe.get("grad_kurtosis"),
        "grad_kurtosis_max": p.grad_kurtosis_max,
        "act_max_abs": max(acts.values()) if acts else None, "act_rms": max(rms.values()) if rms else None,
        "grad_time_ratio_init": probes.grad_time_ratio(p.grad_time_init),
        "grad_time_ratio": probes.grad_time_ratio(p.grad_time_final),
        "bn_train_eval_gap": p.bn_train_eval_gap, "bn_train_eval_gap_running": p.bn_train_eval_gap_running,
        **depth_metrics(p),
        **convergence(list(enumerate(p.losses, start=1)), p.evals, trainer.cfg.steps, p.diverged_at_step is not None),
        "steps_done": p.step,
        "skipped_steps": p.skipped_steps if trainer.precision.scales_loss else None,
    })


def grad_profiles(trainer) -> dict:
    """The record's ``profiles``: gradient norms per layer and through time (not the analysis's performance profiles)."""
    p = trainer.measured
    out = {"layer_grad_norm_init": p.layer_grad_norm_init}
    if p.ffn_w2_grad_norm_init is not None:
        out["ffn_w2_grad_norm_init"] = p.ffn_w2_grad_norm_init
    if p.grad_time_init is not None:
        out["grad_time_init"] = p.grad_time_init
    if p.grad_time_final is not None:
        out["grad_time_final"] = p.grad_time_final
    if p.hidden_var_init:
        out["hidden_var_init"] = p.hidden_var_init
    out.update({k: v for k, v in p.depth_final.items() if v})
    return out


def depth_metrics(p) -> dict:
    """One number per depth probe (None where the model or the run has none)."""
    d = p.depth_final
    logits, shares = d.get("attn_logit_max_final") or [], d.get("saturated_share_final") or {}
    return {"hidden_var_log_slope_init": probes.log_slope(p.hidden_var_init),
            "hidden_var_log_slope": probes.log_slope(d.get("hidden_var_final")),
            "layer_grad_log_ratio": probes.depth_grad_log_ratio(d.get("layer_grad_norm_final")),
            "attn_logit_max": max(logits) if logits else None, "saturated_share": shares.get("all"),
            "skip_loss_increase_deep": probes.deep_half_mean(d.get("layer_skip_loss_increase"))}


def throughput(trainer) -> dict:
    """The record's ``throughput``: the timed steps' median and spread, rates, and the memory peak."""
    p = trainer.measured
    timed = sorted(p.step_ms)
    step_ms = median(timed) if timed else None
    batch = trainer.batch_size
    peak, kind = trainer.memory.peak()
    return in_record_order("throughput", {
        "step_ms_median": step_ms,
        "step_ms_p10": timed[len(timed) // 10] if timed else None,
        "step_ms_p90": timed[(len(timed) * 9) // 10] if timed else None,
        "timed_steps": len(timed), "warmup_steps_excluded": min(trainer.timing_warmup, p.step),
        "samples_per_s": batch / (step_ms / 1e3) if step_ms else None,
        "tokens_per_s": batch * trainer.task.seq_len / (step_ms / 1e3) if step_ms else None,
        "peak_memory_mb": peak, "memory_kind": kind,
    })
