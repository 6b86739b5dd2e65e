"""Errors from the command line are sentences: an OS error names its file and its problem, never
a bare errno; a lesson's file named with other capitals is found, or named in the message."""

from __future__ import annotations

import shutil

import pytest

from grader.cli import os_message
from grader.sandbox.inside.worker import LoadProblem, compile_source

from .support import ON_TOY, TOY, python


def test_an_os_error_is_a_sentence_with_its_file(tmp_path):
    done = python("grade", *ON_TOY, str(TOY.solution), "-o", str(tmp_path / "no" / "such" / "out.json"))
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"grader: could not use {tmp_path / 'no' / 'such' / 'out.json'}: no such file or directory"
    assert "Traceback" not in done.stderr


def test_a_failed_write_names_its_file(tmp_path):
    folder = tmp_path / "out.json"
    folder.mkdir()  # a folder where the report should go
    done = python("grade", *ON_TOY, str(TOY.solution), "-o", str(folder))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"grader: could not use {folder}: is a directory" in done.stderr


def test_os_message_never_gives_a_bare_number():
    assert os_message(FileNotFoundError(2, "No such file or directory")) == (
        "no such file or directory (an operating system error, errno 2)"
    )
    assert os_message(PermissionError(13, "Permission denied", "/a", None, "/b")) == (
        "could not use /a and /b: permission denied"
    )
    assert os_message(FileExistsError("out is not empty; choose a new folder")) == (
        "out is not empty; choose a new folder"
    )
    assert (
        os_message(FileNotFoundError(2, "No such file", "x\x1b[2J"))
        == "could not use x\\x1b[2J: no such file"
    )


def test_a_file_named_with_other_capitals_is_graded(tmp_path):
    folder = tmp_path / "ada"
    folder.mkdir()
    shutil.copy(TOY.solution, folder / "Toy.py")
    done = python("grade", *ON_TOY, str(folder), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"score": 14' in done.stdout  # all of the toy lesson's points


def test_a_file_typed_with_other_capitals_is_named(tmp_path):
    shutil.copy(TOY.solution, tmp_path / "toy.py")
    done = python("grade", *ON_TOY, str(tmp_path / "Toy.py"))
    assert done.returncode == 2
    assert f"Toy.py does not exist (there is {tmp_path / 'toy.py'}: the name must match exactly)" in (
        done.stderr
    )


def test_a_file_holding_a_zero_byte_is_told_which_line():
    """Python refuses a text holding a NUL byte with a syntax error of no line: the message read
    "... null bytes at somewhere"."""
    with pytest.raises(LoadProblem) as refused:
        compile_source(b"import numpy as np\n\nx = 1\x00\n", "attention.py")
    message = str(refused.value)
    assert "zero byte (NUL) on line 3" in message, message
    assert "somewhere" not in message
