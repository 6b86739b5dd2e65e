"""Only a single (H, T, Dh) stack is supported: `H, T, Dh = x.shape` fails as soon as there are batch axes."""

EXERCISE = "merge_heads"
DIAGNOSIS = "no-batch-support"


def merge_heads(x):
    H, T, Dh = x.shape
    x = x.transpose(1, 0, 2)  # (T, H, Dh)
    return x.reshape(T, H * Dh)
