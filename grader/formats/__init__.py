"""Results as their readers want them: pure functions from :mod:`grader.core.results` to text or dicts.

Text for a terminal (:mod:`.text`), a score table (:mod:`.table`), the JSON report
(:mod:`.json_report`, lossless), Gradescope's results.json (:mod:`.gradescope`),
GitHub Classroom's result (:mod:`.github`), the gradebook and its CSV
(:mod:`.gradebook`), and a lesson's nbgrader notebook (:mod:`.notebook`).
"""
