"""The command line: a thin layer over each command's ``main`` (:mod:`grader.commands`).

Every command works on one lesson of a course (``nbgrader-course`` and
``exercises``: on each, unless one is named). The course, the lesson and the
run's settings are resolved once, here (:mod:`grader.core.lesson`,
:func:`grader.core.settings.resolve`), and handed to the command.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from . import __version__
from .commands import remote
from .commands.lint_findings import LINT_EXAMPLES
from .commands.stopping import Stopped
from .core.errors import AuthorError, GraderError, IsolationRefused, LessonError, UsageError
from .core.inert import one_line
from .core.intake import IntakeError
from .core.lesson import COURSE_VARIABLE, Course, Lesson, find_course, is_course, is_service_address, released
from .core.results import LESSON_ERROR_EXIT
from .core.service import MAX_UPLOAD, PER_MINUTE, UPLOAD_SECONDS
from .core.settings import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
    GRADING_EXAMPLES,
    Colour,
    Isolation,
    Settings,
    decoded,
    resolve,
)
from .formats import CATALOG_FORMATS, REPORT_FORMATS, TABLE_FORMATS, lms
from .formats.text import lesson_errors
from .sandbox.wardens import head_start


def _command(name: str):
    """The module of the command ``name`` (:mod:`grader.commands`), imported as it runs: a
    ``check`` pays neither for the gradebook's database nor for the batch's machinery."""
    return importlib.import_module(f"{__package__}.commands.{name}")


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected one or more exercise names, separated by commas")
    return names


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text}")
    return value


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"expected a port, a whole number from 0 to 65535, got {text}")
    return int(text)


def _points(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of points, 0 or more, got {text}")
    return value


def _address(text: str) -> str:
    if not is_service_address(text):
        raise argparse.ArgumentTypeError(
            f"expected the grading service's address, http://... or https://... with no space or quote, got {text}"
        )
    return text


def _timeout(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a time limit must be above 0 seconds, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m grader", description="Property-based autograder for numpy lessons."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--course",
        type=Path,
        default=None,
        metavar="DIR",
        help="the course folder (default: $GRADER_COURSE, else the working folder or the nearest "
        "parent holding tests/checks/ and solutions/)",
    )
    where.add_argument(
        "--lesson",
        default=None,
        metavar="NAME",
        help="the lesson (default: the only one, else the one the submission's file is named after "
        "or whose functions it defines, else the course's [tool.grader] lesson)",
    )

    common = argparse.ArgumentParser(add_help=False, parents=[where])
    common.add_argument(
        "--only",
        type=_names,
        default=None,
        metavar="NAMES",
        help="comma-separated exercises to run (default: all)",
    )
    common.add_argument(
        "--call-timeout",
        type=_timeout,
        default=None,
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
        choices=[i.value for i in Isolation],
        default=None,
        help="how to run the student's code: auto (the best this machine offers), "
        "namespaces (bubblewrap), process, or none (inside the grader)",
    )
    isolation.add_argument(
        "--total-timeout",
        type=_timeout,
        default=None,
        metavar="SECONDS",
        help=f"time limit for a whole submission when sandboxed (default {DEFAULT_TOTAL_TIMEOUT:g})",
    )

    reading = argparse.ArgumentParser(add_help=False)
    reading.add_argument(
        "--details", action="store_true", help="every failed check in full, hidden ones included"
    )
    reading.add_argument(
        "--color",
        dest="colour",
        choices=[c.value for c in Colour],
        default=None,
        help="colour the text report: auto (on a terminal, unless NO_COLOR is set), always or never",
    )

    service = argparse.ArgumentParser(add_help=False)
    service.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help=f"have the course's grading service grade the file: the official visible grade "
        f"(check's default: ${remote.SERVER_VARIABLE}; then the release's own, if it names one; "
        "without any, the checks run here)",
    )
    service.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help=f"your token for the grading service (default ${remote.TOKEN_VARIABLE}, better: a command "
        "line can be seen by other users of the machine)",
    )
    c = sub.add_parser(
        "check", parents=[common, isolation, reading, service], help="check your own file (students)"
    )
    c.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=None,
        help="file or folder to check (default: the lesson's file in exercises/)",
    )
    c.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the report as an HTML page, with pictures",
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

    g = sub.add_parser(
        "grade",
        parents=[common, isolation, reading, service],
        help="grade one submission (instructors, CI)",
    )
    g.add_argument(
        "path", type=Path, help="the lesson's file (NAME.py or a notebook), or a folder holding it"
    )
    g.add_argument(
        "--public",
        action="store_true",
        help="run only the checks students are shown (the grade the grading service gives them)",
    )
    g.add_argument("--format", dest="fmt", choices=REPORT_FORMATS, default="text")
    g.add_argument("-o", "--output", type=Path, help="write the report here instead of stdout")
    g.add_argument(
        "--github-output",
        action="store_true",
        help="also set the GitHub Classroom result as the step output `result` ($GITHUB_OUTPUT)",
    )
    g.add_argument(
        "--github-summary",
        action="store_true",
        help="in GitHub Actions: an annotation per exercise that lost points, the report in the "
        "job summary ($GITHUB_STEP_SUMMARY)",
    )
    g.add_argument(
        "--fail-under",
        type=_points,
        default=None,
        metavar="POINTS",
        help="exit with 1 when the score is below POINTS (default: 0 whatever the score)",
    )

    s = sub.add_parser(
        "gallery", parents=[common, isolation], help="grade a folder of submissions into a score table"
    )
    s.add_argument("folder", nargs="?", type=Path, help="one subfolder per submission (default: bundled)")
    s.add_argument("--format", dest="fmt", choices=TABLE_FORMATS, default="table")

    lms_options = argparse.ArgumentParser(add_help=False)
    lms_options.add_argument(
        "--csv-format",
        choices=[layout.value for layout in lms.Layout],
        default="plain",
        help="the CSV's layout: plain (with a status column), or the one Canvas, Moodle or "
        "Blackboard imports (default plain)",
    )
    lms_options.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="FILE",
        help="the LMS's own export of the class: students are matched with it, its columns kept",
    )
    lms_options.add_argument(
        "--roster-key",
        default=None,
        metavar="COLUMN",
        help="the roster's column that holds the student folder names (default: student, "
        "SIS Login ID in Canvas, Email address in Moodle, Username in Blackboard)",
    )
    lms_options.add_argument(
        "--assignment",
        default=None,
        metavar="NAME",
        help="the grade's column in an LMS layout, as the LMS names it: Canvas's 'Name (id)', "
        "Blackboard's 'Name |id' (default: the lesson)",
    )
    lms_options.add_argument(
        "--unsubmitted",
        choices=[u.value for u in lms.Unsubmitted],
        default=None,
        help="what a missing or failed submission gets: blank or zero (default: blank in an LMS "
        "layout, where Moodle gets no row at all, zero in plain)",
    )
    b = sub.add_parser(
        "batch", parents=[where, isolation, lms_options], help="grade a whole class into a gradebook"
    )
    b.add_argument("folder", type=Path, help="one subfolder per student, each holding the lesson's file")
    b.add_argument(
        "--out", type=Path, default=Path("gradebook.csv"), help="the CSV to write (default gradebook.csv)"
    )
    b.add_argument("--jobs", type=_positive, default=None, help="submissions graded at once (default: cores)")
    b.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="grade on a Dask cluster: local[:N] (N workers on this machine) or tcp://HOST:PORT "
        "(a running scheduler); needs the cluster extra",
    )
    b.add_argument("--call-timeout", type=_timeout, default=None, metavar="SECONDS")
    b.add_argument("--max-examples", type=_positive, default=None, metavar="N")
    b.add_argument(
        "--junit",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the class as JUnit XML (a suite per student and exercise), for CI dashboards",
    )
    x = sub.add_parser(
        "export",
        parents=[lms_options],
        help="write the gradebook a batch wrote in any layout, grading nothing",
    )
    x.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        metavar="GRADEBOOK.csv",
        help="the CSV a batch wrote (its database, beside it, is read)",
    )
    x.add_argument("--out", type=Path, required=True, metavar="FILE", help="the CSV to write")
    rp = sub.add_parser("report", help="write the class report of a gradebook, grading nothing")
    rp.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        metavar="GRADEBOOK.csv",
        help="the CSV a batch wrote (its database, beside it, is read)",
    )
    rp.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="the page to write (default: NAME_class_report.html beside the gradebook NAME.csv)",
    )

    z = sub.add_parser("gradescope-bundle", parents=[where], help="build the Gradescope autograder zip")
    z.add_argument("out", type=Path, help="the zip to write, e.g. autograder.zip")
    r = sub.add_parser(
        "gradescope-run", parents=[where], help="grade /autograder/submission (run by run_autograder)"
    )
    r.add_argument(
        "--root", type=Path, default=Path("/autograder"), help="Gradescope's folder (default /autograder)"
    )
    rel = sub.add_parser(
        "release", parents=[where], help="write what students receive (no solutions, no hidden checks)"
    )
    rel.add_argument("out_dir", type=Path, help="a new folder")
    rel.add_argument(
        "--fail-under",
        type=_points,
        default=None,
        metavar="POINTS",
        help="the release's workflow fails a push whose score is below POINTS (default: never fails)",
    )
    rel.add_argument(
        "--server",
        type=_address,
        default=None,
        metavar="URL",
        help="the course's grading service: the release's check and its workflow grade through it "
        f"when the student's token is at hand (--token, ${remote.TOKEN_VARIABLE}, the repository "
        "secret GRADER_TOKEN)",
    )

    gs = sub.add_parser(
        "grade-stream",
        parents=[common, isolation],
        help="grade the file named on each stdin line; a JSON report per line (used by batch and serve)",
    )
    gs.add_argument("--public", action="store_true", help="run only the checks students are shown")
    gs.add_argument(
        "--settings",
        default=None,
        metavar="JSON",
        help="the whole settings of the run that starts this process (batch and serve pass them), "
        "in place of the options above",
    )

    sv = sub.add_parser(
        "serve",
        parents=[where, isolation],
        help="run the grading service: students upload, the checks run against the reference "
        "(needs the server extra)",
    )
    sv.add_argument(
        "--data",
        type=Path,
        required=True,
        metavar="DIR",
        help="the service's folder: its database (gradebook.sqlite), tokens.csv and the uploads",
    )
    sv.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="FILE",
        help="a CSV of the class: each student not known yet gets a token, appended to DIR/tokens.csv",
    )
    sv.add_argument(
        "--roster-key",
        default="student",
        metavar="COLUMN",
        help="the roster's column of student ids (default: student)",
    )
    sv.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=_port, default=8000, help="the port (default 8000; 0: any free one)")
    sv.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        help="submissions graded at once (default 1; on a cluster, two for each worker thread)",
    )
    sv.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="grade the queue on a Dask cluster: local[:N] or tcp://HOST:PORT, as batch does; "
        "needs the cluster extra",
    )
    sv.add_argument(
        "--per-minute",
        type=_positive,
        default=PER_MINUTE,
        metavar="N",
        help=f"submissions one student may send in a minute (default {PER_MINUTE})",
    )
    sv.add_argument(
        "--max-upload",
        type=_positive,
        default=MAX_UPLOAD,
        metavar="BYTES",
        help=f"the largest file accepted (default {MAX_UPLOAD})",
    )
    sv.add_argument(
        "--upload-seconds",
        type=_positive,
        default=UPLOAD_SECONDS,
        metavar="SECONDS",
        help=f"the time a request (an upload's file included) may take to arrive (default {UPLOAD_SECONDS})",
    )
    sv.add_argument("--call-timeout", type=_timeout, default=None, metavar="SECONDS")
    sv.add_argument("--max-examples", type=_positive, default=None, metavar="N")
    sv.set_defaults(public=True)  # students see the visible checks: the service runs those alone

    n = sub.add_parser(
        "nbgrader-course",
        parents=[where],
        help="write an nbgrader course folder, an assignment per lesson (or the one named)",
    )
    n.add_argument("out_dir", type=Path, help="the course folder to write (created if missing)")
    n.add_argument(
        "--assignment", default=None, help="nbgrader assignment name of the one lesson (default: its name)"
    )
    k = sub.add_parser(
        "nbgrader-collect",
        parents=[where],
        help="lay out nbgrader's collected notebooks one folder per student",
    )
    k.add_argument("course_dir", type=Path, help="the nbgrader course folder")
    k.add_argument("out_dir", type=Path, help="where to put one folder per student")
    k.add_argument("--assignment", default=None, help="nbgrader assignment name (default: the lesson's)")
    k.add_argument("--code", action="store_true", help="write the extracted NAME.py instead of the notebook")

    e = sub.add_parser(
        "exercises",
        parents=[where],
        help="regenerate each lesson's exercises/NAME.py (or the one named) from its solution",
    )
    e.add_argument("--check", action="store_true", help="only report whether it is up to date")

    ex = sub.add_parser(
        "examples",
        parents=[where],
        help="write the examples each lesson's checks draw (or the one named's) beside its checks, "
        "drawn by grading its reference: a first run anywhere replays them",
    )
    ex.add_argument("--check", action="store_true", help="only report whether they are current")

    lt = sub.add_parser(
        "lint",
        parents=[where],
        help="check each lesson (or the one named) without a student: marks, points, strategies, "
        "diagnoses, pictures, catalog",
    )
    lt.add_argument(
        "--max-examples",
        type=_positive,
        default=LINT_EXAMPLES,
        metavar="N",
        help=f"examples per check run on the reference (default {LINT_EXAMPLES})",
    )

    cg = sub.add_parser(
        "catalog",
        parents=[where, isolation],
        help="grade each lesson's catalog (or the one named) and hold every entry to its kind: "
        "a bug loses points in its own exercise and is named, a correct file is full, a "
        "do-nothing file earns nothing",
    )
    cg.add_argument("--jobs", type=_positive, default=None, help="entries graded at once (default: cores)")
    cg.add_argument("--format", dest="fmt", choices=CATALOG_FORMATS, default="text")

    nl = sub.add_parser(
        "new-lesson",
        help="scaffold a new lesson's files (reference, checks, diagnoses, pictures, catalog, gallery)",
    )
    nl.add_argument("name", help="the lesson's name: students hand in NAME.py")
    nl.add_argument(
        "--course",
        type=Path,
        default=None,
        metavar="DIR",
        help="the course folder (default: $GRADER_COURSE, else the working folder or the nearest "
        "parent that is a course, else the working folder, as a new course)",
    )
    return p


def _new_course_root(given: Path | None) -> Path:
    """Where ``new-lesson`` writes: the course named, else the working folder's (it or its
    nearest parent that is a course), else the working folder itself, a new course."""
    if given is None and os.environ.get(COURSE_VARIABLE):
        given = Path(os.environ[COURSE_VARIABLE])
    if given is not None:
        return given
    here = Path.cwd()
    return next((folder for folder in (here, *here.parents) if is_course(folder)), here)


#: The commands that grade on the command line's settings (``gradescope-run`` chooses its own).
_GRADING = ("check", "grade", "gallery", "batch", "grade-stream", "catalog", "serve")
#: Those that grade one submission, here or through the course's grading service.
_ONE_SUBMISSION = ("check", "grade")
#: Those whose sandbox may start before Hypothesis is imported (and its release checked).
_STARTED_AHEAD = (*_ONE_SUBMISSION, "gradescope-run")


def _settings(args, lesson: Lesson) -> Settings:
    """The run's settings: what the command line asked for, checked against the lesson, else
    the defaults; a ``grade-stream`` given the settings of the run that started it takes them
    whole (:func:`grader.core.settings.decoded`)."""
    if getattr(args, "settings", None) is not None:
        try:
            return decoded(args.settings, lesson_exercises=lesson.exercises)
        except ValueError as err:
            raise UsageError(f"--settings: {err}") from None
    return resolve(
        args.command,
        lesson_exercises=lesson.exercises,
        lesson_name=lesson.name,
        isolation=getattr(args, "isolation", None),
        only=getattr(args, "only", None),
        call_timeout=getattr(args, "call_timeout", None),
        total_timeout=getattr(args, "total_timeout", None),
        max_examples=getattr(args, "max_examples", None),
        explore=getattr(args, "explore", False),
        public=getattr(args, "public", False),
    )


def _export(args) -> lms.Export:
    """How ``batch`` writes its CSV, its roster read (and checked) before anything is graded."""
    layout = lms.Layout(args.csv_format)
    key = args.roster_key or lms.ROSTER_KEY[layout]
    return lms.Export(
        layout=layout,
        assignment=args.assignment or "",
        unsubmitted=lms.Unsubmitted(args.unsubmitted) if args.unsubmitted else None,
        roster=lms.read_roster(args.roster, key) if args.roster is not None else None,
    )


def os_message(err: OSError) -> str:
    """An OS error as a sentence naming the file and the problem, never a bare errno (``2``);
    the grader's own errors (a sentence already) as they are."""
    if err.strerror is None:
        return one_line(str(err.args[0]) if err.args else type(err).__name__)
    problem = err.strerror[:1].lower() + err.strerror[1:]
    files = [str(f) for f in (err.filename, err.filename2) if f is not None]
    if not files:
        return one_line(f"{problem} (an operating system error, errno {err.errno})")
    return one_line(f"could not use {' and '.join(files)}: {problem}")


