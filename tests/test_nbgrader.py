"""The nbgrader integration, with the real nbgrader.

A temporary course is written by ``grader.nbgrader_course``; nbgrader generates
the student release from it, autogrades three submissions (the untouched
release, the reference, a buggy ``split_heads``) and exports the grades. The
totals must equal those of ``python -m grader grade`` on the code extracted
from the same notebooks. The tests that run nbgrader are skipped when it is not
installed (``pip install -e '.[nbgrader]'``); those of ``notebook_source``
need only the standard library and always run.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.commands import nbgrader_course
from grader.core.ipynb import NotebookError, notebook_source
from grader.core.solution import solution_lines
from grader.formats.notebook import fill_solutions, reference_parts, write_notebook
from tests.support import ATTENTION, ROOT, python

ASSIGNMENT = "attention"
BUG = ATTENTION.catalog / "bugs" / "split_reshape_no_transpose.py"


# ----------------------------------------------------------------------------- helpers


def nbgrader(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``python -m nbgrader ARGS`` in the course folder (the same interpreter as the tests)."""
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stderr[-4000:]}"
    return done


def compose_notebook(release: dict, override: Path | None) -> dict:
    """A submission: ``release`` with the reference in its solution cells, then ``override``.

    As tests.support.compose does for files, ``override``'s definitions win:
    its whole text goes into the solution cell of the first graded function it
    defines, and the cells of the other graded functions it defines are left
    with a comment, so every function is defined once, in notebook order.
    """
    code = dict(reference_parts(ATTENTION.solution.read_text(encoding="utf-8"), ATTENTION.exercises)[1])
    if override is not None:
        text = override.read_text(encoding="utf-8")
        defined = {
            node.name
            for node in ast.parse(text).body
            if isinstance(node, ast.FunctionDef) and node.name in ATTENTION.exercises
        }
        first = next(name for name in ATTENTION.exercises if name in defined)
        for name in defined:
            code[name] = text if name == first else f"# {name} is defined in the cell of {first}\n"
    return fill_solutions(release, code)


def grade_json(files: dict[str, Path]) -> dict[str, dict]:
    """``python -m grader grade FILE --format json`` for each file, two at a time."""

    def one(item):
        student, file = item
        done = python("grade", str(file), "--format", "json")
        assert done.returncode == 0, done.stderr[-3000:]
        return student, json.loads(done.stdout)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, files.items()))


