#!/usr/bin/env bash
# normbench's Muon against torch.optim.Muon (issue 48): the derf_muon study's Muon step, timed side by side in one
# process, under three limits on oneDNN's instruction set (the one that computes torch's bf16 products): none
# (this machine's AMX), AVX-512 without BF16, and AVX2 (as on an AMD EPYC without bf16 units). One thread, as a
# sweep's job runs. Then the same run trained with each (the old tree's torch.optim.Muon, this tree's), 2 seeds.
# Usage, from the repository root: OLD=/path/to/a/checkout/of/ef0b793 bash reports/bench-cpu/muon-2026-12-06/run.sh
set -euo pipefail
root=$PWD
OUT=${OUT:-reports/bench-cpu/muon-2026-12-06}
for isa in default AVX512_CORE AVX2; do
    limit=(); [ "$isa" = default ] || limit=("ONEDNN_MAX_CPU_ISA=$isa")
    env "${limit[@]}" python -m normbench.bench harness --muon --threads 1 --repeats 15 --out "$OUT/$isa"
done
run=(model=transformer task=fortunes_lm task.length=32 optim=muon optim.schedule=cosine norm=rms lr=0.03 steps=800
     eval_every=100 threads=1 progress=false)
for seed in 0 1; do
    (cd "$OLD" && python -m normbench "${run[@]}" seed=$seed hydra.run.dir="$root/$OUT/runs/torch-muon-seed$seed") >/dev/null
    python -m normbench "${run[@]}" seed=$seed hydra.run.dir="$OUT/runs/normbench-muon-seed$seed" >/dev/null
done
