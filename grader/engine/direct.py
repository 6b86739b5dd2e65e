"""Running a lesson's checks without pytest, where pytest would run them just so.

pytest costs a grading about a fifth of a second of processor time (its import and its
session) to find the checks and call each one. For a lesson whose checks use nothing of pytest
but being found and called (module-level ``test*`` functions whose one argument is
``student``, marked with ``graded``, in files pytest would collect, and no setting or
``conftest.py`` that changes how pytest finds or runs them), this module finds the very checks
pytest would find, in its order, under its names, and runs them through the same
:class:`~grader.engine.collector.Collector` in the same steps as the grader's pytest plugin.
The report is the same, byte for byte (tests/test_direct.py compares whole catalogs both ways).

Anything else, or anything it is not sure of, goes to pytest: :func:`checks_of` says None
before a single check has run, and :func:`grader.engine.run.run_checks` runs pytest instead.
"""

from __future__ import annotations

import ast
import contextlib
import faulthandler
import fnmatch
import importlib
import inspect
import io
import os
import re
import sys
import warnings
from pathlib import Path

from _pytest import __version__ as pytest_version  # its release alone: no pytest is loaded

from ..core.errors import GraderError, LessonError
from ..core.fingerprint import parsed
from ..core.lesson import Lesson, check_of
from ..core.results import Visibility
from ..core.settings import Settings
from .checking import called, load_profile, record_inputs
from .collector import Check, Collector
from .marks import MarkError, own_grading
from .upkeep import fix_seed

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: a course with a TOML file of settings goes to pytest
    tomllib = None

#: The pytest releases whose finding and running of checks this module mirrors (read in 9.2):
#: lowest included, highest left out. Under any other, every run goes through pytest.
MIRRORED = ((9, 0), (10, 0))
#: The settings of pytest a course may hold and still have its checks run here: none of them
#: changes which checks are found or how they run (``addopts`` is overridden by every run the
#: grader makes). Any other setting sends the run to pytest.
HARMLESS_SETTINGS = frozenset({"addopts", "testpaths", "markers"})
#: The files pytest reads its settings from, in the order it looks for them in a folder.
SETTINGS_FILES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
#: Folders pytest does not look into (its ``norecursedirs`` default, and ``__pycache__``).
UNVISITED = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__")
#: The files pytest takes checks from (its ``python_files`` default).
CHECK_FILES = ("test_*.py", "*_test.py")
#: Module-level names that give pytest something to do besides calling the checks.
PYTEST_NAMES = frozenset(
    {
        "pytestmark",
        "pytest_plugins",
        "pytest_generate_tests",
        "setup_module",
        "teardown_module",
        "setUpModule",
        "tearDownModule",
        "setup_function",
        "teardown_function",
    }
)


class _Unsure(Exception):
    """The checks are not for this module to run (said why, for tests)."""


def checks_of(lesson: Lesson) -> list[Check] | None:
    """``lesson``'s checks as pytest would collect them from ``lesson.checks`` for a grading
    (files by name, folders among them, functions in the order they are written; modules
    imported as pytest imports them), with their graded marks checked as the grader's plugin
    checks them; None where anything would make pytest's run differ (then nothing of the
    lesson was imported but what pytest imports itself the same way)."""
    try:
        with _warnings_caught():  # as pytest collects: a filter a check file sets lasts no longer
            return _found(lesson)
    except _Unsure:
        return None


def imported(lesson: Lesson) -> bool:
    """Import ``lesson``'s checks as a run without pytest imports them (streams captured as
    pytest's are, and never closed), for a process that prepares to grade (:func:`grader.engine.
    pytested.prepare`, which loads the Hypothesis profile first); False where the lesson's checks
    go to pytest."""
    with _captured():
        return checks_of(lesson) is not None


def why_not(lesson: Lesson, settings: Settings | None = None) -> str:
    """Why :func:`checks_of` leaves ``lesson``'s checks to pytest ("" where it does not). The
    checks are imported under the Hypothesis profile of ``settings`` (a grading's, by default),
    as a grading imports them: a check's settings are fixed as it is decorated, so a process
    that grades after asking grades as any other."""
    load_profile(settings or Settings())
    try:
        with _warnings_caught():
            _found(lesson)
    except _Unsure as err:
        return str(err)
    return ""


