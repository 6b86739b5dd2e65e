"""Where the grader itself is installed."""

from pathlib import Path

#: The folder the ``grader`` package is imported from: a source checkout (which also holds the
#: project's own files and, for the grader's own tests, a course), or site-packages.
IMPORTED_FROM = Path(__file__).resolve().parent.parent.parent
#: The ``grader`` package's own folder.
PACKAGE = IMPORTED_FROM / "grader"
