"""The end-of-training probes that need no gradient, read one at a time as before (each its own forward, the skip
probe's forwards computing every block, the attention logits of the whole batch at once) against end_readings,
interleaved in one process, on the probe batch of three committed studies' runs at initialization.

    python reports/bench-cpu/probes-one-pass-2026-12-06/probe_ab.py
"""

import contextlib
import statistics
import time

import torch

from normbench.bench.harness import compose_config
from normbench.tasks.scoring import scoring
from normbench.training import probes
from normbench.training.run import prepare
from normbench.training.train import fixed_batches

CASES = {
    "2x8 study run (2 blocks, windows of 128)": ["model=transformer", "task=fortunes_lm", "norm=ln", "placement=pre"],
    "depth_placements run (8 blocks, windows of 32)": ["+sweep=depth_placements", "hydra.mode=RUN", "placement=peri",
                                                       "lr=0.01", "seed=0"],
    "derf_vs_norms run (2 blocks, windows of 32, Derf)": ["+sweep=derf_vs_norms", "hydra.mode=RUN", "norm=derf",
                                                          "lr=0.01", "seed=0"],
}
ROUNDS = 5


@contextlib.contextmanager
def whole_logits():
    """attention_logit_max as it was: the float64 logits of the whole batch at once."""
    part, probes.LOGIT_PART = probes.LOGIT_PART, 1 << 62
    try:
        yield
    finally:
        probes.LOGIT_PART = part


def plain_skip_losses(model, x, y, loss_fn):
    """The skip probe as it was: every block of every skipped forward computed again (these models' blocks all
    have an identity)."""
    with probes._probe_mode(model), torch.no_grad():
        full = float(loss_fn(model(x), y))
        out = []
        for block in model.backbone.layers:
            handle = block.register_forward_hook(lambda module, inputs, output: inputs[0])
            try:
                out.append(float(loss_fn(model(x), y)) - full)
            finally:
                handle.remove()
    return out


def main():
    torch.set_num_threads(1)
    for name, overrides in CASES.items():
        cfg, task, model, device = prepare(compose_config(overrides))
        model.train()
        x, y = fixed_batches(task.val, device)[0]  # the probe batch (Trainer.probe_batch)
        loss = scoring(task).loss

        def alone():
            with whole_logits():
                return {"hidden_var": probes.hidden_variance(model, x),
                        "attn_logit_max": probes.attention_logit_max(model, x),
                        "saturated_share": probes.saturated_share(model, x),
                        "layer_skip": plain_skip_losses(model, x, y, loss)}

        def shared():
            return probes.end_readings(model, x, y, loss)
        assert alone() == shared(), name
        times = {"alone": [], "shared": []}
        for r in range(ROUNDS):
            order = (("alone", alone), ("shared", shared))
            for side, fn in order if r % 2 == 0 else order[::-1]:
                started = time.perf_counter()
                fn()
                times[side].append(time.perf_counter() - started)
        a, s = statistics.median(times["alone"]), statistics.median(times["shared"])
        print(f"{name}: batch {tuple(x.shape)}; each alone {a:.2f} s, end_readings {s:.2f} s, {s / a:.2f}x "
              f"(medians of {ROUNDS}, interleaved; every reading identical)", flush=True)


if __name__ == "__main__":
    main()
