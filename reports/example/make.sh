#!/usr/bin/env bash
# Regenerates the example's run records (reports/example/runs/, git-ignored) with the study runner,
# one study per research question, then the report. Every study: 2 joblib workers x 1 torch thread,
# a pilot of 3 seeds per arm, +2 per round while a claim or ranking is undecided, at most 5 seeds
# (looks at 3 and 5 seeds; alpha 0.05 spent by Lan-DeMets O'Brien-Fleming), each within its budget.
# The slowest designs (warm-up x depth, the lr grid) start at 2 seeds and add 1 per round.
# Usage: bash reports/example/make.sh [STUDY ...]   (no argument: all of them)
set -euo pipefail
cd "$(dirname "$0")/../.."
R=reports/example/runs
study() {  # NAME BUDGET [runner options] [overrides]
    local name=$1 budget=$2; shift 2
    python -m normbench.study --jobs 2 --budget "$budget" --out "$R/$name" "$@"
}
run() {
    case $1 in
        ln_converges)      study ln_converges 6m --pilot 3 --step 2 --max-seeds 5 +sweep=ln_converges ;;
        bn_converges)      study bn_converges 8m --pilot 3 --step 2 --max-seeds 5 +sweep=bn_converges ;;
        batch_size)        study batch_size 6m --pilot 3 --step 2 --max-seeds 5 +sweep=batch_size ;;
        eps_fp16)          study eps_fp16 3m --pilot 3 --step 2 --max-seeds 5 +sweep=eps_fp16 ;;
        gamma_init)        study gamma_init 8m --pilot 3 --step 2 --max-seeds 5 +sweep=gamma_init ;;
        rnn_table)         study rnn_table 6m --pilot 3 --step 2 --max-seeds 5 +sweep=rnn_table ;;
        rms_vs_ln)         study rms_vs_ln 6m --pilot 3 --step 2 --max-seeds 5 +sweep=rms_vs_ln
                           python -m normbench.bench arms "$R/rms_vs_ln" --reference norm=ln --threads 1 ;;
        dropout_placement) study dropout_placement 6m --pilot 3 --step 2 --max-seeds 5 +sweep=dropout_placement ;;
        ln_vs_bn_varlen)   study ln_vs_bn_varlen 8m --pilot 3 --step 2 --max-seeds 5 +sweep=ln_vs_bn_varlen ;;
        warmup_depth)      study warmup_depth 8m --pilot 2 --step 1 --max-seeds 3 +sweep=warmup_depth ;;
        lr_grid)           study lr_grid 6m --pilot 2 --step 1 --max-seeds 4 +sweep=tuned model=lstm placement=in_cell norm=none,ln ;;
        *) echo "unknown study $1" >&2; exit 2 ;;
    esac
}
ALL=(ln_converges bn_converges batch_size eps_fp16 gamma_init rnn_table rms_vs_ln dropout_placement ln_vs_bn_varlen warmup_depth lr_grid)
for s in "${@:-${ALL[@]}}"; do
    start=$(date +%s); run "$s"; echo "study $s: $(( $(date +%s) - start )) s" | tee -a "$R/timing.txt"
done
python -m normbench.report "$R" --out reports/example
