#!/usr/bin/env bash
# What a study's own report costs (issue 48), two ways, from the repository root:
# 1. each of the example's sixteen studies' reports built from a regeneration's records (make.sh's runs folder,
#    only read), one after another in one process (time_reports.py);
# 2. the cheapest study, eps_fp16, run as make.sh runs it, with and without --no-report, alternated twice: the
#    whole command's wall time, the report module's imports included.
# Usage: RUNS=/path/to/a/regenerated/reports/example/runs bash reports/bench-cpu/study-reports-2026-12-06/run.sh
set -euo pipefail
here=reports/bench-cpu/study-reports-2026-12-06
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
{ echo "# $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
  python "$here/time_reports.py" "$RUNS" warmup_depth grad_depth gamma_flow derf_vs_norms derf_muon dyt_data_regime \
      depth_placements qknorm_lr eps_fp16 ln_converges bn_converges small_batch_bn gamma_init rnn_table ln_vs_bn_varlen gru
  echo "# $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"; } | tee "$here/reports.txt"
{ echo "# $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)"
  for i in 1 2; do
    for mode in report no-report; do
      flag=(); [ "$mode" = no-report ] && flag=(--no-report)
      start=$(date +%s.%N) status=0
      python -m normbench study --jobs 2 --budget 93s "${flag[@]}" --out "$scratch/$mode-$i" --pilot 3 --max-seeds 3 \
          +sweep=eps_fp16 > "$scratch/$mode-$i.log" 2>&1 || status=$?
      echo "$mode, pass $i: exit $status, $(echo "$(date +%s.%N) - $start" | bc) s, 1-minute load after $(cut -d' ' -f1 /proc/loadavg)"
    done
  done; } | tee "$here/eps_fp16.txt"
