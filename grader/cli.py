"""The command line: a thin layer over each command's ``main``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import (
    EXERCISES,
    __version__,
    batch,
    check,
    gallery,
    generate,
    grade,
    gradescope,
    nbgrader_course,
    release,
    stream,
)
from .inert import one_line
from .intake import IntakeError
from .plugin import GRADING_EXAMPLES
from .run import GraderError
from .sandbox import DEFAULT_TOTAL_TIMEOUT, LEVELS, IsolationRefused
from .submission import DEFAULT_CALL_TIMEOUT


def _exercises(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in EXERCISES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown exercise {unknown[0]!r}; choose from {', '.join(EXERCISES)}"
        )
    return names


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text}")
    return value


def _timeout(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a time limit must be above 0 seconds, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grader", description="Autograder for causal attention.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--only",
        type=_exercises,
        default=EXERCISES,
        metavar="NAMES",
        help="comma-separated exercises to run (default: all)",
    )
    common.add_argument(
        "--call-timeout",
        type=_timeout,
        default=DEFAULT_CALL_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit for one call of a student function (default {DEFAULT_CALL_TIMEOUT:g})",
    )
    common.add_argument(
        "--max-examples",
        type=_positive,
        default=None,
        metavar="N",
        help=f"examples per property (default {GRADING_EXAMPLES} when grading)",
    )

    isolation = argparse.ArgumentParser(add_help=False)
    isolation.add_argument(
        "--isolation",
        choices=("auto", *LEVELS),
        default=None,
        help="how to run the student's code: auto (the best this machine offers), "
        "namespaces (bubblewrap), process, or none (inside the grader)",
    )
    isolation.add_argument(
        "--total-timeout",
        type=_timeout,
        default=None,
        metavar="SECONDS",
        help="time limit for a whole submission when sandboxed (default 60)",
    )

    c = sub.add_parser("check", parents=[common, isolation], help="check your own attention.py (students)")
    c.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=check.paths.EXERCISE,
        help="file or folder to check (default: exercises/attention.py)",
    )
    c.add_argument(
        "--explore",
        action="store_true",
        help="try fresh random inputs, more of them (scores may differ from grading)",
    )
    c.add_argument(
        "--public",
        action="store_true",
        help="run only the checks students are shown (as in the student release)",
    )

    g = sub.add_parser("grade", parents=[common, isolation], help="grade one submission (instructors, CI)")
    g.add_argument("path", type=Path, help="attention.py, or a folder holding it")
    g.add_argument("--format", dest="fmt", choices=grade.FORMATS, default="text")
    g.add_argument("-o", "--output", type=Path, help="write the report here instead of stdout")
    g.add_argument(
        "--github-output",
        action="store_true",
        help="also set the GitHub Classroom result as the step output `result` ($GITHUB_OUTPUT)",
    )

    s = sub.add_parser(
        "gallery", parents=[common, isolation], help="grade a folder of submissions into a score table"
    )
    s.add_argument("folder", nargs="?", type=Path, help="one subfolder per submission (default: bundled)")
    s.add_argument("--format", dest="fmt", choices=gallery.FORMATS, default="table")

    b = sub.add_parser("batch", parents=[isolation], help="grade a whole class into a gradebook")
    b.add_argument("folder", type=Path, help="one subfolder per student, each holding attention.py")
    b.add_argument(
        "--out", type=Path, default=Path("gradebook.csv"), help="the CSV to write (default gradebook.csv)"
    )
    b.add_argument("--jobs", type=_positive, default=None, help="submissions graded at once (default: cores)")
    b.add_argument("--call-timeout", type=_timeout, default=DEFAULT_CALL_TIMEOUT, metavar="SECONDS")
    b.add_argument("--max-examples", type=_positive, default=None, metavar="N")

    z = sub.add_parser("gradescope-bundle", help="build the Gradescope autograder zip")
    z.add_argument("out", type=Path, help="the zip to write, e.g. autograder.zip")
    r = sub.add_parser("gradescope-run", help="grade /autograder/submission (run by run_autograder)")
    r.add_argument(
        "--root", type=Path, default=Path("/autograder"), help="Gradescope's folder (default /autograder)"
    )
    rel = sub.add_parser("release", help="write what students receive (no solutions, no hidden checks)")
    rel.add_argument("out_dir", type=Path, help="a new folder")

    sub.add_parser(
        "grade-stream",
        parents=[common, isolation],
        help="grade the file named on each stdin line; a JSON report per line (used by batch)",
    )

    n = sub.add_parser("nbgrader-course", help="write an nbgrader course folder with the exercise notebook")
    n.add_argument("out_dir", type=Path, help="the course folder to write (created if missing)")
    n.add_argument("--assignment", default="attention", help="nbgrader assignment name (default attention)")
    k = sub.add_parser(
        "nbgrader-collect", help="lay out nbgrader's collected notebooks one folder per student"
    )
    k.add_argument("course_dir", type=Path, help="the nbgrader course folder")
    k.add_argument("out_dir", type=Path, help="where to put one folder per student")
    k.add_argument("--assignment", default="attention")
    k.add_argument(
        "--code", action="store_true", help="write the extracted attention.py instead of the notebook"
    )

    e = sub.add_parser("exercises", help="regenerate exercises/attention.py from the solution")
    e.add_argument("--check", action="store_true", help="only report whether it is up to date")
    return p


def _options(args) -> dict:
    """The options every grading command shares, as run_checks keywords."""
    options = {"exercises": args.only, "call_timeout": args.call_timeout, "max_examples": args.max_examples}
    if args.isolation is not None:
        options["isolation"] = args.isolation
    if args.total_timeout is not None:
        options["total_timeout"] = args.total_timeout
    return options


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "check":
            return check.main(path=args.path, explore=args.explore, public=args.public, **_options(args))
        if args.command == "grade":
            return grade.main(
                path=args.path,
                fmt=args.fmt,
                output=args.output,
                github_output=args.github_output,
                **_options(args),
            )
        if args.command == "batch":
            return batch.main(
                folder=args.folder,
                out=args.out,
                jobs=args.jobs,
                isolation=args.isolation or "auto",
                call_timeout=args.call_timeout,
                total_timeout=args.total_timeout or DEFAULT_TOTAL_TIMEOUT,
                max_examples=args.max_examples,
            )
        if args.command == "gradescope-bundle":
            return gradescope.bundle(out=args.out)
        if args.command == "gradescope-run":
            return gradescope.run(root=args.root)
        if args.command == "release":
            return release.main(out_dir=args.out_dir)
        if args.command == "grade-stream":
            return stream.main(**{"isolation": "auto", **_options(args)})
        if args.command == "nbgrader-course":
            return nbgrader_course.main(out_dir=args.out_dir, assignment=args.assignment)
        if args.command == "nbgrader-collect":
            return nbgrader_course.collect(
                course_dir=args.course_dir, out_dir=args.out_dir, assignment=args.assignment, code=args.code
            )
        if args.command == "gallery":
            return gallery.main(folder=args.folder, fmt=args.fmt, **_options(args))
        return generate.main(check=args.check)
    except (FileNotFoundError, FileExistsError) as err:
        print(f"grader: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    except IntakeError as err:  # nothing to grade where the path points
        print(f"grader: {one_line(err.message)}", file=sys.stderr)
        return 2
    except IsolationRefused as err:
        print(f"grader: {err}", file=sys.stderr)
        return 2
    except GraderError as err:
        print(f"grader: internal error, please report it: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
