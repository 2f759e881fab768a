#!/bin/bash
# a second round, after run.sh: DyT against LayerNorm and RMSNorm alone, fp32, more repeats (old, new, new, old)
. /work/venv/bin/activate
OUT=${OUT:-/tmp/bench-tanh}; OLD=${OLD:-/work/wt/base}; NEW=${NEW:-/work/main}; mkdir -p "$OUT"
run() { # tree tag
  mkdir -p "$OUT/$2" && cd $1 && uptime > "$OUT/$2/uptime.txt" && PYTHONPATH=$1 python -m normbench.bench kernels \
    --kinds ln,rms,dyt --hidden 64,256,1024 --dtypes fp32 --threads 1 --repeats 11 --no-headline \
    --out "$OUT/$2" > "$OUT/$2.log" 2>&1; uptime >> "$OUT/$2/uptime.txt"
}
run $OLD old-3; run $NEW new-3; run $NEW new-4; run $OLD old-4
echo finished
