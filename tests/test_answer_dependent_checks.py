"""Checks that look at the student's answer before they draw again: whatever the answer does to
Hypothesis's engine is the student's, never "the lesson has a mistake".

A lesson may rightly write a check whose next draw depends on what the student's function
returned (the rope lesson draws a batch index once the scores look like work), or that sets an
example aside with ``assume()`` when the answer leaves nothing to judge. Then a function that
answers differently to the same input changes the draws (Hypothesis: FlakyStrategyDefinition),
and one that answers zeros can have every example set aside (Unsatisfiable). Both were taken for
the lesson's mistake, which keeps a grade from being final: a submission could hold its own
grade back.

The two cases first, each through ``grade`` and ``check``; then their systematic version.

Hypothesis draws a class of students, each a way of answering (right, zeros, a constant, the
input handed back, noise, right but wrong every k-th call, an error every k-th call, the wrong
shape, NaN), hands it in to a copy of the toy course whose lesson has four such checks, and
requires of the batch: it finishes, every student has a row with a number and no lesson error,
the reference keeps full marks, and nothing prints a traceback.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from .support import TOY_COURSE, grader_outside

#: Checks of center_tokens whose draws or examples depend on the answer. The reference passes
#: each: the answer's means are 0, its shape is x's, and it varies wherever x does.
ANSWER_DEPENDENT = '''"""Checks of center_tokens that look at the answer before they draw again."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from grader import expect
from grader.marks import graded

from .strategies import tokens


@graded("center_tokens", points=1)
@given(x=tokens(), data=st.data())
def test_a_token_alone_is_centred_as_among_the_others(student, x, data):
    """One token centred alone is centred as it was among the others."""
    got = student.center_tokens(x)
    expect.that(bool(np.allclose(got.mean(axis=-1), 0)), "the means are not 0")
    t = data.draw(st.integers(0, x.shape[-2] - 1), label="token")
    alone = student.center_tokens(x[..., t : t + 1, :])
    expect.close(got[..., t : t + 1, :], alone, name="a token alone", rtol=1e-9, atol=1e-9)


@graded("center_tokens", points=1)
@given(x=tokens())
def test_centred_numbers_that_vary_have_mean_zero(student, x):
    """Where the centred numbers are not all zero, each token's mean is zero."""
    got = np.asarray(student.center_tokens(x))
    assume(bool(np.any(got != 0)))
    expect.close(got.mean(axis=-1), np.zeros(got.shape[:-1]), name="the means", rtol=1e-9, atol=1e-9)


@graded("center_tokens", points=1)
@given(x=tokens(), data=st.data())
def test_any_number_of_the_answer_moves_with_its_token(student, x, data):
    """Adding 1 to a whole token leaves that token's centred numbers as they were."""
    got = student.center_tokens(x)
    expect.shape(got, x.shape, name="center_tokens(x)")
    i = data.draw(st.integers(0, got.shape[-1] - 1), label="number")
    moved = student.center_tokens(x + 1.0)
    expect.close(moved[..., i], got[..., i], name="the centred numbers of x + 1", rtol=1e-6, atol=1e-6)


@graded("center_tokens", points=1)
@given(x=tokens(), data=st.data())
def test_tokens_picked_by_the_answer_are_centred(student, x, data):
    """As many tokens as the answer has positive first numbers (at most two) are picked again,
    and each is centred."""
    got = student.center_tokens(x)
    expect.shape(got, x.shape, name="center_tokens(x)")
    picks = min(int(np.sum(np.asarray(got)[..., 0] > 0)), 2)
    for _ in range(picks):
        t = data.draw(st.integers(0, x.shape[-2] - 1), label="token")
        mean = np.atleast_1d(got[..., t, :].mean(axis=-1))
        expect.close(mean, np.zeros_like(mean), name=f"token {t}'s mean", rtol=1e-9, atol=1e-9)
