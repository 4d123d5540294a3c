"""Counting a run's cost under valgrind: instructions, simulated cache misses
and the cycles they are estimated to take.

Job: run one command under `valgrind --tool=cachegrind` (or callgrind, for
the overhead study's instruction counts) and read the totals of the nine
cachegrind events from its out file.  The simulated caches are fixed
(CACHE_ARGS: I1 and D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte lines)
whatever the host has, so counts taken on two machines are comparable, and
estimated_cycles combines them by MODEL's formula:

    L1 hits = Ir + Dr + Dw - (I1mr + D1mr + D1mw)
    LL hits = (I1mr + D1mr + D1mw) - (ILmr + DLmr + DLmw)
    RAM     = ILmr + DLmr + DLmw
    cycles  = L1 hits + 5 LL hits + 35 RAM

(the weights of Itamar Turner-Trauring's estimate, which iai and gungraun
report as "estimated cycles").

Threads: valgrind runs one thread at a time and switches at blocking
system calls, whose timing is the machine's, so a program with two threads
counts differently from run to run.  With `threads=False` the command runs
through nothreads.py, under a seccomp filter that makes the creation of a
thread fail (clone with CLONE_THREAD gets EAGAIN, clone3 ENOSYS); the
patched runtime then sorts and renders the profile on the main thread, as
it does when it cannot start one, and a single-domain program counts the
same on every run.  A program that needs threads fails under it.

Invariants: counts depend only on the program, its arguments, environment
and working directory (never on the machine's load); every failure (no
valgrind, a timeout, a non-zero exit, no out file or no totals in it) is a
CountError naming the command, never a count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

EVENTS = ("Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw")
CACHE_ARGS = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
MODEL = ("cachegrind " + " ".join(a.lstrip("-") for a in CACHE_ARGS)
         + "; cycles = L1 hits + 5 LL hits + 35 RAM")
NOTHREADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nothreads.py")
STDERR_TAIL = 400


class CountError(Exception):
    """A counted run that produced no count (message names why)."""


def estimated_cycles(ev: dict) -> int:
    """Cycles estimated from the nine cachegrind events (module docstring)."""
    l1_miss = ev["I1mr"] + ev["D1mr"] + ev["D1mw"]
    ll_miss = ev["ILmr"] + ev["DLmr"] + ev["DLmw"]
    l1_hits = ev["Ir"] + ev["Dr"] + ev["Dw"] - l1_miss
    return l1_hits + 5 * (l1_miss - ll_miss) + 35 * ll_miss


def read_totals(path: str) -> dict:
    """{event: total} from a cachegrind or callgrind out file ("events:" and
    "summary:" or "totals:" lines)."""
    names = totals = None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = line.split()[1:]
    if names is None or totals is None:
        raise CountError(f"{path}: no events/summary lines")
    try:
        return {k: int(v) for k, v in zip(names, totals)}
    except ValueError:
        raise CountError(f"{path}: unreadable totals {' '.join(totals)[:80]!r}") from None


def valgrind_argv(valgrind: str, out_file: str, tool: str = "cachegrind",
                  cache_sim: bool = True, fair_sched: bool = False) -> list:
    """The valgrind options of a counted run (the command follows them)."""
    argv = [valgrind, f"--tool={tool}", f"--{tool}-out-file={out_file}"]
    if tool == "cachegrind":
        argv.append(f"--cache-sim={'yes' if cache_sim else 'no'}")
        if cache_sim:
            argv += CACHE_ARGS
    elif cache_sim:
        argv += ["--cache-sim=yes", *CACHE_ARGS]
    if fair_sched:
        argv.append("--fair-sched=yes")
    return argv


def count(argv: list, env: dict, cwd: str, timeout: float, *, tool: str = "cachegrind",
          cache_sim: bool = True, threads: bool = True, fair_sched: bool | None = None,
          capture_stdout: bool = False, valgrind: str = "valgrind") -> dict:
    """Run argv under valgrind; returns {"events": {name: total},
    "stdout": bytes or None, "stderr": str}.  threads=False runs it with
    thread creation disabled (module docstring); fair_sched (default: when
    threads are allowed) asks valgrind to hand the CPU to threads in turn."""
    exe = shutil.which(valgrind)
    if exe is None:
        raise CountError("valgrind not found on PATH; install it (apt-get install "
                         "valgrind) or pass --no-overhead")
    with tempfile.TemporaryDirectory(prefix="memprof-ci-count.") as tmp:
        out = os.path.join(tmp, f"{tool}.out")
        fair = threads if fair_sched is None else fair_sched
        cmd = valgrind_argv(exe, out, tool, cache_sim, fair_sched=fair) + list(argv)
        if not threads:
            cmd = [sys.executable, "-S", "-E", NOTHREADS, *cmd]
        try:
            r = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CountError(f"timed out after {timeout:g}s under valgrind") from None
        except OSError as e:
            raise CountError(f"cannot run {cmd[0]}: {e.strerror}") from None
        err = (r.stderr or b"").decode("utf-8", "replace")
        if r.returncode != 0:
            tail = err.strip().replace("\n", " | ")[-STDERR_TAIL:]
            raise CountError(f"exit status {r.returncode} under valgrind: {tail}")
        if not os.path.isfile(out):
            raise CountError(f"valgrind wrote no {tool} output")
        events = read_totals(out)
    missing = [e for e in (EVENTS if cache_sim else ("Ir",)) if e not in events]
    if missing:
        raise CountError(f"valgrind's output lacks {', '.join(missing)}")
    return {"events": events, "stdout": r.stdout, "stderr": err}
