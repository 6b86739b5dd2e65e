# Robustness: correct functions, but at import and in mha_forward the file tries to reach a
# server the test runs on the host's loopback (TCP over IPv4 and IPv6, and UDP), sending its
# marker; each attempt gives up after half a second.
import socket

_MARK = b"{{MARKER}}"


def _phone_home():
    for family, address in ((socket.AF_INET, ("127.0.0.1", {{PORT}})), (socket.AF_INET6, ("::1", {{PORT}}))):
        try:
            with socket.create_connection(address[:2], timeout=0.5) as s:
                s.sendall(_MARK)
        except OSError:
            pass
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.sendto(_MARK, address)
        except OSError:
            pass
    try:
        with socket.create_connection(("localhost", {{PORT}}), timeout=0.5) as s:
            s.sendall(_MARK)
    except OSError:
        pass


_phone_home()
_honest_mha = mha_forward


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    _phone_home()
    return _honest_mha(x, W_q, W_k, W_v, W_o, n_heads, causal, return_weights)