'''
#: The ways a student's center_tokens answers (k: how often it goes wrong, where it does).
WAYS = {
    "right": "return x - token_mean(x)",
    "zeros": "return np.zeros_like(x)",
    "constant": "return np.full_like(x, 0.5)",
    "input": "return x",
    "noise": "return np.random.default_rng().standard_normal(x.shape)",
    "wrong every k-th call": "return x - token_mean(x) + (next(_calls) % {k} == 0)",
    "an error every k-th call": (
        "if next(_calls) % {k} == 0:\n        raise ValueError('now and then')\n    return x - token_mean(x)"
    ),
    "wrong shape": "return (x - token_mean(x))[..., :-1]",
    "nan": "return np.full_like(x, np.nan)",
}
#: Check names of ANSWER_DEPENDENT.
CHECKS = {
    "a_token_alone_is_centred_as_among_the_others",
    "centred_numbers_that_vary_have_mean_zero",
    "any_number_of_the_answer_moves_with_its_token",
    "tokens_picked_by_the_answer_are_centred",
}


def source(reference: str, way: str, k: int) -> str:
    body = WAYS[way].format(k=k)
    return f"{reference}\n\nimport itertools\n_calls = itertools.count(1)\n\n\ndef center_tokens(x):\n    {body}\n"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the toy course with the checks above; the reference earns every point."""
    copy = tmp_path_factory.mktemp("answers") / "toy"
    shutil.copytree(TOY_COURSE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "tests" / "checks" / "toy" / "test_answer_dependent.py").write_text(ANSWER_DEPENDENT)
    done = grader_outside(
        "grade",
        str(copy / "solutions" / "toy.py"),
        "--course",
        str(copy),
        "--format",
        "json",
        cwd=copy.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["score"] == report["max_score"] and not report.get("lesson_errors"), report
    assert CHECKS <= {t["name"] for t in report["tests"]}
    return copy


def fails_in_the_students_words(course: Path, tmp_path: Path, way: str, k: int, name: str, words: str):
    """A student whose center_tokens answers ``way``: ``grade`` fails the check ``name`` saying
    ``words``, with a number and no lesson error, and ``check`` gives the same total."""
    file = tmp_path / "student" / "toy.py"
    file.parent.mkdir()
    file.write_text(source((course / "solutions" / "toy.py").read_text(), way, k))
    done = grader_outside("grade", str(file), "--course", str(course), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert not report.get("lesson_errors") and report["score"] is not None, report
    row = next(t for t in report["tests"] if t["name"] == name)
    assert row["status"] == "failed" and words in row["feedback"], row
    checked = grader_outside("check", str(file), "--course", str(course), "--details", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr[-2000:]  # checks failed
    for text in (done.stdout, done.stderr, checked.stdout, checked.stderr):
        assert "Traceback" not in text and "bug in the grader" not in text, text[-3000:]
    assert "NOT RUN" not in checked.stdout and words in " ".join(checked.stdout.split())
    total = rf"^Total +{report['score']}/{report['max_score']}$"
    assert re.search(total, checked.stdout, re.M), checked.stdout


def test_a_function_that_changes_the_checks_draws_fails_and_never_holds_its_grade_back(course, tmp_path):
    """Hypothesis says FlakyStrategyDefinition when one input's runs draw differently; where the
    student's answers decided the draws, that is the student's function answering differently."""
    fails_in_the_students_words(
        course,
        tmp_path,
        "wrong every k-th call",
        3,
        "a_token_alone_is_centred_as_among_the_others",
        "different results for the same input",
    )


def test_a_function_whose_answers_leave_a_check_nothing_to_judge_fails_it(course, tmp_path):
    """Every example set aside by an assume() on the answer ends in Hypothesis's Unsatisfiable:
    the student's, said in their words. Before the function answers, such an error stays the
    lesson's (the breaks of tests/test_lint.py and tests/test_author_errors.py)."""
    fails_in_the_students_words(
        course,
        tmp_path,
        "zeros",
        2,
        "centred_numbers_that_vary_have_mean_zero",
        "set aside every input it drew",
    )


CLASS = st.lists(st.tuples(st.sampled_from(sorted(WAYS)), st.integers(2, 4)), min_size=2, max_size=4)


@settings(
    max_examples=3,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@example(students=[("wrong every k-th call", 3), ("zeros", 2), ("noise", 2)])
@given(students=CLASS)
def test_no_answer_makes_a_check_the_lessons_mistake(course, tmp_path_factory, students):
    root = tmp_path_factory.mktemp("class")
    reference = (course / "solutions" / "toy.py").read_text()
    klass = root / "class"
    for n, (way, k) in enumerate(students):
        (klass / f"s{n}").mkdir(parents=True)
        (klass / f"s{n}" / "toy.py").write_text(source(reference, way, k))
    (klass / "ref").mkdir()
    (klass / "ref" / "toy.py").write_text(reference)
    out = root / "grades.csv"
    done = grader_outside(
        "batch", str(klass), "--course", str(course), "--out", str(out), "--jobs", "2", cwd=root
    )
    for text in (done.stdout, done.stderr):
        assert "Traceback" not in text and "bug in the grader" not in text, text[-3000:]
    assert done.returncode == 0, (students, done.stderr[-3000:])
    with out.open(newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert sorted(rows) == sorted([*(f"s{n}" for n in range(len(students))), "ref"])
    assert rows["ref"]["score"] == rows["ref"]["max_score"] != ""
    for n, (way, _) in enumerate(students):
        row = rows[f"s{n}"]
        assert row["score"] != "" and "lesson" not in row["status"], (way, row)
        if way != "right":
            assert row["score"] != row["max_score"], (way, row)
