"""Where a student's code runs: the executors that call its functions, one call at a time.

* :mod:`.inprocess`: in the checker's own process (isolation ``none``), or not at all
  (a submission that was refused);
* :mod:`.session`: in a sandbox, one worker per submission, each call watched by its keeper;
* :mod:`.wardens`: the sandboxes themselves and the isolation levels.

The code that runs inside a sandbox (``grader/worker.py``, ``relay.py``,
``seccomp.py`` and ``warden.py``) is copied into it as loose files: it imports
only itself, the standard library and numpy, never this package.

Every executor has the same face: ``problem`` (why the file cannot be used),
``isolation``, ``signatures``, ``call`` and ``audited_call`` (each a
:class:`grader.core.results.CallOutcome`), and ``close``.
"""
