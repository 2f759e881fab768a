#!/bin/bash
# `normbench compare` and `normbench evaluate` answering --help and a folder that does not exist: old (BASE) and new
# (NEW) code alternating, 5 rounds. BASE, NEW: checkouts; one venv (torch 2.13.0+cpu); each call a fresh process,
# `python -m normbench` from /tmp with PYTHONPATH at the checkout; wall seconds from start to exit.
BASE=${BASE:?a checkout of the code before}; NEW=${NEW:?a checkout of the code after}
cd /tmp
echo "# $(date -u +%FT%TZ) base=$(git -C $BASE rev-parse --short HEAD) new=$(git -C $NEW rev-parse --short HEAD)"
echo "# uptime before: $(uptime)"
for round in 1 2 3 4 5; do
  for side in base new; do
    dir=$BASE; [ $side = new ] && dir=$NEW
    for what in "compare --help" "compare /nonexistent /tmp" "evaluate --help" "evaluate /nonexistent"; do
      s=$(date +%s.%N); PYTHONPATH=$dir python -m normbench $what >/dev/null 2>&1; code=$?
      e=$(date +%s.%N); echo "$round $side ${what// /_} exit=$code $(echo "$e - $s" | bc)"
    done
  done
done
echo "# uptime after: $(uptime)"
