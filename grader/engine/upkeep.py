"""What Hypothesis does by default that grading must not pay for, or must not depend on.

Measured on the grading process of a batch (py-spy, 60 submissions):

* **Seeds from source.** With ``derandomize`` a check's seed is a digest of its
  source, which Hypothesis recomputes (reading and tokenizing the source) twice
  per check per run: 5 % of the grading process's time. :func:`give_seed` gives
  each check that very seed once, kept on the check's function, and only when
  the engine is about to run it (a check whose examples are replayed needs
  none): the examples are the same, example for example. It is a digest of the
  lesson's checks, never of anything a submission sent.
* **numpy's global generator.** Around every example Hypothesis saves numpy's
  global generator, seeds it and puts it back: a third of a millisecond per
  example, 9 % of the grading process's time. That makes code which draws from
  ``np.random`` repeatable: the student's where it runs in this process, and a
  check's own that draws from it in its body, wherever the student's code runs.
  With ``derandomize`` the cost is gone (:func:`seeded_in_place`: a seed before
  each example, 2 µs, no state saved), and numpy's generator stays on the list,
  so a check drawing from it draws the same numbers in ``check`` and ``grade``
  (it once drew other numbers in a sandboxed grading, where the generator was
  left alone). Only a run that is not derandomized and whose student's code runs
  elsewhere takes it off the list (:func:`numpy_generator_left_alone`).

* **The generators' states around every example.** Around every example Hypothesis saves the
  state of each generator it manages (Python's ``random``, numpy's where it is managed, its
  own), seeds them, and puts the states back after (``deterministic_PRNG``): 60 to 100 µs per
  example, most of it copying Python's generator state out and in, on each of the 1,257
  examples a failing file's shrinking runs. With ``derandomize`` (grading),
  :func:`seeded_in_place` saves the states once before the run and puts them back once after
  it; before each example the generators are seeded as before. Each example starts from the
  very state it started from: nothing between two examples draws from these generators (the
  engine draws from a generator of its own, seeded from the check), and the next example seeds
  them again. Where Hypothesis seeds each run from its own global generator (the ``explore``
  profile), nothing changes.

* **Constants from loaded modules.** Now and then Hypothesis draws a number
  from the literals of every "local" module loaded in the process (not the test
  files): the grader's own modules as they happen to be imported, the reference,
  and, where the student's code runs in this process, the student's file. The
  inputs of a check would then depend on what the process loaded before (a long
  batch's earlier students among it) and on numbers a student writes in a file.
  :func:`no_local_constants` keeps that pool empty for the run: a check's inputs
  depend on the check and its seed alone.

All four rely on how Hypothesis keeps these (private names): where they are
not found, nothing changes (a test says so: tests/test_upkeep.py), and the
third would then leave a check's inputs to what the process loaded. So the
grader runs only on the Hypothesis releases in which every one of these names
was read and found as used here (:data:`HYPOTHESIS_RANGE`; ``pyproject.toml``
pins the same range), and refuses to start on any other.
"""

from __future__ import annotations

import contextlib
import random
import re
import tempfile

import hypothesis
import hypothesis.core
from hypothesis import configuration as hypothesis_configuration
from hypothesis.internal import entropy
from hypothesis.internal.conjecture import providers
from hypothesis.internal.reflection import function_digest

#: The Hypothesis releases the grader runs on, lowest included, highest left out.
#: ``providers.Constants`` (the empty pool) first appears in 6.131.9, beside ``CONSTANTS_CACHE``
#: and ``_get_local_constants`` (6.131.8 and before lack it; 6.100.0 has no ``providers`` at
#: all). The sources of 6.131.9, 6.135.0, 6.140.0, 6.145.0, 6.150.0, 6.155.2, 6.160.0, 6.165.0,
#: 6.168.0 and 6.170.17 (the newest) were read: every name used here is there and used the same
#: way; tests/test_upkeep.py passes on 6.131.9 and on 6.170.17. A newer release is let in only
#: once it has been read the same way. (:func:`seeded_in_place` came later, read in 6.131.9 and
#: 6.170.17: ``hypothesis.core.deterministic_PRNG`` is there in both, entered around each example
#: by ``execute_once``; ``entropy._seeded_state`` is not in 6.131.9, where it does nothing.)
HYPOTHESIS_RANGE = ((6, 131, 9), (6, 171))


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def unsupported_hypothesis(installed: str | None = None) -> str | None:
    """Why the installed Hypothesis (or ``installed``) cannot grade, in words; None when it can."""
    installed = hypothesis.__version__ if installed is None else installed
    low, high = HYPOTHESIS_RANGE
    if low <= _release(installed) < high:
        return None
    shown = f">={'.'.join(map(str, low))},<{'.'.join(map(str, high))}"
    return (
        f"this grader needs Hypothesis {shown}, and Hypothesis {installed} is installed: grades "
        "depend on how Hypothesis seeds and draws its examples, which changes between releases. "
        f"Install a release it knows: pip install 'hypothesis{shown}'"
    )


#: The distributions whose releases decide a grade: their versions are part of what a kept
#: grade must match (:mod:`grader.core.fingerprint`).
DECIDING_PACKAGES = ("hypothesis", "numpy", "pytest")