# ----------------------------------------------------------------------------- the course, once


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course taken through generate_assignment, autograde and export."""
    pytest.importorskip("nbgrader")
    root = tmp_path_factory.mktemp("nbgrader") / "course"
    assert nbgrader_course.main(lessons=(ATTENTION,), out_dir=root, assignment=ASSIGNMENT) == 0
    nbgrader(root, "generate_assignment", ASSIGNMENT)
    release = json.loads((root / "release" / ASSIGNMENT / "attention.ipynb").read_text(encoding="utf-8"))
    submissions = {
        "untouched": release,
        "reference": compose_notebook(release, None),
        "buggy": fill_solutions(
            compose_notebook(release, None), {"split_heads": BUG.read_text(encoding="utf-8")}
        ),
    }
    for student, notebook in submissions.items():
        write_notebook(notebook, root / "submitted" / student / ASSIGNMENT / "attention.ipynb")
    # the code `grade` sees: what notebook_source extracts from each collected notebook
    code, copies = root.parent / "extracted", root.parent / "notebooks"
    assert nbgrader_course.collect(lesson=ATTENTION, course_dir=root, out_dir=code, code=True) == 0
    assert nbgrader_course.collect(lesson=ATTENTION, course_dir=root, out_dir=copies) == 0
    files = {s: code / s / "attention.py" for s in submissions}
    files |= {f"{s}.ipynb": copies / s / "attention.ipynb" for s in submissions}  # grade reads notebooks too
    nbgrader(root, "autograde", ASSIGNMENT)
    nbgrader(root, "generate_feedback", ASSIGNMENT)
    nbgrader(root, "export", "--to", str(root / "grades.csv"))
    with (root / "grades.csv").open(newline="") as f:
        exported = {row["student_id"]: row for row in csv.DictReader(f)}
    return {
        "root": root,
        "release": release,
        "exported": exported,
        "graded": grade_json(files),
        "students": tuple(submissions),
    }


def release_text(release: dict) -> str:
    return "\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in release["cells"]
    )


def test_release_holds_no_solution_line(course):
    text = release_text(course["release"])
    release_lines = {line.strip() for line in text.splitlines()}
    lines = solution_lines(ATTENTION.solution.read_text(encoding="utf-8"))
    assert lines, "the reference has no solution lines to look for"
    leaked = [line for line in lines if line in release_lines]  # as tests/test_exercises_in_sync.py
    assert not leaked, f"solution lines in the student release: {leaked}"
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "HIDDEN TESTS" not in text and "hidden=True" not in text


def test_release_stubs_are_those_of_the_exercises(course):
    """nbgrader's stubs equal `grader exercises`' stubs, signatures and docstrings included."""
    stubs = reference_parts(ATTENTION.stubs.read_text(encoding="utf-8"), ATTENTION.exercises)[1]
    cells = {
        c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
        for c in course["release"]["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    assert cells == stubs


def test_cells(course, student: str) -> list[tuple[str, dict]]:
    """(exercise, cell) of each autograder test cell in ``student``'s autograded notebook."""
    path = course["root"] / "autograded" / student / ASSIGNMENT / "attention.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [
        (cell["metadata"]["nbgrader"]["grade_id"].removeprefix("test_"), cell)
        for cell in notebook["cells"]
        if cell["metadata"].get("nbgrader", {}).get("grade")
        and not cell["metadata"]["nbgrader"].get("solution")
    ]


def explain(course, student: str) -> str:
    """What nbgrader's test cells printed and what ``grade`` found, for a failing assertion."""
    printed = "\n".join(
        "".join(o.get("text") or o.get("data", {}).get("text/plain", ""))
        for _, cell in test_cells(course, student)
        for o in cell["outputs"]
    )
    graded = course["graded"][student]
    found = {n: e["score"] for n, e in graded["exercises"].items()}
    return f"{student}: grade gives {found}, problem {graded['problem']!r}; nbgrader's test cells printed:\n{printed}"


test_cells.__test__ = False  # a helper, not a test


def test_exported_totals_equal_grade(course):
    exported, graded = course["exported"], course["graded"]
    assert set(exported) == set(course["students"])
    for student in course["students"]:
        assert float(exported[student]["max_score"]) == 100
        assert float(exported[student]["score"]) == graded[student]["score"], explain(course, student)
        assert graded[f"{student}.ipynb"]["score"] == graded[student]["score"], student
    assert graded["reference"]["score"] == 100
    assert graded["untouched"]["score"] == 0
    buggy = {name: e["score"] for name, e in graded["buggy"]["exercises"].items()}
    assert 0 < buggy["split_heads"] < 20
    assert buggy["apply_causal_mask"] == 20 and buggy["merge_heads"] == 15 and buggy["mha_forward"] == 45


def test_each_test_cell_shows_its_exercise_score_and_nothing_on_stderr(course):
    for student in course["students"]:
        seen = {}
        for name, cell in test_cells(course, student):
            kinds = [(o["output_type"], o.get("name")) for o in cell["outputs"]]
            assert ("stream", "stderr") not in kinds and ("error", None) not in kinds, (student, name, kinds)
            results = [o for o in cell["outputs"] if o["output_type"] == "execute_result"]
            assert len(results) == 1, (student, name, kinds)
            seen[name] = float("".join(results[0]["data"]["text/plain"]))
        want = {n: e["score"] for n, e in course["graded"][student]["exercises"].items()}
        assert seen == want, explain(course, student)


