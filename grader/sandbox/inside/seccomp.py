"""seccomp filters for the sandbox: system calls no student process may make.

Self-contained (standard library only): it is copied into the sandbox beside
:mod:`grader.sandbox.inside.warden`. Two filters, both inherited by every child and never lifted:

* :func:`refuse_system_calls`, installed by the warden for everything in the
  sandbox: calls that reach memory no resource limit counts, do work behind the
  process's back, leave something for the next submission, move a process onto a
  core the grader did not give it, change how another process is scheduled or
  limited (every keeper and worker the warden forks would inherit its priority and its
  limits), or lock or watch a file: the sandbox's files are the machine's own (the Python,
  numpy, ``/dev/null``), so a lock taken or an access watched on one is seen by every other
  sandbox running at the same time, and by the machine;
* :func:`refuse_new_tasks`, installed in each worker before it loads the
  student's file: it stays one thread of one process, and signals no process but itself. The
  kernel stops the worker at each write to its answers, and the trusted side looks at the
  memory its arguments are in while it is stopped (see :mod:`grader.sandbox.watching`); another
  process would share that memory and could wake the worker, and another thread could still
  run between the write and the stop. A signal to the keeper or the warden (sent, or asked of
  the kernel as a descriptor's owner) would end the sandbox at a moment the student chose:
  whether the call that sent it had its answer read first was a race, and the file's score
  changed from run to run.
"""

from __future__ import annotations

import platform
import sys

#: Per machine: the audit architecture seccomp reports, and the calls refused in a sandbox.
#: Each reaches memory that no resource limit counts (SysV shared memory, message queues
#: and semaphores outlive their processes; memfd files hold pages no address-space limit
#: sees), or does work behind the process's back (io_uring, Linux AIO), or leaves something
#: for the next submission (POSIX message queues, kernel keyring keys), or moves the
#: student's processes onto a core the grader did not give them, or changes the priority or
#: scheduling of a process (its own, or the warden's: a process may change those of any other
#: of its user's, and the warden's are inherited by every later student's processes), or reads,
#: writes or takes the descriptors of another process of the user's (ptrace, process_vm_*,
#: pidfd_getfd: where the grader runs as an ordinary user, every process of the sandbox is one),
#: or locks a file or watches its accesses (flock, inotify and fanotify marks: the files of a
#: sandbox are the machine's, and a lock or an access is seen from any other sandbox at the
#: same time; the locks of fcntl are refused in :func:`refuse_system_calls`).
_REFUSED = {
    "x86_64": (
        0xC000003E,
        {
            "shmget": 29,
            "semget": 64,
            "msgget": 68,
            "memfd_create": 319,
            "io_setup": 206,
            "mq_open": 240,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "sched_setaffinity": 203,
            "setpriority": 141,
            "sched_setparam": 142,
            "sched_setscheduler": 144,
            "sched_setattr": 314,
            "ioprio_set": 251,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "flock": 73,
            "inotify_add_watch": 254,
            "fanotify_mark": 301,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "shmget": 194,
            "semget": 190,
            "msgget": 186,
            "memfd_create": 279,
            "io_setup": 0,
            "mq_open": 180,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "sched_setaffinity": 122,
            "setpriority": 140,
            "sched_setparam": 118,
            "sched_setscheduler": 119,
            "sched_setattr": 274,
            "ioprio_set": 30,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "flock": 32,
            "inotify_add_watch": 27,
            "fanotify_mark": 263,
        },
    ),
}
_REFUSED_EVERYWHERE = {"io_uring_setup": 425, "memfd_secret": 447, "pidfd_getfd": 438}
#: Per machine: prlimit64, allowed only on the calling process itself (pid 0, as ``setrlimit``
#: and ``getrlimit`` make it): the limits of another process of the user's are not the
#: student's to read or change (the warden's would be every later student's).
_PRLIMIT = {"x86_64": 302, "aarch64": 261}
#: Per machine: fcntl, whose commands that lock a file, read its locks, lease it or watch its
#: folder (:data:`LOCKING`) are refused; the others (flags, owners, the signal of a descriptor:
#: the keeper's watch over its worker uses them) are not.
_FCNTL = {"x86_64": 72, "aarch64": 25}
#: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_NOTIFY.
LOCKING = (5, 6, 7, 36, 37, 38, 1024, 1026)

