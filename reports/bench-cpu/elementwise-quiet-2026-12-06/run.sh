#!/bin/bash
# alternating: old (84e4c39) and new (HEAD) kernel bench, AVX-512 twice, AVX2 once each
. /work/venv/bin/activate
OUT=/tmp/bench-tanh; mkdir -p $OUT
run() { # tree cap tag
  cd $1 && uptime > $OUT/$3.uptime && ATEN_CPU_CAPABILITY=$2 PYTHONPATH=$1 python -m normbench.bench kernels --kinds ln,rms,dyt,derf --hidden 64,256,1024 --dtypes fp32,bf16 --threads 1 --repeats 7 --no-headline --out $OUT/$3 > $OUT/$3.log 2>&1; uptime >> $OUT/$3.uptime
}
run /work/wt/base-tanh avx512 old-avx512-1
run /work/main avx512 new-avx512-1
run /work/main avx512 new-avx512-2
run /work/wt/base-tanh avx512 old-avx512-2
run /work/wt/base-tanh avx2 old-avx2-1
run /work/main avx2 new-avx2-1
echo finished kernels
runc() { # tree tag
  cd $1 && uptime > $OUT/$2.uptime && PYTHONPATH=$1 python -m normbench.bench cells --family lstm,gru --hidden 64,128 --threads 1 --repeats 15 --candidates in_cell --out $OUT/$2 > $OUT/$2.log 2>&1; uptime >> $OUT/$2.uptime
}
runc /work/wt/base-tanh cells-old-1
runc /work/main cells-new-1
runc /work/main cells-new-2
runc /work/wt/base-tanh cells-old-2
echo finished cells
