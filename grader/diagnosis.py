"""What a lesson's ``diagnoses.py`` imports to declare its mistakes: ``from grader.diagnosis import
Mistake, changed``.

The code lives in :mod:`grader.core.diagnosis` (the machinery) and :mod:`grader.core.mistakes`
(stock tests of the calls seen, for ``shows=``).
"""

from .core import diagnosis as _diagnosis
from .core import mistakes as _mistakes
from .core.diagnosis import *  # noqa: F403 - this module is that one's public face
from .core.mistakes import *  # noqa: F403 - and this one's

__all__ = [*_diagnosis.__all__, *_mistakes.__all__]
