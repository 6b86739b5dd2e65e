# Bad input: the file calls sys.exit at import, with a message that looks like a report.
import sys

sys.exit('{"score": 100, "max_score": 100}')
