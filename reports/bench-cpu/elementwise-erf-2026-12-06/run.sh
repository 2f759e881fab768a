#!/bin/bash
# alternating: old (ef0b793, the code before) and new (/work/main: 0d96cc1; ab904d4 for first-round-ab904d4/, run
# with OUT=/tmp/bench-erf) kernel bench, AVX-512 and AVX2 twice each
. /work/venv/bin/activate
OUT=${OUT:-/tmp/bench-erf2}; OLD=/work/wt/base-erf; NEW=/work/main; mkdir -p $OUT
for tree in $OLD $NEW; do for cap in avx512 avx2; do  # builds first, outside the timed runs
  (cd $tree && ATEN_CPU_CAPABILITY=$cap PYTHONPATH=$tree python -c "from normbench.norms import elementwise_cpu as e; e.KERNEL.load(required=True); print(e.KERNEL.variant)")
done; done
run() { # tree cap tag
  cd $1 && uptime > $OUT/$3.uptime && ATEN_CPU_CAPABILITY=$2 PYTHONPATH=$1 python -m normbench.bench kernels --kinds ln,rms,dyt,derf --hidden 64,256,1024 --dtypes fp32,bf16 --threads 1 --repeats 7 --no-headline --out $OUT/$3 > $OUT/$3.log 2>&1; uptime >> $OUT/$3.uptime
}
run $OLD avx512 old-avx512-1
run $NEW avx512 new-avx512-1
run $NEW avx512 new-avx512-2
run $OLD avx512 old-avx512-2
run $OLD avx2 old-avx2-1
run $NEW avx2 new-avx2-1
run $NEW avx2 new-avx2-2
run $OLD avx2 old-avx2-2
echo finished kernels
runc() { # tree tag
  cd $1 && uptime > $OUT/$2.uptime && PYTHONPATH=$1 python -m normbench.bench cells --family lstm,gru --hidden 64,128 --threads 1 --repeats 15 --candidates in_cell --out $OUT/$2 > $OUT/$2.log 2>&1; uptime >> $OUT/$2.uptime
}
runc $OLD cells-old-1
runc $NEW cells-new-1
runc $NEW cells-new-2
runc $OLD cells-old-2
echo finished cells
