"""The pytest plugin of the checks, where pytest loads it: ``-p grader.plugin``.

The code lives in :mod:`grader.engine.plugin`.
"""

from .engine.plugin import *  # noqa: F403 - this module is that one's public face
from .engine.plugin import __all__  # noqa: F401
