"""The top layer: one module per command, each a ``main(*, ...)`` with keyword-only arguments.

:mod:`grader.cli` parses the command line, resolves the course, the lesson and the
:class:`grader.core.settings.Settings` once, and calls the command's ``main``.
"""
