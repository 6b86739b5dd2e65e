"""``gradescope-bundle`` and ``gradescope-run``: the assignment as a Gradescope autograder.

Gradescope unzips the bundle into /autograder/source, runs ``setup.sh`` once
to build its image, then ``run_autograder`` for every submission, with the
student's files in /autograder/submission. ``run_autograder`` must always
leave /autograder/results/results.json behind, whatever happened.
"""

from __future__ import annotations

import json
import sys
import time
import zipfile
from pathlib import Path

from . import paths
from .reporters.gradescope import failure, to_gradescope
from .run import run_checks

#: What the bundle carries besides its two scripts (the hidden checks included).
SOURCES = (
    "pyproject.toml",
    "README.md",
    "grader",
    "solutions",
    "exercises",
    "tests/__init__.py",
    "tests/checks",
)

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (Ubuntu).
set -euo pipefail
apt-get update
apt-get install -y python3 python3-venv python3-pip
apt-get install -y bubblewrap || true  # the sandbox's strongest level, where the image allows it
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -e /autograder/source
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. It always leaves results/results.json.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${GRADER_PYTHON:-$ROOT/venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
mkdir -p "$ROOT/results"
(cd "$ROOT/source" && "$PYTHON" -m grader gradescope-run --root "$ROOT")
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '%s\\n' '{"score": 0, "output": "The autograder could not start; please tell your instructor.", "tests": [], "stdout_visibility": "hidden"}' > "$ROOT/results/results.json"
fi
"""


def _files() -> list[Path]:
    found = []
    for name in SOURCES:
        path = paths.ROOT / name
        if path.is_dir():
            found += [p for p in sorted(path.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
        else:
            found.append(path)
    return found


def bundle(*, out: Path) -> int:
    """Write the autograder zip: setup.sh and run_autograder at its root, the grader beside them."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable once unzipped
            z.writestr(info, text)
        for path in _files():
            z.write(path, path.relative_to(paths.ROOT).as_posix())
    print(f"wrote {out}", file=sys.stderr)
    return 0


class NoSubmission(Exception):
    """Nothing gradable in the submission folder."""


def find_submission(folder: Path) -> Path:
    """attention.py (at the top, else anywhere), or the one notebook handed in."""
    if not folder.is_dir():
        raise NoSubmission("No submission folder was found.")
    top = folder / "attention.py"
    if top.is_file():
        return top
    found = sorted(folder.rglob("attention.py"))
    if found:
        return found[0]
    notebooks = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if len(notebooks) == 1:
        return notebooks[0]
    if notebooks:
        raise NoSubmission(
            f"Several notebooks were handed in ({', '.join(p.name for p in notebooks)}); hand in one."
        )
    raise NoSubmission("No attention.py (or notebook) was found in your submission.")


def run(*, root: Path) -> int:
    """Grade /autograder/submission into /autograder/results/results.json; always write it."""
    root = Path(root)
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    try:
        report = run_checks(find_submission(root / "submission"), isolation="auto")
        data = to_gradescope(report, execution_time=time.monotonic() - start)
    except NoSubmission as err:
        data = failure(str(err), execution_time=time.monotonic() - start)
    except Exception as err:  # noqa: BLE001 - Gradescope must get a results.json whatever happens
        data = failure(
            f"The autograder itself failed ({type(err).__name__}: {err}); please tell your instructor.",
            execution_time=time.monotonic() - start,
        )
    results.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0
