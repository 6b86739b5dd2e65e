"""Results as their readers want them: pure functions from :mod:`grader.core.results` to text or dicts.

Text for a terminal (:mod:`.text`), a score table (:mod:`.table`), the JSON report
(:mod:`.json_report`, lossless), Gradescope's results.json (:mod:`.gradescope`),
GitHub Classroom's result and GitHub Actions' annotations and job summary (:mod:`.github`),
JUnit XML (:mod:`.junit`), the gradebook and its CSV (:mod:`.gradebook`) in the layout an LMS
imports (:mod:`.lms`), and a lesson's nbgrader notebook (:mod:`.notebook`).
"""

#: The formats one submission's report is written in (``grade --format``).
REPORT_FORMATS = ("text", "json", "gradescope", "github", "junit", "html")
#: The formats a table of scores is written in (``gallery --format``).
TABLE_FORMATS = ("table", "json")
#: The formats the catalog's findings are written in (``catalog --format``).
CATALOG_FORMATS = ("text", "json")
