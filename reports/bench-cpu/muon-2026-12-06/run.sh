#!/usr/bin/env bash
# normbench's Muon against torch.optim.Muon (issue 48): the derf_muon study's Muon step, timed side by side in one
# process, under three instruction sets: this machine's own (AVX-512 with AMX and BF16), oneDNN limited to AVX-512
# without BF16 (ONEDNN_MAX_CPU_ISA, as on a Skylake Xeon), and AVX2 for ATen, MKL and oneDNN alike (as on an AMD
# EPYC without bf16 units; there torch falls back from oneDNN to its own bf16 product). One thread, as a sweep's
# job runs. Then the same run trained with each (the parent commit's torch.optim.Muon, this tree's), 2 seeds.
# Usage, from the repository root: OLD=/path/to/a/checkout/of/a60e072 bash reports/bench-cpu/muon-2026-12-06/run.sh
set -euo pipefail
root=$PWD
OUT=${OUT:-reports/bench-cpu/muon-2026-12-06}
for isa in default AVX512_CORE AVX2; do
    case $isa in
        default) limit=() ;;
        AVX512_CORE) limit=(ONEDNN_MAX_CPU_ISA=AVX512_CORE) ;;
        AVX2) limit=(ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2) ;;
    esac
    env "${limit[@]}" python -m normbench.bench harness --muon --threads 1 --repeats 15 --out "$OUT/$isa"
done
run=(model=transformer task=fortunes_lm task.length=32 optim=muon optim.schedule=cosine norm=rms lr=0.03 steps=800
     eval_every=100 threads=1 progress=false)
for seed in 0 1; do
    (cd "$OLD" && python -m normbench "${run[@]}" seed=$seed hydra.run.dir="$root/$OUT/runs/torch-muon-seed$seed") >/dev/null
    python -m normbench "${run[@]}" seed=$seed hydra.run.dir="$OUT/runs/normbench-muon-seed$seed" >/dev/null
done
# Added after the first pass: its no-limit run read 0.94x for the training step against 1.18x for Muon's step alone,
# so that row was timed twice more, right after it (default-2, default-3).
for i in 2 3; do
    python -m normbench.bench harness --muon --threads 1 --repeats 15 --out "$OUT/default-$i"
done
