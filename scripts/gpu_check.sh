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
# A lent machine's time is short: JOBS=N runs the correctness sweep on N joblib workers (its times are not
# read), and LIMIT_SWEEP, LIMIT_KERNELS, LIMIT_CELLS, LIMIT_ARMS, LIMIT_COMPILE, LIMIT_DYT (seconds) bound each
# section (a section past its limit prints "exit 124" and the next one starts). FORTUNES names the corpus folder
# (default /usr/share/games/fortunes) for the DyT section's character-level task.
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
jobs=${JOBS:-1}
launcher=(); [ "$jobs" -gt 1 ] && launcher=(hydra/launcher=joblib hydra.launcher.n_jobs="$jobs")
# Every norm at every placement that is valid for an LSTM and a Transformer, fp32 and bf16: each run
# must end ok (or invalid, for a combination the builder refuses), never failed.
timeout "${LIMIT_SWEEP:-0}" python3 -m normbench -m model=lstm,transformer norm=bn,ln,rms,scale,dyt \
    placement=pre,post,in_cell,gate,peri precision=fp32,bf16 device="$device" steps="$steps" eval_every=100 \
    probe_every=100 task=adding task.length=16 "${launcher[@]}" hydra.sweep.dir="$out/sweep" progress=false \
    > "$out/sweep.log" 2>&1
echo "sweep exit $?" | tee -a "$out/device.txt"
tail -n 25 "$out/sweep.log"

kernel_args=(--device "$device" --out "$out/kernels")
[ "$quick" = --quick ] && kernel_args+=(--quick) || kernel_args+=(--dtypes fp32,bf16,fp16)
timeout "${LIMIT_KERNELS:-0}" python3 -m normbench.bench kernels "${kernel_args[@]}" > "$out/kernels.log" 2>&1
echo "kernels exit $?" | tee -a "$out/device.txt"
grep -E "^- |GB/s" "$out/kernels.log" | tail -n 20

# In-cell LN-LSTM and LN-GRU vs cuDNN's nn.LSTM / nn.GRU at the middle shape: the eager recurrence
# (auto on CUDA: the LSTM's hand-written Python one, the GRU's autograd loop) and the step through torch.compile.
cell_args=(--device "$device" --hidden 128 --candidates fused+norm_calls,in_cell,in_cell_torch_compile --out "$out/cells")
[ "$quick" = --quick ] && cell_args+=(--quick --hidden 8 --length 4 --batch 4)
timeout "${LIMIT_CELLS:-0}" python3 -m normbench.bench cells "${cell_args[@]}" > "$out/cells.log" 2>&1
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
timeout "${LIMIT_ARMS:-0}" python3 -m normbench.bench arms "$out/arms" "${arm_args[@]}" >> "$out/arms.log" 2>&1
echo "arms exit $?" | tee -a "$out/device.txt"
grep -E "^\| [a-z_.]+=|^## study" "$out/arms.log"

# DyT against RMSNorm where Zhu et al. (§6.1) timed them, bf16 on a GPU (claim dyt_faster_than_rms), at the kernel:
# each kind's impl=auto beside torch.compile of its formula (on CUDA the fused kernel a compiler makes of
# DyT's elementwise ops), forward and forward+backward, at a Transformer's widths.
compile_args=(--device "$device" --kinds ln,rms,dyt,derf --compile --out "$out/compiled")
[ "$quick" = --quick ] && compile_args+=(--quick) || compile_args+=(--dtypes bf16 --hidden 1024,4096)
timeout "${LIMIT_COMPILE:-0}" python3 -m normbench.bench kernels "${compile_args[@]}" > "$out/compiled.log" 2>&1
echo "compiled exit $?" | tee -a "$out/device.txt"
grep -E "^\| (bf16|fp32) " "$out/compiled.log" | grep -E "dyt|DyT|rms" | head -n 20

# ... and in a training step: sweeps/dyt_speed.yaml's Pre-LN Transformer made wider (d_model 1024, 4 layers, windows
# of 256), bf16, each arm at impl=auto, its steps timed interleaved with RMSNorm's (bench arms), then the report's verdict.
dyt_steps=$([ "$quick" = --quick ] && echo 4 || echo 40)
dyt_size=(model.hidden=1024 model.layers=4 model.heads=16 task.length=256 batch_size=16)
[ "$quick" = --quick ] && dyt_size=(model.hidden=32 model.layers=1 model.heads=2 task.length=16 batch_size=4)
dyt_arm_args=(--reference norm=rms)
[ "$quick" = --quick ] && dyt_arm_args+=(--rounds 2 --warmup 1 --steps-per-round 1)
{ timeout "${LIMIT_DYT:-0}" python3 -m normbench +sweep=dyt_speed device="$device" precision=bf16 steps="$dyt_steps" \
      eval_every="$dyt_steps" task.path="${FORTUNES:-/usr/share/games/fortunes}" "${dyt_size[@]}" \
      hydra.sweep.dir="$out/dyt" progress=false report=false \
  && timeout "${LIMIT_DYT:-0}" python3 -m normbench.bench arms "$out/dyt" "${dyt_arm_args[@]}" \
  && timeout "${LIMIT_DYT:-0}" python3 -m normbench.report "$out/dyt" --out "$out/dyt-report"; } > "$out/dyt.log" 2>&1
echo "dyt exit $?" | tee -a "$out/device.txt"
grep -E "^\| norm=|^## study" "$out/dyt.log"
grep -E -A3 "dyt_faster_than_rms" "$out/dyt-report/report.md" 2>/dev/null | head -n 12
