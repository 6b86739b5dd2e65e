"""Random arrays for a lesson's strategies, drawn so that a failing example reads well.

A lesson's checks draw their numbers through :func:`draw_many` (``from grader.draw import
draw_many``). Hypothesis draws a spread and a seed for each group of arrays, and the arrays are
one of three kinds, in the order Hypothesis prefers them when it shrinks a failing example:

* spread 0: the constant array at the centre of the range;
* seed 0: a *table*, ``start + step * np.arange(n)`` laid out in the array's shape, every entry
  different and telling where it sits (entry ``k`` of the flattened array is ``start + k *
  step``): whenever a bug shows on no constant array but still shows on a table, the student is
  shown a table;
* else a *grid*: whole multiples of a step, at most ``spread`` steps from the centre, that numpy
  draws from the seed.

Generating examples almost never draws seed 0, so the examples that decide a score are the grid
arrays they were before tables came: tables change what a student is shown, not the score.

Every value stays in ``[low, high]``: a table is made only where its numbers fit there, with a
step of at least :data:`FINEST_STEP`. Both kinds can be written back as a short expression
(:func:`rebuilt`): a table as ``np.arange``, a large grid array by the seed that makes it, so
that an input of thousands of numbers is still shown whole, in one line that rebuilds it.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "FINEST_STEP",
    "GRID_STEPS",
    "between",
    "draw_many",
    "draw_values",
    "fit",
    "large",
    "rebuilt",
    "table",
]

#: Values of a grid array lie on this many steps either side of the range's centre.
GRID_STEPS = 4
#: The finest step of a table: one whose numbers would need a finer step to fit the range is
#: not made (its entries would read as noise, and no longer as positions).
FINEST_STEP = 1 / 64
#: One group of arrays in about this many is large (see :func:`large`).
BIG_ONE_IN = 4

_LARGE = st.integers(0, 2**16 - 1)
_SEEDS = st.integers(0, 2**32 - 1)
_RANGES: dict[tuple[int, int], st.SearchStrategy] = {}


def between(low: int, high: int) -> st.SearchStrategy:
    """Integers low..high (one shared strategy per range: building strategies is slow)."""
    if (low, high) not in _RANGES:
        _RANGES[low, high] = st.integers(low, high)
    return _RANGES[low, high]


#: The grader's view of :func:`large` (never a lesson's): ``drew`` holds True once an example
#: drew a large size (the grader empties it after each example, :func:`drew_large`);
#: ``refused`` makes every example lesson-sized, the same choice drawn and ignored
#: (:func:`lesson_sized_only`).
_LARGE_STATE = {"drew": False, "refused": False}


def large(draw, one_in: int = BIG_ONE_IN) -> bool:
    """Whether this example is a large one: about one in ``one_in``, drawn from a wide range so
    that large examples spread evenly over the checks; 0, where shrinking goes, is not large."""
    big = draw(_LARGE) % one_in == one_in - 1
    if big and _LARGE_STATE["refused"]:
        return False
    _LARGE_STATE["drew"] = _LARGE_STATE["drew"] or big
    return big


def drew_large(*, forget: bool = False) -> bool:
    """Whether a size was drawn large (:func:`large`) since the grader last forgot (``forget``:
    and forget it now). The grader forgets after each example, so that after a failure this
    says whether the failing example was a large one."""
    drew = _LARGE_STATE["drew"]
    if forget:
        _LARGE_STATE["drew"] = False
    return drew


@contextmanager
def lesson_sized_only():
    """Every example drawn inside is lesson-sized: :func:`large` draws its choice as always and
    answers no. Hypothesis shrinks a large failing example only to the smallest *large* one
    (turning ``large`` off changes how every later choice is read, and the example it then reads
    passes), so the grader, for a check whose smallest failing example is large, looks again
    among lesson-sized examples alone, where shrinking goes all the way down."""
    before = _LARGE_STATE["refused"]
    _LARGE_STATE["refused"] = True
    try:
        yield
    finally:
        _LARGE_STATE["refused"] = before


def fit(batch: tuple[int, ...], per_item: int, most: int) -> tuple[int, ...]:
    """The batch axes with sizes cut to 1, last axis first, until batch * per_item numbers fit
    in ``most`` (the number of axes is kept)."""
    sizes = list(batch)
    for axis in reversed(range(len(sizes))):
        if int(np.prod(sizes)) * per_item <= most:
            break
        sizes[axis] = 1
    return tuple(sizes)


def table(n: int, *, low: float, high: float, origin: float | None = None) -> tuple[float, float] | None:
    """(start, step) of a table of ``n`` different numbers within [low, high], or None if
    none fits with a step of at least :data:`FINEST_STEP`.

    The step is the largest of 1, 1/2, 1/4, ... that fits (exact in binary, so every entry is
    exactly ``start + k * step``). The table starts at ``origin`` (default: 0 if the range holds
    it, else ``low``) where it fits from there, else at ``low``: from 0, entry ``k`` reads ``k``
    steps."""
    if origin is None:
        origin = 0.0 if low <= 0 <= high else low
    for start in (origin, low):
        step = 1.0
        while step >= FINEST_STEP:
            if low <= start and start + (n - 1) * step <= high:
                return float(start), step
            step /= 2
    return None


def draw_values(draw, shape, **kwargs) -> np.ndarray:
    """One array of the given shape: :func:`draw_many` of one shape."""
    return draw_many(draw, [shape], **kwargs)[0]


def draw_many(
    draw,
    shapes,
    *,
    low: float = -10.0,
    high: float = 10.0,
    dtype=np.float64,
    origin: float | None = None,
    steps: int = GRID_STEPS,
) -> list[np.ndarray]:
    """Arrays of the given shapes with values in [low, high], from one spread and one seed (few
    draws: fast examples): whole multiples of ``(high - low) / 2 / steps`` around the range's
    centre, at most ``spread`` steps away; with seed 0, tables (see the module's text;
    ``origin`` is where they start) where they fit."""
    shapes = [tuple(int(n) for n in s) for s in shapes]
    spread = draw(between(0, steps))
    seed = draw(_SEEDS)
    if seed == 0 and spread:
        found = [table(int(np.prod(s)), low=low, high=high, origin=origin) for s in shapes]
        if all(found):
            return [_table_array(s, *f, dtype) for s, f in zip(shapes, found, strict=True)]
    rng = np.random.default_rng(seed)
    centre, step = (low + high) / 2, (high - low) / 2 / steps
    arrays, before = [], 0
    for s in shapes:
        arrays.append(
            _remember(
                (centre + rng.integers(-spread, spread + 1, size=s) * step).astype(dtype),
                _Grid(seed, before, spread, centre, step),
            )
        )
        before += int(np.prod(s))
    return arrays


# -- how an array drawn here is written back


@dataclass(frozen=True)
class _Grid:
    """How a grid array was drawn: the numbers after the first ``before`` of the seed's."""

    seed: int
    before: int
    spread: int
    centre: float
    step: float

    def whole(self, shape: tuple) -> str:
        """The numpy call that gives its whole multiples of ``step``."""
        call = f"np.random.default_rng({self.seed}).integers({-self.spread}, {self.spread + 1}, size="
        if not self.before:
            return f"{call}{shape})"
        n = int(np.prod(shape))
        return f"{call}{self.before + n})[{self.before}:].reshape{shape}"

    def array(self, shape: tuple, dtype) -> np.ndarray:
        n = int(np.prod(shape))
        whole = np.random.default_rng(self.seed).integers(-self.spread, self.spread + 1, size=self.before + n)
        return (self.centre + whole[self.before :].reshape(shape) * self.step).astype(dtype)


