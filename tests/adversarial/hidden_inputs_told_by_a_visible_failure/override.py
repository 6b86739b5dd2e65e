# Leaking hidden inputs: mha_forward is the reference's, except that it writes down what it is
# sent when the tokens are float32 (only a hidden check sends those), in a global and in a file
# of its working folder, and from then on raises an error whose message holds what it saw. A
# visible check, a picture or a diagnosis computed after that would carry it to the student.


_honest_mha_forward = mha_forward
_SEEN = []
_NOTES = "seen-by-mha-forward.txt"


def _told():
    told = list(_SEEN)
    try:
        with open(_NOTES) as notes:
            told.append(notes.read())
    except OSError:
        pass
    return told


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    told = _told()
    if told:
        raise ValueError("hidden inputs seen: " + "; ".join(told))
    if x.dtype == np.float32:
        note = f"x of shape {x.shape} in float32, n_heads={n_heads}, causal={causal}"
        _SEEN.append(note)
        try:
            with open(_NOTES, "w") as notes:
                notes.write(note)
        except OSError:
            pass
    return _honest_mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal, return_weights)