def _found(lesson: Lesson) -> list[Check]:
    if not MIRRORED[0] <= _release(pytest_version) < MIRRORED[1]:
        raise _Unsure(f"pytest {pytest_version} is not a release whose collection this module mirrors")
    if os.environ.get("PYTEST_ADDOPTS", "").strip() or os.environ.get("PYTEST_PLUGINS", "").strip():
        raise _Unsure("PYTEST_ADDOPTS or PYTEST_PLUGINS is set")
    root, top = Path(os.path.abspath(lesson.root)), Path(os.path.abspath(lesson.checks))
    if "$" in str(root) or "~" in str(root):
        raise _Unsure("the course's folder has a name pytest expands")
    if not top.is_dir() or top.is_symlink():
        raise _Unsure("the checks folder is not a plain folder")
    if root != top and root not in top.parents:
        raise _Unsure("the checks are outside the course")
    _plain_settings(top)
    for folder in (*top.parents, top):
        if (folder / "conftest.py").exists():
            raise _Unsure(f"{folder / 'conftest.py'} exists")
    for conftest in top.rglob("conftest.py"):  # pytest loads some from folders it collects none from
        raise _Unsure(f"{conftest} exists")
    files = _check_files(top)
    packages = sorted(
        {folder for path in files for folder in path.parents if folder == root or root in folder.parents}
    )
    for path in [*files, *(folder / "__init__.py" for folder in packages)]:
        _plainly_written(path)  # before any import: a file sent to pytest here leaves nothing behind
    saved = list(sys.path)
    try:
        return _imported_checks(lesson, root, files, packages)
    except _Unsure:
        sys.path[:] = saved  # (what the imports did to their own modules cannot be undone)
        raise


def _imported_checks(lesson: Lesson, root: Path, files: list[Path], packages: list[Path]) -> list[Check]:
    """The checks of ``files``, imported as pytest imports them; their marks read once every file
    is imported (as the plugin reads them, once pytest has collected every file)."""
    found, places = [], {}
    for path in files:
        if path.parent not in places:  # as the plugin learns it: once per folder
            try:
                places[path.parent] = check_of(path)
            except LessonError as err:
                raise _Unsure(f"{path}: {err}") from None
        place = places[path.parent]
        if place is None or str(place[0].checks) != str(lesson.checks):
            raise _Unsure(f"{path} is not a check of lesson {lesson.name}")
        module = _imported(path)
        found.extend((path, place, module, name, function) for name, function in _functions(module, path))
    for folder in packages:
        _plain_package(folder)
    checks, names = [], set()
    for path, place, module, name, function in found:
        if name in names:
            raise _Unsure(f"two checks are named {name}")
        names.add(name)
        try:
            grading = own_grading(function, lesson.exercises)
        except MarkError as err:
            raise _Unsure(f"{name}: {err}") from None
        if grading is None or place[1] != (grading.visibility is Visibility.HIDDEN):
            raise _Unsure(f"{name}: no graded mark, or one for the other folder")
        checks.append(
            Check(
                name=name,
                nodeid=f"{path.relative_to(root).as_posix()}::{name}",
                function=function,
                grading=grading,
                lesson=place[0],
                module=module,
                where=lambda function=function: _written(function),
            )
        )
    return checks


def _plainly_written(path: Path) -> None:
    """The file ``path`` (a check file, or a package's ``__init__.py``), read before it is
    imported, names none of pytest's ways: no import of pytest, no ``Test`` class or TestCase, no
    module-level name pytest acts on, no ``import *``, and each module-level ``test`` function
    decorated with ``given``. (What this cannot see, the module is asked once imported.)"""
    if not path.is_file():
        return
    try:
        text = path.read_bytes()
    except OSError:
        raise _Unsure(f"{path} cannot be read") from None
    tree = parsed(text)  # (parsed once: the examples' fingerprint reads the same tree)
    if tree is None:
        raise _Unsure(f"{path} cannot be read as Python")
    for node in ast.walk(tree) if b"pytest" in text or re.search(rb"import[\s\\]*\*", text) else ():
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] in ("pytest", "_pytest") for a in node.names
        ):
            raise _Unsure(f"{path} imports pytest")
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("pytest", "_pytest"):
            raise _Unsure(f"{path} imports pytest")
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            raise _Unsure(f"{path} imports * (which may bring what pytest acts on)")
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and (
            node.name.startswith("Test") or any(_names(base, "TestCase") for base in node.bases)
        ):
            raise _Unsure(f"{path}: class {node.name} is pytest's to collect")
        defined = _defined(node)
        if defined & (PYTEST_NAMES | {"__test__", "__getattr__"}):
            raise _Unsure(
                f"{path} defines {', '.join(sorted(defined & (PYTEST_NAMES | {'__test__', '__getattr__'})))}"
            )
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if isinstance(node, ast.AsyncFunctionDef) or not any(
                _names(d, "given") for d in node.decorator_list
            ):
                raise _Unsure(f"{path}: {node.name} is a check Hypothesis does not run")


