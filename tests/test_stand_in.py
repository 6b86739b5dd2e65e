"""The reference standing in for a graded function the student's code calls: the same contract
in the student's own process (``check``) and in a sandbox (``grade``), loose enough for honest
code that passes on what it made of the checks' inputs (found by helper-41: a fused projection
of queries, keys and values scored 45 of 45 in ``check`` and 4 in ``grade``; a cache's new part
passed as a tuple, 30 of 30 and 0)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.core.lesson import find_course
from grader.core.settings import Isolation, Settings
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict
from grader.sandbox.standin import HELPER_AXIS, arguments_problem
from grader.sandbox.wardens import best_level

from .support import ROOT

#: (lesson, the reference's lines, an honest file's lines, the exercise that passes the result on)
HONEST = [
    (
        "attention",
        """    q = split_heads(x @ W_q, n_heads)  # (..., T, D) -> (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)  # (..., T, D) -> (..., H, T, Dh)
    v = split_heads(x @ W_v, n_heads)  # (..., T, D) -> (..., H, T, Dh)""",
        """    qkv = split_heads(x @ np.concatenate([W_q, W_k, W_v], axis=1), 3 * n_heads)  # one projection
    q = qkv[..., :n_heads, :, :]
    k = qkv[..., n_heads : 2 * n_heads, :, :]
    v = qkv[..., 2 * n_heads :, :, :]""",
        "mha_forward",
    ),
    (
        "kv_cache",
        "    cache = extend_cache(cache, np.stack([k, v]))",
        "    cache = extend_cache(cache, (k, v))",
        "decode_step",
    ),
]


@pytest.mark.parametrize("lesson_name, reference, honest, exercise", HONEST, ids=[h[0] for h in HONEST])
def test_honest_code_passing_its_own_results_on_scores_alike_checked_and_graded(
    lesson_name, reference, honest, exercise, tmp_path
):
    lesson = find_course(ROOT).lesson(lesson_name)
    text = lesson.solution.read_text(encoding="utf-8")
    assert reference in text
    student = tmp_path / lesson.filename
    student.write_text(text.replace(reference, honest), encoding="utf-8")
    reports = []
    for level in (Isolation.NONE, Isolation(best_level())):
        settings = Settings(isolation=level, store=None, exercises=(exercise,))  # the others stand in
        report = to_dict(run_checks(student, lesson=lesson, settings=settings))
        reports.append({**report, "isolation": "", "submission": ""})
    assert reports[0]["score"] == reports[0]["max_score"], reports[0]["tests"]
    assert reports[1] == reports[0]


def test_the_bounds_cap_the_work_not_the_shapes_honest_code_makes():
    fused = np.zeros((10, 3 * 64))
    assert arguments_problem([fused, 12]) == ""
    assert arguments_problem([(np.zeros((2, 3, 4, 5)), np.zeros((2, 3, 4, 5)))]) == ""
    assert "larger" in arguments_problem([np.zeros((1, HELPER_AXIS + 1))])
    assert "larger" in arguments_problem([np.zeros((600, 600))])  # elements, all together
    assert "batch axes" in arguments_problem([np.zeros((2, 3, 4)), np.zeros((5, 3, 4))])
    # a tuple of vectors is a matrix: no batch axes of its own to differ from another's
    assert arguments_problem([(np.zeros(3), np.zeros(3)), np.zeros((2, 4, 5))]) == ""
    assert "batch axes" in arguments_problem([(np.zeros((3, 4, 5)),) * 2, np.zeros((3, 4, 5))])
    assert "not accepted" in arguments_problem([((np.zeros(2),),)])
    assert "not accepted" in arguments_problem(["text"])
