"""Timed runs: each round one hyperfine call that runs several commands once.

Job: time commands for the overhead check (off and on) and the overhead
study (every variant of a benchmark).  A round is one `hyperfine -N --runs 1
--export-json` call running each command once, in the order given, and
reads each run's wall time and CPU time (user + system, as the kernel
counts them, and the system part alone).  interleaved() runs rounds with
the order rotated from round to round, so that drift over the measurement
(a machine that other jobs slow down in phases) hits every command alike,
and the runs of one round pair up.

Commands are argv lists, run without a shell (-N).  A command that needs
an environment of its own carries it as an `env` prefix (env_argv), so the
commands of a round differ only in what they name.

Invariants: a missing hyperfine, a command that fails, a round that times
out or a JSON file that cannot be read raises HyperfineError (an
InfraError, one line), never a time; wall and CPU times are at least
RESOLUTION (rusage has a resolution, and a ratio needs a positive
denominator).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from typing import NamedTuple

from ...errors import InfraError

RESOLUTION = 1e-4
STDERR_TAIL = 400


class HyperfineError(InfraError):
    """A round that produced no times (message names why, in one line)."""


class Run(NamedTuple):
    wall: float      # seconds
    cpu: float       # user + system seconds
    system: float    # system seconds alone (the kernel's share)


def env_argv(argv: list, assign: dict | None = None, unset: tuple = ()) -> list:
    """argv run through `env`, with the variables of `unset` removed and
    those of `assign` set."""
    return ["env", *(x for k in unset for x in ("-u", k)),
            *(f"{k}={v}" for k, v in (assign or {}).items()), *argv]


def find(exe: str = "hyperfine") -> str:
    path = shutil.which(exe)
    if path is None:
        raise HyperfineError("hyperfine not found on PATH; install it (apt-get install "
                             "hyperfine, >= 1.13)")
    return path


def read_round(path: str) -> dict:
    """{name: Run} from a hyperfine JSON export of one run per command."""
    try:
        with open(path) as fh:
            out = {}
            for x in json.load(fh)["results"]:
                cpu = max(float(x["user"]) + float(x["system"]), RESOLUTION)
                out[x["command"]] = Run(max(float(x["times"][0]), RESOLUTION), cpu,
                                        float(x["system"]))
            return out
    except (OSError, KeyError, IndexError, ValueError, TypeError) as e:
        raise HyperfineError(f"unreadable hyperfine JSON ({e})") from None


def one_round(commands: list, *, cwd: str | None, env: dict, timeout: float,
              warmup: int = 0, exe: str = "hyperfine") -> dict:
    """Each (name, argv) of `commands` run once, in that order, after
    `warmup` untimed runs of each: {name: Run}."""
    cmd = [find(exe), "-N", "--style", "none", "--runs", "1", "--warmup", str(warmup)]
    with tempfile.TemporaryDirectory(prefix="memprof-ci-hyperfine.") as tmp:
        js = os.path.join(tmp, "round.json")
        cmd += ["--export-json", js]
        for name, argv in commands:
            cmd += ["-n", name, shlex.join(argv)]
        try:
            r = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HyperfineError(f"a hyperfine round timed out after {timeout:g}s") from None
        except OSError as e:
            raise HyperfineError(f"cannot run {cmd[0]}: {e.strerror}") from None
        if r.returncode != 0:
            tail = (r.stderr or b"").decode("utf-8", "replace").strip()
            tail = tail.replace("\n", " | ")[-STDERR_TAIL:]
            raise HyperfineError(f"hyperfine failed (status {r.returncode}): {tail}")
        return read_round(js)


def rotated(commands: list, index: int, step: int = 1) -> list:
    """The order of round `index`: from command (index * step) mod n on, in
    turn (for two commands: alternating)."""
    k = (index * step) % len(commands)
    return list(commands[k:]) + list(commands[:k])


def interleaved(commands: list, rounds: int, *, first: int = 0, step: int = 1,
                warmup: int = 0, **run) -> list:
    """Rounds `first` to `first + rounds - 1` of `commands`, each in its
    rotated order, `warmup` untimed runs before round 0 only: a list of
    {name: Run}, one per round.  `run` holds one_round's cwd, env, timeout
    and exe."""
    return [one_round(rotated(commands, i, step), warmup=warmup if i == 0 else 0, **run)
            for i in range(first, first + rounds)]
