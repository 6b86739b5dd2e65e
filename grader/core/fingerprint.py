"""Everything besides the student's file that decides a grade, as one digest.

``batch`` keeps a grade from an earlier run only when the student's file and
this digest are both unchanged, so the digest takes in all that can change a
grade: the lesson's reference and every file under its checks folder (a link
followed to what it points at, such as a first lesson's solution a later
lesson's hidden checks import), the course files those checks import, the
``__init__.py``, ``conftest.py`` and pytest settings files pytest reads on the
way to them, the grader's own files, the settings of the run, and the versions
of Python and of the packages grading runs on (Hypothesis, numpy and pytest:
:data:`grader.engine.upkeep.DECIDING_PACKAGES`).

Every file is read as a hostile one would be: a link is followed to its
content once (a loop of links ends), a FIFO or a device is never opened, and a
file too large for a lesson is refused in words.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import stat
import sys
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .errors import LessonError
from .installed import PACKAGE
from .lesson import OUTLINE, SHIPPED, Lesson
from .settings import Settings

#: Largest file taken into the digest; a lesson's code and data are far smaller.
MAX_FILE = 64 << 20
#: Files pytest reads between the course's root and a lesson's checks.
_ON_THE_WAY = (
    "__init__.py",
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
#: Folders that hold only what Python wrote itself.
_SKIPPED = ("__pycache__",)


def _content(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (links followed); a marker for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO opens at once, unread
    except OSError as err:
        return f"<unreadable: {err.strerror}>".encode()
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"<not a regular file>"
        if info.st_size > MAX_FILE:
            raise LessonError(
                f"{path} holds {info.st_size / 2**20:.0f} MiB; a file a lesson's checks use may hold at "
                f"most {MAX_FILE >> 20} MiB"
            )
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            return f.read(MAX_FILE + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def files_under(folder: Path) -> list[Path]:
    """Every file under ``folder``, links to folders followed once each, in a fixed order."""
    found, seen = [], set()

    def walk(here: Path) -> None:
        try:
            real = here.resolve()
            if real in seen:
                return
            seen.add(real)
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except (OSError, RuntimeError):
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name not in _SKIPPED:
                    walk(path)
            elif not entry.name.endswith((".pyc", ".pyo")):
                found.append(path)

    walk(folder)
    return found


def _import_base(path: Path) -> Path:
    """Where pytest puts a check's package on ``sys.path``: the first folder above ``path`` that
    is no package (holds no ``__init__.py``)."""
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def _module_files(path: Path, node: ast.Import | ast.ImportFrom, bases: list[str]) -> list[str]:
    """The files an import statement in the module ``path`` may load, found from ``bases``
    (absolute imports) or from the module's own folder (relative ones), as paths in text."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            bases = [os.path.join(str(path.parent), *[".."] * (node.level - 1))]
        stem = tuple(node.module.split(".")) if node.module else ()
        wanted = [stem, *((*stem, alias.name) for alias in node.names)]
    else:
        wanted = [tuple(alias.name.split(".")) for alias in node.names]
    files = []
    for base in bases:
        for parts in wanted:
            for depth in range(1, len(parts) + 1):  # every package on the way runs its __init__
                where = os.path.join(base, *parts[:depth])
                files += [where + ".py", os.path.join(where, "__init__.py")]
    return files


