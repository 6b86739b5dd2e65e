# Robustness: split_heads ignores every signal it may ignore, then loops forever; the other
# functions are correct. Only SIGKILL can stop it.
import signal

_IGNORABLE = (
    "SIGTERM",
    "SIGINT",
    "SIGALRM",
    "SIGHUP",
    "SIGQUIT",
    "SIGUSR1",
    "SIGUSR2",
    "SIGXCPU",
    "SIGVTALRM",
    "SIGPROF",
)
for _name in _IGNORABLE:
    signal.signal(getattr(signal, _name), signal.SIG_IGN)


def split_heads(x, n_heads):
    for name in _IGNORABLE:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    while True:
        pass
