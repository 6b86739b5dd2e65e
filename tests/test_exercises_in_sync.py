"""The student stubs are generated from the reference and must not drift from it."""

import ast

import pytest

from grader import EXERCISES, generate, paths


def test_committed_stubs_match_the_reference():
    wanted = generate.strip_solutions(paths.SOLUTION.read_text(encoding="utf-8"))
    assert paths.EXERCISE.read_text(encoding="utf-8") == wanted, (
        "exercises/attention.py has drifted from solutions/attention.py: run `python -m grader exercises`"
    )


def test_stubs_hold_no_solution_line():
    stub = paths.EXERCISE.read_text(encoding="utf-8")
    stub_lines = {line.strip() for line in stub.splitlines()}
    leaked = [line for line in generate.solution_lines(paths.SOLUTION.read_text()) if line in stub_lines]
    assert not leaked


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def test_every_exercise_is_a_stub_with_the_reference_signature_and_docstring():
    solution = _functions(paths.SOLUTION.read_text())
    stub = _functions(paths.EXERCISE.read_text())
    for name in EXERCISES:
        assert ast.dump(stub[name].args) == ast.dump(solution[name].args)
        assert ast.get_docstring(stub[name], clean=False) == ast.get_docstring(solution[name], clean=False)
        assert isinstance(stub[name].body[-1], ast.Raise), f"{name} is not a stub"


def test_unbalanced_markers_are_refused():
    with pytest.raises(generate.MarkerError):
        generate.strip_solutions("def f():\n    ### BEGIN SOLUTION\n    return 1\n")
    with pytest.raises(generate.MarkerError):
        generate.strip_solutions("def f():\n    ### END SOLUTION\n")


def test_the_command_reports_drift(tmp_path):
    stale = tmp_path / "attention.py"
    stale.write_text("# old\n")
    assert generate.main(exercise=stale, check=True) == 1
    assert generate.main(exercise=stale) == 0
    assert generate.main(exercise=stale, check=True) == 0
