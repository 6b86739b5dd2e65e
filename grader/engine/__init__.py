"""The engine around pytest and Hypothesis: a lesson's checks run against one submission.

:mod:`.run` starts pytest with the plugin (:mod:`.plugin`: options, profiles, the
``student`` fixture), which calls the student's functions through
:mod:`.submission` (a view per exercise over an executor of :mod:`grader.sandbox`);
:mod:`.marks` and :mod:`.expect` are what checks are written with, and
:mod:`.feedback` turns the way a check ended into a status and a paragraph.
"""
