"""How a recorded value is written as text: one spelling for the analysis's group labels and the
report's tables, so that a label and the cell that shows its setting can never disagree."""

from __future__ import annotations

import math

import numpy as np


def format_value(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (float, np.floating)):
        return f"{float(value):g}"
    return str(value)
