"""Grading the grader, for every lesson with a catalog (``tests/catalog/NAME/``), through
``grader catalog`` (:mod:`grader.commands.catalog`): every realistic bug loses points in its own
exercise only and is named first by its code, every correct alternative gets full marks, a
submission that does no real work gets nothing in any exercise.

Each entry is graded once, as a class is (sandboxed, a fresh child per entry, replaying each
property's examples once they are known, without pytest where the lesson allows it). `check` (in
the checker's own process, every property under Hypothesis's engine, ``GRADER_REPLAY=off``,
through pytest, ``GRADER_THROUGH_PYTEST=on``) grades a sample again: in each lesson, the
first entry of each kind for each exercise, and the entries whose feedback quotes random
numbers. Their agreement shows that neither isolation nor replay nor pytest's absence changes a
score, a feedback or a smallest input. ``GRADER_AGREEMENT=all`` compares every entry instead (a few minutes more).

Lessons and entries are found, not listed: a new lesson's catalog, or a new entry in one, is
graded and held to all of this without a line here.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from grader.core.catalog import Entry, Kind, entries
from grader.core.lesson import Course, Lesson
from grader.core.settings import REPLAY_VARIABLE, THROUGH_PYTEST_VARIABLE, Isolation
from grader.formats.json_report import from_dict
from grader.formats.text import to_text

from .support import ROOT, compose, grade_folders, net, python

#: The lessons with a catalog, as the course declares them.
LESSONS = tuple(lesson for lesson in Course.at(ROOT).lessons if lesson.catalog.is_dir())
KINDS = tuple(kind.value for kind in Kind)
#: Every entry of every lesson, as the catalog command reads them.
CATALOG = {lesson.name: entries(lesson) for lesson in LESSONS}


def catalog(lesson: Lesson, kind: str) -> list[Entry]:
    """The catalog entries of ``lesson`` of one kind (bugs, correct, trivial), in name order."""
    return [e for e in CATALOG[lesson.name] if e.kind.value == kind]


#: (lesson, entry) for every entry of every lesson, for parametrizing.
ENTRIES = {kind: [(lesson, e) for lesson in LESSONS for e in catalog(lesson, kind)] for kind in KINDS}


def _id(param) -> str:
    return f"{param[0].name}-{param[1].path.stem}" if isinstance(param, tuple) else str(param)


#: What the issues that set the bar asked each lesson's catalog to hold, at least: entries by
#: name, and numbers of bugs and correct alternatives. A lesson not named here is held to the
#: rest all the same.
REQUIRED = {
    "attention": {
        "bugs": {
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
        },
        "correct": {
            "additive_inf_mask",
            "einsum_mha",
            "loop_over_heads",
            "stack_concat_split_merge",
            "cached_mask",
            "large_negative_mask_in_mha",
            "prefix_loop_mha",
        },
        # submissions that do no real work, each in all four functions
        "trivial": {
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
        },
        "at least": {"bugs": 25, "correct": 6},
    },
    "kv_cache": {
        "bugs": {
            "mask_top_left",  # the classic bug of decoding with a cache
            "mask_offset_off_by_one",
            "mask_offset_one_too_far",
            "decode_attends_before_appending",  # a token that cannot see itself
            "extend_on_the_heads_axis",
            "extend_default_axis",
            "extend_keeps_only_the_newest",
            "extend_rolling_buffer_in_place",
            "decode_keeps_only_the_newest",
            "decode_square_mask_first_rows",
            "decode_top_left_mask",
            "repeat_tile_not_repeat",  # query head h gets h % H_kv
            "gqa_tile_groups",
            "decode_scale_sqrt_D",
            "gqa_scale_by_kv_width",
            "gqa_kv_heads_ignored",
            "gqa_values_not_repeated",
            "gqa_head_counts_not_checked",
        },
        "correct": {"gqa_loop_over_groups", "preallocated_cache", "decode_one_token_at_a_time"},
        "trivial": {
            "zeros",
            "ones",
            "nan",
            "constant",
            "input_unchanged",
            "random_values",
            "raises_value_error",
        },
    },
    "rope": {
        "bugs": {
            "rope_halves_not_neighbours",  # GPT-NeoX's layout
            "angles_exponent_minus_i_over_Dh",
            "rope_exponent_minus_i_over_Dh",
            "angles_positions_from_one",
            "rope_positions_from_one",
            "scores_only_q_turned",
            "scores_not_scaled",
            "rope_in_place",
            "rope_sin_sign",
            "rope_float64",
        },
        "correct": {"rope_complex_numbers"},
        "trivial": {
            "zeros",
            "ones",
            "nan",
            "constant",
            "input_unchanged",
            "random_values",
            "raises_value_error",
        },
    },
}
#: Entries whose feedback quotes random numbers: check and grade agree on their scores only.
RANDOM = {"trivial-random_values"}


#: Whether `check` grades every entry again to compare, or the sample (see the module's text).
EVERY = os.environ.get("GRADER_AGREEMENT") == "all"


def sample(lesson: Lesson) -> list[Entry]:
    """The entries `check` grades again: the first of each kind for each exercise (a bug's own
    exercise; the others touch every exercise) and those in RANDOM."""
    if EVERY:
        return list(CATALOG[lesson.name])
    chosen: dict[tuple[str, str | None], Entry] = {}
    for entry in CATALOG[lesson.name]:
        chosen.setdefault((entry.kind.value, entry.exercise), entry)
    picked = set(chosen.values()) | {e for e in CATALOG[lesson.name] if e.label in RANDOM}
    return sorted(picked, key=lambda e: e.label)


# ----------------------------------------------------------------------------- grading, once


@pytest.fixture(scope="module")
def held() -> dict[str, dict[str, dict]]:
    """``grader catalog`` on every lesson at once: ``held[lesson][label]`` is the entry's
    judgement and its report."""
    total = sum(len(found) for found in CATALOG.values())
    done = python("catalog", "--format", "json", timeout=net(total))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """The sample graded as `check` grades: unsandboxed, every property under the engine."""
    root = tmp_path_factory.mktemp("checked")
    reports = {}
    for lesson in LESSONS:
        folders = {
            e.label: compose(e.path, root / lesson.name / e.label, lesson).parent for e in sample(lesson)
        }
        chunks = root / "chunks" / lesson.name
        env = {**os.environ, REPLAY_VARIABLE: "off", THROUGH_PYTEST_VARIABLE: "on"}
        reports[lesson.name] = grade_folders(folders, chunks, isolation="none", lesson=lesson, env=env)
    return reports


def test_each_entry_is_graded_once(held):
    for lesson in LESSONS:
        assert set(held[lesson.name]) == {e.label for e in CATALOG[lesson.name]}, lesson.name
        assert all(row["report"] is not None for row in held[lesson.name].values())


# ----------------------------------------------------------------------------- the catalog itself


def test_every_lesson_of_the_course_with_a_catalog_is_found():
    assert len(LESSONS) >= 2 and all(catalog(lesson, "bugs") for lesson in LESSONS)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)
def test_the_catalog_holds_what_was_asked(lesson):
    required = REQUIRED.get(lesson.name, {})
    for kind in KINDS:
        assert required.get(kind, set()) <= {e.path.stem for e in catalog(lesson, kind)}, kind
    for kind, least in required.get("at least", {}).items():
        assert len(catalog(lesson, kind)) >= least, kind
    bugs = catalog(lesson, "bugs")
    assert all(b.exercise in lesson.exercises and b.diagnosis for b in bugs)
    assert {b.exercise for b in bugs} == set(lesson.exercises)  # a bug for every exercise


# ----------------------------------------------------------------------------- scores


@pytest.mark.parametrize("item", ENTRIES["bugs"], ids=_id)
def test_bug_loses_points_in_its_own_exercise_only_and_is_named_first(held, item):
    """The grader fits the lesson's known mistakes to what the bug's function did, through the
    sandbox: the code the catalog entry declares (DIAGNOSIS) comes first, with its hint."""
    lesson, entry = item
    row = held[lesson.name][entry.label]
    assert row["outcome"] == "holds", row["why"]
    report = row["report"]
    scores = {name: (e["score"], e["max_score"]) for name, e in report["exercises"].items()}
    own = scores[entry.exercise]
    assert own[0] < own[1] and all(s[0] == s[1] for n, s in scores.items() if n != entry.exercise)
    found = report["exercises"][entry.exercise]["diagnoses"]
    assert found[0]["code"] == entry.diagnosis and found[0]["hint"] and len(found) <= 3


@pytest.mark.parametrize("item", ENTRIES["correct"], ids=_id)
def test_correct_alternative_gets_full_marks(held, item):
    lesson, entry = item
    row = held[lesson.name][entry.label]
    report = row["report"]
    failed = {t["name"]: t["feedback"][:400] for t in report["tests"] if t["status"] != "passed"}
    assert report["score"] == report["max_score"] == 100, failed
    assert all(not e["diagnoses"] for e in report["exercises"].values())
    assert row["outcome"] == "holds", row["why"]


@pytest.mark.parametrize("item", ENTRIES["trivial"], ids=_id)
def test_no_real_work_scores_nothing(held, item):
    """Zeros, constants, noise or the input handed back: 0 in every exercise, on every check."""
    lesson, entry = item
    row = held[lesson.name][entry.label]
    report = row["report"]
    scores = {name: e["score"] for name, e in report["exercises"].items()}
    assert set(scores) == set(lesson.exercises)
    passed = [t["name"] for t in report["tests"] if t["status"] == "passed"]
    assert not any(scores.values()) and not passed, f"{entry.label} earns {scores} from {passed}"
    assert all(t["feedback"] for t in report["tests"] if t["status"] != "passed")
    assert row["outcome"] == "holds", row["why"]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)
def test_check_and_grade_agree(held, checked, lesson):
    """Trading isolation for speed changes no score and no feedback, and neither does replaying
    the examples (the catalog's grading replays them, `check`'s here runs Hypothesis's engine
    on every property): the same status, score, feedback and smallest input of every check, and
    the same likely mistakes."""

    def outcome(report, name):
        if name in RANDOM:
            return [(t["name"], t["score"]) for t in report["tests"]]
        return [
            (t["name"], t["status"], t["score"], t["feedback"], t["counterexample"]) for t in report["tests"]
        ] + [(exercise, row["diagnoses"]) for exercise, row in sorted(report["exercises"].items())]

    unsandboxed = checked[lesson.name]
    assert set(unsandboxed) == {e.label for e in sample(lesson)}
    assert {e.kind for e in sample(lesson)} == set(Kind)
    assert {e.exercise for e in sample(lesson) if e.kind is Kind.BUGS} == set(lesson.exercises)
    for name, report in unsandboxed.items():
        assert outcome(report, name) == outcome(held[lesson.name][name]["report"], name), name
    assert {r["isolation"] for r in unsandboxed.values()} == {"none"}
    assert {row["report"]["isolation"] for row in held[lesson.name].values()} != {"none"}


#: Lines a failing exercise takes in `check`'s report at most, and the whole report (a screen and
#: a half), beyond what the smallest input needs past INPUT_LINES: an input is never cut, and four
#: 8x8 projections take 16 lines however they are written.
EXERCISE_LINES, REPORT_LINES, INPUT_LINES = 25, 45, 10


#: Lessons whose reports are known to break the screen rule below, and how: held to it all the
#: same (strict), so the mark must go once the report is mended.
KNOWN_TOO_WIDE = {
    "kv_cache": "a hidden check's name, a_step_after_a_given_cache_equals_the_full_forward, "
    "makes its line 78 columns wide",
}


@pytest.mark.parametrize(
    "lesson",
    [
        pytest.param(lesson, marks=pytest.mark.xfail(reason=KNOWN_TOO_WIDE[lesson.name], strict=True))
        if lesson.name in KNOWN_TOO_WIDE
        else lesson
        for lesson in LESSONS
    ],
    ids=lambda lesson: lesson.name,
)
def test_every_bug_reads_on_a_screen_and_a_half(held, lesson):
    """`check`'s report of every catalogued bug, as a student reads it (plain, 72 columns): its
    failing exercise in at most 25 lines and the whole report in at most 45, but for an input
    that needs more than 10 lines itself; no line wider than 72 columns. The report is the
    catalog's, as `check` shows it (the two agree, above): run in the checker's process."""
    lengths = []
    for entry in catalog(lesson, "bugs"):
        graded = from_dict(held[lesson.name][entry.label]["report"])
        report = dataclasses.replace(graded, isolation=Isolation.NONE)
        text = to_text(report, heading=f"Checking {lesson.filename}", recheck="python -m grader check")
        lines = text.splitlines()
        own = entry.exercise
        start = next(i for i, line in enumerate(lines) if line.startswith(own + " "))
        block = lines[start : lines.index("", start)]
        lead = (
            block.index("      Smallest input found:")
            if "      Smallest input found:" in block
            else len(block)
        )
        example = [line for line in block[lead + 1 :] if line.startswith("          ")]
        over = max(0, len(example) - INPUT_LINES)
        assert len(block) - over <= EXERCISE_LINES, (entry.label, "\n".join(block))
        assert len(lines) - over <= REPORT_LINES, (entry.label, text)
        assert all(len(line) <= 72 for line in lines if "--details shows it whole" not in line), entry.label
        lengths.append(len(block))
    assert sorted(lengths)[len(lengths) // 2] <= 20, lengths
