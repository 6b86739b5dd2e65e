"""What a lesson's strategies import to draw their arrays and sizes: ``from grader.draw import
draw_many, SIZES``.

The code lives in :mod:`grader.engine.draw` (arrays) and :mod:`grader.engine.sizes` (the size
policy).
"""

from .engine import draw as _draw
from .engine import sizes as _sizes
from .engine.draw import *  # noqa: F403 - this module is that one's public face
from .engine.sizes import *  # noqa: F403 - and this one's

__all__ = [*_draw.__all__, *_sizes.__all__]
