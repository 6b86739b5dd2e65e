"""A reference stands in for another exercise only where the reference itself calls it.

The calls are read from the reference's source (grader.core.scope); while an exercise is
checked, any other call into a graded function runs the student's own (the adversarial cases
``reference_does_the_later_work*`` and ``callback_outside_the_reference_calls`` try the sandbox).
"""

from __future__ import annotations

import textwrap

import pytest

from grader.core.scope import reference_calls
from grader.core.settings import Isolation, Settings
from grader.engine.run import run_checks
from grader.engine.submission import Submission

from .support import ATTENTION, KV_CACHE, ROOT, ROPE

SOURCE = textwrap.dedent(
    """
    import numpy as np

    def helper(x):
        return second(x) + 1

    def first(x):
        ### BEGIN SOLUTION
        return helper(x)
        ### END SOLUTION

    def second(x):
        ### BEGIN SOLUTION
        return np.asarray(list(map(third, x)))
        ### END SOLUTION

    def third(x):
        ### BEGIN SOLUTION
        return third(x - 1) if x > 0 else fourth
        ### END SOLUTION

    def fourth(x):
        ### BEGIN SOLUTION
        return x
        ### END SOLUTION
    """
)


def test_calls_are_followed_through_helpers_and_other_exercises():
    """A call through a helper of the solution counts, as does a function passed on (map) and
    what another exercise's reference calls in turn; an exercise never stands in for itself."""
    calls = reference_calls(SOURCE, ("first", "second", "third", "fourth"))
    assert calls == {
        "first": {"second", "third", "fourth"},
        "second": {"third", "fourth"},
        "third": {"fourth"},
        "fourth": set(),
    }


@pytest.mark.parametrize(
    "lesson, expected",
    [
        (
            ATTENTION,
            {
                "apply_causal_mask": set(),
                "split_heads": set(),
                "merge_heads": set(),
                "mha_forward": {"apply_causal_mask", "split_heads", "merge_heads"},
            },
        ),
        (
            KV_CACHE,
            {
                "causal_mask": set(),
                "extend_cache": set(),
                "decode_step": {"causal_mask", "extend_cache"},
                "repeat_kv": set(),
                "gqa_forward": {"causal_mask", "repeat_kv"},
            },
        ),
        (
            ROPE,
            {
                "rope_angles": set(),
                "apply_rope": {"rope_angles"},
                "rope_attention_scores": {"apply_rope", "rope_angles"},  # through apply_rope
            },
        ),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_the_lessons_references_call_what_they_build_on(lesson, expected):
    assert reference_calls(lesson.solution.read_text(encoding="utf-8"), lesson.exercises) == expected


def test_only_what_the_reference_calls_is_replaced(tmp_path):
    """Before anything has passed, mha_forward's checks get the reference's mask, split and
    merge; the mask's checks get no reference at all."""
    # attention: an exercise built on several others, one of them passed (toy's builds on one)
    opened = Submission(ATTENTION.solution, lesson=ATTENTION, settings=Settings(isolation=Isolation.NONE))
    try:
        opened.expect({name: 1 for name in ATTENTION.exercises})
        assert opened.replace_for("apply_causal_mask") == ()
        assert opened.replace_for("split_heads") == ()
        assert set(opened.replace_for("mha_forward")) == {"apply_causal_mask", "split_heads", "merge_heads"}
        opened.record("split_heads", True)  # every check of split_heads passed: the student's own
        assert set(opened.replace_for("mha_forward")) == {"apply_causal_mask", "merge_heads"}
    finally:
        opened.close()


def test_later_exercises_do_no_work_in_process():
    """In the checker's own process (isolation none, as `check` runs) too, a stub's call into a
    later exercise runs the student's stub: the file that borrows scores 0."""
    # attention: the borrowing file is its adversarial case
    borrowed = ROOT / "tests" / "adversarial" / "reference_does_the_later_work" / "attention.py"
    report = run_checks(
        borrowed,
        lesson=ATTENTION,
        settings=Settings(isolation=Isolation.NONE, exercises=("apply_causal_mask", "split_heads")),
    )
    assert report.score == 0, [(t.name, t.status) for t in report.tests if t.score]


@pytest.mark.parametrize("isolation", [Isolation.AUTO, Isolation.NONE], ids=str)
def test_none_passed_on_reaches_the_reference_as_it_is(tmp_path, isolation):
    """A student who passes a default of None on explicitly (apply_rope(q, None), positions left
    to the function) gets the reference's answer through the sandbox as in the checker's own
    process: None is a plain value, like a number."""
    mine = tmp_path / ROPE.filename
    mine.write_text(
        ROPE.solution.read_text(encoding="utf-8")
        + textwrap.dedent(
            """

            def rope_attention_scores(q, k):
                q_turned, k_turned = apply_rope(q, None), apply_rope(k, None)
                return q_turned @ np.swapaxes(k_turned, -1, -2) / q.shape[-1] ** 0.5
            """
        ),
        encoding="utf-8",
    )
    settings = Settings(isolation=isolation, exercises=("rope_attention_scores",))
    report = run_checks(mine, lesson=ROPE, settings=settings)
    failed = [(t.name, t.feedback[:300]) for t in report.tests if t.status != "passed"]
    assert not failed and report.score == report.max_score > 0, failed
