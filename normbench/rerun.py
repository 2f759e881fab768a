"""Run a recorded run again and say whether it reproduced: `python -m normbench.rerun RUN_DIR`.

The record's resolved config is the whole truth (docs/run-record.md), so it is executed as it
stands, with no Hydra composition in between; the overrides are kept for reference only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omegaconf import OmegaConf

from normbench.record import git_commit, read_summary

COMPARED = ("best_val", "final_val", "test", "final_train_loss", "steps_to_target", "diverged_at_step",
            "grad_norm_max", "loss_spikes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m normbench.rerun", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run directory holding summary.json")
    parser.add_argument("--out", type=Path, help="where the new record goes (default: RUN_DIR/rerun)")
    args = parser.parse_args(argv)
    old = read_summary(args.run_dir / "summary.json")
    if old is None or not old.get("config"):
        print(f"normbench.rerun: no readable normbench record in {args.run_dir}", file=sys.stderr)
        return 2
    from normbench.run import execute  # torch is loaded only once there is something to run

    recorded_commit = (old.get("environment") or {}).get("git_commit")
    if recorded_commit and recorded_commit != git_commit():
        print(f"note: recorded with normbench {recorded_commit}, running {git_commit()}", file=sys.stderr)
    # resume=false: a recorded resume=true would find an earlier rerun's record and train nothing
    config = {**old["config"], "resume": False}
    new = execute(OmegaConf.create(config), args.out or args.run_dir / "rerun", old.get("overrides", []))
    differs = [k for k in COMPARED if (old.get("metrics") or {}).get(k) != (new.get("metrics") or {}).get(k)]
    if old["status"] != new["status"]:
        differs.insert(0, "status")
    for key in ("status", *COMPARED):
        was = old.get(key) if key == "status" else (old.get("metrics") or {}).get(key)
        now = new.get(key) if key == "status" else (new.get("metrics") or {}).get(key)
        print(f"{key:18s} {was!s:>24s} {now!s:>24s}  {'' if was == now else 'DIFFERS'}")
    print("reproduced exactly" if not differs else f"differs in: {', '.join(differs)}")
    return 0 if not differs else 1


if __name__ == "__main__":
    sys.exit(main())
