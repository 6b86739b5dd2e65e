"""Naming the likely mistake (grader.diagnosis): the matcher's rules, and the attention lesson's
mistakes fitted to every catalogued bug, in this process (the grader's own path through the
sandbox is tested with the catalog)."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from grader.core.catalog import composed, declared, entries
from grader.core.settings import Isolation, Settings
from grader.diagnosis import Call, Mistake, diagnose, same
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict
from grader.sandbox.wardens import best_level
from tests.checks.attention import diagnoses as lesson

from .support import ATTENTION, KV_CACHE, ROPE

CATALOG = ATTENTION.catalog


def module(text: str, name: str) -> types.ModuleType:
    made = types.ModuleType(name)
    exec(compile(text, name, "exec"), made.__dict__)
    return made


REFERENCE = module(ATTENTION.solution.read_text(), "reference")


def calls(functions, exercise: str) -> list[Call]:
    """The exercise's function on the lesson's probes, as the grader records calls."""
    made = []
    for arguments in lesson.PROBES[exercise]:
        given = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in arguments.items()}
        try:
            with np.errstate(all="ignore"):
                value = getattr(functions, exercise)(**given)
        except Exception as err:  # noqa: BLE001
            made.append(Call(arguments, None, False, "raised", tuple(c.__name__ for c in type(err).__mro__)))
            continue
        changed = tuple(
            k for k, v in arguments.items() if isinstance(v, np.ndarray) and not np.array_equal(v, given[k])
        )
        made.append(Call(arguments, value, True, mutated=changed))
    return made


@pytest.mark.parametrize("entry", sorted((CATALOG / "bugs").glob("*.py")), ids=lambda p: p.stem)
def test_each_catalogued_bug_is_named_first_by_its_code(entry):
    code = declared(entry.read_text(), "DIAGNOSIS")
    assert code, f"{entry.name} declares no DIAGNOSIS (the code its mistake should get)"
    exercise = declared(entry.read_text(), "EXERCISE")
    functions = module(ATTENTION.solution.read_text() + "\n" + entry.read_text(), entry.stem)
    found = diagnose(lesson.MISTAKES[exercise], calls(functions, exercise), getattr(REFERENCE, exercise))
    assert found and found[0].code == code, f"{entry.stem}: {[d.code for d in found]}"
    assert all(d.hint for d in found)


def _entry_functions(stem: str) -> types.ModuleType:
    entry = CATALOG / "bugs" / f"{stem}.py"
    return module(ATTENTION.solution.read_text() + "\n" + entry.read_text(), stem)


@pytest.mark.parametrize(
    "stem, words",
    [
        ("mha_scale_by_Dh", "divided by Dh (=4) instead of by its square root"),
        ("mha_single_head_scale_sqrt_Dh", "one single head over all D numbers, scaled by 1/sqrt(Dh)"),
        ("mha_heads_collapsed", "one single head over all D numbers: n_heads is ignored"),
        ("mha_heads_share_mean_scores", "by the average of the heads' score tables"),
        ("split_heads_axis_in_front", "in front of the batch axes"),
    ],
)
def test_a_mistake_is_told_in_its_own_words(stem, words):
    """Mistakes that share a code (one head at either scale) still say which one it is."""
    exercise = declared((CATALOG / "bugs" / f"{stem}.py").read_text(), "EXERCISE")
    found = diagnose(
        lesson.MISTAKES[exercise], calls(_entry_functions(stem), exercise), getattr(REFERENCE, exercise)
    )
    assert found and words in found[0].hint, [d.hint for d in found]


@pytest.mark.parametrize(
    "stem", ["mha_single_head_scale_sqrt_Dh", "mha_heads_collapsed", "mha_heads_share_mean_scores"]
)
@pytest.mark.parametrize("layout", ["(..., T, T)", "(..., 1, T, T)", "(..., H, T, T)"])
def test_one_table_for_every_head_is_named_however_its_weights_are_returned(stem, layout):
    functions = _entry_functions(stem)
    written = functions.mha_forward

    def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
        got = written(x, W_q, W_k, W_v, W_o, n_heads, causal, return_weights)
        if not return_weights:
            return got
        out, weights = got
        table = weights if weights.ndim == x.ndim else weights[..., 0, :, :]  # (..., T, T)
        T = table.shape[-1]
        if layout == "(..., 1, T, T)":
            return out, table[..., None, :, :]
        if layout == "(..., H, T, T)":
            return out, np.broadcast_to(table[..., None, :, :], (*table.shape[:-2], n_heads, T, T))
        return out, table

    functions.mha_forward = mha_forward
    code = declared((CATALOG / "bugs" / f"{stem}.py").read_text(), "DIAGNOSIS")
    found = diagnose(lesson.MISTAKES["mha_forward"], calls(functions, "mha_forward"), REFERENCE.mha_forward)
    assert found and found[0].code == code, [d.code for d in found]


@pytest.mark.parametrize(
    "entry", [ATTENTION.solution, *sorted((CATALOG / "correct").glob("*.py"))], ids=lambda p: p.stem
)
def test_no_correct_alternative_gets_a_diagnosis(entry):
    text = ATTENTION.solution.read_text() + "\n" + (entry.read_text() if entry != ATTENTION.solution else "")
    functions = module(text, entry.stem)
    for exercise in ATTENTION.exercises:
        found = diagnose(lesson.MISTAKES[exercise], calls(functions, exercise), getattr(REFERENCE, exercise))
        assert found == [], f"{entry.stem}, {exercise}: {[d.code for d in found]}"


def test_every_code_is_a_plain_word_and_each_exercise_has_probes():
    for exercise in ATTENTION.exercises:
        assert lesson.PROBES[exercise]
        for mistake in lesson.MISTAKES[exercise]:
            assert mistake.code.replace("-", "").isalpha() and mistake.code.islower()


def double(x):
    return 2 * x


def test_a_mistake_is_named_only_when_every_call_fits_it():
    twice = Mistake("twice", "doubled", returns=lambda x: 4 * x)
    x = np.arange(3.0)
    right, doubled = Call({"x": np.zeros(3)}, np.zeros(3)), Call({"x": x + 1}, 4 * (x + 1))
    assert [d.code for d in diagnose([twice], [right, doubled], double)] == ["twice"]
    # a right answer where the mistake would have given another contradicts it
    assert diagnose([twice], [Call({"x": x + 1}, 2 * (x + 1)), doubled], double) == []
    # one call the mistake does not explain, and it is not named
    other = Call({"x": x + 2}, 5 * (x + 2))
    assert diagnose([twice], [doubled, other], double) == []
    # where the mistake changes nothing, a wrong answer contradicts it
    zero = Call({"x": np.zeros(3)}, np.ones(3))
    assert diagnose([twice], [doubled, zero], double) == []


def test_a_diagnosis_names_the_first_failed_check_whose_calls_it_explains():
    tripled = Mistake("tripled", "it triples", returns=lambda x: 3 * x)
    student = [Call({"x": 0.0}, 0.0), Call({"x": 3.0}, 9.0), Call({"x": 4.0}, 12.0), Call({"x": 5.0}, 15.0)]
    found = diagnose([tripled], student, double, sources=["right_one", "a_check", "another", ""])
    assert [d.checks for d in found] == [("a_check", "another")]  # 0 is right either way: tells nothing
    assert diagnose([tripled], student, double)[0].checks == ()  # probes alone name no check


def test_nothing_is_named_when_every_call_is_right():
    anything = Mistake("anything", "always", shows=lambda seen: True)
    x = np.arange(3.0)
    assert diagnose([anything], [Call({"x": x}, 2 * x)], double) == []
    assert [d.code for d in diagnose([anything], [Call({"x": x}, 3 * x)], double)] == ["anything"]


def test_most_explained_first_then_the_lessons_order_and_at_most_three():
    x = np.arange(1.0, 4.0)
    seen = [Call({"x": x}, np.zeros(3)), Call({"x": -x}, np.zeros(3))]
    mistakes = [
        Mistake("once", "a", shows=lambda s: True),
        Mistake("zeros", "b", returns=lambda x: np.zeros_like(x)),
        Mistake("also", "c", shows=lambda s: True),
        Mistake("more", "d", shows=lambda s: True),
    ]
    assert [d.code for d in diagnose(mistakes, seen, double)] == ["zeros", "once", "also"]


def test_results_agree_only_with_the_same_shape_and_the_same_infinities():
    assert same(np.array([1.0, -np.inf]), np.array([1.0 + 1e-9, -np.inf]))
    assert not same(np.array([1.0, -np.inf]), np.array([1.0, np.inf]))
    assert not same(np.ones(3), np.ones((1, 3)))
    assert same((np.ones(2), np.zeros(1)), (np.ones(2), np.zeros(1)))
    assert not same((np.ones(2),), np.ones(2))
    assert not same(np.array(["a"]), np.array(["a"]))


def _report(visibility):
    from grader.core.diagnosis import Diagnosis
    from grader.core.results import Report, Status, TestResult, Visibility

    failed = TestResult("a_check", "f", 2, 0, Status.FAILED, Visibility(visibility), message="wrong")
    passed = TestResult("another", "f", 1, 1, Status.PASSED, Visibility.VISIBLE)
    return Report("f.py", (failed, passed), diagnoses={"f": (Diagnosis("some-code", "a hint"),)})


def test_every_format_carries_the_diagnosis_and_json_reads_it_back():
    from grader.formats.github import to_github
    from grader.formats.gradescope import to_gradescope
    from grader.formats.json_report import from_dict, to_dict
    from grader.formats.text import to_text

    report = _report("visible")
    assert to_dict(report)["exercises"]["f"]["diagnoses"] == [{"code": "some-code", "hint": "a hint"}]
    assert from_dict(to_dict(report)) == report
    assert "likely mistake: a hint [some-code]" in to_text(report)
    assert "likely mistake: a hint [some-code]" in to_gradescope(report, execution_time=1)["output"]
    assert "a hint [some-code]" in to_github(report)["tests"][0]["message"]


def test_gradescope_shows_no_diagnosis_that_only_a_hidden_check_could_have_led_to():
    from grader.formats.github import to_github
    from grader.formats.gradescope import to_gradescope

    report = _report("hidden")
    assert "some-code" not in to_gradescope(report, execution_time=1)["output"]
    assert "some-code" not in str(to_github(report))


IN_PLACE = [
    (ATTENTION, "mask_in_place", "mutates-input"),
    (KV_CACHE, "extend_rolling_buffer_in_place", "cache-in-place"),
    (ROPE, "rope_in_place", "rope-in-place"),
]


@pytest.mark.parametrize("lesson, stem, code", IN_PLACE, ids=[stem for _, stem, _ in IN_PLACE])
def test_a_change_made_in_place_is_named_by_check_as_by_grade(lesson, stem, code, tmp_path):
    """A sandbox's keeper sees what every call does to its arguments; the student's own process
    (``check``) once looked only in the calls a check audited, so the likely mistake of a file
    that changed the cache it was given was named by ``grade`` and not by ``check``."""
    (entry,) = [e for e in entries(lesson) if e.path.stem == stem]
    student = tmp_path / lesson.filename
    student.write_text(composed(lesson, entry), encoding="utf-8")
    reports = {}
    for level in (Isolation.NONE, best_level()):
        report = to_dict(run_checks(student, lesson=lesson, settings=Settings(isolation=level, store=None)))
        reports[level] = {**report, "isolation": "", "submission": ""}
    here, sandboxed = reports.values()
    assert code in json.dumps(here["exercises"]), here["exercises"]
    assert here == sandboxed
