"""Plain numpy a lesson's checks and diagnoses compute with: ``from grader.arrays import softmax``.

The code lives in :mod:`grader.core.arrays`.
"""

from .core.arrays import *  # noqa: F403 - this module is that one's public face
from .core.arrays import __all__  # noqa: F401