def _recheck(args) -> str:
    """The ``check`` command that runs this one again, with what chose its course and lesson and
    which checks it ran (the report adds ``--only`` for the exercise to fix next)."""
    words = ["python", "-m", "grader", "check"]
    if args.course is not None:
        words += ["--course", str(args.course)]
    if args.lesson is not None:
        words += ["--lesson", args.lesson]
    words += [flag for flag, on in (("--public", args.public), ("--explore", args.explore)) if on]
    if args.server is not None:  # the token is left out: it is secret (and $GRADER_TOKEN holds it)
        words += ["--server", args.server]
    if args.path is not None:
        words.append(str(args.path))
    return shlex.join(words)


def _remote(args, lesson: Lesson) -> remote.Remote | None:
    """The grading service a file is sent to: ``--server``, else (for ``check``) $GRADER_SERVER,
    else the one the release names, with ``--token``, else $GRADER_TOKEN; None when none names a
    service, or only the release does and no token is at hand (said, and the checks run here).
    ``grade`` reads no $GRADER_SERVER: an instructor's grade (hidden checks included) never goes
    to a service because a student's setting was left in the environment."""
    server = args.server or (
        os.environ.get(remote.SERVER_VARIABLE, "").strip() if args.command == "check" else ""
    )
    practice = False
    if not server:
        server, practice = released(lesson).server, True
        if not server:
            return None
    token = args.token or os.environ.get(remote.TOKEN_VARIABLE, "").strip()
    if not token and practice:
        print(
            f"grader: your course grades through its service at {one_line(server)}, but no token was "
            f"given: set ${remote.TOKEN_VARIABLE} to the token your instructor handed out (or give "
            "--token; on GitHub, store it as the repository secret GRADER_TOKEN) for your official "
            "score; checking here instead, for a practice score",
            file=sys.stderr,
        )
        return None
    if not token:
        raise UsageError(
            f"the grading service needs your token: give --token, or set ${remote.TOKEN_VARIABLE} "
            "(your instructor handed it out)"
        )
    if not server.startswith(("http://", "https://")):
        raise UsageError(
            f"--server takes the service's address, http://... or https://..., got {one_line(server)}"
        )
    if remote.in_clear(server):
        print(
            "grader: warning: the token goes to the service unencrypted (http://, not on this machine); "
            "ask your instructor for its https:// address",
            file=sys.stderr,
        )
    return remote.Remote(server, token, practice=practice)


