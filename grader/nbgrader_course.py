"""``nbgrader-course``: write a ready nbgrader course directory for the exercises.

    python -m grader nbgrader-course OUT_DIR [--assignment attention]
    python -m grader nbgrader-collect COURSE_DIR OUT_DIR [--assignment attention] [--code]

OUT_DIR receives ``nbgrader_config.py`` and ``source/<assignment>/attention.ipynb``
(generated from ``solutions/attention.py`` by :func:`grader.notebook.build_notebook`).
Then, inside OUT_DIR: ``nbgrader generate_assignment``, hand out ``release/``,
collect into ``submitted/<student>/<assignment>/``, ``nbgrader autograde``,
``nbgrader export``. nbgrader itself is only needed for those steps, not here.

Inside nbgrader the checks run in each student's kernel, next to the student's
code. :func:`collect` lays out the collected notebooks one folder per student,
for ``batch``, which runs the code of their solution cells in its sandbox.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from . import paths
from .generate import STUB
from .notebook import NotebookError, build_notebook, notebook_source, write_notebook

#: Names nbgrader accepts for an assignment without surprises on any file system.
ASSIGNMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Seconds one notebook cell may run during autograde (a test cell runs a whole
#: exercise's checks; a stuck student call is stopped after its own 3 s).
CELL_TIMEOUT = 300

CONFIG = """\
# nbgrader configuration for the exercises "Causal masks and multiple heads",
# written by `python -m grader nbgrader-course`. Run nbgrader from this folder.
import os

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# The stub that replaces each solution region: the same as in exercises/attention.py.
c.ClearSolutions.code_stub = {{"python": {stub!r}}}

# A test cell runs all the property checks of one exercise in the student's kernel.
c.Execute.timeout = {timeout}
c.ExecutePreprocessor.timeout = {timeout}
c.Execute.startup_timeout = 120
c.Autograde.create_student = True

# The test cells import `grader`: put this checkout first on the path of the
# kernels nbgrader starts (they inherit this environment).
_GRADER_ROOT = {root!r}
if os.path.isdir(os.path.join(_GRADER_ROOT, "grader")):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_GRADER_ROOT, os.environ.get("PYTHONPATH", "")) if p
    )
"""


def config_text(*, course_id: str = "attention") -> str:
    """The ``nbgrader_config.py`` of a course for these exercises."""
    return CONFIG.format(
        course_id=course_id, stub="\n".join(STUB), timeout=CELL_TIMEOUT, root=str(paths.ROOT)
    )


def main(*, out_dir: Path, assignment: str = "attention") -> int:
    """Write the course directory; 0 on success, 2 with a message for a bad argument."""
    out_dir = Path(out_dir)
    if not ASSIGNMENT_NAME.match(assignment):
        print(
            f"grader: {assignment!r} is not a usable assignment name "
            "(letters, digits, '.', '_' and '-', starting with a letter or digit)",
            file=sys.stderr,
        )
        return 2
    if out_dir.exists() and not out_dir.is_dir():
        print(f"grader: {out_dir} exists and is not a folder", file=sys.stderr)
        return 2
    notebook = build_notebook()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = out_dir / "nbgrader_config.py"
    wanted = config_text()
    if config.exists() and config.read_text(encoding="utf-8") != wanted:
        print(f"kept {config} (it differs from the generated one; delete it to regenerate)", file=sys.stderr)
    else:
        config.write_text(wanted, encoding="utf-8")
        print(f"wrote {config}", file=sys.stderr)
    target = write_notebook(notebook, out_dir / "source" / assignment / "attention.ipynb")
    print(f"wrote {target}", file=sys.stderr)
    print(
        f"next: cd {out_dir} && nbgrader generate_assignment {assignment}  "
        f"(the student version goes to release/{assignment}/)",
        file=sys.stderr,
    )
    return 0


def collect(
    *,
    course_dir: Path,
    out_dir: Path,
    assignment: str = "attention",
    stage: str = "submitted",
    code: bool = False,
) -> int:
    """Lay out ``<stage>/<student>/<assignment>/attention.ipynb`` as OUT_DIR/<student>/ for ``batch``.

    Each student's folder gets a copy of the notebook (``grade`` and ``batch``
    read its solution cells and run them in the sandbox; a notebook that cannot
    be read gets its reason in the student's report), or with ``code`` the
    extracted ``attention.py`` (a notebook that cannot be read then gets a
    ``notebook_error.txt`` instead, and no grade). Returns 0, or 2 with a
    message when COURSE_DIR has no such stage.
    """
    course_dir, out_dir = Path(course_dir), Path(out_dir)
    collected = course_dir / stage
    if not collected.is_dir():
        print(f"grader: {collected} does not exist: no notebooks collected there yet", file=sys.stderr)
        return 2
    written, problems = 0, []
    for student in sorted(p for p in collected.iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebook = student / assignment / "attention.ipynb"
        if not notebook.is_file():
            problems.append(f"{student.name}: no {assignment}/attention.ipynb")
            continue
        folder = out_dir / student.name
        folder.mkdir(parents=True, exist_ok=True)
        for stale in ("attention.py", "attention.ipynb", "notebook_error.txt"):
            (folder / stale).unlink(missing_ok=True)
        if not code:
            shutil.copyfile(notebook, folder / "attention.ipynb")
            written += 1
            continue
        try:
            source = notebook_source(notebook)
        except NotebookError as err:
            (folder / "notebook_error.txt").write_text(f"{err}\n", encoding="utf-8")
            problems.append(f"{student.name}: {err}")
            continue
        (folder / "attention.py").write_bytes(source)
        written += 1
    kind = "attention.py files" if code else "notebooks"
    print(f"wrote {written} {kind} to {out_dir}, one folder per student", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    print(f"next: python -m grader batch {out_dir} --out grades/gradebook.csv", file=sys.stderr)
    return 0
