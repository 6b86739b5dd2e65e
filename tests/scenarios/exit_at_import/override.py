import sys

sys.exit("done for today")