def _nbgrader_lesson(course: Course, course_dir: Path, assignment: str | None) -> Lesson:
    """The lesson of an nbgrader course: the one whose notebook (``NAME.ipynb``) its collected
    assignments hold, else its release, else its source (that assignment alone, when named), if
    one alone: the notebooks collected are the ones to lay out, whatever else the course holds."""
    if len(course.lessons) > 1 and Path(course_dir).is_dir():
        folder = assignment or "*"
        for place in (f"submitted/*/{folder}", f"release/{folder}", f"source/{folder}"):
            found = [
                lesson
                for lesson in course.lessons
                if next(Path(course_dir).glob(f"{place}/{lesson.name}.ipynb"), None) is not None
            ]
            if len(found) == 1:
                return found[0]
            if found:
                break  # two lessons where the notebooks are: which one is for --lesson to say
    return course.choose()


def _lessons(args, course: Course) -> tuple[Lesson, ...]:
    """The lessons a command for every lesson works on: the one named, else all."""
    if args.lesson is not None:
        return (course.lesson(args.lesson),)
    course.mended()  # a command for every lesson stops on one whose reference cannot be read
    if not course.lessons:
        course.choose()  # raises, saying the course holds no lesson
    return course.lessons


#: What the server extra installs, by the name each is imported as.
SERVER_PACKAGES = ("starlette", "uvicorn", "multipart", "python_multipart")
#: What the cluster extra installs, by the name each is imported as.
CLUSTER_PACKAGES = ("dask", "distributed")