def test_no_cache_in_any_folder_nbgrader_collects_or_returns(course):
    """Hypothesis's constants cache (and pytest's, and bytecode) stay out of the course folder:
    nbgrader copies a submission's folder whole and returns feedback into another."""
    caches = [
        p.relative_to(course["root"]).as_posix()
        for p in course["root"].rglob("*")
        if p.name in (".hypothesis", ".pytest_cache", "__pycache__")
    ]
    assert caches == []
    assert (course["root"] / "feedback" / "buggy" / ASSIGNMENT / "attention.html").is_file()


def test_generated_files_hold_no_absolute_path(course):
    """The config finds the grader and the course from its own folder; no file written for the
    course (config, template, notebooks, feedback) names the instructor's folders."""
    root = course["root"]
    config = (root / "nbgrader_config.py").read_text(encoding="utf-8")
    strings = [n.value for n in ast.walk(ast.parse(config)) if isinstance(n, ast.Constant)]
    assert not [s for s in strings if isinstance(s, str) and Path(s).is_absolute()]
    from traitlets.config import Config

    namespace = {"get_config": Config, "__file__": str(root / "nbgrader_config.py")}
    environment = dict(os.environ)
    try:  # the paths it computes, from wherever it lies
        exec(compile(config, "nbgrader_config.py", "exec"), namespace)
        assert Path(namespace["_GRADER_ROOT"]) == ROOT
        assert Path(os.environ["GRADER_COURSE"]) == ROOT
    finally:
        os.environ.clear()
        os.environ.update(environment)
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".html", ".j2", ".json", ".csv"):
            text = path.read_text(encoding="utf-8")
            for folder in (str(ROOT), str(root)):
                assert not re.search(rf"(?<![\w.]){re.escape(folder)}", text), (path, folder)


def _measure(html: str, width: int) -> dict:
    """How many of a page's output blocks are wider than the page, in a real headless Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        pytest.skip("no headless Chromium here (apt-get install chromium)")
    probe = """<script>
    window.addEventListener("load", () => {
      const pres = [...document.querySelectorAll("div.output_area pre")];
      const out = document.createElement("div");
      out.id = "measured";
      out.textContent = JSON.stringify({
        pres: pres.length,
        cut: pres.filter(p => p.scrollWidth > p.clientWidth + 1).length,
        longest: Math.max(...pres.map(p => Math.max(...p.textContent.split("\\n").map(l => l.length)))),
      });
      document.body.appendChild(out);
    });
    </script>"""
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(html.replace("</body>", probe + "</body>"), encoding="utf-8")
        done = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--window-size={width},900",
                "--virtual-time-budget=5000",
                f"--user-data-dir={tmp}/profile",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    found = re.search(r'<div id="measured">([^<]*)</div>', done.stdout)
    assert found, done.stderr[-2000:]
    return json.loads(found.group(1))


def test_feedback_lines_wrap(course):
    """Our feedback keeps to the page's width, and a longer line in an output (a student's own
    long printed line, say: here one is added) wraps in the feedback students get, where
    nbgrader's own page cuts it off."""
    page = (course["root"] / "feedback" / "buggy" / ASSIGNMENT / "attention.html").read_text(encoding="utf-8")
    ours = _measure(page, 700)
    assert ours["pres"] >= 4 and ours["cut"] == 0
    output = page.index("<pre>", page.index('class="output_area"')) + len("<pre>")
    long_line = "printed: " + ", ".join(["0.3141"] * 30) + "\n"
    page = page[:output] + long_line + page[output:]
    ours = _measure(page, 700)
    assert ours["longest"] > 120 and ours["cut"] == 0
    style = page.index("overflow-wrap: anywhere")
    plain = page[: page.rindex("<style", 0, style)] + page[page.index("</style>", style) + len("</style>") :]
    assert _measure(plain, 700)["cut"] >= 1  # nbgrader's page alone


