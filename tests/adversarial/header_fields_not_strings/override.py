# Robustness: correct functions, but the file wraps the worker's Channel.send so that each
# failed outcome's "kind", and the "type" of every answer to split_heads, is a numpy array: an
# array compared with a string gives an array, whose truth Python refuses to tell. The
# trusted side must treat such fields as the student's mistake, never stop with a grader error.
import sys

_mod = next(
    (
        m
        for m in list(sys.modules.values())
        if isinstance(getattr(m, "Channel", None), type) and callable(getattr(m, "encode", None))
    ),
    None,
)
_calls = sys.__dict__.setdefault("_header_calls", [])
if _mod is not None and not hasattr(_mod.Channel.send, "_arrays"):
    _real_send = _mod.Channel.send

    def _send(self, message, *args, **kwargs):
        if message.get("type") == "outcome" and _calls and _calls[-1] == "split_heads":
            message = {**message, "type": np.array([1, 2])}
        elif message.get("type") == "outcome" and _calls and _calls[-1] == "merge_heads":
            message = {**message, "ok": False, "kind": np.array([1, 2]), "message": "x"}
        if (
            message.get("type") is not None
            and not isinstance(message.get("type"), str)
            or message.get("type") == "outcome"
        ):
            _calls.clear()
        _real_send(self, message, *args, **kwargs)

    _send._arrays = True
    _mod.Channel.send = _send

_honest_split, _honest_merge = split_heads, merge_heads


def split_heads(x, n_heads):
    _calls.append("split_heads")
    return _honest_split(x, n_heads)


def merge_heads(x):
    _calls.append("merge_heads")
    return _honest_merge(x)