def _imports(tree: ast.AST):
    """The import statements of a module, wherever they are (in a function, a class, a branch):
    only statements are walked, never the expressions that make most of a tree."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                todo.extend(child for child in inner if isinstance(child, ast.AST))


def _import_statements(text: bytes) -> tuple:
    """The import statements of the Python source ``text`` (none where it does not parse): parsed
    once per text in a process, which follows the same files for the examples it ships
    (public and hidden) and for its store's key. Keyed by the text itself, never by a path:
    a file that changed is parsed again. (A text of more than :data:`_REMEMBERED_TEXT` bytes is
    parsed each time, so that what is kept stays small.)"""
    return _parsed_imports(text) if len(text) <= _REMEMBERED_TEXT else _parsed_imports.__wrapped__(text)


#: The longest text whose import statements :func:`_import_statements` keeps.
_REMEMBERED_TEXT = 1 << 20


@functools.lru_cache(maxsize=256)
def _parsed_imports(text: bytes) -> tuple:
    tree = parsed(text)
    try:
        return () if tree is None else tuple(_imports(tree))
    except (RecursionError, MemoryError):
        return ()


def parsed(text: bytes) -> ast.Module | None:
    """The syntax tree of the Python ``text`` (None: it is not Python), parsed once per text for
    every reader of a course's files in one process (the imports here; what
    :mod:`grader.engine.direct` reads of a check file before importing it). Not to be changed by
    its readers. (A text of more than :data:`_REMEMBERED_TEXT` bytes is parsed each time.)"""
    return _parsed(text) if len(text) <= _REMEMBERED_TEXT else _parsed.__wrapped__(text)


@functools.lru_cache(maxsize=64)
def _parsed(text: bytes) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _imported(
    root: Path, path: Path, text: bytes, probed: dict | None = None, seen: dict | None = None
) -> list[Path]:
    """The course files (under ``root``) that the Python file ``path`` imports. ``probed``, if
    given, gets every course path looked at, found or not (a new file there could change what
    the import finds); ``seen``, if given, holds whether each path looked at is a file, for the
    other files of one walk (the same imports recur in every file of a lesson)."""
    statements = _import_statements(text)
    bases = [str(root), str(_import_base(path))]
    inside = os.path.normpath(root) + os.sep
    seen = {} if seen is None else seen
    found = []
    for node in statements:
        for file in _module_files(path, node, bases):
            where = os.path.normpath(file)
            if where.startswith(inside):
                there = seen.get(where)
                if there is None:
                    there = seen[where] = os.path.isfile(where)
                if probed is not None:
                    probed.setdefault(where, there)
                if there:
                    found.append(Path(where))
    return found


def lesson_files(lesson: Lesson, probed: dict | None = None) -> list[Path]:
    """Every file that decides how ``lesson`` grades, in a fixed order: the reference (else the
    stubs), every file under the checks, the files pytest reads on the way to them, and the course's
    Python files that any of those imports (the imports followed as far as they lead). ``probed``,
    if given, gets every path looked at on the way (path -> whether a file was there)."""
    start = [lesson.source, *(p for p in files_under(lesson.checks) if p.name != SHIPPED)]
    return files_from(lesson, start, _ON_THE_WAY, probed)


def public_lesson_files(lesson: Lesson) -> list[Path]:
    """The files that decide the examples of ``lesson``'s public checks, in a fixed order: those
    a release holds of them (:meth:`Lesson.public_files`, its outline apart), the package and
    ``conftest.py`` files pytest reads on the way, and the course's Python files any of those
    imports. (A course file a release lacks makes it another set: examples made in the course are
    then not believed in the release.)"""
    start = [p for p in lesson.public_files() if p != lesson.checks / OUTLINE]
    # the grader's own files are digested apart (a release holds a copy of them beside its course),
    # and the course folder's own __init__.py (a release has none) says nothing of the examples
    apart = (
        os.path.join(os.path.normpath(PACKAGE), ""),
        os.path.join(os.path.normpath(lesson.root / PACKAGE.name), ""),
    )
    return [
        p
        for p in files_from(lesson, start, ("__init__.py", "conftest.py"))
        if not os.path.normpath(p).startswith(apart) and p != lesson.root / "__init__.py"
    ]


def files_from(
    lesson: Lesson, start: list[Path], on_the_way: tuple[str, ...], probed: dict | None = None
) -> list[Path]:
    """``start``, the files named ``on_the_way`` in each folder between the course's root and the
    lesson's checks, and the course's Python files any of those imports, as far as they lead."""
    root = lesson.root
    start = list(start)
    folder = lesson.checks
    while folder != root and root in folder.parents:
        folder = folder.parent
        for name in on_the_way:
            there = (folder / name).is_file()
            if probed is not None:
                probed.setdefault(os.path.normpath(folder / name), there)
            if there:
                start.append(folder / name)
    todo, taken, seen = list(start), {}, {}
    while todo:
        path = todo.pop()
        key = os.path.normpath(path)  # the path Python imports it by: a link is not its target
        if key in taken:
            continue
        taken[key] = path
        if probed is not None:
            probed[key] = True
        if path.suffix == ".py":
            todo += _imported(root, path, _content(path), probed, seen)
    return [taken[key] for key in sorted(taken)]


def _files_digest(digest, paths: list[Path], base: Path) -> None:
    for path in paths:
        try:
            name = Path(path).relative_to(base).as_posix()  # the same on every system
        except ValueError:
            name = str(path)
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        body = _content(path)
        digest.update(len(body).to_bytes(8, "big") + body)


def files_digest(label: str, paths: list[Path], base: Path) -> str:
    """The digest of ``paths`` (their names under ``base`` and their contents), in their order."""
    digest = hashlib.sha256(label.encode() + b"\0")
    _files_digest(digest, paths, base)
    return digest.hexdigest()


def grader_digest(package: Path | None = None) -> str:
    """The digest of the grader's own files (its code and its data files: the installed package,
    or ``package``). The installed package's is read once per process: the code this process
    runs is the code it imported when it started (a store's key and the examples a lesson ships
    both ask for it)."""
    return _installed_digest() if package is None else _package_digest(package)


@functools.lru_cache(maxsize=1)
def _installed_digest() -> str:
    return _package_digest(PACKAGE)


def _package_digest(package: Path) -> str:
    digest = hashlib.sha256(b"grader\0")
    _files_digest(digest, files_under(package), package)
    return digest.hexdigest()


def versions(packages: tuple[str, ...]) -> dict[str, str]:
    """The versions of Python and of ``packages`` (distribution names)."""
    found = {"python": sys.version, "implementation": sys.implementation.cache_tag or ""}
    for name in packages:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def fingerprint(
    lesson: Lesson,
    settings: Settings,
    *,
    isolation: str,
    packages: tuple[str, ...],
    grader: str | None = None,
) -> str:
    """The digest of all that, besides the student's file, decides a grade of ``lesson`` under
    ``settings`` at the isolation level ``isolation`` (the level the run chose: a sandboxed and
    an in-process run differ in memory limits and in what seeds numpy's generator), with the
    installed versions of ``packages``, the distributions grading runs on. ``grader`` is
    :func:`grader_digest`, when the caller has it already."""
    digest = hashlib.sha256(b"fingerprint 1\0")
    run = {
        "limits": asdict(settings.limits),
        "examples": settings.examples,
        "profile": str(settings.profile),
        "exercises": list(settings.exercises) if settings.exercises is not None else None,
        "hidden": settings.include_hidden,
        "isolation": str(isolation),
        "versions": versions(packages),
        "grader": grader if grader is not None else grader_digest(),
    }
    digest.update(json.dumps(run, sort_keys=True).encode() + b"\0")
    digest.update(lesson_digest(lesson).encode())
    return digest.hexdigest()


def lesson_digest(lesson: Lesson, probed: dict | None = None, extra: tuple | list = ()) -> str:
    """The digest of :func:`lesson_files` and the files ``extra`` (their names and contents);
    ``probed``: as there, the files of ``extra`` added."""
    files = {os.path.normpath(p): Path(p) for p in [*lesson_files(lesson, probed), *extra]}
    if probed is not None:
        probed.update(dict.fromkeys((os.path.normpath(p) for p in extra), True))
    digest = hashlib.sha256(b"lesson files\0")
    _files_digest(digest, [files[key] for key in sorted(files)], lesson.root)
    return digest.hexdigest()
