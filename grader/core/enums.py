"""The base of the grader's enums."""

from enum import Enum


class StrEnum(str, Enum):
    """An enum whose members are their values wherever text is made: in f-strings, ``str()``
    and JSON alike (Python 3.11's ``enum.StrEnum``, for 3.10 too)."""

    def __str__(self) -> str:
        return self.value
