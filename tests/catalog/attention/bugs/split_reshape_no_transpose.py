"""Reshapes straight to (..., H, T, Dh) without the transpose, so a head's rows are chunks of the flattened sequence instead of one token each."""

EXERCISE = "split_heads"
DIAGNOSIS = "reshape-without-transpose"


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1:
        raise ValueError("need at least one head")
    if D % n_heads != 0:
        raise ValueError(f"D={D} is not divisible by n_heads={n_heads}")
    Dh = D // n_heads
    return x.reshape(*batch, n_heads, T, Dh)  # same number of elements, so it "works"