# ----------------------------------------------------------------------------- without nbgrader


def test_source_notebook_cells():
    notebook = nbgrader_course.source_notebook(ATTENTION)
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"] if "nbgrader" in c["metadata"]]
    assert len(ids) == len(set(ids)), "nbgrader needs unique grade_ids"
    by_id = {c["metadata"]["nbgrader"]["grade_id"]: c for c in notebook["cells"]}
    points = {"apply_causal_mask": 20, "split_heads": 20, "merge_heads": 15, "mha_forward": 45}
    for name in ATTENTION.exercises:
        solution, test = by_id[name], by_id[f"test_{name}"]
        assert solution["metadata"]["nbgrader"] == {
            "grade": False,
            "solution": True,
            "locked": False,
            "grade_id": name,
            "schema_version": 3,
        }
        assert "### BEGIN SOLUTION" in solution["source"]
        assert test["metadata"]["nbgrader"]["points"] == points[name]
        assert test["metadata"]["nbgrader"]["grade"] and test["metadata"]["nbgrader"]["locked"]
        assert test["source"].rstrip().endswith("\npoints")
    assert "### BEGIN HIDDEN TESTS" in by_id["test_mha_forward"]["source"]


def test_source_notebook_is_valid_nbformat():
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.from_dict(nbgrader_course.source_notebook(ATTENTION)))


def test_source_notebook_code_is_the_reference(tmp_path):
    """The code of the source notebook grades like the reference itself."""
    path = write_notebook(nbgrader_course.source_notebook(ATTENTION), tmp_path / "attention.ipynb")
    code = notebook_source(path).decode()
    compile(code, "attention.py", "exec")
    assert "def softmax" in code and all(f"def {name}(" in code for name in ATTENTION.exercises)
    assert "grade_here" not in code  # test cells are left out


def test_plain_notebook_takes_every_code_cell_and_passes_over_magics(tmp_path):
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# notes"},
            {"cell_type": "code", "metadata": {}, "source": ["%matplotlib inline\n", "import numpy as np"]},
            {"cell_type": "code", "metadata": {}, "source": "def f():\n    !ls\n    return 1"},
        ],
    }
    path = tmp_path / "work.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    code = notebook_source(path).decode()
    assert (
        code == "pass  # %matplotlib inline\nimport numpy as np\n\ndef f():\n    pass  # !ls\n    return 1\n"
    )


def _cells_with(source) -> str:
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [{"cell_type": "code", "source": source}],
        }
    )


@pytest.mark.parametrize(
    ("content", "words"),
    [
        pytest.param(
            lambda: json.dumps(nbgrader_course.source_notebook(ATTENTION))[:5000],
            "cut off",
            id="truncated-json",
        ),
        pytest.param(lambda: _cells_with(42), "source is a number, not text", id="source-is-a-number"),
        pytest.param(lambda: _cells_with(["x = 1\n", 7]), "not text", id="source-list-with-a-number"),
        pytest.param(lambda: json.dumps({"nbformat": 3, "worksheets": []}), "format 4", id="nbformat-3"),
        pytest.param(
            lambda: json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}),
            "no cells",
            id="no-cells",
        ),
        pytest.param(lambda: "[1, 2, 3]", "not a notebook", id="a-json-list"),
        pytest.param(lambda: "def f():\n    pass\n", "JSON is broken", id="python-not-json"),
    ],
)
def test_corrupted_notebooks_get_a_clear_message(tmp_path, content, words):
    path = tmp_path / "attention.ipynb"
    path.write_text(content(), encoding="utf-8")
    with pytest.raises(NotebookError) as caught:
        notebook_source(path)
    message = str(caught.value)
    assert words in message and "attention.ipynb" in message
    assert "Traceback" not in message and "\n" not in message
    assert isinstance(caught.value, ValueError)


