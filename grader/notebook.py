"""What a lesson's nbgrader notebook imports: ``from grader.notebook import grade_here``.

The notebooks handed out keep this path; the code lives in :mod:`grader.commands.cell`.
"""

from .commands.cell import grade_here

__all__ = ["grade_here"]
