"""An autograder for the lesson "Causal masks and multiple heads".

The checks live in ``tests/checks`` as Hypothesis property tests; this package
loads a submission, runs the checks against it through pytest and turns the
outcome into a report (text for students, JSON for machines).
"""

__version__ = "0.1.0"

#: The graded functions, in the order the lesson introduces them.
EXERCISES = ("apply_causal_mask", "split_heads", "merge_heads", "mha_forward")
