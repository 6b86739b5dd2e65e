"""Lessons and the course that holds them, learnt from the lesson's files alone.

A course is a folder holding ``tests/checks/`` and ``solutions/`` (a student
release holds ``exercises/`` instead). Lesson ``NAME`` is, by convention:

* ``solutions/NAME.py``: the single source, with solution markers; the lesson's
  exercises are its top-level functions that hold a solution block, in file order;
* ``exercises/NAME.py``: the stubs, generated from it (``python -m grader exercises``);
* ``tests/checks/NAME/``: the graded checks, the hidden ones in ``hidden/`` inside it;
* optionally ``tests/catalog/NAME/`` (bugs the checks must catch) and
  ``examples/gallery/NAME/`` (sample submissions);
* optionally ``tests/checks/NAME/examples.json.gz`` and ``hidden/examples.json.gz``:
  the examples the checks draw, generated (``python -m grader examples``, and by
  ``release`` and ``gradescope-bundle``) so that a first run replays them.

A student release has no solution to read the exercises from: it carries them
in ``tests/checks/NAME/lesson.json`` (written by ``release``).

Every command resolves its lesson once (:func:`find_course`, then
:meth:`Course.choose`) and hands the :class:`Lesson` down.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import AuthorError, LessonError
from .installed import IMPORTED_FROM
from .intake import bounded_read, open_submission
from .pylines import comment_only_lines
from .solution import BEGIN

if sys.version_info >= (3, 11):
    from tomllib import load as toml_load
else:  # pragma: no cover - Python 3.10
    from tomli import load as toml_load

#: The environment variable naming the course when no ``--course`` is given.
COURSE_VARIABLE = "GRADER_COURSE"
#: The file of a student release that lists a lesson's exercises (it has no solution).
OUTLINE = "lesson.json"
#: The largest outline read, in bytes (a lesson's holds a few hundred).
OUTLINE_LIMIT = 1 << 20
#: The file of examples a lesson ships (:mod:`grader.engine.shipped`): one in its checks folder
#: (the public checks'), one in its hidden folder (the hidden checks').
SHIPPED = "examples.json.gz"
#: The course's own default lesson, for commands nothing else tells: ``lesson = "NAME"`` in the
#: ``[tool.grader]`` table of its ``pyproject.toml``.
DEFAULT_TABLE = ("tool", "grader")


@dataclass(frozen=True)
class Lesson:
    """One lesson of a course: its exercises and where each of its files lives."""

    name: str
    exercises: tuple[str, ...]
    """The graded functions, in the order the lesson introduces them."""
    root: Path
    """The course folder."""
    solution: Path
    """``solutions/NAME.py``, the reference (absent from a student release)."""
    stubs: Path
    """``exercises/NAME.py``, what students start from."""
    checks: Path
    """``tests/checks/NAME/``."""
    hidden: Path
    """``tests/checks/NAME/hidden/``."""
    catalog: Path
    gallery: Path
    filename: str
    """The file a submission is: ``NAME.py``."""

    @classmethod
    def at(cls, root: Path, name: str, exercises: tuple[str, ...]) -> Lesson:
        checks = root / "tests" / "checks" / name
        return cls(
            name=name,
            exercises=exercises,
            root=root,
            solution=root / "solutions" / f"{name}.py",
            stubs=root / "exercises" / f"{name}.py",
            checks=checks,
            hidden=checks / "hidden",
            catalog=root / "tests" / "catalog" / name,
            gallery=root / "examples" / "gallery" / name,
            filename=f"{name}.py",
        )

    @property
    def diagnoses(self) -> Path:
        """``tests/checks/NAME/diagnoses.py``, the lesson's known mistakes (optional; it stays
        with the reference, out of a student release)."""
        return self.checks / "diagnoses.py"

    @property
    def pictures(self) -> Path:
        """``tests/checks/NAME/pictures.py``, what the HTML report pictures (optional; it stays
        with the reference, out of a student release)."""
        return self.checks / "pictures.py"

    @property
    def work(self) -> Path:
        """``tests/checks/NAME/work.py``, the lesson's signs of real work (optional); its
        ``WEAK_CHECKS`` names, per exercise, the checks a function doing no work can pass."""
        return self.checks / "work.py"

    def public_files(self) -> list[Path]:
        """The files of the checks folder a student release holds, in a fixed order: all but the
        hidden checks, the known mistakes, the pictures, bytecode and the shipped examples
        (generated for each release)."""
        kept = []
        for path in sorted(self.checks.rglob("*")):
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and self.hidden not in path.parents
                and path not in (self.diagnoses, self.pictures)
                and path.name != SHIPPED
            ):
                kept.append(path)
        return kept

    @property
    def reference(self) -> Path | None:
        """The reference solution, or None where there is none (a student release)."""
        return self.solution if self.solution.is_file() else None

    @property
    def source(self) -> Path:
        """The file that gives every exercise's signature: the reference, else the stubs."""
        return self.reference or self.stubs

    @property
    def private(self) -> tuple[Path, ...]:
        """What no student may read: the reference, its bytecode (Python caches it beside it,
        readable as the source was when it was written: a reference made unreadable later still
        had a readable copy there) and the hidden checks (their bytecode lies in their folder)."""
        return (self.solution, Path(importlib.util.cache_from_source(str(self.solution))), self.hidden)