@contextlib.contextmanager
def _extra(packages: tuple[str, ...], needs: str):
    """Around the import of a command module that imports an extra's ``packages`` (only the
    command that needs them imports it, so that every other runs without them): a missing one
    is a UsageError saying what to install (``needs``: who needs which extra, its name last)."""
    try:
        yield
    except ImportError as err:
        if (err.name or "").split(".")[0] not in packages:
            raise
        extra = needs.rsplit(" ", 1)[-1]
        raise UsageError(
            f"{needs} extra ({err.name} is missing): pip install -e '.[{extra}]' in the grader's folder"
        ) from None


def _serve(args, lesson: Lesson, settings: Settings) -> int:
    """Run ``serve``, its queue graded on a Dask cluster with ``--cluster``. Its web packages are
    an extra (``pip install -e '.[server]'``), and Dask another."""
    with _extra(SERVER_PACKAGES, "serve needs the web packages of the server"):
        from .commands import serve
    serving = dict(
        lesson=lesson,
        settings=settings,
        data=args.data,
        roster=args.roster,
        roster_key=args.roster_key,
        host=args.host,
        port=args.port,
        jobs=args.jobs,
        per_minute=args.per_minute,
        max_upload=args.max_upload,
        upload_seconds=args.upload_seconds,
    )
    if args.cluster is None:
        return serve.main(**serving)
    with _on_cluster(args.cluster) as place:
        return serve.main(**serving, cluster=place)


