"""The report document: what report.json holds, made and written.

One dictionary per run (check, compare or merge) carries every row, check
outcome and note; verdict.py decides into it and the renderers read it, so
`merge` can re-decide and re-render shard results exactly.  Invariants: the
JSON is strict (non-finite floats become null) and carries raw p-values so
merged shards can be re-adjusted; one benchmark per line keeps it readable
and diffable.

Outcomes of a check: passed, failed, accepted (failed, but accepted by the
label with a matching proposed baseline), error, skipped, not run.
"""

from __future__ import annotations

import json
import math

REPORT_FORMAT = "memprof-ci/report"
REPORT_VERSION = 1
CHECKS = ("alloc_sites", "gc_totals", "live", "peak", "overhead", "proposed_baseline", "budget")
# Outcomes of a check: passed, failed, accepted (failed, but accepted by the
# label with a matching proposed baseline), error, skipped, not run.


def new_report(kind: str = "check") -> dict:
    return {"format": REPORT_FORMAT, "version": REPORT_VERSION, "kind": kind,
            "shard": None, "benchmarks": {}, "proposed_baselines": None, "notes": []}


def sanitize(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [sanitize(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return sanitize(obj.item())
    return obj


def to_json(report: dict) -> str:
    # indent=None keeps json's C encoder (20x faster on big reports); one
    # benchmark per line keeps the file readable anyway.  Producers already
    # store non-finite numbers as null; sanitize only if something slipped.
    try:
        return _to_json(report)
    except ValueError:
        return _to_json(sanitize(report))


def _to_json(report: dict) -> str:
    rep = dict(report)
    benches = rep.pop("benchmarks")
    head = json.dumps(rep, sort_keys=True, allow_nan=False)[:-1]
    body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True, allow_nan=False)}"
                      for k, v in sorted(benches.items()))
    return head + (", " if rep else "") + '"benchmarks": {\n' + body + "\n}}\n"
