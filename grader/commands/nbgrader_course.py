"""``nbgrader-course``: write a ready nbgrader course directory, one assignment per lesson.

    python -m grader nbgrader-course OUT_DIR [--lesson NAME [--assignment NAME]]
    python -m grader nbgrader-collect COURSE_DIR OUT_DIR [--lesson NAME] [--assignment NAME] [--code]

OUT_DIR receives ``nbgrader_config.py`` (its paths relative to its own folder),
``templates/grader_feedback/`` (nbgrader's feedback page, its output lines wrapped)
and, for each lesson NAME, ``source/NAME/NAME.ipynb`` (generated from
``solutions/NAME.py`` by :func:`source_notebook`).
Then, inside OUT_DIR: ``nbgrader generate_assignment``, hand out ``release/``,
collect into ``submitted/<student>/<assignment>/``, ``nbgrader autograde``,
``nbgrader export``. nbgrader itself is only needed for those steps, not here.

Inside nbgrader the checks run in each student's kernel, next to the student's
code. :func:`collect` lays out the collected notebooks one folder per student,
for ``batch``, which runs the code of their solution cells in its sandbox.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from ..core.inert import student_name
from ..core.installed import IMPORTED_FROM
from ..core.intake import IntakeError, open_submission
from ..core.lesson import COURSE_VARIABLE, Lesson
from ..core.solution import STUB
from ..engine.pytested import suite_points
from ..formats.notebook import build_notebook, write_notebook

#: Names nbgrader accepts for an assignment without surprises on any file system.
ASSIGNMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Seconds one notebook cell may run during autograde (a test cell runs a whole
#: exercise's checks; a stuck student call is stopped after its own 3 s).
CELL_TIMEOUT = 300

CONFIG = """\
# nbgrader configuration for the lessons of a course of the grader,
# written by `python -m grader nbgrader-course`. Run nbgrader from this folder.
# Paths are relative to this folder: no absolute path of the instructor's machine is written.
import os

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file
_HERE = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = _HERE

# The stub that replaces each solution region: the same as in the course's exercises/.
c.ClearSolutions.code_stub = {{"python": {stub!r}}}

# A test cell runs all the property checks of one exercise in the student's kernel.
c.Execute.timeout = {timeout}
c.ExecutePreprocessor.timeout = {timeout}
c.Execute.startup_timeout = 120
c.Autograde.create_student = True

# The test cells import `grader` and grade with the course's checks: put the grader's
# folder first on the path of the kernels nbgrader starts, and name the course to
# them (they inherit this environment).
_GRADER_ROOT = os.path.normpath(os.path.join(_HERE, {root!r}))
if os.path.isdir(os.path.join(_GRADER_ROOT, "grader")):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_GRADER_ROOT, os.environ.get("PYTHONPATH", "")) if p
    )
os.environ[{variable!r}] = os.path.normpath(os.path.join(_HERE, {course!r}))

# The feedback students get: nbgrader's own page, with long lines of a test cell's output
# wrapped instead of cut off (templates/{template}/ extends nbgrader's `feedback`, whose page is
# its index.html.j2).
try:
    import nbgrader as _nbgrader

    c.HTMLExporter.template_name = {template!r}
    c.HTMLExporter.template_file = {template!r} + ".html.j2"
    c.HTMLExporter.extra_template_basedirs = [
        os.path.join(_HERE, "templates"),
        os.path.join(os.path.dirname(_nbgrader.__file__), "server_extensions", "formgrader", "templates"),
    ]
except ImportError:
    pass
