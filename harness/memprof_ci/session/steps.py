"""Where a session's time goes: each benchmark's steps, timed, and progress.

The plugin wraps every costly step of a benchmark (its profiled seed runs,
the schedule's runs, the snapshot run, the counted overhead runs, the
timed pairs, the peak-RSS runs) in Steps.step(name, what).  The wall
seconds of each step are added to the report's `cost` entry of that
benchmark ({what: seconds}), and the CPU seconds (user and system, of the
harness and of the runs it waited for) to its `cost_cpu` entry, so a
report says what a check cost and where;
in update-baselines, which is the longest thing a user runs, each step
also prints one progress line as it starts ("benchmark n of N, step,
elapsed") through `show`, which the plugin binds to the terminal past
pytest's capture.

Invariants: timing never changes what runs or what is decided; a step that
raises still has its time recorded; nothing here reads a clock but
time.monotonic and getrusage.
"""

from __future__ import annotations

import contextlib
import resource
import time


def cpu_seconds() -> float:
    """User and system seconds of this process and of the children it has
    waited for (the steps run one after the other)."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


class Steps:
    """The step clock of one session."""

    def __init__(self, report: dict, names, show=None):
        self.report = report
        self.names = sorted(names)
        self.show = show
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def line(self, name: str, what: str) -> str:
        """The progress line of `what` starting for benchmark `name`."""
        n = self.names.index(name) + 1 if name in self.names else 0
        return (f"memprof-ci: benchmark {n} of {len(self.names)} ({name}): {what}, "
                f"{self.elapsed():.1f} s elapsed")

    @contextlib.contextmanager
    def step(self, name: str, what: str):
        if self.show is not None:
            self.show(self.line(name, what))
        t0, c0 = time.monotonic(), cpu_seconds()
        try:
            yield
        finally:
            b = self.report["benchmarks"].get(name)
            if b is not None:
                for key, d in (("cost", time.monotonic() - t0), ("cost_cpu", cpu_seconds() - c0)):
                    cost = b.setdefault(key, {})
                    cost[what] = round(cost.get(what, 0.0) + d, 3)


def cost_line(b: dict) -> str:
    """A benchmark's report entry's `cost` as one line, costliest step
    first, and what update-baselines kept instead of running it again."""
    parts = [f"{what} {sec:.1f} s"
             for what, sec in sorted(b.get("cost", {}).items(), key=lambda x: -x[1])]
    ov = (b.get("overhead") or {}).get("obtained") or {}
    kept = [b["kept"]] if b.get("kept") else []
    if ov.get("count") == "carried":
        kept.append("overhead count carried from the replaced baseline")
    return f"wall time by step: {', '.join(parts)}" + "".join(f"; {k}" for k in kept)


# A count that costs more than this many profiled runs is worth sizing.
COUNT_ADVICE_RUNS = 10


def count_advice(name: str, b: dict, seeds: int, sized: bool) -> str | None:
    """update-baselines' advice when the counted runs cost more than
    COUNT_ADVICE_RUNS of the benchmark's profiled runs and the manifest
    gives them no smaller size (`sized`: overhead_args set), else None."""
    cost = b.get("cost") or {}
    if sized or "counted runs" not in cost or not cost.get("seed runs"):
        return None
    runs = cost["counted runs"] / (cost["seed runs"] / max(seeds, 1))
    if runs <= COUNT_ADVICE_RUNS:
        return None
    return (f"benchmark {name!r}: its counted overhead runs took {cost['counted runs']:.1f} s, "
            f"{runs:.0f} of its profiled runs (valgrind at the command's full size); a check "
            f"counts again whenever the allocation changes, so give the manifest an "
            f"`overhead_args` that runs about a fiftieth of the work")
