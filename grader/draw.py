"""What a lesson's strategies import to draw their arrays: ``from grader.draw import draw_many``.

The code lives in :mod:`grader.engine.draw`.
"""

from .engine.draw import *  # noqa: F403 - this module is that one's public face
from .engine.draw import __all__  # noqa: F401
