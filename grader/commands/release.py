"""``release``: what students receive. No solution, no hidden check, no line of the reference.

The release of one lesson holds its stubs, its public checks, the grader, a
README for students and the GitHub Actions workflow (feedback on every push). Inside it ``python -m
grader check`` works as here, minus the hidden checks and the reference (each
exercise then runs with the student's own versions of the other functions).
With no solution to read the exercises from, the release lists them in
``tests/checks/NAME/lesson.json``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from ..core.errors import GraderError, IsolationRefused, LessonError, UsageError
from ..core.installed import IMPORTED_FROM, PACKAGE
from ..core.lesson import OUTLINE, SHIPPED, Lesson, is_service_address
from ..core.scope import reference_calls
from ..engine import shipped
from . import examples

HERE = Path(__file__).resolve().parent / "release_files"
#: In a source checkout, the folder ``grader`` is imported from also holds the project's files.
CHECKOUT = IMPORTED_FROM
#: The grader project's own files a release or a bundle installs it with.
PROJECT_FILES = ("pyproject.toml", "README.md")


#: The release README's paragraph on the course's grading service, when it has one.
_SERVICE = """
## Your official score

Your course grades through its grading service, @SERVER@. Set the variable `GRADER_TOKEN` to
the token your instructor handed out, and `python -m grader check` sends your file there: the
score it prints is your official visible score, with the likely mistake of each function that
lost points. Without the token, or offline, the checks run here and the score is a practice
score. For the workflow on GitHub, store the token as the repository secret `GRADER_TOKEN`
(Settings > Secrets and variables > Actions); it is never printed.
"""


def grader_files() -> list[tuple[Path, str]]:
    """(file, path in a release) of the grader itself: its package and its project files."""
    missing = [name for name in PROJECT_FILES if not (CHECKOUT / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the grader's {missing[0]} is not beside its package in {CHECKOUT}: releases and "
            "bundles are built from the grader's source folder (pip install -e it)"
        )
    files = [(CHECKOUT / name, name) for name in PROJECT_FILES]
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files.append((path, path.relative_to(CHECKOUT).as_posix()))
    return files


def lesson_files(lesson: Lesson, *, hidden: bool) -> list[tuple[Path, str]]:
    """(file, path in a release) of ``lesson``: its stubs, the packages above its checks, its
    checks (the hidden ones only with ``hidden``), and its reference, known mistakes (whose
    forward pass is the reference's, but for one change) and pictures (drawn beside the
    reference's) with ``hidden``. Never the lesson's shipped examples: each release and bundle
    has them made anew (:func:`grader.commands.examples.made`)."""
    wanted = [lesson.stubs, *(lesson.root / "tests" / f for f in ("__init__.py", "checks/__init__.py"))]
    if hidden:
        wanted.append(lesson.solution)
        wanted += [
            path
            for path in sorted(lesson.checks.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts and path.name != SHIPPED
        ]
    else:
        wanted += lesson.public_files()
    return [(p, p.relative_to(lesson.root).as_posix()) for p in wanted if p.is_file()]


def _text(name: str, lesson: Lesson, *, fail_under: float | None = None, server: str | None = None) -> str:
    """A file of ``release_files`` with the lesson's names (and the workflow's threshold and
    grading service) filled in."""
    first = lesson.exercises[0] if lesson.exercises else ""
    listing = "\n".join(f"- `{name}`" for name in lesson.exercises)
    text = (HERE / name).read_text(encoding="utf-8")
    failing = (
        f"\n# A push whose score is below {fail_under:g} points fails the job."
        if fail_under is not None
        else "\n# The job fails only when the grader cannot run, never for a low score."
    )
    text = text.replace("@FAIL_UNDER@", "" if fail_under is None else f" --fail-under {fail_under:g}")
    text = text.replace("@FAILING@", failing)
    text = text.replace("@SERVICE@", _SERVICE.replace("@SERVER@", server) if server else "")
    return text.replace("@LESSON@", lesson.name).replace("@FIRST@", first).replace("@LISTING@", listing)


def outline(lesson: Lesson, server: str | None = None) -> dict:
    """What the release's ``lesson.json`` says: the exercises, the other exercises whose student
    versions each one's checks run (those its reference calls: with no reference in the
    release, the student's own run instead) and the grading service, if there is one."""
    told: dict = {"exercises": list(lesson.exercises)}
    if lesson.reference is not None:
        calls = reference_calls(lesson.reference.read_text(encoding="utf-8"), lesson.exercises)
        told["depends"] = {
            name: [other for other in lesson.exercises if other in calls[name]]
            for name in lesson.exercises
            if calls[name]
        }
    if server is not None:
        told["server"] = server
    return told


def made_examples(lesson: Lesson) -> dict[bool, bytes]:
    """The examples ``lesson``'s checks draw, made anew (:func:`grader.commands.examples.made`),
    public and hidden; none (a word on stderr) where its reference cannot make them: the release
    or bundle then draws them under the engine on every run, as before there were any."""
    try:
        return examples.made(lesson)
    except (LessonError, GraderError, IsolationRefused, OSError) as err:
        print(f"grader: no examples shipped: {err}", file=sys.stderr)
        return {}


def _ship_examples(lesson: Lesson, out: Path, *, hidden: bool) -> None:
    """Write ``lesson``'s public (and, ``hidden``, hidden) checks' examples into the copy of the
    course at ``out``."""
    files = made_examples(lesson)
    for which in (False, True) if hidden else (False,):
        target = out / shipped.path_of(lesson, hidden=which).relative_to(lesson.root)
        if which in files and target.parent.is_dir():
            target.write_bytes(files[which])


def main(*, lesson: Lesson, out_dir: Path, fail_under: float | None = None, server: str | None = None) -> int:
    """Write the release of ``lesson`` into ``out_dir`` (which must not exist yet, or be empty);
    its workflow fails a push whose score is below ``fail_under`` (None: never for a score).
    With ``server``, the address of the course's grading service: the release's ``check`` and
    its workflow grade through it whenever the student's token is at hand."""
    if server is not None and not is_service_address(server):
        raise UsageError(
            f"--server takes the grading service's address, http://... or https://... with no space "
            f"or quote in it, got {server!r}"
        )
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; choose a new folder for the release")
    for source, name in [*lesson_files(lesson, hidden=False), *grader_files()]:
        if name != "README.md":
            _copy(source, out / name)
    _ship_examples(lesson, out, hidden=False)
    told = json.dumps(outline(lesson, server), indent=1) + "\n"
    (out / "tests" / "checks" / lesson.name / OUTLINE).write_text(told, encoding="utf-8")
    (out / "README.md").write_text(_text("README.md", lesson, server=server), encoding="utf-8")
    workflow = out / ".github" / "workflows" / "classroom.yml"
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(
        _text("classroom.yml", lesson, fail_under=fail_under, server=server), encoding="utf-8"
    )
    (out / ".gitignore").write_text(".venv/\n__pycache__/\n*.egg-info/\n.hypothesis/\n", encoding="utf-8")
    print(f"wrote the release of {lesson.name} to {out}", file=sys.stderr)
    return 0


def _copy(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