@dataclass(frozen=True)
class Released:
    """What a student release says of its lesson beyond its exercises, in its outline
    (``tests/checks/NAME/lesson.json``, written by ``release``)."""

    server: str | None = None
    """The address of the course's grading service, set by the instructor (``release --server``)."""
    depends: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each exercise whose reference calls other exercises, with them, in the lesson's order:
    in a release, with no reference to stand in, its checks run the student's own versions."""

    def needs(self, exercise: str) -> tuple[str, ...]:
        """The other exercises ``exercise``'s checks run the student's own versions of."""
        return dict(self.depends).get(exercise, ())


def is_service_address(text: str) -> bool:
    """Whether ``text`` can be a grading service's address: http:// or https://, a host, and no
    space, quote or control character (it is written into the release's workflow)."""
    return (
        isinstance(text, str)
        and 0 < len(text) <= 500
        and text.startswith(("http://", "https://"))
        and len(text.split("://", 1)[1].split("/", 1)[0]) > 0
        and all(33 <= ord(c) < 127 and c not in "\"'`$\\<>{}" for c in text)
    )


def released(lesson: Lesson) -> Released:
    """What the release of ``lesson`` says of itself (nothing outside a release: the course's
    own lessons have their reference). LessonError when its outline cannot be read."""
    if lesson.reference is not None:
        return Released()
    outline = lesson.checks / OUTLINE
    try:
        told = json.loads(_outline_text(outline))
        server = told.get("server")
        depends = told.get("depends", {})
        if server is not None and not is_service_address(server):
            raise ValueError
        if not isinstance(depends, dict):
            raise ValueError
        pairs = []
        for exercise in lesson.exercises:
            others = depends.get(exercise, [])
            if not isinstance(others, list) or not all(o in lesson.exercises for o in others):
                raise ValueError
            if others:
                pairs.append((exercise, tuple(o for o in lesson.exercises if o in others)))
    except (OSError, ValueError, AttributeError, RecursionError):
        raise LessonError(
            f"{outline} cannot be read (the release wrote it: restore it from the release)"
        ) from None
    return Released(server=server, depends=tuple(pairs))


@functools.lru_cache(maxsize=64)
def exercises_in(source: str) -> tuple[str, ...]:
    """The top-level functions of ``source`` that hold a solution block, in file order. (Kept
    per text: every run of pytest reads the course again, and a process forked for each
    submission finds the answer its parent had.)"""
    markers = [row for row, comment in comment_only_lines(source).items() if comment.strip() == BEGIN]
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            if any(node.lineno <= row <= node.end_lineno for row in markers):
                found.append(node.name)
    return tuple(found)


def is_course(folder: Path) -> bool:
    """A course holds its checks and its solutions (or, released to students, its stubs)."""
    return (folder / "tests" / "checks").is_dir() and (
        (folder / "solutions").is_dir() or (folder / "exercises").is_dir()
    )


