"""Each arm at its own learning rate, inside the study runner (the ``tune`` protocol, normbench/studies/tune.py).

A study's lr protocol (analysis/lr_protocol.py says what each means) is declared by its sweep file's
header, one comment line read as data, never as code::

    # lr protocol: fixed: Post-LN's failure without warm-up shows at a large lr

(``tuned``, ``fixed``, ``shared`` or ``swept``, then an optional reason). Without that line, a study
whose sweep (file or command line) gives ``lr`` several values is **tuned**, one with a single lr is
**shared**. A tuned study runs in two stages under one study id:

1. **Selection**: every arm over the lr grid on SELECTION_SEEDS (``role=selection``), into
   DIR/selection. Each arm's lr is chosen on those runs alone (analysis/tuning.py: chosen_lrs, the
   report's ranking rule on the final validation metric).
2. **Evaluation**: the study runner's rounds, each arm at its chosen lr (one arm file each, as tune
   writes them) on the verdict seeds 0, 1, ... (``role=evaluation``), disjoint from the selection
   seeds; the looks, the report's answers and the claims read these runs only.

A grid needs at least MIN_GRID values (tune.small_grid, tune's own rule): two cannot tell an arm's best lr from an
edge of its range.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from normbench.analysis.lr_protocol import PROTOCOLS
from normbench.checks import ConfigError
from normbench.studies.tune import MIN_GRID, hydra_quoted, passthrough, runnable_lrs, small_grid, write_arms

SELECTION_SEEDS = (1000, 1001)  # apart from the verdict seeds (0 to the runner's MAX_SEEDS - 1) and pilots (100+)
_HEADER = re.compile(r"#\s*lr protocol:\s*([a-z]+)\s*(?::\s*(.*))?$", re.IGNORECASE)
_HEADER_LINES = 80  # the header is the file's opening comment block
_WHY_CHARS = 300


class ProtocolError(ValueError):
    """A study whose lr protocol cannot run as declared; the message is one line."""


@dataclass(frozen=True)
class LrPlan:
    kind: str                  # a key of analysis/lr_protocol.PROTOCOLS
    grid: tuple[float, ...]    # the lrs swept (tuned, swept) or the one lr given (fixed, shared), if known
    why: str = ""              # the sweep file's reason (fixed, swept)

    def stamp(self, study: dict) -> dict:
        """The study block its records carry, with the protocol (its id is unchanged: the question is)."""
        return {**study, "lr_protocol": self.kind, **({"lr_why": self.why} if self.why else {})}


def declared(sweep_file: Path | None) -> tuple[str, str] | None:
    """(protocol, reason) from the sweep file's header line, or None when it has none."""
    if sweep_file is None or not sweep_file.is_file():
        return None
    with sweep_file.open(encoding="utf-8", errors="replace") as handle:
        for line in itertools.islice(handle, _HEADER_LINES):
            if not line.startswith("#"):
                break
            match = _HEADER.match(line.strip())
            if match:
                kind = match.group(1).lower()
                if kind not in PROTOCOLS:
                    raise ProtocolError(f"{sweep_file.name}: 'lr protocol: {kind[:40]}' is not one of "
                                        f"{', '.join(PROTOCOLS)}")
                return kind, " ".join((match.group(2) or "").split())[:_WHY_CHARS]
    return None


def resolve(overrides: list[str], params: dict[str, str] | None, sweep_file: Path | None) -> LrPlan:
    """The study's lr protocol (module docstring); ProtocolError when the declaration and the sweep disagree,
    or an lr of the sweep cannot run."""
    said = declared(sweep_file)
    try:
        grid = runnable_lrs(overrides, params)
    except ConfigError as error:
        raise ProtocolError(str(error)) from None
    kind, why = said if said else ("tuned" if len(grid) > 1 else "shared", "")
    too_few = small_grid(grid, overrides) if kind == "tuned" else None
    if too_few:
        raise ProtocolError(f"{too_few}; or declare '# lr protocol: swept' in the sweep file to compare the lrs as arms")
    if kind in ("fixed", "shared") and len(grid) > 1:
        raise ProtocolError(f"the sweep declares its lr {kind} but runs {len(grid)} lrs; give one lr")
    return LrPlan(kind, grid, why)


def evaluation_overrides(overrides: list[str], out: Path, arms: list[str]) -> list[str]:
    """The rounds' overrides of a tuned study: each chosen arm by name (its lr inside its file), role
    evaluation; the user's harness and Hydra overrides pass on, the arm-defining ones live in the files."""
    return [f"+tuned_arm={','.join(arms)}", "role=evaluation",
            f"hydra.searchpath=[{hydra_quoted(f'file://{out / ARMS}')}]", *passthrough(overrides)]


SELECTION = "selection"  # DIR/selection: the selection stage's records
ARMS = "arms"            # DIR/arms/tuned_arm/armNNN.yaml: each arm at its chosen lr
LAYOUT = (SELECTION, ARMS, f"{ARMS}/tuned_arm")  # the folders a tuned study makes in DIR besides its rounds


def choose(out: Path) -> list[str]:
    """Each arm's lr chosen on DIR/selection's records; the names of the arm files written (the chosen
    lrs printed, one line each)."""
    written = write_arms(out / SELECTION, out / ARMS)
    for name, label, lr in written:
        print(f"normbench.study: selected lr {lr:g} for {label} ({name})", flush=True)
    return [name for name, _, _ in written]
