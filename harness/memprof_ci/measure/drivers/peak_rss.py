"""A run's peak resident set size, as the kernel reports it to wait4.

Job: the RSS measure of the overhead library, for the gate's added peak
RSS (overhead_rss.py) and the overhead study (pairs.py): run one command
under a small launcher (LAUNCHER) that forks, execs it and reaps it with
os.wait4, whose rusage gives the child's peak RSS (Linux: kilobytes).

Invariants: a run that cannot start, fails or times out raises
InfraError naming the caller's `what`, never a size; a timed-out run's
whole process group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from ...errors import InfraError


# The launcher: forks, runs the command (its stderr to /dev/null) and
# prints the child's status and peak RSS from wait4 on its own stderr.
# Linux carries a process's peak RSS across fork and exec, so a child of
# the harness's own (large) interpreter would report at least the
# harness's size; a fresh `python3 -S -I` is about 6 MB, the floor below
# which a program's peak cannot be seen.
LAUNCHER = """\
import os, sys
pid = os.fork()
if pid == 0:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 2)
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}\\n")
"""


def peak_kb(argv: list, env: dict, cwd: str | None, timeout: float, what: str) -> int:
    """One run of argv under the launcher; its peak RSS in kilobytes.
    Failures raise InfraError naming `what`."""
    try:
        p = subprocess.Popen([sys.executable, "-S", "-I", "-c", LAUNCHER, *argv],
                             cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    except OSError as e:
        raise InfraError(f"{what}: cannot run {argv[0]} for its peak RSS: "
                         f"{e.strerror or e}") from None
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise InfraError(f"{what}: the peak RSS run timed out after {timeout:g}s") from None
    fields = err.decode("ascii", "replace").split()
    if p.returncode != 0 or len(fields) != 2 or not all(f.lstrip("-").isdigit() for f in fields):
        raise InfraError(f"{what}: the peak RSS launcher failed (status {p.returncode})")
    status, kb = int(fields[0]), int(fields[1])
    if status != 0:
        raise InfraError(f"{what}: the peak RSS run exited with status {status}")
    return kb
