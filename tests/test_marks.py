"""The graded mark is validated where it is written."""

import pytest

from grader.marks import MarkError, graded, grading_of, validate
from grader.results import Visibility


@pytest.mark.parametrize(
    "exercise, points, visibility, fragment",
    [
        ("split_head", 2, "visible", "not one of"),
        ("split_heads", 0, "visible", "positive number"),
        ("split_heads", -1, "visible", "positive number"),
        ("split_heads", True, "visible", "positive number"),
        ("split_heads", "2", "visible", "positive number"),
        ("split_heads", 2, "hiden", "'hiden' is not one of visible, hidden"),
    ],
)
def test_bad_marks_fail_loudly(exercise, points, visibility, fragment):
    with pytest.raises(MarkError, match=fragment):
        graded(exercise, points=points, visibility=visibility)


def test_a_good_mark_round_trips():
    assert validate("mha_forward", 3, "hidden").visibility is Visibility.HIDDEN

    class Item:
        nodeid = "x"

        def __init__(self, marks):
            self.marks = marks

        def iter_markers(self, name):
            return iter(self.marks)

    mark = graded("merge_heads", points=2.5).mark
    assert grading_of(Item([mark])).points == 2.5
    assert grading_of(Item([])) is None
    with pytest.raises(MarkError, match="more than one"):
        grading_of(Item([mark, mark]))


def test_every_check_is_graded_and_points_add_up(pytestconfig):
    """The suite as shipped: 100 points, every exercise present, hidden only under hidden/."""
    from grader import EXERCISES, paths
    from grader.run import run_checks

    report = run_checks(paths.SOLUTION)
    assert report.max_score == report.score == 100
    assert [e.name for e in report.exercises] == list(EXERCISES)
    assert {t.visibility.value for t in report.tests} == {"visible", "hidden"}
    assert len({t.name for t in report.tests}) == len(report.tests), "check names must be unique"
