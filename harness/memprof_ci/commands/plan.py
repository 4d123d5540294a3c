"""`memprof-ci plan`: what each benchmark's settings can detect, read from
its baseline, and what it would take to detect `--target-mde`
(decide/power.py computes it)."""

from __future__ import annotations

import os

from ..decide.power import family_size, plan_benchmark, render as render_plan
from ..errors import ConfigError
from ..inputs.manifest import load_manifest
from ..inputs.validate import is_finite
from ..store import baseline as bl


def run(args) -> int:
    for name, v in (("--target-mde", args.target_mde), ("--target-share", args.target_share)):
        if not (is_finite(v) and 0 < v < 1):
            raise ConfigError(f"{name} must be in (0, 1), got {v}")
    man = load_manifest(args.manifest)
    bases = {}
    for b in man.benchmarks:
        path = bl.baseline_path(args.baselines, b.name)
        if os.path.lexists(path):
            base = bl.load_baseline(path, b.name)
            bl.check_compatible(base, b, path)
            bases[b.name] = base
    if not bases:
        raise ConfigError(f"{args.baselines}: no baselines for the benchmarks of "
                          f"{args.manifest}; record them with `memprof-ci update-baselines`")
    family = family_size(bases.values())
    plans = [plan_benchmark(b, bases[b.name], family, args.target_mde, args.target_share)
             for b in man.benchmarks if b.name in bases]
    print(render_plan(plans, args.target_mde, args.target_share), end="")
    return 0
