# Robustness: two memory bombs of about 10 GB, one allocated by numpy (split_heads), one as a
# plain Python list (merge_heads); the other functions are correct.


def split_heads(x, n_heads):
    bomb = np.ones(10 * 2**30, dtype=np.uint8)
    return bomb


def merge_heads(x):
    bomb = [0] * (10 * 2**30 // 8)
    return bomb
