# Robustness: merge_heads returns a 300 MB array (within the worker's 2 GiB, far beyond what a
# reply may carry); the other functions are correct.


def merge_heads(x):
    return np.zeros(300_000_000, dtype=np.uint8)
