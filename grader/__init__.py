"""A property-based autograder for numpy lessons.

A course holds lessons (see :mod:`grader.core.lesson`): a reference solution with
solution markers, and checks written as Hypothesis property tests. This package
loads a submission, runs a lesson's checks against it through pytest and turns
the outcome into a report (text for students, JSON for machines).
"""

__version__ = "0.1.0"
