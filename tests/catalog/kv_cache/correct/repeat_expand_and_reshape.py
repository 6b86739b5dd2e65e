"""A new axis after the heads, broadcast to n_rep copies, then folded into the heads axis
(as Hugging Face's repeat_kv does with expand and reshape)."""

import numpy as np


def repeat_kv(kv, n_rep):
    if n_rep < 1:
        raise ValueError("n_rep must be at least 1")
    *lead, H_kv, T, Dh = kv.shape
    wide = np.broadcast_to(kv[..., :, None, :, :], (*lead, H_kv, n_rep, T, Dh))
    return wide.reshape(*lead, H_kv * n_rep, T, Dh)
