"""What a lesson's ``diagnoses.py`` imports to declare its mistakes: ``from grader.diagnosis import Mistake``.

The code lives in :mod:`grader.core.diagnosis`.
"""

from .core.diagnosis import *  # noqa: F403 - this module is that one's public face
from .core.diagnosis import __all__  # noqa: F401
