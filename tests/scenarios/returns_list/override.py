# merge_heads hands back nested Python lists instead of an array.
_reference_merge = merge_heads


def merge_heads(x):
    return _reference_merge(x).tolist()
