"""seccomp filters for the sandbox: system calls no student process may make.

Self-contained (standard library only): it is copied into the sandbox beside
:mod:`grader.sandbox.inside.warden`. Two filters, both inherited by every child and never lifted:

* :func:`refuse_system_calls`, installed by the warden for everything in the
  sandbox: calls that reach memory no resource limit counts, do work behind the
  process's back, leave something for the next submission, move a process onto a
  core the grader did not give it, or change how another process is scheduled or
  limited (the warden outlives each submission, and every later keeper and worker
  it forks would inherit its priority and its limits);
* :func:`refuse_new_tasks`, installed in each worker before it loads the
  student's file: it stays one thread of one process. The keeper freezes the
  worker at each write to look at the memory it shares with it (see
  :mod:`grader.sandbox.inside.relay`); another process would share that memory and could wake
  the worker, and another thread could still run between the write and the freeze.
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
#: pidfd_getfd: where the grader runs as an ordinary user, every process of the sandbox is one).
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
        },
    ),
}
_REFUSED_EVERYWHERE = {"io_uring_setup": 425, "memfd_secret": 447, "pidfd_getfd": 438}
#: Per machine: prlimit64, allowed only on the calling process itself (pid 0, as ``setrlimit``
#: and ``getrlimit`` make it): the limits of another process of the user's are not the
#: student's to read or change (the warden's would be every later student's).
_PRLIMIT = {"x86_64": 302, "aarch64": 261}

#: Per machine: the calls that start a process or a thread (clone3 is the same everywhere).
_STARTING = {
    "x86_64": {"clone": 56, "fork": 57, "vfork": 58},
    "aarch64": {"clone": 220},
}
CLONE3 = 435

# classic BPF, as seccomp runs it
_LOAD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (the first argument's low half)


def refuse_system_calls() -> bool:
    """Install the sandbox's filter: the calls in _REFUSED fail with EPERM, as do all calls of
    another architecture's ABI. False where it cannot be installed."""
    known = _REFUSED.get(platform.machine())
    if known is None or not sys.platform.startswith("linux"):
        return False
    arch, numbers = known
    refused = sorted({*numbers.values(), *_REFUSED_EVERYWHERE.values()})
    checks = [(_JGE, 0x40000000)] if arch == 0xC000003E else []  # the x32 ABI's numbers
    checks += [(_JEQ, n) for n in refused]
    # instructions after the checks: prlimit64 (4), allow, deny; a jump counts from the next one
    program = [(_LOAD, 0, 0, _ARCH), (_JEQ, 0, len(checks) + 5, arch), (_LOAD, 0, 0, _NR)]
    for i, (op, number) in enumerate(checks):
        program.append((op, len(checks) - i + 3, 0, number))  # a match jumps to "deny"
    program += [
        (_JEQ, 0, 2, _PRLIMIT[platform.machine()]),  # not prlimit64: allow
        (_LOAD, 0, 0, _ARG0),
        (_JEQ, 0, 1, 0),  # of another process than the caller: deny
        (_RET, 0, 0, _ALLOW),
        (_RET, 0, 0, _EPERM),
    ]
    return _install(program)


def refuse_new_tasks() -> bool:
    """Install the worker's filter: fork, vfork, clone and clone3 fail with EPERM, so the
    worker stays one thread of one process. False where it cannot be installed."""
    machine = platform.machine()
    known = _REFUSED.get(machine)
    if known is None or not sys.platform.startswith("linux"):
        return False
    starting = sorted({*_STARTING[machine].values(), CLONE3})
    # arch (another ABI's calls were refused already: allow), nr, one test per call
    program = [(_LOAD, 0, 0, _ARCH), (_JEQ, 1, 0, known[0]), (_RET, 0, 0, _ALLOW), (_LOAD, 0, 0, _NR)]
    for i, number in enumerate(starting):
        program.append((_JEQ, len(starting) - i, 0, number))  # a match jumps to "deny"
    program += [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _EPERM)]
    return _install(program)


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
