"""Only a single (T, D) sequence is supported: `T, D = x.shape` fails as soon as x has batch axes."""

EXERCISE = "split_heads"
DIAGNOSIS = "no-batch-support"


def split_heads(x, n_heads):
    T, D = x.shape
    if n_heads < 1:
        raise ValueError("need at least one head")
    if D % n_heads != 0:
        raise ValueError(f"D={D} is not divisible by n_heads={n_heads}")
    Dh = D // n_heads
    x = x.reshape(T, n_heads, Dh)  # (T, H, Dh)
    return x.transpose(1, 0, 2)  # (H, T, Dh)
