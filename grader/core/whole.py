"""Files written whole or not at all: a reader never meets half a gradebook or half a page."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def whole_file(out: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """A UTF-8 text file to write that takes the place of ``out`` only once the block ends
    without an error; on any error (a folder at ``out``, a full disk, Ctrl-C) nothing is left
    beside ``out`` and ``out`` is as it was."""
    out = Path(out)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline=newline, encoding="utf-8") as f:
            yield f
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
