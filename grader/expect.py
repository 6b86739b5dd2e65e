"""The assertions of a lesson's checks, where they import them: ``from grader import expect``.

The code lives in :mod:`grader.engine.expect`.
"""

from .engine.expect import *  # noqa: F403 - this module is that one's public face
from .engine.expect import __all__  # noqa: F401