#: Where the seed Hypothesis would derive for a check is kept, on the check's function, once
#: computed; and the mark of a check whose seed is the grader's to give (derandomized, no
#: ``@seed`` of its author's).
SEED = "_grader_seed"
OURS = "_grader_seeds_it"


def fix_seed(check, *, derandomize: bool) -> None:
    """Mark the Hypothesis check ``check`` (the function pytest calls) as one whose seed is the one
    ``derandomize`` would give it (:func:`give_seed` computes it the first time the engine is
    to run it: a check whose examples are all replayed never needs it); without
    ``derandomize``, take that seed away again. A seed the check's author gave it (``@seed``) is
    left as it is."""
    check = getattr(check, "__func__", check)  # a check written as a method: its function
    hypothesis = getattr(check, "hypothesis", None)
    if hypothesis is None or not hasattr(check, "_hypothesis_internal_use_seed"):
        return
    ours, current = getattr(check, SEED, None), check._hypothesis_internal_use_seed
    if current is not None and current != ours:
        return  # the author's own seed
    setattr(check, OURS, derandomize)
    if not derandomize:
        check._hypothesis_internal_use_seed = None
        return
    if ours is not None:
        check._hypothesis_internal_use_seed = ours
    check._hypothesis_internal_database_key = None  # no database when grading


def give_seed(check) -> None:
    """Before Hypothesis's engine runs ``check``: give it the seed :func:`fix_seed` marked it for,
    computed once (Hypothesis, given none, would compute the very same one itself, twice per run)."""
    check = getattr(check, "__func__", check)  # a check written as a method: its function
    if not getattr(check, OURS, False) or getattr(check, SEED, None) is not None:
        return
    # what Hypothesis does with derandomize: Random(int_from_bytes(function_digest(test)))
    ours = int.from_bytes(function_digest(check.hypothesis.inner_test), "big")
    setattr(check, SEED, ours)
    check._hypothesis_internal_use_seed = ours


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


@contextlib.contextmanager
def no_local_constants():
    """While it lasts, Hypothesis draws no constant from the modules loaded in this process."""
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    empty = getattr(providers, "Constants", None)
    if original is None or cache is None or empty is None:
        yield
        return
    cache.cache.clear()  # allowed constants computed from the pool so far
    providers._get_local_constants = empty  # a fresh, empty pool at each call
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def reseed() -> None:
    """Seed every generator Hypothesis manages as ``deterministic_PRNG`` does on entry (seed 0),
    without saving their states: a tenth of the cost of that context."""
    seeded, _ = entropy._seeded_state(0)
    for ref in list(entropy.RANDOMS_TO_MANAGE.data.values()):
        generator = ref()
        if generator is None:
            continue
        if type(generator) is random.Random:
            generator.setstate(seeded)
        else:
            generator.seed(0)


def can_reseed() -> bool:
    """Whether the Hypothesis internals :func:`reseed` uses are where it looks for them."""
    return hasattr(entropy, "_seeded_state") and hasattr(getattr(entropy, "RANDOMS_TO_MANAGE", None), "data")


@contextlib.contextmanager
def seeded_in_place(derandomized: bool):
    """While it lasts (only where ``derandomized``), Hypothesis's engine seeds the generators it
    manages before each example without saving and restoring their states around it: their
    states are saved once, now, and put back once, at the end (see the module's text)."""
    original = getattr(hypothesis.core, "deterministic_PRNG", None)
    if not derandomized or original is None or not can_reseed():
        yield
        return

    @contextlib.contextmanager
    def reseeded(seed: int = 0):
        if seed != 0:  # never asked for by the engine; done as it would be
            with original(seed):
                yield
            return
        reseed()
        yield

    with original():  # registers Hypothesis's own generator if need be, saves every state once
        hypothesis.core.deterministic_PRNG = reseeded
        try:
            yield
        finally:
            hypothesis.core.deterministic_PRNG = original


@contextlib.contextmanager
def nothing_stored():
    """Hypothesis keeps nothing where the checks run.

    Besides its example database (which the profiles turn off), Hypothesis caches
    the constants it reads in local source files, the course's checks and reference
    among them, in ``.hypothesis/`` of the working folder: in a notebook's kernel
    that is the folder nbgrader collects from and returns feedback into. For the run,
    its storage is a temporary folder of its own, removed after.
    """
    home = vars(hypothesis_configuration).get("__hypothesis_home_directory")
    with tempfile.TemporaryDirectory(prefix="grader-hypothesis-") as scratch:
        hypothesis_configuration.set_hypothesis_home_dir(scratch)
        try:
            yield
        finally:
            hypothesis_configuration.set_hypothesis_home_dir(home)


@contextlib.contextmanager
def as_a_grading(*, alone: bool, derandomized: bool):
    """The state a grading imports and runs its checks in: Hypothesis keeps nothing
    (:func:`nothing_stored`), leaves numpy's generator to a student whose code runs elsewhere
    (``alone``: :func:`numpy_generator_left_alone`) unless ``derandomized`` (where seeding it
    costs nothing and a check may draw from it), seeds the generators in place where
    ``derandomized`` (:func:`seeded_in_place`, after the line before: it saves states) and draws
    no constant from the modules this process loaded (:func:`no_local_constants`)."""
    with (
        nothing_stored(),
        numpy_generator_left_alone(alone and not derandomized),
        seeded_in_place(derandomized),
        no_local_constants(),
    ):
        yield