@dataclass(frozen=True)
class Course:
    """A course folder and the lessons found in it."""

    root: Path
    lessons: tuple[Lesson, ...]
    broken: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The lessons whose reference cannot be read, each (name, where and why): a command that
    works on one of them stops, saying so; the course's other lessons work as before."""

    @classmethod
    def at(cls, root: Path) -> Course:
        """Read the course at ``root``: each ``solutions/NAME.py`` (in a release, each
        ``exercises/NAME.py``) with a ``tests/checks/NAME/`` folder is a lesson."""
        root = Path(root).resolve()
        sources = root / "solutions" if (root / "solutions").is_dir() else root / "exercises"
        lessons, broken = [], []
        for file in sorted(sources.glob("*.py")):
            checks = root / "tests" / "checks" / file.stem
            if checks.is_dir():
                try:
                    lessons.append(Lesson.at(root, file.stem, _exercises(file, checks / OUTLINE)))
                except AuthorError as err:
                    broken.append((file.stem, err.places))
        return cls(root, tuple(lessons), tuple(broken))

    def mended(self, name: str | None = None) -> None:
        """Raise the AuthorError of lesson ``name`` (of any lesson, without one) when its
        reference cannot be read."""
        for lesson, places in self.broken:
            if name is None or lesson == name:
                raise AuthorError(places)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(lesson.name for lesson in self.lessons)

    def lesson(self, name: str) -> Lesson:
        """The lesson called ``name``; LessonError names the ones there are (AuthorError: it is
        there, but its reference cannot be read)."""
        self.mended(name)
        for lesson in self.lessons:
            if lesson.name == name:
                return lesson
        raise LessonError(f"no lesson {name!r} in {self.root}; {self._listing()}")

    def choose(
        self, name: str | None = None, submission: Path | None = None, klass: Path | None = None
    ) -> Lesson:
        """The lesson a command works on, from the first that tells: the one named; a submission
        that does not exist (its IntakeError, the real problem, comes first); the only one; the
        one whose file the submission is (``NAME.py``, ``NAME.ipynb``, or a folder holding one);
        the one whose functions a submission file of another name defines (most of them, alone);
        the one whose file the student folders of ``klass`` hold; the course's default
        (``[tool.grader] lesson`` in its ``pyproject.toml``)."""
        if name is not None:
            return self.lesson(name)
        if submission is not None and not os.path.lexists(submission):
            open_submission(submission, Path(submission).name)  # raises, with its hint
        for lesson, _ in self.broken:  # a lesson that cannot be read is said, not taken for another
            if not self.lessons or (submission is not None and _holds(Path(submission), lesson)):
                self.mended(lesson)
        if len(self.lessons) == 1:
            return self.lessons[0]
        if submission is not None:
            for holds in (_holds, _holds_in_other_capitals):  # the command then says which is right
                found = [lesson for lesson in self.lessons if holds(Path(submission), lesson.name)]
                if len(found) == 1:
                    return found[0]
            by_functions = self._by_functions(Path(submission))
            if by_functions is not None:
                return by_functions
        if klass is not None and Path(klass).is_dir():
            found = [lesson for lesson in self.lessons if _class_holds(Path(klass), lesson.name)]
            if len(found) == 1:
                return found[0]
        default = self.default()
        if default is not None:
            return default
        told = (
            f" ({submission} is none of their files and defines none of their functions)"
            if submission
            else ""
        )
        raise LessonError(f"which lesson? pass --lesson NAME; {self._listing()}{told}")

    def _by_functions(self, path: Path) -> Lesson | None:
        """The lesson most of whose exercises the file at ``path`` defines, if one alone does;
        LessonError if two tie."""
        defined = defined_functions(path)
        counts = {lesson: len(defined & set(lesson.exercises)) for lesson in self.lessons}
        best = max(counts.values(), default=0)
        found = [lesson for lesson, count in counts.items() if count == best]
        if best == 0:
            return None
        if len(found) > 1:
            names = " and ".join(lesson.name for lesson in found)
            raise LessonError(f"which lesson? {path} defines functions of {names} alike; pass --lesson NAME")
        return found[0]

    def default(self) -> Lesson | None:
        """The course's default lesson (``[tool.grader] lesson`` in its ``pyproject.toml``), if
        it names one; LessonError if it names none of the course's."""
        name = course_default(self.root)
        if name is None:
            return None
        for lesson in self.lessons:
            if lesson.name == name:
                return lesson
        raise LessonError(
            f"{self.root / 'pyproject.toml'} names {name!r} as the default lesson ([tool.grader] lesson), "
            f"but there is no such lesson; {self._listing()}"
        )

    def _listing(self) -> str:
        if not self.lessons:
            return "it holds no lesson (solutions/NAME.py with tests/checks/NAME/)"
        return f"its lessons: {', '.join(self.names)}"


def defined_functions(path: Path) -> frozenset[str]:
    """The names of the top-level functions the file at ``path`` defines (a notebook: its code),
    read as every command reads a submission (bounded, no link, no FIFO: IntakeError says why);
    none for a folder or for code that does not parse (the command then says why)."""
    if path.is_dir():
        return frozenset()
    source = open_submission(path, path.name).source
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


def course_default(root: Path) -> str | None:
    """The default lesson the course at ``root`` names (``[tool.grader] lesson``), or None."""
    project = root / "pyproject.toml"
    try:
        with project.open("rb") as f:
            table = toml_load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise LessonError(f"{project} could not be read ({err})") from None
    for key in DEFAULT_TABLE:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    name = table.get("lesson") if isinstance(table, dict) else None
    if name is not None and not isinstance(name, str):
        raise LessonError(f"{project}: [tool.grader] lesson must be a lesson's name in quotes")
    return name


