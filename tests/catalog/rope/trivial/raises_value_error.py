"""ValueError for everything: every refusal check asks for one."""


def rope_angles(T, Dh, base=10000.0):
    raise ValueError("no")


def apply_rope(x, positions=None, base=10000.0):
    raise ValueError("no")


def rope_attention_scores(q, k):
    raise ValueError("no")
