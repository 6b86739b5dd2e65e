"""What grading spares Hypothesis (grader.engine.upkeep) changes no example."""

from __future__ import annotations

import random

import hypothesis.core
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.core import get_random_for_wrapped_test

from grader.core.lesson import Course
from grader.engine.upkeep import (
    SEED,
    fix_seed,
    give_seed,
    no_local_constants,
    numpy_generator_left_alone,
    seeded_in_place,
)

from .support import ROOT


def _checks():
    """Every Hypothesis check of every lesson of the course, as pytest would call it."""
    import importlib

    found = []
    for lesson in Course.at(ROOT).lessons:
        for path in sorted(lesson.checks.rglob("test_*.py")):
            relative = path.relative_to(lesson.checks.parents[2]).with_suffix("")
            module = importlib.import_module(".".join(relative.parts))
            found += [
                f for n, f in vars(module).items() if n.startswith("test_") and hasattr(f, "hypothesis")
            ]
    return found


def test_a_fixed_seed_is_the_seed_derandomize_gives():
    """The seed kept on each check draws what Hypothesis's own derandomized seed draws."""
    checks = _checks()
    assert len(checks) >= 25
    for check in checks:
        kept = check._hypothesis_internal_use_settings
        check._hypothesis_internal_use_settings = settings(kept, derandomize=True)
        try:
            own = get_random_for_wrapped_test(check.hypothesis.inner_test, check).getstate()
            fix_seed(check, derandomize=True)
            give_seed(check)
            fixed = get_random_for_wrapped_test(check.hypothesis.inner_test, check).getstate()
        finally:
            fix_seed(check, derandomize=False)
            check._hypothesis_internal_use_settings = kept
        assert fixed == own, check.__name__
        assert check._hypothesis_internal_use_seed is None  # taken away again


def test_a_seed_is_computed_only_when_the_engine_is_to_run():
    """Marking a check costs nothing: its seed (a digest of its source) is computed the first time
    the engine is to run it, once, and never for a check whose examples are all replayed."""

    @given(st.integers())
    def check(n):
        pass

    fix_seed(check, derandomize=True)
    assert getattr(check, SEED, None) is None and check._hypothesis_internal_use_seed is None
    give_seed(check)
    seed = check._hypothesis_internal_use_seed
    assert seed is not None and getattr(check, SEED) == seed
    fix_seed(check, derandomize=False)
    assert check._hypothesis_internal_use_seed is None
    give_seed(check)  # not derandomized: no seed of the grader's
    assert check._hypothesis_internal_use_seed is None
    fix_seed(check, derandomize=True)  # computed already: given back at once
    assert check._hypothesis_internal_use_seed == seed


def _draws_of_numpy_generator() -> list[float]:
    seen = []

    @settings(max_examples=5, database=None, derandomize=True)
    @given(st.integers(0, 3))
    def probe(n):
        seen.append(float(np.random.random()))

    probe()
    return seen


def test_numpy_generator_is_left_alone_only_while_asked_and_managed_again_after():
    managed = _draws_of_numpy_generator()
    assert len(set(managed)) == 1  # Hypothesis seeds it before every example
    with numpy_generator_left_alone(True):
        alone = _draws_of_numpy_generator()
    assert len(set(alone)) == len(alone) > 1  # left alone: it runs on
    assert len(set(_draws_of_numpy_generator())) == 1  # managed again
    with numpy_generator_left_alone(False):
        assert len(set(_draws_of_numpy_generator())) == 1


@pytest.mark.parametrize("raises", [KeyboardInterrupt, ValueError])
def test_numpy_generator_is_managed_again_after_an_error(raises):
    with pytest.raises(raises), numpy_generator_left_alone(True):
        raise raises()
    assert len(set(_draws_of_numpy_generator())) == 1


def test_an_authors_own_seed_is_kept():
    @given(st.integers())
    def check(n):
        pass

    from hypothesis import seed

    seeded = seed(1234)(check)
    fix_seed(seeded, derandomize=True)
    assert seeded._hypothesis_internal_use_seed == 1234
    fix_seed(seeded, derandomize=False)
    assert seeded._hypothesis_internal_use_seed == 1234


def _draws_of_integers() -> set[int]:
    seen = set()

    @settings(max_examples=300, database=None, derandomize=True)
    @given(st.integers(0, 10**9))
    def probe(n):
        seen.add(n)

    probe()
    return seen


def test_no_number_of_a_loaded_module_reaches_the_inputs(tmp_path, monkeypatch):
    """A file loaded in the grading process (a student's, at isolation none) lends Hypothesis
    none of its numbers while a run lasts; Hypothesis's default would."""
    import importlib
    import sys

    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "student_file_with_numbers.py").write_text(
        "TABLE = [" + ", ".join(str(777_000_001 + i) for i in range(40)) + "]\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    importlib.import_module("student_file_with_numbers")
    theirs = set(range(777_000_001, 777_000_041))
    try:
        assert _draws_of_integers() & theirs  # Hypothesis's default: the file's numbers come up
        with no_local_constants():
            assert not _draws_of_integers() & theirs
        assert _draws_of_integers() & theirs  # as before once the run is over
    finally:
        sys.modules.pop("student_file_with_numbers", None)


def _draws_of_both_generators(failing: bool) -> list[tuple[float, float]]:
    """What each example of a derandomized property draws first from Python's and numpy's
    global generators (the property fails on the later draws when ``failing``: it shrinks)."""
    seen = []

    @settings(max_examples=20, database=None, derandomize=True)
    @given(st.integers(0, 50))
    def probe(n):
        seen.append((random.random(), float(np.random.random())))
        later = random.random() + np.random.random()  # the state moves on within an example
        assert not (failing and n > 10 and later > 0.5)

    try:
        probe()
    except AssertionError:
        pass
    return seen


@pytest.mark.parametrize("failing", [False, True])
def test_every_example_starts_from_the_seeded_generators_when_saved_once(failing):
    """With the states saved once around the run, each example (shrinking ones included) still
    starts from the generators seeded as on its own, and draws what it drew before."""
    before = _draws_of_both_generators(failing)
    with seeded_in_place(True):
        once = _draws_of_both_generators(failing)
    assert len(set(before)) == 1 and len(before) > 1
    assert once == before


def test_the_generators_states_are_put_back_after_the_run():
    random.seed(123)
    np.random.seed(7)
    state, numpy_state = random.getstate(), np.random.get_state()
    with seeded_in_place(True):
        _draws_of_both_generators(True)
    assert random.getstate() == state
    after = np.random.get_state()
    assert (
        after[0] == numpy_state[0]
        and np.array_equal(after[1], numpy_state[1])
        and after[2:] == numpy_state[2:]
    )


@pytest.mark.parametrize("raises", [KeyboardInterrupt, ValueError])
def test_the_engine_saves_states_around_each_example_again_after_the_run(raises):
    """Only while it lasts, and only where derandomized: the explore profile seeds its runs from
    Hypothesis's own global generator, whose state must move on from run to run."""
    original = hypothesis.core.deterministic_PRNG
    with seeded_in_place(False):
        assert hypothesis.core.deterministic_PRNG is original
    with pytest.raises(raises), seeded_in_place(True):
        assert hypothesis.core.deterministic_PRNG is not original
        raise raises()
    assert hypothesis.core.deterministic_PRNG is original
