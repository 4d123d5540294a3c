"""Names and helpers every part of the overhead study shares.

Holds the study's fixed parameters (rates, seed, the interval method), the
targets its verdicts are measured against, the key a rate is written under
in tables and JSON, percentage formatting, the error type that stops the
study, and the progress log.
Invariants: the targets are thresholds only, never outcomes; rate_key is a
pure function of the rate, so a stored overhead.json's keys can be matched
against rates parsed back from it; every log line goes to stderr with the
seconds elapsed since the package was imported.
"""

from __future__ import annotations

import math
import sys
import time

PROG = "overhead"

DEFAULT_RATES = (1e-5, 1e-4, 1e-3, 1e-2)
QUICK_RATES = (1e-4, 1e-2)
CALLGRIND_RATE = 1e-4       # the instruction-count comparison against off
COST_RATE = 1e-2            # the per-sample cost comparison of the two trackers
SEED = 1
CI_METHOD = ("the gate's paired interval (memprof_ci.decide.stats.paired_overhead_interval): "
             "the distribution-free interval of the median per-round ratio on/off, "
             "at least 95% from 6 rounds on, the full range of the rounds below that "
             "(5 rounds: 93.8%, 3: 75%)")

# Targets of the study (the verdicts are computed, only the thresholds live here).
TARGET_MEDIAN_1E4 = 0.01       # median over benchmarks of the C overhead at 1e-4
TARGET_MAX_1E4 = 0.10          # max over benchmarks of the C overhead at 1e-4
TARGET_COST_RATIO = 0.25       # per-sample cost C / OCaml at 1e-2
TARGET_STOCK_RATIO = 1.01      # patched (unset) / stock instructions; chosen by this study

T0 = time.monotonic()


class StudyError(Exception):
    """An error that stops the study with exit status 2."""


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def die(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(2)


def rate_key(r: float) -> str:
    """1e-05 -> '1e-5', 0.01 -> '1e-2' (the key used in tables and JSON)."""
    mant, exp = f"{r:.6e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def pct(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x * 100:+.{digits}f}%"


def fmt_ci(a: dict | None) -> str:
    """An analysis entry as "overhead [low, high]"."""
    if not a:
        return "n/a"
    return f"{pct(a['overhead'])} [{pct(a['ci_low'])}, {pct(a['ci_high'])}]"
