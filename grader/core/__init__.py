"""The bottom layer: what grading is about, with no pytest, no Hypothesis and no student code.

Results and settings as frozen dataclasses and enums (:mod:`.results`,
:mod:`.settings`), the errors every layer raises (:mod:`.errors`), lessons and
courses (:mod:`.lesson`), and the one way a submission is found and read
(:mod:`.intake`). Nothing here imports another layer of the grader.
"""