def _names(node: ast.expr, name: str) -> bool:
    """Whether the expression ``node`` names ``name`` (``name``, ``x.name``, called or not)."""
    return any(
        (isinstance(n, ast.Name) and n.id == name) or (isinstance(n, ast.Attribute) and n.attr == name)
        for n in ast.walk(node)
    )


def _defined(node: ast.stmt) -> set[str]:
    """The module-level names the statement ``node`` binds (as far as its text says)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:2])


def _plain_package(folder: Path) -> None:
    """The folder ``folder`` (of the course, above a check file) is no package, or one whose
    module (imported already, as its check files were) names nothing pytest acts on when it sets
    a package up, and no ``__getattr__`` that pytest's questions would reach."""
    init = folder / "__init__.py"
    if not init.is_file():
        return
    if not folder.name.isidentifier():
        raise _Unsure(f"{init}: pytest imports it as a module of its own")
    module = sys.modules.get(_module_name(init)[1])
    if module is None or not _same(getattr(module, "__file__", None), init):
        raise _Unsure(f"{init} was not imported as a package")
    _plain_module(module, init)


def _same(file, path: Path) -> bool:
    try:
        return isinstance(file, str) and os.path.samefile(file, path)
    except OSError:
        return False


def _plain_module(module, path: Path) -> None:
    """``module`` defines nothing pytest acts on beyond finding its checks."""
    own = vars(module)
    if "__getattr__" in own or "__test__" in own:
        raise _Unsure(f"{path} defines __getattr__ or __test__")
    for name in PYTEST_NAMES & set(own):
        raise _Unsure(f"{path} defines {name}")


def _plain_settings(top: Path) -> None:
    """The settings pytest would read for a run on ``top`` hold nothing but
    :data:`HARMLESS_SETTINGS` (pytest's own search: the first folder up from ``top`` with a
    file of settings for pytest, the first such file of :data:`SETTINGS_FILES` in it)."""
    for folder in (top, *top.parents):
        for name in SETTINGS_FILES:
            path = folder / name
            if not path.is_file():
                continue
            options = _settings_in(path)
            if options is None:
                continue
            unusual = set(options) - HARMLESS_SETTINGS
            if unusual:
                raise _Unsure(f"{path} sets {', '.join(sorted(unusual))}")
            return


def _settings_in(path: Path) -> dict | None:
    """pytest's settings in the file ``path`` (None: the file holds none)."""
    try:
        if path.suffix == ".toml":
            if tomllib is None:
                raise _Unsure(f"{path} cannot be read on this Python")
            document = tomllib.loads(path.read_text(encoding="utf-8"))
            if path.name == "pyproject.toml":  # as pytest 9 reads it
                tool = document.get("tool", {})
                tool = tool.get("pytest", {}) if isinstance(tool, dict) else None
                if not isinstance(tool, dict):
                    raise _Unsure(f"{path}: [tool.pytest] is not a table")
                native = {k: v for k, v in tool.items() if k != "ini_options"}
                inner = tool.get("ini_options")
                if native and inner:
                    raise _Unsure(f"{path}: both [tool.pytest] and its ini_options")
                if native:
                    return native
                if inner is not None and not isinstance(inner, dict):
                    raise _Unsure(f"{path}: [tool.pytest.ini_options] is not a table")
                return inner
            table = document.get("pytest", {})
            if not isinstance(table, dict) or any(not isinstance(v, dict) for v in document.values()):
                raise _Unsure(f"{path}: settings outside a [pytest] table")
            return table
        import iniconfig  # pytest's own reader of these files (a small package of its own)

        parsed = iniconfig.IniConfig(str(path))
        section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
        if path.name == "setup.cfg" and "pytest" in parsed:
            raise _Unsure(f"{path} has a [pytest] section, which pytest refuses")
        if section in parsed:
            return dict(parsed[section].items())
        return {} if path.name in ("pytest.ini", ".pytest.ini") else None
    except _Unsure:
        raise
    except Exception as err:  # noqa: BLE001 - unreadable: pytest says what is wrong with it
        raise _Unsure(f"{path} cannot be read: {err}") from None


