"""Grading the grader: every realistic bug loses points in its own exercise only,
every correct alternative gets full marks, and a submission that does no real work
gets nothing in any exercise."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.formats.json_report import from_dict
from grader.formats.text import to_text

from .support import ATTENTION, compose, grade_folders

CATALOG = ATTENTION.catalog
BUGS = sorted((CATALOG / "bugs").glob("*.py"))
CORRECT = sorted((CATALOG / "correct").glob("*.py"))
TRIVIAL = sorted((CATALOG / "trivial").glob("*.py"))

#: The mistakes the suite must catch, by catalog file (see the issue that set the bar).
REQUIRED_BUGS = {
    "mask_diagonal_masked",
    "mask_inverted_tril",
    "mask_missing_returns_copy",
    "mask_future_set_to_zero",
    "mask_multiplied_by_01",
    "mask_leaks_next_token",
    "mask_in_place",
    "mask_sized_from_axis0",
    "mask_hardcoded_size4",
    "mask_sliding_window",
    "split_reshape_no_transpose",
    "merge_reshape_no_transpose",
    "mha_reshape_no_transpose_inline",
    "split_interleaved_heads",
    "split_reversed_head_order",
    "split_no_leading_axes",
    "split_truncates_leftover",
    "mha_scale_sqrt_D",
    "mha_no_scaling",
    "mha_softmax_wrong_axis",
    "mha_forgets_W_o",
    "mha_W_o_transposed",
    "mha_mask_after_softmax",
    "mha_causal_always_on",
    "mha_causal_never_on",
    "mha_keys_times_queries",
    "mha_values_from_W_q",
    "mha_naive_softmax",
    "mha_heads_collapsed",
    # only at sizes well past the lesson's: tens of tokens, more heads, three batch axes
    "mask_cached_for_16_tokens",
    "split_transpose_axes_written_out",
    "split_heads_loop_capped",
    "merge_transpose_axes_written_out",
    "mha_mask_buffer_block_size_16",
}
REQUIRED_CORRECT = {
    "additive_inf_mask",
    "einsum_mha",
    "loop_over_heads",
    "stack_concat_split_merge",
    "cached_mask",
    "large_negative_mask_in_mha",
    "prefix_loop_mha",
}
#: Submissions that do no real work, each in all four functions.
REQUIRED_TRIVIAL = {
    "zeros",
    "ones",
    "nan",
    "constant",
    "minus_inf",
    "random_values",
    "random_seeded_by_input",
    "input_unchanged",
    "uniform_weights",
    "checks_then_zeros",
    "raises_value_error",
}
#: Entries whose feedback quotes random numbers: check and grade agree on their scores only.
RANDOM = {"trivial-random_values"}


def declared(entry: Path, name: str):
    """The value a catalog file gives ``name`` (EXERCISE, DIAGNOSIS), or None."""
    for node in ast.parse(entry.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            return ast.literal_eval(node.value)
    return None


def exercise_of(entry: Path) -> str:
    """The EXERCISE a catalog file declares."""
    exercise = declared(entry, "EXERCISE")
    assert exercise is not None, f"{entry.name} declares no EXERCISE"
    return exercise


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    built = tmp_path_factory.mktemp("catalog")
    return {
        f"{e.parent.name}-{e.stem}": compose(e, built / f"{e.parent.name}-{e.stem}").parent
        for e in BUGS + CORRECT + TRIVIAL
    }


@pytest.fixture(scope="module")
def reports(folders, tmp_path_factory) -> dict[str, dict]:
    """Graded as `grade` does: sandboxed."""
    return grade_folders(folders, tmp_path_factory.mktemp("graded"), isolation="auto")


@pytest.fixture(scope="module")
def unsandboxed(folders, tmp_path_factory) -> dict[str, dict]:
    """Graded as `check` does on a student's machine: in the checker's own process."""
    return grade_folders(folders, tmp_path_factory.mktemp("graded-none"), isolation="none")


def test_the_catalog_is_as_large_as_promised():
    assert len(BUGS) >= 25 and len(CORRECT) >= 6
    assert REQUIRED_BUGS <= {b.stem for b in BUGS}
    assert REQUIRED_CORRECT <= {c.stem for c in CORRECT}
    assert REQUIRED_TRIVIAL <= {t.stem for t in TRIVIAL}
    assert all(exercise_of(b) in ATTENTION.exercises for b in BUGS)


@pytest.mark.parametrize("entry", BUGS, ids=lambda p: p.stem)
def test_bug_loses_points_in_its_own_exercise_only(reports, entry):
    report = reports[f"bugs-{entry.stem}"]
    own = exercise_of(entry)
    scores = {name: (e["score"], e["max_score"]) for name, e in report["exercises"].items()}
    assert scores[own][0] < scores[own][1], f"{entry.stem} escapes the checks of {own}"
    others = {name: s for name, s in scores.items() if name != own and s[0] != s[1]}
    assert not others, f"{entry.stem} also costs points in {others}"
    failed = [t for t in report["tests"] if t["status"] != "passed"]
    assert all(t["feedback"] for t in failed)


@pytest.mark.parametrize("entry", BUGS, ids=lambda p: p.stem)
def test_bug_is_named_first_by_its_code(reports, entry):
    """The grader fits the lesson's known mistakes to what the bug's function did, through the
    sandbox: the code the catalog entry declares (DIAGNOSIS) comes first, with its hint."""
    code = declared(entry, "DIAGNOSIS")
    found = reports[f"bugs-{entry.stem}"]["exercises"][exercise_of(entry)]["diagnoses"]
    assert found and found[0]["code"] == code and found[0]["hint"], (code, found)
    assert len(found) <= 3


@pytest.mark.parametrize("entry", CORRECT, ids=lambda p: p.stem)
def test_correct_alternative_gets_full_marks(reports, entry):
    report = reports[f"correct-{entry.stem}"]
    failed = {t["name"]: t["feedback"][:400] for t in report["tests"] if t["status"] != "passed"}
    assert report["score"] == report["max_score"] == 100, failed
    assert all(not e["diagnoses"] for e in report["exercises"].values())


@pytest.mark.parametrize("entry", TRIVIAL, ids=lambda p: p.stem)
def test_no_real_work_scores_nothing(reports, entry):
    """Zeros, constants, noise or the input handed back: 0 in every exercise, on every check."""
    report = reports[f"trivial-{entry.stem}"]
    scores = {name: e["score"] for name, e in report["exercises"].items()}
    assert set(scores) == set(ATTENTION.exercises)
    passed = [t["name"] for t in report["tests"] if t["status"] == "passed"]
    assert not any(scores.values()) and not passed, f"{entry.stem} earns {scores} from {passed}"
    failed = [t for t in report["tests"] if t["status"] != "passed"]
    assert all(t["feedback"] for t in failed)


def test_check_and_grade_agree_on_every_entry(reports, unsandboxed):
    """Trading isolation for speed changes no score and no feedback."""

    def outcome(report, label):
        if label in RANDOM:
            return [(t["name"], t["score"]) for t in report["tests"]]
        return [(t["name"], t["status"], t["score"], t["feedback"]) for t in report["tests"]]

    for label in reports:
        assert outcome(unsandboxed[label], label) == outcome(reports[label], label), label
    assert {r["isolation"] for r in unsandboxed.values()} == {"none"}


#: Lines a failing exercise takes in `check`'s report at most, and the whole report (a screen and
#: a half), beyond what the smallest input needs past INPUT_LINES: an input is never cut, and four
#: 8x8 projections take 16 lines however they are written.
EXERCISE_LINES, REPORT_LINES, INPUT_LINES = 25, 45, 10


def test_every_bug_reads_on_a_screen_and_a_half(unsandboxed):
    """`check`'s report of every catalogued bug, as a student reads it (plain, 72 columns): its
    failing exercise in at most 25 lines and the whole report in at most 45, but for an input
    that needs more than 10 lines itself; no line wider than 72 columns."""
    lengths = []
    for entry in BUGS:
        report = from_dict(unsandboxed[f"bugs-{entry.stem}"])
        text = to_text(report, heading="Checking attention.py", recheck="python -m grader check")
        lines = text.splitlines()
        own = exercise_of(entry)
        start = next(i for i, line in enumerate(lines) if line.startswith(own + " "))
        block = lines[start : lines.index("", start)]
        lead = (
            block.index("      Smallest input found:")
            if "      Smallest input found:" in block
            else len(block)
        )
        example = [line for line in block[lead + 1 :] if line.startswith("          ")]
        over = max(0, len(example) - INPUT_LINES)
        assert len(block) - over <= EXERCISE_LINES, (entry.stem, "\n".join(block))
        assert len(lines) - over <= REPORT_LINES, (entry.stem, text)
        assert all(len(line) <= 72 for line in lines if "--details shows it whole" not in line), entry.stem
        lengths.append(len(block))
    assert sorted(lengths)[len(lengths) // 2] <= 20, lengths
