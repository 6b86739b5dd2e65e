"""Two costs Hypothesis pays for every check, or every example, that grading does not need.

Measured on the grading process of a batch (py-spy, 60 submissions):

* **Seeds from source.** With ``derandomize`` a check's seed is a digest of its
  source, which Hypothesis recomputes (reading and tokenizing the source) twice
  per check per run: 5 % of the grading process's time. :func:`fix_seed` gives
  each check that very seed once, kept on the check's function: the examples
  are the same, example for example. It is a digest of the lesson's checks,
  never of anything a submission sent.
* **numpy's global generator.** Around every example Hypothesis saves numpy's
  global generator, seeds it and puts it back: a third of a millisecond per
  example, 9 % of the grading process's time. That makes code which draws from
  ``np.random`` repeatable, which matters where the student's code runs in this
  process. Where it runs in a sandbox, nothing here draws from that generator
  (the checks and the reference use generators of their own), and
  :func:`numpy_generator_left_alone` takes it off Hypothesis's list for the run.

Both rely on how Hypothesis keeps these (private names): where they are not
found, nothing changes and grading is only slower.
"""

from __future__ import annotations

import contextlib

from hypothesis.internal import entropy
from hypothesis.internal.reflection import function_digest

#: Where the seed Hypothesis would derive for a check is kept, on the check's function.
_SEED = "_grader_seed"


def fix_seed(check, *, derandomize: bool) -> None:
    """Give the Hypothesis check ``check`` (the function pytest calls) the seed ``derandomize``
    would give it, computed once; without ``derandomize``, take that seed away again. A seed
    the check's author gave it (``@seed``) is left as it is."""
    hypothesis = getattr(check, "hypothesis", None)
    if hypothesis is None or not hasattr(check, "_hypothesis_internal_use_seed"):
        return
    ours, current = getattr(check, _SEED, None), check._hypothesis_internal_use_seed
    if current is not None and current != ours:
        return  # the author's own seed
    if not derandomize:
        check._hypothesis_internal_use_seed = None
        return
    if ours is None:
        # what Hypothesis does with derandomize: Random(int_from_bytes(function_digest(test)))
        ours = int.from_bytes(function_digest(hypothesis.inner_test), "big")
        setattr(check, _SEED, ours)
    check._hypothesis_internal_use_seed = ours
    check._hypothesis_internal_database_key = None  # no database when grading


@contextlib.contextmanager
def numpy_generator_left_alone(alone: bool):
    """While it lasts (and only if ``alone``), Hypothesis leaves numpy's global generator as it is."""
    taken = {}
    if alone:
        try:
            entropy.get_seeder_and_restorer(0)  # registers numpy's generator, if not yet done
            managed, ours = entropy.RANDOMS_TO_MANAGE, entropy.NP_RANDOM
            for key, ref in list(managed.data.items()):
                if ours is not None and ref() is ours:
                    taken[key] = ours
                    del managed[key]
        except (AttributeError, TypeError):
            taken = {}
    try:
        yield
    finally:
        for key, value in taken.items():
            entropy.RANDOMS_TO_MANAGE[key] = value
