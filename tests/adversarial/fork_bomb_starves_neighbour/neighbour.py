# The neighbour: correct functions, except that mha_forward does its work in a helper thread
# (a legitimate, if unusual, choice). It is graded while the case holds the process budget
# that every sandbox's user shares; it must still get full marks.
import threading

_honest_mha = mha_forward


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    result = {}

    def work():
        result["value"] = _honest_mha(x, W_q, W_k, W_v, W_o, n_heads, causal, return_weights)

    helper = threading.Thread(target=work)
    helper.start()
    helper.join()
    return result["value"]
