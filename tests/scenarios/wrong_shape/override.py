# split_heads forgets to move the head axis in front of the tokens.
def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1 or D % n_heads:
        raise ValueError("n_heads must divide the width")
    return x.reshape(*batch, T, n_heads, D // n_heads)  # (..., T, H, Dh): axes in the wrong order
