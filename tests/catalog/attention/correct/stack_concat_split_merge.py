"""split_heads stacks the column blocks with np.stack; merge_heads glues the heads back with np.concatenate."""

import numpy as np


def split_heads(x, n_heads):
    D = x.shape[-1]
    if n_heads < 1:
        raise ValueError(f"n_heads must be at least 1, got {n_heads}")
    if D % n_heads:
        raise ValueError(f"cannot cut D={D} into {n_heads} equal heads")
    Dh = D // n_heads
    blocks = [x[..., :, h * Dh : (h + 1) * Dh] for h in range(n_heads)]  # H arrays of (..., T, Dh)
    return np.stack(blocks, axis=-3)  # (..., H, T, Dh)


def merge_heads(x):
    H = x.shape[-3]
    return np.concatenate([x[..., h, :, :] for h in range(H)], axis=-1)  # (..., T, H*Dh)
