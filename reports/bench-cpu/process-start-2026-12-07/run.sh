#!/usr/bin/env bash
# A process's start, side by side: BASE (a worktree of the code before) against NEW (this checkout), alternating,
# each a fresh interpreter: `normbench --help`, a plain Hydra composition (median of 30 in one process, after one),
# and a tiny single run (2 steps of the adding task, its wall time from start to exit).
#   git worktree add --detach /work/wt/base 5223309
#   . /work/venv/bin/activate && bash run.sh /work/wt/base /work/main   (the environment of the README's install)
set -euo pipefail
base=$1 new=$2
probe=$(mktemp --suffix=.py)
cat > "$probe" <<'PY'
import statistics, time
from hydra import compose, initialize_config_dir
from normbench.configuration.config import config_dir, register
register()
with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
    compose("config", overrides=["norm=ln"])
    ts = []
    for i in range(30):
        t = time.perf_counter(); compose("config", overrides=["norm=rms", "model=lstm", f"seed={i}"]); ts.append(time.perf_counter() - t)
print(f"median {statistics.median(ts)*1000:.1f} ms")
PY
cd /tmp
uptime
for i in 1 2 3 4 5; do
  for w in "$base" "$new"; do
    s=$(date +%s.%N); PYTHONPATH=$w python -m normbench --help > /dev/null 2>&1; e=$(date +%s.%N)
    echo "help $(basename "$w") $(echo "$e - $s" | bc)"
  done
done
for i in 1 2 3; do
  for w in "$base" "$new"; do echo "compose $(basename "$w") $(PYTHONPATH=$w python "$probe")"; done
done
uptime
for i in 1 2 3 4; do
  for w in "$base" "$new"; do
    d=$(mktemp -d); s=$(date +%s.%N)
    (cd "$d" && PYTHONPATH=$w python -m normbench steps=2 eval_every=2 threads=1 task=adding task.n_train=64 > /dev/null 2>&1)
    e=$(date +%s.%N); echo "run $(basename "$w") $(echo "$e - $s" | bc)"; rm -rf "$d"
  done
done
uptime
rm -f "$probe"
