"""Run a command in which no thread can be created: `nothreads.py CMD ARGS...`.

Job: make a counted run of a single-domain program reproducible to the
instruction (cachegrind.py).  Installs a seccomp filter on this process, which
CMD and its children inherit through exec, under which clone() with
CLONE_THREAD fails with EAGAIN and clone3() with ENOSYS (so that the C
library falls back to clone and gets EAGAIN); every other system call,
fork and vfork included, is allowed.  Then replaces itself with CMD.

Invariants: standard library only, run as a script (`python3 -S -E`);
nothing but the filter changes; where the filter cannot be installed (a
machine other than x86-64 or AArch64 Linux, or a kernel or sandbox that
refuses it) CMD still runs, after one line on stderr starting with
UNFILTERED, which cachegrind.py reads as "threads were possible".
"""

import ctypes
import os
import platform
import struct
import sys

UNFILTERED = "memprof-ci-nothreads: not filtered:"
# Per machine: seccomp(2)'s number, clone(2)'s number, the audit arch.
ARCHES = {"x86_64": (317, 56, 0xC000003E), "aarch64": (277, 220, 0xC00000B7)}
NR_CLONE3 = 435
CLONE_THREAD = 0x00010000
EAGAIN, ENOSYS = 11, 38
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
# classic BPF opcodes: load word at absolute offset, jump if equal, jump if
# any bit set, return
LD_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
# struct seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low word on
# these little-endian machines)
OFF_NR, OFF_ARCH, OFF_ARG0 = 0, 4, 16


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _op(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def program(clone_nr: int, arch: int) -> bytes:
    """The filter: a foreign arch passes; clone3 -> ENOSYS; clone with
    CLONE_THREAD -> EAGAIN; everything else passes."""
    return b"".join([
        _op(LD_ABS, 0, 0, OFF_ARCH),
        _op(JEQ, 1, 0, arch),
        _op(RET, 0, 0, RET_ALLOW),
        _op(LD_ABS, 0, 0, OFF_NR),
        _op(JEQ, 0, 1, NR_CLONE3),
        _op(RET, 0, 0, RET_ERRNO | ENOSYS),
        _op(JEQ, 1, 0, clone_nr),
        _op(RET, 0, 0, RET_ALLOW),
        _op(LD_ABS, 0, 0, OFF_ARG0),
        _op(JSET, 0, 1, CLONE_THREAD),
        _op(RET, 0, 0, RET_ERRNO | EAGAIN),
        _op(RET, 0, 0, RET_ALLOW),
    ])


def install() -> str | None:
    """Install the filter on this process; None, or why it could not be."""
    machine = platform.machine()
    if sys.platform != "linux" or machine not in ARCHES:
        return f"no filter for {sys.platform} {machine}"
    seccomp_nr, clone_nr, arch = ARCHES[machine]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
    code = program(clone_nr, arch)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.syscall(seccomp_nr, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(prog)) != 0:
        return f"seccomp: {os.strerror(ctypes.get_errno())}"
    return None


def main(argv: list) -> int:
    if not argv:
        print("usage: nothreads.py CMD [ARGS...]", file=sys.stderr)
        return 2
    why = install()
    if why is not None:
        print(f"{UNFILTERED} {why}", file=sys.stderr, flush=True)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"nothreads.py: cannot run {argv[0]}: {e.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
