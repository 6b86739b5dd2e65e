"""Which other exercises the reference of each exercise calls, read from the reference's source.

While exercise E is checked, a call from the student's code to another exercise F may be
served by F's reference (so that a mistake in F costs points in F alone) only where E's
reference calls F itself: anywhere else, the reference would be doing work the student was
asked to do (an earlier exercise's answer read off a later one's output, or found by inverting
it). This module finds those calls without running anything: in the body of E's
reference function, every name of another top-level function of the solution, followed
through the functions it names in turn (the lesson's helpers, given to students, and other
exercises, whose references call what they call).
"""

from __future__ import annotations

import ast


def _named_functions(function: ast.FunctionDef, top_level: frozenset[str]) -> set[str]:
    """The top-level functions that ``function``'s body names (a call, or the function passed on)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in top_level:
            names.add(node.id)
    names.discard(function.name)
    return names


def reference_calls(source: str, exercises: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """For each exercise, the other exercises its reference calls, directly or through the
    solution's other functions (``source`` is the reference solution's text)."""
    functions = {
        node.name: node
        for node in ast.parse(source).body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    top_level = frozenset(functions)
    named = {name: _named_functions(node, top_level) for name, node in functions.items()}
    calls = {}
    for exercise in exercises:
        seen: set[str] = set()
        waiting = list(named.get(exercise, ()))
        while waiting:
            name = waiting.pop()
            if name not in seen:
                seen.add(name)
                waiting.extend(named.get(name, ()))
        calls[exercise] = frozenset(n for n in seen if n in exercises and n != exercise)
    return calls
