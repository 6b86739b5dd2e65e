"""Reshapes (..., H, T, Dh) straight to (..., T, H*Dh) without moving the head axis back next to Dh first."""

EXERCISE = "merge_heads"
DIAGNOSIS = "reshape-without-transpose"


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return x.reshape(*batch, T, H * Dh)
