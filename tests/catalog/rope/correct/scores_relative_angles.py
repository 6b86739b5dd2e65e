"""rope_attention_scores without turning anything first: with pairs as complex numbers, score
[i, j] is the real part of the sum over pairs of q_i * conj(k_j) * exp(1j * (i - j) * speed)."""

EXERCISE = "rope_attention_scores"

import numpy as np


def rope_attention_scores(q, k):
    Dh = q.shape[-1]
    if Dh % 2:
        raise ValueError("Dh must be even")
    speed = 10000.0 ** (-2 * np.arange(Dh // 2) / Dh)  # (Dh // 2,)
    qc = q[..., 0::2] + 1j * q[..., 1::2]  # (..., T_q, Dh // 2)
    kc = k[..., 0::2] + 1j * k[..., 1::2]  # (..., T_k, Dh // 2)
    distance = np.arange(q.shape[-2])[:, None] - np.arange(k.shape[-2])[None, :]  # (T_q, T_k)
    turn = np.exp(1j * distance[..., None] * speed)  # (T_q, T_k, Dh // 2)
    scores = np.einsum("...ip,...jp,ijp->...ij", qc, np.conj(kc), turn).real
    return (scores / np.sqrt(Dh)).astype(q.dtype)
