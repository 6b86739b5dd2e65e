"""What the exercises promise, written as plainly as possible for the checks to use.

These helpers follow the definitions in the exercise docstrings index by index;
they are slow on purpose and never call the student's code.
"""

from __future__ import annotations

import numpy as np

# Tolerances, each with its reason.

#: Two float64 computations of the same formula that add in a different order
#: (a loop against a vectorised version, a prefix against the whole sequence)
#: differ by rounding only: a few units in the 15th digit per operation. Every
#: real bug in the catalog moves results by far more than this.
RTOL = 1e-9
ATOL = 1e-12
#: The same computation done in float32 keeps about 7 significant digits.
RTOL_FLOAT32 = 1e-4
ATOL_FLOAT32 = 1e-5
#: A row of up to 40 float64 weights sums to 1 up to a few dozen rounding steps (about 1e-14).
ROW_SUM_ATOL = 1e-9


def future(T: int) -> np.ndarray:
    """(T, T) booleans, True where key j comes after query i (j > i)."""
    i = np.arange(T)[:, None]  # (T, 1) query positions
    j = np.arange(T)[None, :]  # (1, T) key positions
    return j > i
