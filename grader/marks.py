"""The ``graded`` mark, where a lesson's checks import it: ``from grader.marks import graded``.

The code lives in :mod:`grader.engine.marks`.
"""

from .engine.marks import *  # noqa: F403 - this module is that one's public face
from .engine.marks import __all__  # noqa: F401