"""

#: The feedback template: nbgrader's, and test cells' output wrapped at the page's width.
TEMPLATE = "grader_feedback"
TEMPLATE_FILES = {
    "conf.json": '{\n  "base_template": "feedback",\n  "mimetypes": {"text/html": true}\n}\n',
    f"{TEMPLATE}.html.j2": """\
{%- extends 'index.html.j2' -%}
{#- written by `python -m grader nbgrader-course`: nbgrader's feedback page, and a test
    cell's long lines wrapped at the page's width rather than cut off -#}
{%- block header -%}
{{ super() }}
<style type="text/css">
div.output_area pre, div.output_text pre {
    white-space: pre-wrap;
    overflow-wrap: anywhere;
}
</style>
{%- endblock header -%}
""",
}


def _relative(path: Path, start: Path) -> str:
    """``path`` from ``start``; absolute only where no relative path exists (another drive)."""
    try:
        return os.path.relpath(path, start)
    except ValueError:
        return str(path)


def config_text(root: Path, *, course_dir: Path, course_id: str = "course") -> str:
    """The ``nbgrader_config.py`` of an nbgrader course in ``course_dir`` for the lessons of the
    course at ``root`` (both found from the config's own folder)."""
    here = Path(course_dir).resolve()
    return CONFIG.format(
        course_id=course_id,
        stub="\n".join(STUB),
        timeout=CELL_TIMEOUT,
        root=_relative(IMPORTED_FROM, here),
        variable=COURSE_VARIABLE,
        course=_relative(Path(root).resolve(), here),
        template=TEMPLATE,
    )


def source_notebook(lesson: Lesson) -> dict:
    """The nbgrader source notebook of ``lesson``, each test cell worth its exercise's points
    (read from the marks of its checks, and of its hidden ones)."""
    points = suite_points(lesson)
    hidden = suite_points(lesson, lesson.hidden) if lesson.hidden.is_dir() else {}
    return build_notebook(lesson, points, hidden)


def main(*, lessons: tuple[Lesson, ...], out_dir: Path, assignment: str | None = None) -> int:
    """Write the course directory, an assignment per lesson (called ``assignment`` when there
    is one lesson); 0 on success, 2 with a message for a bad argument."""
    out_dir = Path(out_dir)
    if assignment is not None and len(lessons) != 1:
        print("grader: --assignment names the assignment of one lesson: pass --lesson too", file=sys.stderr)
        return 2
    names = [assignment or lesson.name for lesson in lessons]
    for name in names:
        if not ASSIGNMENT_NAME.match(name):
            print(
                f"grader: {name!r} is not a usable assignment name "
                "(letters, digits, '.', '_' and '-', starting with a letter or digit)",
                file=sys.stderr,
            )
            return 2
    if out_dir.exists() and not out_dir.is_dir():
        print(f"grader: {out_dir} exists and is not a folder", file=sys.stderr)
        return 2
    roots = {lesson.root for lesson in lessons}
    if len(roots) != 1:
        print("grader: an nbgrader course holds the lessons of one course", file=sys.stderr)
        return 2
    notebooks = [source_notebook(lesson) for lesson in lessons]
    out_dir.mkdir(parents=True, exist_ok=True)
    config = out_dir / "nbgrader_config.py"
    wanted = config_text(roots.pop(), course_dir=out_dir)
    if config.exists() and config.read_text(encoding="utf-8") != wanted:
        print(f"kept {config} (it differs from the generated one; delete it to regenerate)", file=sys.stderr)
    else:
        config.write_text(wanted, encoding="utf-8")
        print(f"wrote {config}", file=sys.stderr)
    for file, text in TEMPLATE_FILES.items():
        target = out_dir / "templates" / TEMPLATE / file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for lesson, name, notebook in zip(lessons, names, notebooks, strict=True):
        target = write_notebook(notebook, out_dir / "source" / name / f"{lesson.name}.ipynb")
        print(f"wrote {target}", file=sys.stderr)
    print(
        f"next: cd {out_dir} && nbgrader generate_assignment {names[0]}  "
        f"(the student version goes to release/{names[0]}/)",
        file=sys.stderr,
    )
    return 0


def collect(
    *,
    lesson: Lesson,
    course_dir: Path,
    out_dir: Path,
    assignment: str | None = None,
    stage: str = "submitted",
    code: bool = False,
) -> int:
    """Lay out ``<stage>/<student>/<assignment>/NAME.ipynb`` (NAME the lesson's, the assignment
    by default too) as OUT_DIR/<student>/ for ``batch``.

    Each student's folder gets a copy of the notebook (``grade`` and ``batch``
    read its solution cells and run them in the sandbox; a notebook that cannot
    be read gets its reason in the student's report), or with ``code`` the
    extracted ``NAME.py`` (a notebook that cannot be read then gets a
    ``notebook_error.txt`` instead, and no grade). Returns 0, or 2 with a
    message when COURSE_DIR has no such stage.
    """
    course_dir, out_dir = Path(course_dir), Path(out_dir)
    assignment = assignment or lesson.name
    notebook_name = f"{lesson.name}.ipynb"
    collected = course_dir / stage
    if not collected.is_dir():
        print(f"grader: {collected} does not exist: no notebooks collected there yet", file=sys.stderr)
        return 2
    written, problems = 0, []
    for student in sorted(p for p in collected.iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebook = student / assignment / notebook_name
        shown = student_name(student.name)  # a folder's name, for the terminal
        if not notebook.is_file():
            problems.append(f"{shown}: no {assignment}/{notebook_name}")
            continue
        folder = out_dir / student.name
        folder.mkdir(parents=True, exist_ok=True)
        for stale in (lesson.filename, notebook_name, "notebook_error.txt"):
            (folder / stale).unlink(missing_ok=True)
        if not code:
            shutil.copyfile(notebook, folder / notebook_name)
            written += 1
            continue
        try:
            source = open_submission(notebook, lesson.filename).source  # the rule every command reads by
        except IntakeError as err:
            (folder / "notebook_error.txt").write_text(f"{err.message}\n", encoding="utf-8")
            problems.append(f"{shown}: {err.message}")
            continue
        (folder / lesson.filename).write_bytes(source)
        written += 1
    kind = f"{lesson.filename} files" if code else "notebooks"
    print(f"wrote {written} {kind} to {out_dir}, one folder per student", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    print(f"next: python -m grader batch {out_dir} --out grades/gradebook.csv", file=sys.stderr)
    return 0
