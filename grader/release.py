"""``release``: what students receive. No solution, no hidden check, no line of the reference.

The release holds the stubs, the public checks, the grader, a README for
students and the GitHub Classroom workflow. Inside it ``python -m grader
check`` works as here, minus the hidden checks and the reference (each
exercise then runs with the student's own versions of the other functions).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from . import paths

HERE = Path(__file__).resolve().parent / "release_files"
#: Copied as they are.
COPIED = ("pyproject.toml", "exercises/attention.py", "tests/__init__.py")


def _public_checks() -> list[Path]:
    hidden = paths.CHECKS / "hidden"
    return [p for p in sorted(paths.CHECKS.rglob("*.py")) if hidden not in p.parents]


def main(*, out_dir: Path) -> int:
    """Write the release into ``out_dir`` (which must not exist yet, or be empty)."""
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; choose a new folder for the release")
    for name in COPIED:
        _copy(paths.ROOT / name, out / name)
    for check in _public_checks():
        _copy(check, out / check.relative_to(paths.ROOT))
    for source in sorted((paths.ROOT / "grader").rglob("*.py")):
        _copy(source, out / source.relative_to(paths.ROOT))
    _copy(HERE / "README.md", out / "README.md")
    _copy(HERE / "classroom.yml", out / ".github" / "workflows" / "classroom.yml")
    (out / ".gitignore").write_text(".venv/\n__pycache__/\n*.egg-info/\n.hypothesis/\n", encoding="utf-8")
    print(f"wrote the student release to {out}", file=sys.stderr)
    return 0


def _copy(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
