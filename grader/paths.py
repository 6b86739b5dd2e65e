"""Where the grader finds the reference, the stubs and the checks."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "attention.py"
EXERCISE = ROOT / "exercises" / "attention.py"
CHECKS = ROOT / "tests" / "checks"
GALLERY = ROOT / "examples" / "gallery"