def _check_files(folder: Path) -> list[Path]:
    """The files pytest takes checks from under ``folder``, in its order: each folder's entries
    by name (``__init__.py`` first), a folder's own files and folders among one another."""
    found = []
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda entry: (entry.name != "__init__.py", entry.name))
    for entry in entries:
        path = Path(folder, entry.name)
        if entry.is_symlink() and (entry.is_dir() or _a_check_file(entry.name)):
            raise _Unsure(f"{path} is a link")  # (other files are not read here)
        if entry.is_dir():
            if any(fnmatch.fnmatch(entry.name, pattern) for pattern in UNVISITED):
                continue
            if any((path / name).exists() for name in ("pyvenv.cfg", "conda-meta", "conftest.py")):
                raise _Unsure(f"{path} is a virtual environment or has a conftest.py")
            found.extend(_check_files(path))
        elif entry.is_file() and _a_check_file(entry.name):
            found.append(path)
    return found


def _a_check_file(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in CHECK_FILES)


def _module_name(path: Path) -> tuple[Path, str]:
    """(the folder that goes first on sys.path, the module's name) of the file ``path``, as
    pytest's ``prepend`` mode names it: from the topmost folder of packages above it."""
    top = None
    for parent in path.parents:
        if not (parent / "__init__.py").is_file() or not parent.name.isidentifier():
            break
        top = parent
    if top is None:
        return path.parent, path.stem
    parts = list(path.with_suffix("").relative_to(top.parent).parts)
    return top.parent, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path):
    """The module of the check file ``path``, imported as pytest imports it (its ``prepend``
    mode): named from the topmost folder of packages above it, which goes first on sys.path."""
    base, name = _module_name(path)
    if str(base) != sys.path[0]:
        sys.path.insert(0, str(base))
    try:
        module = importlib.import_module(name)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - pytest imports it again (a skip, an exit: its own)
        raise _Unsure(f"{path} cannot be imported: {type(err).__name__}") from None
    file = getattr(module, "__file__", None)
    if not file or not os.path.samefile(file, path):
        raise _Unsure(f"{name} is another file than {path}")
    return module


def _functions(module, path: Path) -> list[tuple[str, object]]:
    """The checks of ``module``, as pytest finds them (its names, in its order), where each is a
    plain function taking ``student`` alone; anything pytest would collect otherwise, or do
    besides, leaves the run to pytest."""
    _plain_module(module, path)
    unittest = sys.modules.get("unittest")
    found = []
    for name, value in list(vars(module).items()):
        if name.startswith("__") and name.endswith("__"):
            if _attribute(value, "__test__", False) is True:
                raise _Unsure(f"{path}: {name} is marked as a test")
            continue  # the module's own (its loader may be pytest's, where pytest imported it)
        kind = type(value).__module__ or ""
        if kind.split(".")[0] in ("pytest", "_pytest"):
            raise _Unsure(f"{path}: {name} is pytest's")
        if inspect.isclass(value) and unittest is not None and issubclass(value, unittest.TestCase):
            raise _Unsure(f"{path}: {name} is a TestCase")
        marked = _attribute(value, "__test__", False) is True
        if not (name.startswith(("test", "Test")) or marked) or not callable(value):
            continue
        if not inspect.isfunction(value):
            raise _Unsure(f"{path}: {name} is no plain function")
        handle = getattr(value, "hypothesis", None)
        inner = inspect.unwrap(getattr(handle, "inner_test", value))
        if (
            not name.startswith("test")
            or handle is None  # a check Hypothesis does not run: pytest's call, which reads what it returns
            or not _attribute(value, "__test__", True)
            or any(
                test(function)
                for function in (value, inner)
                for test in (
                    inspect.isgeneratorfunction,
                    inspect.iscoroutinefunction,
                    inspect.isasyncgenfunction,
                )
            )
            or hasattr(value, "pytestmark")
            or hasattr(value, "_pytestfixturefunction")
        ):
            raise _Unsure(f"{path}: {name} is not collected as a plain Hypothesis check")
        try:
            parameters = list(inspect.signature(value).parameters.values())
        except (TypeError, ValueError):
            raise _Unsure(f"{path}: {name} has no signature") from None
        if [(p.name, p.kind, p.default) for p in parameters] != [
            ("student", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty)
        ]:
            raise _Unsure(f"{path}: {name} takes more than student")
        found.append((name, value))
    return found


