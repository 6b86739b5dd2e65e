"""The code that runs inside a sandbox: copied into it as loose files, side by side (:data:`FILES`).

* ``worker.py``: loads a student's file and answers calls of its functions, over a wire format
  that cannot execute code; the trusted side imports it too, for the same rules and format;
* ``warden.py``: the sandbox's first process, which forks a keeper per submission and a worker
  per keeper, and ends them all between submissions (the trusted side talks to the worker
  directly, and watches what each call does to its arguments: :mod:`grader.sandbox.watching`);
* ``seccomp.py``: the system-call filters every worker inherits.

Inside, they import only one another, the standard library and numpy, never the grader's other
packages (``tests/test_layers.py`` holds them to it); this file imports nothing.
"""

#: The files copied into every sandbox, in the order they are written.
FILES = ("worker.py", "seccomp.py", "warden.py")
