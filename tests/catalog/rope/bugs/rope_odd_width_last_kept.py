"""apply_rope turns the pairs one by one in a loop over range(Dh // 2): with an odd Dh the last
number is left as it was instead of an error."""

EXERCISE = "apply_rope"
DIAGNOSIS = "rope-odd-width-accepted"

import math


def apply_rope(x, positions=None, base=10000.0):
    T, Dh = x.shape[-2:]
    if positions is None:
        positions = range(T)
    out = x.copy()
    for t, p in enumerate(positions):
        for i in range(Dh // 2):
            a = p * base ** (-2 * i / Dh)
            first, second = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i] = first * math.cos(a) - second * math.sin(a)
            out[..., t, 2 * i + 1] = first * math.sin(a) + second * math.cos(a)
    return out