def _table_array(shape: tuple, start: float, step: float, dtype) -> np.ndarray:
    n = int(np.prod(shape))
    return (start + step * np.arange(float(n))).astype(dtype).reshape(shape)


#: How each live grid array drawn here was made, by the array's id (an entry goes when its
#: array does, and is used only once the array it rebuilds equals the one shown).
_MADE: dict[int, _Grid] = {}


def _remember(array: np.ndarray, how: _Grid) -> np.ndarray:
    key = id(array)
    _MADE[key] = how
    weakref.finalize(array, _MADE.pop, key, None)
    return array


def _number(x: float) -> str:
    """A number as Python reads it back exactly, without a needless ``.0``."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def _shaped(text: str, shape: tuple) -> str:
    return text if len(shape) == 1 else f"{text}.reshape{shape}"


def _typed(text: str, dtype: np.dtype) -> str:
    return text if dtype == np.float64 else f"({text}).astype(np.{dtype.name})"


def _as_table(a: np.ndarray) -> str | None:
    """``a`` (a float array) as ``start + step * np.arange(n)`` (any start and step) in its
    shape, or None."""
    n = a.size
    if n < 2 or not np.isfinite(a).all():
        return None
    flat = a.reshape(-1).astype(float)
    start, step = float(flat[0]), float(flat[1] - flat[0])
    if step == 0:
        return None
    rebuilt_ = _table_array(a.shape, start, step, a.dtype)
    if not np.array_equal(rebuilt_, a) or rebuilt_.dtype != a.dtype:
        return None
    if a.dtype != np.float64 and start == 0 and step == 1:
        return _shaped(f"np.arange({n}, dtype=np.{a.dtype.name})", a.shape)
    run = f"np.arange({n}.0)"
    if step != 1:
        run = f"{_number(step)} * {run}"
    if start != 0:
        run = f"{_number(start)} + {run}"
    if a.dtype == np.float64 and len(a.shape) > 1 and (start != 0 or step != 1):
        run = f"({run})"
    return _shaped(_typed(run, a.dtype), a.shape)


def rebuilt(a: np.ndarray, *, seeded: bool) -> str | None:
    """A short expression that rebuilds ``a`` exactly (values, shape and dtype), or None:
    ``np.arange(12.0).reshape(3, 4)``, ``(1.25 + 0.5 * np.arange(16.0)).reshape(4, 4)``, or
    (``seeded``, for an array too large to print) the seeded numpy call that drew it."""
    if not isinstance(a, np.ndarray) or a.dtype not in (np.float64, np.float32):
        return None
    text = _as_table(a)
    if text is not None or not seeded:
        return text
    how = _MADE.get(id(a))
    if how is None or not np.array_equal(how.array(a.shape, a.dtype), a):
        return None
    run = f"{how.whole(a.shape)} * {_number(how.step)}"
    if how.centre != 0:
        run = f"{_number(how.centre)} + {run}"
    return _typed(run, a.dtype)
