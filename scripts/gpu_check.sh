#!/usr/bin/env bash
# The GPU check issue 6 asks for, as one script for a lent CUDA machine (run from the repo root):
# CUDA correctness of every norm and placement in a tiny sweep, the kernel benchmark (GB/s, fraction of
# the datasheet peak and of a measured copy), then the in-cell LSTM and GRU against cuDNN, eager and with
# the step through torch.compile (model.cell_kernel=torch_compile), and the paired timing of a tiny study's arms
# (LN vs RMSNorm, rebuilt from their records and timed interleaved, CUDA-synchronized). Every ratio is printed.
#
# A machine without hydra-core/omegaconf gets them as wheels in .whl/ (pure Python), made here with
#   python3 -m pip download --no-deps --only-binary=:all: -d .whl \
#       hydra-core==1.3.2 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3
# Usage: bash scripts/gpu_check.sh [cuda|cpu] [--quick]   (cpu --quick checks the script itself)
set -uo pipefail
device=${1:-cuda}
quick=${2:-}
out=${OUT:-gpu-check}
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
} | tee "$out/device.txt"

steps=$([ "$quick" = --quick ] && echo 4 || echo 200)
# Every norm at every placement that is valid for an LSTM and a Transformer, fp32 and bf16: each run
# must end ok (or invalid, for a combination the builder refuses), never failed.
python3 -m normbench -m model=lstm,transformer norm=bn,ln,rms,scale,dyt placement=pre,post,in_cell,gate,peri \
    precision=fp32,bf16 device="$device" steps="$steps" eval_every=100 probe_every=100 task=adding task.length=16 \
    hydra.sweep.dir="$out/sweep" progress=false > "$out/sweep.log" 2>&1
echo "sweep exit $?" | tee -a "$out/device.txt"
tail -n 25 "$out/sweep.log"

kernel_args=(--device "$device" --out "$out/kernels")
[ "$quick" = --quick ] && kernel_args+=(--quick) || kernel_args+=(--dtypes fp32,bf16,fp16)
python3 -m normbench.bench kernels "${kernel_args[@]}" > "$out/kernels.log" 2>&1
echo "kernels exit $?" | tee -a "$out/device.txt"
grep -E "^- |GB/s" "$out/kernels.log" | tail -n 20

# In-cell LN-LSTM and LN-GRU vs cuDNN's nn.LSTM / nn.GRU at the middle shape: the eager recurrence
# (auto on CUDA: the LSTM's hand-written Python one, the GRU's autograd loop) and the step through torch.compile.
cell_args=(--device "$device" --hidden 128 --candidates fused+norm_calls,in_cell,in_cell_torch_compile --out "$out/cells")
[ "$quick" = --quick ] && cell_args+=(--quick --hidden 8 --length 4 --batch 4)
python3 -m normbench.bench cells "${cell_args[@]}" > "$out/cells.log" 2>&1
echo "cells exit $?" | tee -a "$out/device.txt"
sed -n "/^## Summary/,\$p" "$out/cells.log" | grep -E "^- "

# Paired timing of a study's arms on the device: a tiny LN-vs-RMSNorm study, its arms rebuilt from the records
# and their training steps timed interleaved in one process (bench arms: CUDA events, synchronized).
arm_steps=$([ "$quick" = --quick ] && echo 2 || echo 20)
python3 -m normbench -m model=lstm,transformer norm=ln,rms seed=0,1 device="$device" steps="$arm_steps" \
    eval_every="$arm_steps" task=adding task.length=16 hydra.sweep.dir="$out/arms" progress=false report=false \
    > "$out/arms.log" 2>&1
arm_args=(--reference norm=ln)
[ "$quick" = --quick ] && arm_args+=(--rounds 2 --warmup 1 --steps-per-round 1)
python3 -m normbench.bench arms "$out/arms" "${arm_args[@]}" >> "$out/arms.log" 2>&1
echo "arms exit $?" | tee -a "$out/device.txt"
grep -E "^\| [a-z_.]+=|^## study" "$out/arms.log"
