"""A run's settings are resolved once: the isolation level above all, decided where the run
starts (:func:`grader.sandbox.wardens.settle`) and read by every part of it after."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grader.commands import gallery
from grader.core.errors import IsolationRefused
from grader.core.settings import Isolation, Settings
from grader.sandbox import wardens

from .support import ON_TOY, TOY


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


def test_a_batch_hands_its_grading_processes_the_settings_whole_and_typed(tmp_path):
    """batch and serve start ``grade-stream`` with the run's settings as one typed object: every
    field arrives as it was (a float's every digit, the exercises, the store), the level asked
    for by name so the process decides it where it runs, and anything else is refused in words."""
    from dataclasses import replace

    from grader.commands.batch import stream_options
    from grader.core.settings import Isolation, Limits, decoded, encoded

    asked = Settings(
        isolation=Isolation.AUTO,
        limits=Limits(call_timeout=0.1 + 0.2, total_timeout=61.5, memory=3 << 29),
        max_examples=7,
        exercises=("center_tokens",),
        include_hidden=False,
        replay=False,
        store="/srv/kept",
        level=Isolation.PROCESS,
    )
    here = {"GRADER_REPLAY_STORE": "/srv/kept"}
    got = decoded(encoded(replace(asked, replay=True)), lesson_exercises=TOY.exercises, environ=here)
    assert got == replace(asked, isolation=Isolation.PROCESS, level=None, replay=True)
    # where the grading machine keeps its store is its own: only whether one is used travels
    worker = tmp_path / "home" / "worker"
    worker.mkdir(parents=True)
    elsewhere = decoded(encoded(replace(asked, replay=True)), environ={"HOME": str(worker)})
    assert elsewhere.store == f"{worker}/.cache/grader/replay"
    got = decoded(encoded(asked), lesson_exercises=TOY.exercises)
    assert got == replace(asked, isolation=Isolation.PROCESS, level=None, store=None)  # replay off: no store
    options = stream_options(TOY, asked, Isolation.PROCESS)
    assert options[:4] == ["--course", str(TOY.root), "--lesson", "toy"] and options[4] == "--settings"
    assert decoded(options[5]) == got
    for wrong in (
        "[]",
        encoded(asked).replace('"max_examples": 7', '"max_examples": 0'),
        encoded(asked).replace('"replay": false', '"replay": "no"'),
        encoded(asked).replace('"store": true', '"store": "/elsewhere"'),
        encoded(asked).replace("0.30000000000000004", "NaN"),
        encoded(asked).replace('"center_tokens"', '"elsewhere"'),
        encoded(asked).replace('"profile": "grading"', '"profile": "grading", "extra": 1'),
    ):
        with pytest.raises(ValueError):
            decoded(wrong, lesson_exercises=TOY.exercises)
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade-stream", *ON_TOY, "--settings", "{"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == 2 and done.stderr.startswith("grader: --settings: settings are one JSON object")
    assert "Traceback" not in done.stderr