@contextlib.contextmanager
def _on_cluster(address: str):
    """The Dask cluster at ``address`` (``--cluster``), connected for the block. Dask is an extra
    (``pip install -e '.[cluster]'``): imported here, for a command on a cluster only."""
    with _extra(CLUSTER_PACKAGES, "--cluster needs Dask, of the cluster"):
        from .commands import cluster
    try:
        cluster.parse_address(address)
    except ValueError as err:
        raise UsageError(f"--cluster {err}") from None
    with cluster.Cluster(address) as place:
        yield place


def _batch(args, lesson: Lesson, settings: Settings) -> int:
    """Run ``batch``, on a Dask cluster with ``--cluster``. Dask is an extra (``pip install -e
    '.[cluster]'``): imported here, for a batch on a cluster only."""
    grading = dict(
        lesson=lesson,
        settings=settings,
        folder=args.folder,
        out=args.out,
        jobs=args.jobs,
        export=_export(args),
        junit=args.junit,
    )
    if args.cluster is None:
        return _command("batch").main(**grading)
    with _on_cluster(args.cluster) as place:
        return _command("batch").main(**grading, cluster=place)


def _refused() -> bool:
    """Whether the installed Hypothesis cannot grade (said, if so): a grade would depend on
    Hypothesis internals this grader never read."""
    from .engine.upkeep import unsupported_hypothesis

    refusal = unsupported_hypothesis()
    if refusal is not None:
        print(f"grader: {refusal}", file=sys.stderr)
    return refusal is not None


