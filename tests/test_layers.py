"""The grader's structure: packages by layer, every import pointing down, no circle.

Bottom to top: the sandbox's loose files (``grader/sandbox/inside/``, copied into every
sandbox, so they import only each other, the standard library and numpy), ``grader/core`` (data, errors, settings,
intake: no pytest, no Hypothesis), ``grader/sandbox``, ``grader/engine`` (pytest and
Hypothesis), ``grader/formats``, ``grader/commands``, and on top the command line and the
faces a lesson's checks and notebooks import (``grader.marks``, ``grader.expect``,
``grader.plugin``, ``grader.notebook``). Imports inside functions count: an import placed
there to dodge a circle is a circle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from .support import ROOT

PACKAGE = ROOT / "grader"
#: The package of the files a sandbox runs (copied there as they are), and its modules.
INSIDE = "grader.sandbox.inside"
LOOSE = (INSIDE, *(f"{INSIDE}.{name}" for name in ("worker", "seccomp", "warden")))
LAYERS = (
    "loose",
    "grader.core",
    "grader.sandbox",
    "grader.engine",
    "grader.formats",
    "grader.commands",
    "top",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """The modules of the grader that ``module`` imports, anywhere in its text."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join([*base, *([node.module] if node.module else [])])
            else:
                stem = node.module or ""
            named.add(stem)
            named |= {f"{stem}.{alias.name}" for alias in node.names}
    return {n for n in named if n in MODULES and n != module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _layer(module: str) -> int:
    if module in LOOSE:
        return 0
    if module in ("grader", "grader.core.installed"):  # the version, the place: plain facts
        return 1
    for index, prefix in enumerate(LAYERS[1:-1], start=1):
        if module == prefix or module.startswith(prefix + "."):
            return index
    return len(LAYERS) - 1


def test_every_import_points_down_or_stays_in_its_layer():
    upward = [
        f"{module} ({LAYERS[_layer(module)]}) imports {target} ({LAYERS[_layer(target)]})"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_no_circle_of_imports():
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        if module in trail:
            raise AssertionError(
                "a circle of imports: " + " -> ".join([*trail[trail.index(module) :], module])
            )
        if module in done:
            return
        for target in sorted(GRAPH[module]):
            visit(target, (*trail, module))
        done.add(module)

    for module in sorted(GRAPH):
        visit(module, ())


def test_the_sandboxs_files_import_only_each_other_the_standard_library_and_numpy():
    for module in LOOSE:
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
                if node.level:
                    assert f"{INSIDE}.{node.module}" in LOOSE, (module, node.module)
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "numpy" or f"{INSIDE}.{top}" in LOOSE, (
                    module,
                    name,
                )


def test_the_core_needs_neither_pytest_nor_hypothesis():
    for module, path in MODULES.items():
        if _layer(module) <= 1:
            text = path.read_text(encoding="utf-8")
            assert "import pytest" not in text and "hypothesis" not in text.replace("Hypothesis", ""), module


def test_no_private_name_is_imported_from_another_module():
    """A name with a leading underscore is its module's own: a module that needs it elsewhere
    makes it public (with a docstring) rather than reaching in (dunders such as ``__all__`` and
    ``__version__`` are public)."""
    reached = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("grader")):
                reached += [
                    f"{module} imports {alias.name} from {'.' * node.level}{node.module or ''}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.endswith("__")
                ]
    assert not reached, "\n".join(reached)


def test_every_executor_has_the_executors_face():
    """In this process, in a sandbox or not at all: the engine runs a student's calls through
    one face (grader.sandbox.Executor), whichever runs them."""
    import inspect

    from grader.sandbox import Executor
    from grader.sandbox.inprocess import InProcess, Refused
    from grader.sandbox.session import Sandboxed

    face = {name for name, _ in inspect.getmembers(Executor) if not name.startswith("_")}
    assert face >= {"problem", "signatures", "call", "audited_call", "close"}
    for executor in (InProcess, Sandboxed, Refused):
        have = {name for name, _ in inspect.getmembers(executor)} | set(executor.__annotations__)
        missing = face - have - {"problem", "signatures", "isolation"}  # set in __init__ where not a property
        assert not missing, (executor.__name__, missing)
        for method in ("call", "audited_call"):
            assert inspect.signature(getattr(executor, method)) == inspect.signature(
                getattr(Executor, method)
            )
    assert isinstance(Refused("a problem", InProcess.isolation), Executor)
