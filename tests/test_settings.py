"""A run's settings are resolved once: the isolation level above all, decided where the run
starts (:func:`grader.sandbox.wardens.settle`) and read by every part of it after."""

from __future__ import annotations

import pytest

from grader.commands import gallery
from grader.core.errors import IsolationRefused
from grader.core.settings import Isolation, Settings
from grader.sandbox import wardens

from .support import TOY


@pytest.fixture
def decisions(monkeypatch) -> list:
    """Every time a level is decided in this test (each decision asks whether the level can run
    here), the level."""
    made = []
    problem = wardens.level_problem

    def counted(level):
        made.append(level)
        return problem(level)

    monkeypatch.setattr(wardens, "level_problem", counted)
    return made


def test_a_gallery_decides_its_level_once_for_every_row(decisions, capsys):
    """Its rows (the toy lesson's gallery, graded in this process) share one decision; it was
    made again for every submission before."""
    assert len(list(gallery.entries(TOY, None))) >= 2
    assert gallery.main(lesson=TOY, settings=Settings(isolation=Isolation.NONE), fmt="json") == 0
    assert decisions == [Isolation.NONE]
    assert "forgets-eps" in capsys.readouterr().out


def test_settled_settings_are_never_decided_again(decisions):
    settled = wardens.settle(Settings(isolation=Isolation.NONE), TOY.private)
    assert settled.level is Isolation.NONE and settled.isolation is Isolation.NONE
    assert wardens.settle(settled, TOY.private) is settled
    assert decisions == [Isolation.NONE]


def test_a_level_that_may_not_run_is_refused_where_it_is_decided(monkeypatch):
    monkeypatch.setattr(wardens, "level_problem", lambda level: "not on this machine")
    with pytest.raises(IsolationRefused, match="not on this machine"):
        wardens.settle(Settings(isolation=Isolation.PROCESS), TOY.private)