#: Per machine: the calls that start a process or a thread (clone3 is the same everywhere),
#: or another program in the worker's place: execve and execveat (a new program is dumpable
#: again, whatever the process was: its /proc files its own user's, and a red team's wrote 19
#: to its /proc/self/autogroup, which made its waits the machine's and its grade unfinished).
_STARTING = {
    "x86_64": {"clone": 56, "fork": 57, "vfork": 58, "execve": 59, "execveat": 322},
    "aarch64": {"clone": 220, "execve": 221, "execveat": 281},
}
CLONE3 = 435

# classic BPF, as seccomp runs it
_LOAD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
# offsets in struct seccomp_data (arguments: their low half)
_NR, _ARCH, _ARG0, _ARG1, _ARG2 = 0, 4, 16, 24, 32


def refuse_system_calls() -> bool:
    """Install the sandbox's filter: the calls in _REFUSED fail with EPERM, as do all calls of
    another architecture's ABI, prlimit64 on another process and fcntl's :data:`LOCKING`
    commands. False where it cannot be installed."""
    machine = platform.machine()
    known = _REFUSED.get(machine)
    if known is None or not sys.platform.startswith("linux"):
        return False
    arch, numbers = known
    refused = sorted({*numbers.values(), *_REFUSED_EVERYWHERE.values()})
    checks = [(_JGE, 0x40000000)] if arch == 0xC000003E else []  # the x32 ABI's numbers
    checks += [(_JEQ, n) for n in refused]
    program = [
        (_LOAD, None, None, _ARCH),
        (_JEQ, None, "deny", arch),
        (_LOAD, None, None, _NR),
        *((op, "deny", None, number) for op, number in checks),
        (_JEQ, None, "fcntl", _PRLIMIT[machine]),
        (_LOAD, None, None, _ARG0),
        (_JEQ, "allow", "deny", 0),  # prlimit64 of another process than the caller: deny
        ("fcntl", _JEQ, None, "allow", _FCNTL[machine]),
        (_LOAD, None, None, _ARG1),
        *((_JEQ, "deny", None, command) for command in LOCKING),
        ("allow", _RET, None, None, _ALLOW),
        ("deny", _RET, None, None, _EPERM),
    ]
    return _install(_assembled(program))


def _assembled(program: list[tuple]) -> list[tuple[int, int, int, int]]:
    """Classic BPF from instructions whose jumps name their targets: each instruction is
    ``(op, if_true, if_false, k)``, optionally preceded by its own label; a target is a label or
    None (the next instruction)."""
    labelled = [(i[0], i[1:]) if isinstance(i[0], str) else (None, i) for i in program]
    where = {label: n for n, (label, _) in enumerate(labelled) if label is not None}
    bpf = []
    for n, (_, (op, if_true, if_false, k)) in enumerate(labelled):
        jumps = [0 if target is None else where[target] - n - 1 for target in (if_true, if_false)]
        if not all(0 <= jump < 256 for jump in jumps):
            raise ValueError("a seccomp jump out of reach")
        bpf.append((op, *jumps, k))
    return bpf