def _attribute(value, name: str, default):
    """``value.name``, as pytest reads it: anything raised reads as ``default``."""
    try:
        return getattr(value, name, default)
    except Exception:  # noqa: BLE001 - as pytest's safe_getattr
        return default


def _written(function) -> tuple[Path, int]:
    """Where ``function`` is written, as pytest says it: its file, and the line (from 0) of its
    first decorator."""
    inner = inspect.unwrap(function)
    code = getattr(inner, "__code__", None)
    if code is None:
        return Path(inspect.getsourcefile(function) or ""), 0
    return Path(code.co_filename), code.co_firstlineno - 1


def ran(collector: Collector) -> bool:
    """Run the checks of ``collector``'s lesson without pytest, in the steps and order of a
    pytest run with the grader's plugin, and say True; False, having run none, where
    :func:`checks_of` leaves them to pytest (then nothing here has touched the submission).

    The steps: the checks found and imported, each given its seed and made to record its inputs,
    chosen and ordered by the collector, the examples read; then each one's start, call and end;
    then the run's end, and the submission closed. As pytest does, the standard streams are
    captured while the check files are imported and while each check runs (not between: what the
    grader says there, a file of examples it could not use, is seen), and warnings are caught,
    their filters put back after, around the collection, each check and the end."""
    with _captured():
        checks = checks_of(collector.lesson)
    if checks is None:
        return False
    with _fault_traces():
        _run(collector, checks)
    return True


def _run(collector: Collector, checks: list[Check]) -> None:
    """:func:`ran`'s run, once the checks are found."""
    submission = collector.submission
    try:
        with _warnings_caught():
            chosen = _prepared(collector, checks)
        for check in chosen:
            with _warnings_caught(), _captured():
                _one(collector, check)
        with _warnings_caught():
            collector.finish()
    except (KeyboardInterrupt, GraderError):
        raise
    except Exception as err:  # noqa: BLE001 - the grader's own failure, said as pytest's would be
        raise GraderError(f"the checks stopped: {type(err).__name__}: {err}") from err
    finally:
        submission.close()


def _prepared(collector: Collector, checks: list[Check]) -> list[Check]:
    """The collection's end, as the plugin's hooks and the collector's go: hidden checks last,
    every check seeded and recording its inputs, the collector's choice, the examples read, the
    submission told how many checks of each exercise it faces. The checks to run, in order."""
    ordered = sorted(checks, key=lambda check: check.grading.visibility is Visibility.HIDDEN)
    derandomize = collector.settings.derandomized
    for check in checks:
        record_inputs(check.function)
        fix_seed(check.function, derandomize=derandomize)
    chosen = collector.chosen(ordered)
    counts: dict[str, int] = {}
    for check in chosen:
        counts[check.grading.exercise] = counts.get(check.grading.exercise, 0) + 1
    collector.collected(chosen)
    collector.submission.expect(counts)
    return chosen


def _one(collector: Collector, check: Check) -> None:
    """One check: its start, its ``student``, its call, its end (as the plugin's hooks do)."""
    exercise = check.grading.exercise
    collector.starting(check)
    try:
        view = collector.submission.view(exercise)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - as pytest: the check fails at its setup
        collector.ended(check, err, setup=True)
        collector.submission.record(exercise, False)
        return
    before, error = view.answers, None
    try:
        called(
            check.function,
            {"student": view},
            lesson=check.lesson,
            nodeid=check.nodeid,
            settings=collector.settings,
            submission=collector.submission,
        )
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - as pytest: any other end is the check's failure
        error = _as_pytest_sees(err)
    collector.answered[check.nodeid] = view.answers - before
    collector.ended(check, error)
    collector.submission.record(exercise, error is None)


