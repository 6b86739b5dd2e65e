"""split_heads and merge_heads with np.moveaxis instead of swapaxes, and the ValueError raised before any reshaping."""

import numpy as np


def split_heads(x, n_heads):
    if n_heads < 1 or x.shape[-1] % n_heads != 0:
        raise ValueError(f"cannot split width {x.shape[-1]} into {n_heads} heads")
    x = x.reshape(x.shape[:-1] + (n_heads, x.shape[-1] // n_heads))  # (..., T, H, Dh)
    return np.moveaxis(x, -2, -3)  # (..., H, T, Dh)


def merge_heads(x):
    x = np.moveaxis(x, -3, -2)  # (..., T, H, Dh)
    return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))  # (..., T, H*Dh)
