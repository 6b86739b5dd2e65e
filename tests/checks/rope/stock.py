"""Helpers every lesson of the course writes the same way, copied here from the other lessons'
checks and diagnoses (kv_cache's ``spec.describe``, ``diagnoses._changed`` and
``diagnoses._not_refused``, attention's ``spec.softmax``).

A copy, kept apart on purpose: the course is moving these into the grader's author API, and
when it lands this module becomes one import. Nothing here is rope's own.
"""

from __future__ import annotations

import numpy as np


def describe(**values) -> str:
    """'x of shape (2, 3), base=10000.0' for messages."""
    return ", ".join(
        f"{k} of shape {v.shape}" if isinstance(v, np.ndarray) else f"{k}={v!r}" for k, v in values.items()
    )


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Weights from scores along ``axis``, the largest score taken away first."""
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def not_refused(seen) -> bool:
    """A diagnosis test: some call the reference refuses was not refused as the reference does."""
    return any(s.refused and not s.right for s in seen)


def changed(name: str):
    """A diagnosis test: some call changed the argument ``name`` in place."""
    return lambda seen: any(name in s.call.mutated for s in seen)