def test_not_utf8_notebook(tmp_path):
    path = tmp_path / "attention.ipynb"
    path.write_bytes(b'{"nbformat": 4, "cells": ["\xff\xfe"]}')
    with pytest.raises(NotebookError, match="not UTF-8"):
        notebook_source(path)


def test_course_command(tmp_path, capsys):
    root = tmp_path / "course"
    assert nbgrader_course.main(lessons=(ATTENTION,), out_dir=root, assignment="week 3!") == 2
    assert not root.exists()
    assert nbgrader_course.main(lessons=(ATTENTION,), out_dir=root, assignment="week3") == 0
    config = root / "nbgrader_config.py"
    notebook = root / "source" / "week3" / "attention.ipynb"
    assert config.is_file() and notebook.is_file()
    err = capsys.readouterr().err
    assert str(config) in err and str(notebook) in err
    compile(config.read_text(encoding="utf-8"), str(config), "exec")
    # an instructor's own edits to the config are kept when the course is rewritten
    config.write_text(config.read_text(encoding="utf-8") + "c.Execute.timeout = 900\n", encoding="utf-8")
    assert nbgrader_course.main(lessons=(ATTENTION,), out_dir=root, assignment="week3") == 0
    assert "c.Execute.timeout = 900" in config.read_text(encoding="utf-8")
    assert "kept" in capsys.readouterr().err


def test_grade_here_never_raises_for_student_code(capsys):
    """A stub, a missing function and a crashing one give 0 points, not an exception."""
    from grader.notebook import grade_here

    namespace: dict = {}
    exec(compile(ATTENTION.stubs.read_text(encoding="utf-8"), str(ATTENTION.stubs), "exec"), namespace)
    assert grade_here("split_heads", namespace, lesson="attention") == 0
    assert "not written yet" in capsys.readouterr().out
    assert grade_here("merge_heads", {}, lesson="attention") == 0
    reference: dict = {}
    exec(compile(ATTENTION.solution.read_text(encoding="utf-8"), str(ATTENTION.solution), "exec"), reference)
    assert grade_here("merge_heads", reference, lesson="attention") == 15
    visible = grade_here("mha_forward", reference, lesson="attention")
    assert visible + grade_here("mha_forward", reference, lesson="attention", hidden=True) == 45


def test_collect_for_batch(tmp_path, capsys):
    """Collected notebooks become one folder per student; an unreadable one is explained."""
    course = tmp_path / "course"
    good = write_notebook(
        nbgrader_course.source_notebook(ATTENTION),
        course / "submitted" / "ann" / ASSIGNMENT / "attention.ipynb",
    )
    broken = course / "submitted" / "bob" / ASSIGNMENT / "attention.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"nbformat": 4, "cells": [', encoding="utf-8")
    (course / "submitted" / "cy" / ASSIGNMENT).mkdir(parents=True)
    copies, code = tmp_path / "notebooks", tmp_path / "code"
    assert nbgrader_course.collect(lesson=ATTENTION, course_dir=course, out_dir=copies) == 0
    assert (copies / "ann" / "attention.ipynb").read_bytes() == good.read_bytes()
    assert (copies / "bob" / "attention.ipynb").read_bytes() == broken.read_bytes()
    assert "cy: no attention/attention.ipynb" in capsys.readouterr().err
    assert nbgrader_course.collect(lesson=ATTENTION, course_dir=course, out_dir=code, code=True) == 0
    assert (code / "ann" / "attention.py").read_bytes() == notebook_source(good)
    assert not (code / "bob" / "attention.py").exists()
    assert "cut off" in (code / "bob" / "notebook_error.txt").read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert "bob: " in err and "cy: no attention/attention.ipynb" in err
    assert nbgrader_course.collect(lesson=ATTENTION, course_dir=tmp_path / "nowhere", out_dir=code) == 2