#: Per machine: the calls that signal a process or a thread, with the process (or thread)
#: as their first argument, by where their signal's number is (the second argument, or the
#: third): allowed on the worker itself alone (its one thread's number is its own), and never
#: with SIGCONT. pidfd_send_signal (the same everywhere) names its process by a descriptor:
#: refused.
_SIGNALLING = {
    "x86_64": ({"kill": 62, "tkill": 200, "rt_sigqueueinfo": 129}, {"tgkill": 234, "rt_tgsigqueueinfo": 297}),
    "aarch64": (
        {"kill": 129, "tkill": 130, "rt_sigqueueinfo": 138},
        {"tgkill": 131, "rt_tgsigqueueinfo": 240},
    ),
}
PIDFD_SEND_SIGNAL = 424
#: The keeper freezes the worker (SIGSTOP, sent by the kernel at each write) while it looks at
#: the arguments; any SIGCONT ends a stop, whoever sends it, and the worker's own ended the
#: freeze before the keeper looked (a change put back unseen) or before it saw the stop (the
#: call then waited out its time limit, on whichever check the timing chose).
SIGCONT = 18
#: Per machine: timer_create, whose timer may send any signal (SIGCONT included) named in a
#: structure no filter can read: refused (Python's own timers are ``setitimer``'s).
_TIMER_CREATE = {"x86_64": 222, "aarch64": 107}
#: Per machine: ioctl, whose commands that make a process a descriptor's owner (the kernel
#: then signals it on the descriptor's input and output) are refused in a worker: FIOSETOWN,
#: SIOCSPGRP, TIOCSPGRP.
_IOCTL = {"x86_64": 16, "aarch64": 29}
OWNING = (0x8901, 0x8902, 0x5410)
#: fcntl's F_SETOWN, F_SETSIG and F_SETOWN_EX, refused: a worker owns no descriptor, so the
#: kernel signals nobody, the worker included, on its descriptors' input and output (the
#: keeper's reads of the worker's answers woke a worker that owned its end, with the signal of
#: its choice).
OWNER_COMMANDS = (8, 10, 15)
#: Per machine: prctl, refused with PR_SET_DUMPABLE: the worker is not dumpable (the warden is
#: not, and it forks everything), so its /proc files are root's; made dumpable again, it wrote
#: 19 to its own /proc/self/autogroup and ran at a sixtieth of its core whenever anything else
#: ran there: its waits counted as the machine's, and it made its grade unfinished at will.
_PRCTL = {"x86_64": 157, "aarch64": 167}
PR_SET_DUMPABLE = 4


def refuse_new_tasks(own: int) -> bool:
    """Install the worker's filter (``own``: its process number, as it sees it): fork, vfork,
    clone, clone3, execve and execveat fail with EPERM, so the worker stays one thread of one
    process running the grader's Python; so does every signal it would send to another
    process than itself, or to itself to go on (SIGCONT), directly, through a timer or through
    a descriptor it owns; and it stays undumpable (:data:`PR_SET_DUMPABLE`). False where it
    cannot be installed."""
    machine = platform.machine()
    known = _REFUSED.get(machine)
    if known is None or not sys.platform.startswith("linux"):
        return False
    starting = sorted({*_STARTING[machine].values(), CLONE3, PIDFD_SEND_SIGNAL, _TIMER_CREATE[machine]})
    second, third = (sorted(calls.values()) for calls in _SIGNALLING[machine])
    program = [  # every jump goes forward: each part ends in its own verdicts
        (_LOAD, None, None, _ARCH),  # another ABI's calls were refused already: allowed here
        (_JEQ, None, "allow", known[0]),
        (_LOAD, None, None, _NR),
        *((_JEQ, "deny", None, number) for number in starting),
        *((_JEQ, "signal1", None, number) for number in second),
        *((_JEQ, "signal2", None, number) for number in third),
        (_JEQ, "fcntl", None, _FCNTL[machine]),
        (_JEQ, "ioctl", None, _IOCTL[machine]),
        (_JEQ, "prctl", None, _PRCTL[machine]),
        (_RET, None, None, _ALLOW),
        ("prctl", _LOAD, None, None, _ARG0),
        (_JEQ, "deny", "allow", PR_SET_DUMPABLE),
        ("signal1", _LOAD, None, None, _ARG0),
        (_JEQ, None, "deny", own),
        (_LOAD, None, None, _ARG1),
        (_JEQ, "deny", "allow", SIGCONT),
        ("signal2", _LOAD, None, None, _ARG0),
        (_JEQ, None, "deny", own),
        (_LOAD, None, None, _ARG2),
        (_JEQ, "deny", "allow", SIGCONT),
        ("fcntl", _LOAD, None, None, _ARG1),
        *((_JEQ, "deny", None, command) for command in OWNER_COMMANDS),
        (_RET, None, None, _ALLOW),
        ("ioctl", _LOAD, None, None, _ARG1),
        *((_JEQ, "deny", None, command) for command in OWNING),
        ("allow", _RET, None, None, _ALLOW),
        ("deny", _RET, None, None, _EPERM),
    ]
    return _install(_assembled(program))


def _install(program: list[tuple[int, int, int, int]]) -> bool:
    import ctypes

    class Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint),
        ]

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*instruction) for instruction in program])
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    prctl = getattr(libc, "prctl", None)
    if prctl is None:  # not Linux after all
        return False
    if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: required to install a filter
        return False
    fprog = Fprog(len(program), filters)
    return prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
