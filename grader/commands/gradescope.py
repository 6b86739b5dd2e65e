"""``gradescope-bundle`` and ``gradescope-run``: a lesson as a Gradescope autograder.

Gradescope unzips the bundle into /autograder/source, runs ``setup.sh`` once
to build its image, then ``run_autograder`` for every submission, with the
student's files in /autograder/submission. ``run_autograder`` must always
leave /autograder/results/results.json behind, whatever happened.

Both scripts run as root. The student's code never does: bubblewrap runs it as
a user id of its own, and without bubblewrap (Gradescope's Docker images often
cannot run it) the ``process`` level does the same. What that user must not
reach is root's alone (``go-rwx``): the bundle (the reference, the checks, the
hidden checks), the results folder, and the metadata of the submission (which
holds the results of earlier ones). What it needs to start Python and numpy,
the virtual environment, is readable by all; the source of the student's file
reaches the sandbox through the grader, not from disk.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import zipfile
from pathlib import Path

from ..core.errors import AuthorError
from ..core.intake import IntakeError, Refusal, take_in
from ..core.lesson import Lesson
from ..core.settings import Isolation, resolve
from ..engine import shipped
from ..engine.run import run_checks
from ..formats.gradescope import failure, to_gradescope
from ..sandbox.wardens import best_level
from .release import grader_files, lesson_files, made_examples

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu 22.04 or later).
set -euo pipefail
apt-get update
apt-get install -y python3 python3-venv python3-pip
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "the grader needs Python 3.10 or later: choose Gradescope's Ubuntu 22.04 image or a later one" >&2
    exit 1
}
apt-get install -y bubblewrap || true  # the sandbox's strongest level, where the image allows it
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -e /autograder/source
# The student's code runs as another user: it may start Python and numpy from the venv
# (read and execute for all, no listing of /autograder), and read nothing of the bundle.
chmod go=x /autograder
chmod -R go+rX,go-w /autograder/venv
chmod -R go-rwx /autograder/source
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this, as root, for every submission. It always leaves results/results.json.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${GRADER_PYTHON:-$ROOT/venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
# Before any student code runs: the bundle, the results and the submission's metadata (it
# holds earlier results) are root's alone; results.json is written by the grader, after grading.
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
chmod -R go-rwx "$ROOT/source" "$ROOT/results"
if [ -e "$ROOT/submission_metadata.json" ]; then chmod go-rwx "$ROOT/submission_metadata.json"; fi
(cd "$ROOT/source" && "$PYTHON" -m grader gradescope-run --root "$ROOT" --lesson @LESSON@)
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '%s\\n' '{"score": 0, "output": "The autograder could not start; please tell your instructor.", "tests": [], "stdout_visibility": "hidden"}' > "$ROOT/results/results.json"
fi
"""


#: The time every file of a bundle is stamped with (the zip format's earliest).
_NO_TIME = (1980, 1, 1, 0, 0, 0)


def bundle(*, lesson: Lesson, out: Path) -> int:
    """Write the autograder zip of ``lesson``: setup.sh and run_autograder at its root, the
    grader and the lesson (its reference and hidden checks included) beside them."""
    out = Path(out)
    files = [*grader_files(), *lesson_files(lesson, hidden=True)]
    run = RUN.replace("@LESSON@", shlex.quote(lesson.name))
    out.parent.mkdir(parents=True, exist_ok=True)
    entries = [("setup.sh", SETUP.encode(), 0o755), ("run_autograder", run.encode(), 0o755)]
    entries += [(name, path.read_bytes(), 0o644) for path, name in files]
    for hidden, data in made_examples(lesson).items():  # replayed from each container's first run
        where = shipped.path_of(lesson, hidden=hidden)
        if where.parent.is_dir():
            entries.append((where.relative_to(lesson.root).as_posix(), data, 0o644))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            # no time of day and no mode of the machine that built it: the same course and grader
            # give the same bundle, byte for byte (an instructor can tell what changed)
            info = zipfile.ZipInfo(name, date_time=_NO_TIME)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def isolation() -> Isolation:
    """``auto`` where bubblewrap works; else ``process``, asked for by name (as root, ``auto``
    without bubblewrap refuses to grade, and ``process`` runs the student's code as another user)."""
    return Isolation.AUTO if best_level() == Isolation.NAMESPACES else Isolation.PROCESS


def run(*, lesson: Lesson, root: Path) -> int:
    """Grade /autograder/submission into /autograder/results/results.json; always write it, and
    only once grading is over (the student's code has ended by then)."""
    root = Path(root)
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.parent.chmod(0o700)  # as run_autograder leaves it: root's alone
    results.unlink(missing_ok=True)  # nothing but this run's grade may be read afterwards
    start = time.monotonic()
    try:
        # the upload may keep the student's folders: the lesson's file anywhere in it, else its one
        # notebook (a link is refused, never followed)
        intake, file = take_in(root / "submission", lesson.filename, nested=True)
        settings = resolve("gradescope-run", isolation=isolation())
        report = run_checks(intake, lesson=lesson, settings=settings, shown=str(file))
        if report.busy:  # the machine was too busy: once more before saying so
            report = run_checks(intake, lesson=lesson, settings=settings, shown=str(file))
        data = to_gradescope(report, execution_time=time.monotonic() - start)
    except IntakeError as err:  # nothing to grade was found
        data = failure(err.message, execution_time=time.monotonic() - start)
        if err.kind is Refusal.UNFINISHED:  # the machine could not read it just now: no number
            data["output"] += ". Submit again in a minute."
            del data["score"]
    except AuthorError as err:  # the lesson in the bundle cannot be read: its author's to mend
        data = failure(
            "The checks could not run: the mistake is in the lesson, not in your code; please tell "
            f"your instructor. {'; '.join(err.places)}",
            execution_time=time.monotonic() - start,
        )
        del data["score"]  # no number, 0 included: nothing of the student's was checked
    except Exception as err:  # noqa: BLE001 - Gradescope must get a results.json whatever happens
        data = failure(
            f"The autograder itself failed ({type(err).__name__}: {err}); please tell your instructor.",
            execution_time=time.monotonic() - start,
        )
    partial = results.with_name(results.name + ".partial")  # never half a file, even if killed
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, results)
    return 0
