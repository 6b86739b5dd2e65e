"""``export`` and ``report``: the files an instructor needs, from a gradebook, grading nothing.

    python -m grader export --from grades/gradebook.csv --out canvas.csv --csv-format canvas \\
        --assignment "Lab 3 (1234)" [--roster FILE] [--roster-key COLUMN]
    python -m grader report --from grades/gradebook.csv [--out gradebook_class_report.html]

Both read the gradebook database a batch wrote beside its CSV (``grades/gradebook.sqlite``),
opened read-only: no course is looked for, no submission read, nothing graded, and the
gradebook is left as it was. So any layout can be written as often as wanted, and each is
made from the very grades the batch recorded.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError
from ..core.inert import one_line
from ..core.whole import whole_file
from ..formats.class_report import summarise, to_class_html
from ..formats.gradebook import Gradebook, database_of, open_gradebook
from ..formats.lms import Export

#: The end of the class report's name, beside the gradebook: ``grades.csv`` has
#: ``grades_class_report.html`` (as it has ``grades.sqlite`` and ``grades_reports/``), so that two
#: gradebooks in one folder never write over each other's page.
CLASS_REPORT = "_class_report.html"


def main(*, source: Path, out: Path, export: Export) -> int:
    """Write ``out`` in ``export``'s layout from the gradebook of ``source``."""
    source, out = Path(source), Path(out)
    _not_the_gradebook(source, out)
    book = open_gradebook(source)
    try:
        lesson, exercises = book.about()
        out.parent.mkdir(parents=True, exist_ok=True)
        written = book.export_csv(out, exercises, export, lesson=lesson or database_of(source).stem)
    finally:
        book.close()
    print(f"{out}: {len(written.rows)} rows in the {export.layout.value} layout, from {database_of(source)}")
    if written.notes:
        print("to look at:")
        for note in written.notes:
            print(f"  - {note}")
    return 0


def report(*, source: Path, out: Path | None = None) -> int:
    """Write the class report of the gradebook of ``source`` (beside it, unless ``out`` is given)."""
    source = Path(source)
    out = Path(out) if out is not None else class_report_of(source)
    _not_the_gradebook(source, out)
    book = open_gradebook(source)
    try:
        write_class_report(book, out)
    finally:
        book.close()
    print(f"class report: {out}")
    return 0


def class_report_of(source: Path) -> Path:
    """Where the class report of the gradebook of ``source`` (its CSV or its database) goes by
    default: beside it, named after it (``grades.csv`` -> ``grades_class_report.html``)."""
    db = database_of(Path(source))
    return db.with_name(db.stem + CLASS_REPORT)


def write_class_report(book: Gradebook, out: Path) -> None:
    """The class report of ``book`` written to ``out`` (whole or not at all)."""
    lesson, exercises = book.about()
    page = to_class_html(summarise(book.rows(), lesson=lesson, exercises=exercises))
    out.parent.mkdir(parents=True, exist_ok=True)
    with whole_file(out) as f:
        f.write(page)


def _not_the_gradebook(source: Path, out: Path) -> None:
    """Refuse to write over the gradebook's database (or its journal files)."""
    db = database_of(source)
    kept = {db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")}
    try:
        same = any(out.resolve() == k.resolve() for k in kept)
    except OSError:
        same = False
    if same:
        raise UsageError(f"--out {one_line(str(out))} is the gradebook's own database; name another file")
