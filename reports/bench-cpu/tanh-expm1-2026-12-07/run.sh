#!/bin/bash
# alternating: old (91a514e, the code before) and new (/work/main at the commit of the branch-free tanh) on this
# machine's build (AVX2): the kernel bench twice each (old, new, new, old), then the in-cell LSTM/GRU bench the same way
. /work/venv/bin/activate
OUT=${OUT:-/tmp/bench-tanh}; OLD=${OLD:-/work/wt/base}; NEW=${NEW:-/work/main}; mkdir -p "$OUT"
for tree in $OLD $NEW; do  # builds first, outside the timed runs
  (cd $tree && PYTHONPATH=$tree python -c "
from normbench.norms import elementwise_cpu as e
from normbench.models import lnlstm_cpu as l, gru_cpu as g
for k in (e.KERNEL, l.KERNEL, g.KERNEL): k.load(required=True); print(k.variant)")
done
run() { # tree tag
  mkdir -p "$OUT/$2" && cd $1 && uptime > "$OUT/$2/uptime.txt" && PYTHONPATH=$1 python -m normbench.bench kernels \
    --kinds ln,rms,dyt,derf --hidden 64,256,1024 --dtypes fp32,bf16 --threads 1 --repeats 7 --no-headline \
    --out "$OUT/$2" > "$OUT/$2.log" 2>&1; uptime >> "$OUT/$2/uptime.txt"
}
run $OLD old-1; run $NEW new-1; run $NEW new-2; run $OLD old-2
echo finished kernels
runc() { # tree tag
  mkdir -p "$OUT/$2" && cd $1 && uptime > "$OUT/$2/uptime.txt" && PYTHONPATH=$1 python -m normbench.bench cells \
    --family lstm,gru --hidden 64,128 --threads 1 --repeats 15 --candidates in_cell --out "$OUT/$2" > "$OUT/$2.log" 2>&1
  uptime >> "$OUT/$2/uptime.txt"
}
runc $OLD cells-old-1; runc $NEW cells-new-1; runc $NEW cells-new-2; runc $OLD cells-old-2
echo finished cells
