# Bad input: while loading, the file closes its end of the reply pipe and stays alive for 11 s
# (the load limit is 10 s) before exiting. With an endless sleep instead, a grader that waits
# for the worker to exit would wait forever.
import os
import sys
import time

os.close(int(sys.argv[2]))
time.sleep(11)
os._exit(0)