def _outline_text(outline: Path) -> str:
    """The text of a release's outline if it is a regular file, reached without a link at its
    last step, of at most :data:`OUTLINE_LIMIT` bytes; ValueError (or OSError) for anything else:
    a FIFO is not waited on, a huge file not read."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    )
    fd = os.open(outline, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{outline} is not a regular file")
        data = bounded_read(fd, OUTLINE_LIMIT)
    finally:
        os.close(fd)
    if len(data) > OUTLINE_LIMIT:
        raise ValueError(f"{outline} is over {OUTLINE_LIMIT} bytes")
    return data.decode("utf-8")


def _exercises(source: Path, outline: Path) -> tuple[str, ...]:
    """A lesson's exercises: from its solution, or in a release from the outline written there."""
    if source.parent.name == "solutions":
        try:
            return exercises_in(source.read_text(encoding="utf-8"))
        except SyntaxError as err:  # the lesson's own file: said at its line, never a traceback
            where = source.relative_to(source.parent.parent)
            raise AuthorError(
                [f"{where}:{err.lineno or 1}: the reference does not parse: SyntaxError: {err.msg}"]
            ) from None
        except (UnicodeDecodeError, ValueError) as err:
            where = source.relative_to(source.parent.parent)
            raise AuthorError([f"{where}:1: the reference cannot be read: {err}"]) from None
    try:
        return tuple(str(n) for n in json.loads(_outline_text(outline))["exercises"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        raise LessonError(
            f"{outline.parent} has no readable {OUTLINE}, and there is no solution to read the exercises from"
        ) from None


def _class_holds(klass: Path, name: str) -> bool:
    """Whether a student folder of ``klass`` holds lesson ``name``'s file or notebook."""
    try:
        folders = [entry for entry in os.scandir(klass) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return False
    return any(_holds(Path(entry.path), name) for entry in folders)


def _holds_in_other_capitals(path: Path, name: str) -> bool:
    """Whether ``path`` is lesson ``name``'s file or notebook written with other capitals, or a
    folder holding one."""
    wanted = {f"{name}{suffix}".casefold() for suffix in (".py", ".ipynb")}
    if path.suffix.casefold() in (".py", ".ipynb") and not path.is_dir():
        return path.name.casefold() in wanted
    try:
        return any(entry.casefold() in wanted for entry in os.listdir(path))
    except OSError:
        return False


def _holds(path: Path, name: str) -> bool:
    """Whether ``path`` is lesson ``name``'s file or notebook, or a folder holding one."""
    if path.suffix in (".py", ".ipynb") and not path.is_dir():
        return path.stem == name
    return any(os.path.lexists(path / f"{name}{suffix}") for suffix in (".py", ".ipynb"))


def find_course(given: Path | None = None) -> Course:
    """The course a command works in, from the first of: ``given`` (``--course``), the
    environment variable GRADER_COURSE, the working directory or the nearest of its parents
    that is a course (as pytest finds its rootdir), the checkout the grader runs from."""
    if given is None and os.environ.get(COURSE_VARIABLE):
        given = Path(os.environ[COURSE_VARIABLE])
    if given is not None:
        if not is_course(Path(given)):
            raise LessonError(
                f"{given} is not a course: a course holds tests/checks/ and solutions/ (or exercises/)"
            )
        return Course.at(Path(given))
    here = Path.cwd().resolve()
    for folder in (here, *here.parents, IMPORTED_FROM):
        if is_course(folder):
            return Course.at(folder)
    raise LessonError(
        f"no course found in {here} or its parents: run the grader inside a course "
        "(a folder holding tests/checks/ and solutions/) or pass --course DIR"
    )


def check_of(path: Path) -> tuple[Lesson, bool] | None:
    """(lesson, hidden?) of a check file ``tests/checks/NAME/...`` of some course; None for
    a file outside any course's checks, LessonError for one in a folder that is no lesson.

    For the pytest plugin, which meets checks by their paths. The path is read as given first
    (a course whose ``tests/`` is a link to a folder elsewhere), then with its links resolved."""
    given = Path(os.path.abspath(path))
    for path in dict.fromkeys((given, given.resolve())):
        for folder in path.parents:
            checks = folder / "tests" / "checks"
            if checks in path.parents and is_course(folder):
                parts = path.relative_to(checks).parts
                if len(parts) < 2:
                    return None
                return Course.at(folder).lesson(parts[0]), "hidden" in parts[1:-1]
    return None
