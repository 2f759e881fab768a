"""Claims from the normalization literature, checked against the runs at hand.

specs.py holds the claims as data, in the vocabulary of vocabulary.py, each with its regime as named
predicates (predicates.py, the descriptor table a YAML claim names too); parts.py names the module
that tests each kind of part (score_parts, speed_parts, convergence_parts, on what comparison.py
shares: strata, effects, the divergence test); engine.py is the one set of rules that judges a
claim within each study and setting (its docstring states the tests, the α, the pooling and the
four verdicts).
"""

from __future__ import annotations

import pandas as pd

from normbench.analysis.claims.engine import (
    evaluate,
    judge,
    settings,
    shown_status,
    shown_verdict,
    studies,
    verdict_figures,
)
from normbench.analysis.claims.specs import CLAIMS, TRAINS_SHARE
from normbench.analysis.claims.specs_2026 import CLAIMS_2026
from normbench.analysis.claims.vocabulary import (
    ALPHA,
    CONTRADICTED,
    DEPENDS,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    SLOPE_DELTA,
    SUPPORTED,
    TOWARD_CONTRADICTED,
    TOWARD_SUPPORTED,
    Claim,
    Effect,
    Measure,
    Part,
    PartSpec,
    Verdict,
)

__all__ = ["ALPHA", "CLAIMS", "CLAIMS_2026", "SHIPPED", "CONTRADICTED", "DEPENDS", "INCONCLUSIVE", "NOT_APPLICABLE",
           "NOT_REPRODUCED", "shown_status", "shown_verdict", "verdict_figures",
           "NOT_TESTABLE", "SLOPE_DELTA", "SUPPORTED", "TOWARD_CONTRADICTED", "TOWARD_SUPPORTED",
           "TRAINS_SHARE", "Claim", "Effect", "Measure", "Part", "PartSpec", "Verdict", "evaluate_claims",
           "judge", "settings", "studies"]


SHIPPED = [*CLAIMS, *CLAIMS_2026]  # every claim normbench carries: the 2015-2020 literature's, then 2026's


def evaluate_claims(runs: pd.DataFrame, alpha: float = ALPHA) -> list[tuple[Claim, Verdict]]:
    """Every claim, judged within each study and setting where it applies, every test at ``alpha``: the
    shipped ones and the YAML claims of the folders named in NORMBENCH_CLAIMS (yaml_claims.py)."""
    from normbench.analysis.claims.yaml_claims import from_environment

    return evaluate(SHIPPED + from_environment(SHIPPED), runs, alpha)