def main(argv: list[str] | None = None, *, loaded: Callable[[], None] | None = None) -> int:
    """Run the command ``argv`` asks for (the process's own arguments by default); its exit
    status. ``loaded``: called once the command's own modules are imported (``python -m grader``
    freezes what they built for the garbage collector there: see grader/__main__.py)."""

    def command(name: str):
        module = _command(name)
        if loaded is not None:
            loaded()
        return module

    args = parser().parse_args(argv)
    # one submission's grading asks after Hypothesis once its sandbox is on its way: importing
    # Hypothesis is a tenth of a second the sandbox's start hides behind (_STARTED_AHEAD)
    if args.command not in ("export", "report", *_STARTED_AHEAD) and _refused():
        return 2
    if args.command not in _STARTED_AHEAD:
        return _run(args, command)
    # SIGTERM (``timeout``, a CI runner's cancel) ends one submission's grading as Ctrl-C does:
    # its sandbox, which starts as the command line is read, and its temporary folders are ended
    # and removed on the way out, where the signal's default action left them behind
    signals = Stopped()
    signals.catch()
    try:
        code = _run(args, command)
    finally:
        signals.release()
    return 128 + int(signals.number) if signals.caught and code == 130 else code


def _run(args, command) -> int:
    """:func:`main`'s command, once its words are read."""
    try:
        if args.command == "export":  # from a gradebook alone: no course, nothing graded
            return command("export").main(source=args.source, out=args.out, export=_export(args))
        if args.command == "report":
            return command("export").report(source=args.source, out=args.out)
        if args.command == "new-lesson":
            return command("new_lesson").main(name=args.name, root=_new_course_root(args.course))
        course = find_course(args.course)
        if args.command == "exercises":
            return command("exercises").main(lessons=_lessons(args, course), check=args.check)
        if args.command == "examples":
            return command("examples").main(lessons=_lessons(args, course), check=args.check)
        if args.command == "lint":
            return command("lint").main(lessons=_lessons(args, course), examples=args.max_examples)
        if args.command == "catalog":
            chosen = tuple((lesson, _settings(args, lesson)) for lesson in _lessons(args, course))
            return command("catalog").main(lessons=chosen, jobs=args.jobs, fmt=args.fmt)
        if args.command == "nbgrader-course":
            return command("nbgrader_course").main(
                lessons=_lessons(args, course), out_dir=args.out_dir, assignment=args.assignment
            )
        if args.command == "nbgrader-collect" and args.lesson is None:
            lesson = _nbgrader_lesson(course, args.course_dir, args.assignment)
        else:
            lesson = course.choose(args.lesson, getattr(args, "path", None), getattr(args, "folder", None))
        settings = _settings(args, lesson) if args.command in _GRADING else None
        service = _remote(args, lesson) if args.command in _ONE_SUBMISSION else None
        if args.command in _ONE_SUBMISSION:
            if service is None:
                head_start(settings)  # its sandbox starts while the checks' engine is imported
            if _refused():
                return 2
        if args.command == "check":
            return command("check").main(
                lesson=lesson,
                settings=settings,
                path=args.path,
                details=args.details,
                colour=args.colour,
                html=args.html,
                recheck=_recheck(args),
                service=service,
            )
        if args.command == "grade":
            return command("grade").main(
                lesson=lesson,
                settings=settings,
                path=args.path,
                fmt=args.fmt,
                output=args.output,
                github_output=args.github_output,
                github_summary=args.github_summary,
                fail_under=args.fail_under,
                details=args.details,
                colour=args.colour,
                service=service,
            )
        if args.command == "batch":
            return _batch(args, lesson, settings)
        if args.command == "serve":
            return _serve(args, lesson, settings)
        if args.command == "gradescope-bundle":
            return command("gradescope").bundle(lesson=lesson, out=args.out)
        if args.command == "gradescope-run":
            # one submission in a container of its own: its sandbox too starts while the engine loads
            # (for the level gradescope-run settles on where bubblewrap works; ended unused otherwise)
            head_start(resolve("gradescope-run"))
            if _refused():
                return 2
            return command("gradescope").run(lesson=lesson, root=args.root)
        if args.command == "release":
            return command("release").main(
                lesson=lesson, out_dir=args.out_dir, fail_under=args.fail_under, server=args.server
            )
        if args.command == "grade-stream":
            return command("stream").main(lesson=lesson, settings=settings)
        if args.command == "nbgrader-collect":
            return command("nbgrader_course").collect(
                lesson=lesson,
                course_dir=args.course_dir,
                out_dir=args.out_dir,
                assignment=args.assignment,
                code=args.code,
            )
        return command("gallery").main(lesson=lesson, settings=settings, folder=args.folder, fmt=args.fmt)
    except LessonError as err:  # no course, no such lesson, no such exercise
        print(f"grader: {one_line(str(err))}", file=sys.stderr)
        return 2
    except OSError as err:  # a path that is missing, taken, unwritable, ...: said in words
        print(f"grader: {os_message(err)}", file=sys.stderr)
        return 2
    except IntakeError as err:  # nothing to grade where the path points
        print(f"grader: {one_line(err.message)}", file=sys.stderr)
        return 2
    except UsageError as err:  # an option that cannot be followed (a roster without its column)
        print(f"grader: {one_line(str(err))}", file=sys.stderr)
        return 2
    except IsolationRefused as err:
        print(f"grader: {err}", file=sys.stderr)
        return 2
    except AuthorError as err:  # the lesson's own files: its author's to mend, at the line said
        print(f"grader: {lesson_errors(err.places)}", file=sys.stderr)
        return LESSON_ERROR_EXIT
    except GraderError as err:
        print(f"grader: internal error, please report it: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
