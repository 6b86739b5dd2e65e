"""What a lesson's ``pictures.py`` imports to declare its pictures: ``from grader.pictures import Picture``.

The code lives in :mod:`grader.core.pictures`.
"""

from .core.pictures import *  # noqa: F403 - this module is that one's public face
from .core.pictures import __all__  # noqa: F401