def _as_pytest_sees(err: BaseException) -> BaseException:
    """The error pytest's report of a check holds when it raised ``err``: ``unittest.SkipTest``
    becomes pytest's own skip (the one case where pytest's report does not hold the error itself;
    pytest is then loaded, to raise that very skip)."""
    unittest = sys.modules.get("unittest")
    if unittest is None or not isinstance(err, unittest.SkipTest):
        return err
    from _pytest.outcomes import skip  # as pytest's unittest support turns it, from its own code

    try:
        skip(str(err))
    except BaseException as skipped:  # noqa: BLE001 - pytest's Skipped
        return skipped
    return err


@contextlib.contextmanager
def _warnings_caught():
    """Warnings recorded, not shown, and their filters put back after, as pytest catches them
    around its collection, each check and its end (deprecations always recorded, unless Python
    was given filters of its own)."""
    with warnings.catch_warnings(record=True):
        if not sys.warnoptions:
            warnings.filterwarnings("always", category=DeprecationWarning)
            warnings.filterwarnings("always", category=PendingDeprecationWarning)
        yield


class _NoInput:
    """Standard input while pytest captures the streams, as its capture leaves it (each method as
    pytest's own answers, its words too, for the same report): it cannot be read."""

    SAID = "pytest: reading from stdin while output is captured!  Consider using `-s`."

    @property
    def encoding(self) -> str | None:
        return getattr(sys.__stdin__, "encoding", None)

    @property
    def buffer(self):
        return self

    def read(self, size: int = -1) -> str:
        raise OSError(self.SAID)

    readline = read

    def readlines(self, hint: int | None = -1) -> list[str]:
        raise OSError(self.SAID)

    def __next__(self) -> str:
        return self.readline()

    def __iter__(self):
        return self

    def fileno(self) -> int:
        raise io.UnsupportedOperation("redirected stdin is pseudofile, has no fileno()")

    def flush(self) -> None:
        raise io.UnsupportedOperation("redirected stdin is pseudofile, has no flush()")

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def readable(self) -> bool:
        return False

    def seek(self, offset: int, whence: int = 0) -> int:
        raise io.UnsupportedOperation("redirected stdin is pseudofile, has no seek(int)")

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        raise io.UnsupportedOperation("redirected stdin is pseudofile, has no tell()")

    def truncate(self, size: int | None = None) -> int:
        raise io.UnsupportedOperation("cannot truncate stdin")

    def write(self, data: str) -> int:
        raise io.UnsupportedOperation("cannot write to stdin")

    def writelines(self, lines) -> None:
        raise io.UnsupportedOperation("Cannot write to stdin")

    def writable(self) -> bool:
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _dropped():
    """A text stream whose writes go nowhere, as pytest's capture writes them (UTF-8, anything
    that is no character replaced). Never closed here: a module that took it as it was imported
    may write to it later, as it could to pytest's (it closes when nothing holds it)."""
    return io.TextIOWrapper(
        io.FileIO(os.devnull, "w"), encoding="utf-8", errors="replace", newline="", write_through=True
    )


@contextlib.contextmanager
def _captured():
    """As pytest's capture, while check files are imported and while a check runs: what anything
    in this process writes to its standard output or error (a check file; the student's code,
    where it runs here) is dropped, at the level of the files (0, 1, 2) and of Python's;
    standard input cannot be read."""
    streams = sys.stdin, sys.stdout, sys.stderr
    for stream in streams[1:]:
        with contextlib.suppress(Exception):
            stream.flush()
    saved: list[tuple[int, int]] = []
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):  # a file that is not open stays so
                saved.append((fd, os.dup(fd)))
                os.dup2(null, fd)
        sys.stdin, sys.stdout, sys.stderr = _NoInput(), _dropped(), _dropped()
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        for fd, kept in saved:
            os.dup2(kept, fd)
            os.close(kept)
        os.close(null)


@contextlib.contextmanager
def _fault_traces():
    """As pytest's faulthandler: a crash of this process (the student's code, where it runs here)
    prints Python's traceback to the standard error the run started with."""
    if faulthandler.is_enabled():
        yield
        return
    try:
        shown = os.dup(2)
    except OSError:
        yield
        return
    faulthandler.enable(file=shown)
    try:
        yield
    finally:
        faulthandler.disable()
        os.close(shown)
