"""``new-lesson``: scaffold the files of a new lesson, each with comments that teach.

The scaffold is a small lesson that works as written (one exercise, ``softmax_rows``): its
reference passes every check, its stubs pass none, ``lint`` finds nothing in it, and its catalog
(a bug, a correct alternative, a file that does no work) holds. An author reads it, then
replaces the example with the lesson's own functions. The templates are in ``new_lesson_files/``,
``{{NAME}}`` standing for the lesson's name.
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

from ..core.errors import UsageError
from ..core.solution import strip_solutions

HERE = Path(__file__).resolve().parent / "new_lesson_files"
PLACEHOLDER = "{{NAME}}"
#: What a lesson's name may be: it names a file students hand in (NAME.py) and a Python package.
NAME = re.compile(r"[a-z][a-z0-9_]*")

#: template -> where it goes in the course (``{name}`` the lesson's name).
FILES = {
    "solution.py.tmpl": "solutions/{name}.py",
    "checks_init.py.tmpl": "tests/checks/{name}/__init__.py",
    "strategies.py.tmpl": "tests/checks/{name}/strategies.py",
    "test_softmax_rows.py.tmpl": "tests/checks/{name}/test_softmax_rows.py",
    "work.py.tmpl": "tests/checks/{name}/work.py",
    "diagnoses.py.tmpl": "tests/checks/{name}/diagnoses.py",
    "pictures.py.tmpl": "tests/checks/{name}/pictures.py",
    "hidden_init.py.tmpl": "tests/checks/{name}/hidden/__init__.py",
    "hidden_test.py.tmpl": "tests/checks/{name}/hidden/test_softmax_rows_hidden.py",
    "bug.py.tmpl": "tests/catalog/{name}/bugs/softmax_over_columns.py",
    "correct.py.tmpl": "tests/catalog/{name}/correct/log_sum_exp.py",
    "trivial.py.tmpl": "tests/catalog/{name}/trivial/zeros.py",
    "gallery.py.tmpl": "examples/gallery/{name}/over-columns/{name}.py",
}
#: Where a lesson already present would be: any one of these refuses the name.
TAKEN = (
    "solutions/{name}.py",
    "exercises/{name}.py",
    "tests/checks/{name}",
    "tests/catalog/{name}",
    "examples/gallery/{name}",
)


def refusal(name: str, root: Path) -> str | None:
    """Why ``name`` cannot be a new lesson of the course at ``root``, in words; None when it can."""
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        return (
            f"{name!r} cannot name a lesson: use lowercase letters, digits and underscores, starting "
            "with a letter (students hand in NAME.py, and the checks are a Python package)"
        )
    if name.startswith("test"):
        return f"{name!r} cannot name a lesson: pytest would take files named test*.py for checks"
    for pattern in TAKEN:
        place = root / pattern.format(name=name)
        if place.exists() or place.is_symlink():
            return f"lesson {name!r} exists already: {place} is there (nothing was written)"
    return None


def main(*, name: str, root: Path) -> int:
    """Write lesson ``name``'s files into the course at ``root`` (a new course when it holds no
    ``tests/checks/``: then ``tests/`` and ``tests/checks/`` are made packages, so that the
    lesson's checks are ``tests.checks.NAME`` and no lesson name can shadow a module), its stubs
    generated from its reference; UsageError (nothing written) for a bad or taken name."""
    root = Path(root)
    why = refusal(name, root)
    if why is not None:
        raise UsageError(why)
    written = []
    if not (root / "tests" / "checks").is_dir():  # a new course: its checks are a package too
        for package in ("tests", "tests/checks"):
            (root / package).mkdir(parents=True, exist_ok=True)
            init = root / package / "__init__.py"
            if not init.exists():
                init.write_text("", encoding="utf-8")
                written.append(init)
    for template, where in FILES.items():
        text = (HERE / template).read_text(encoding="utf-8").replace(PLACEHOLDER, name)
        target = root / where.format(name=name)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("x", encoding="utf-8") as f:  # never over a file already there
            f.write(text)
        written.append(target)
    stubs = root / "exercises" / f"{name}.py"
    stubs.parent.mkdir(parents=True, exist_ok=True)
    with stubs.open("x", encoding="utf-8") as f:
        f.write(
            strip_solutions((root / FILES["solution.py.tmpl"].format(name=name)).read_text(encoding="utf-8"))
        )
    written.append(stubs)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    print(
        f"Lesson {name} is scaffolded with one example exercise, softmax_rows. Next:\n"
        f"  python -m grader lint --lesson {name}                    # the lesson checks out\n"
        f"  python -m grader check solutions/{name}.py --lesson {name}   # the reference: full marks\n"
        f"  python -m grader check exercises/{name}.py --lesson {name}   # the stubs: 0\n"
        f"Then write your own functions in solutions/{name}.py, their checks in tests/checks/{name}/,\n"
        f"and run `python -m grader exercises --lesson {name}` after each change to the reference."
    )
    return 0
