"""Comparing aggregates: building site rows, family-wide decisions, diffs.

This glues sites.Aggregate to stats: it is shared by the pytest items (check),
`compare` and `merge`, so the three always decide the same way.
Invariants: finalize() is idempotent and is the only place Holm is applied to
a report (over every alloc and live row of every benchmark in it), and it
recomputes the alloc/live check outcomes from the adjusted rows.
"""

from __future__ import annotations

import os
import re

from . import stats
from .baseline import is_baseline_doc, parse_baseline
from .errors import InputError
from .profile import is_profile_doc, load_json, parse_profile, profile_files
from .sites import Aggregate, aggregate, aggregate_paths


def _site_map(agg: Aggregate, check: str) -> dict:
    out = {}
    for k, s in agg.sites.items():
        n = s.samples if check == "alloc" else s.live_samples
        if n == 0 and check == "live":
            continue
        top_via = s.via.most_common(1)[0][0] if s.via else None
        lines = s.lines if check == "alloc" else s.live_lines
        out[k] = (n, {"file": s.file, "function": s.function, "line": s.line, "via": top_via,
                      "lines": {str(a): b for a, b in lines.items()}})
    return out


def site_rows(name: str, check: str, cur: Aggregate, base: Aggregate, params: dict) -> list:
    ct = cur.total_samples if check == "alloc" else cur.total_live
    bt = base.total_samples if check == "alloc" else base.total_live
    return stats.site_rows(name, check, _site_map(cur, check), _site_map(base, check),
                           ct, bt, cur.exposure, base.exposure, params)


def check_outcome(rows: list, check: str, name: str) -> dict:
    regs = [r for r in rows if r.get("status") == "regression"]
    if not regs:
        return {"outcome": "passed", "message": ""}
    return {"outcome": "failed", "message": regression_message(name, check, regs)}


def regression_message(name: str, check: str, regs: list) -> str:
    from .report import fmt_bytes, fmt_delta, fmt_p, worst_first
    what = "allocate" if check == "alloc" else "retain at exit"
    head = f"benchmark {name!r}: {len(regs)} site(s) {what} more than the baseline:"
    body = [f"  {r['site']}{' (via ' + r['via'] + ')' if r.get('via') else ''}: "
            f"{fmt_bytes(r['baseline_bytes'])} -> {fmt_bytes(r['current_bytes'])} "
            f"{fmt_delta(r)}, p(Holm)={fmt_p(r['p_adj'])}" for r in worst_first(regs)]
    return "\n".join([head] + body)


_CHECK_OF = {"alloc": "alloc_sites", "live": "live"}
# Checks whose failure a maintainer's accept label can turn into "accepted".
ACCEPTABLE = ("alloc_sites", "live", "gc_totals", "overhead")


def accept_changes(report: dict) -> None:
    """With report["accept_changes"] (the accept label), a failed check of a
    benchmark whose proposed baseline changed and matches what the code
    measures (its proposed_baseline check passed) becomes "accepted".
    Nothing else is accepted: a benchmark without a matching proposed
    baseline still fails, and a missing benchmark still fails; an
    "accepted" outcome that does not qualify (a shard report's claim, say)
    is turned back into "failed".  This is the decision; the pytest items'
    expected-failure marks only mirror it for pytest's own output."""
    accepted = []
    on = bool(report.get("accept_changes"))
    for name, b in sorted(report["benchmarks"].items()):
        checks = b.get("checks", {})
        ok = on and checks.get("proposed_baseline", {}).get("outcome") == "passed"
        for check in ACCEPTABLE:
            c = checks.get(check)
            if not c or c["outcome"] not in ("failed", "accepted"):
                continue
            c["outcome"] = "accepted" if ok else "failed"
            if ok:
                accepted.append({"benchmark": name, "check": check,
                                 "message": c.get("message", "")})
    if on:
        report["accepted"] = accepted


def finalize(report: dict) -> None:
    """Apply Holm over the whole report, refresh alloc/live outcomes, then
    apply the accept label (accept_changes)."""
    rows = []
    for b in report["benchmarks"].values():
        for key in ("alloc", "live"):
            rows.extend(b.get(key) or [])
    stats.apply_family(rows)
    prop = []
    for b in report["benchmarks"].values():
        prop.extend(b.get("proposed") or [])
    stats.apply_family(prop, two_sided=True)
    for name, b in report["benchmarks"].items():
        checks = b.setdefault("checks", {})
        for key, check in _CHECK_OF.items():
            c = checks.get(check)
            if b.get(key) is not None and c and c["outcome"] in ("passed", "failed",
                                                                  "accepted"):
                checks[check] = check_outcome(b[key], key, name)
    accept_changes(report)


# ------------------------------------------------------------ compare sides

_PROFILE_NAME = re.compile(r"^(?P<bench>.+)\.(?P<seed>\d+)\.json$")


def load_side(path: str, grouping: str) -> dict:
    """A profile, a baseline, or a directory of either -> {benchmark: Aggregate}."""
    if os.path.isdir(path):
        profiles: dict = {}
        baselines: dict = {}
        for f in profile_files(path):
            kind = _sniff(f)
            if kind == "baseline":
                b = parse_baseline(load_json(f, "baseline"), f)
                baselines[b.name] = b
            elif kind == "profile":
                m = _PROFILE_NAME.match(os.path.basename(f))
                key = m.group("bench") if m else os.path.basename(os.path.abspath(path))
                profiles.setdefault(key, []).append(f)
            else:
                raise InputError(f"{f}: neither a memprof-ci profile nor a baseline; "
                                 f"remove it from {path}")
        if profiles and baselines:
            raise InputError(f"{path}: mixes profiles and baselines; compare them separately")
        if not profiles and not baselines:
            raise InputError(f"{path}: no profiles or baselines (*.json) found")
        if baselines:
            return baselines
        return {k: aggregate_paths(v, grouping, k) for k, v in sorted(profiles.items())}
    doc = load_json(path, "profile or baseline")
    if is_baseline_doc(doc):
        b = parse_baseline(doc, path)
        return {b.name: b}
    if is_profile_doc(doc):
        p = parse_profile(doc, path)
        m = _PROFILE_NAME.match(os.path.basename(path))
        name = m.group("bench") if m else os.path.splitext(os.path.basename(path))[0]
        return {name: aggregate([p], grouping, name)}
    raise InputError(f"{path}: neither a memprof-ci profile nor a baseline")


def _sniff(path: str) -> str | None:
    """Cheap format detection from the first bytes (full parsing comes later).

    Both writers put "format" first (the runtime by schema order, baselines by
    sorted keys after "backend"/"benchmark"/"config"...), so look at a prefix
    large enough to hold it and fall back to a full parse otherwise.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    if b'"memprof-ci/profile"' in head:
        return "profile"
    if b'"memprof-ci/baseline"' in head:
        return "baseline"
    doc = load_json(path, "profile or baseline")
    return "profile" if is_profile_doc(doc) else "baseline" if is_baseline_doc(doc) else None


def regroup_check(a: Aggregate, b: Aggregate, pa: str, pb: str) -> None:
    if a.grouping != b.grouping:
        raise InputError(f"{pa} is grouped by {a.grouping!r} but {pb} by {b.grouping!r}; "
                         f"a baseline keeps only its own grouping, so pass --grouping "
                         f"{a.grouping if a.meta.get('path') else b.grouping} or compare profiles")


# ------------------------------------------------------- proposed baselines

def diff_baselines(trusted: dict, proposed: dict) -> dict:
    """What a PR's proposed baselines change relative to the trusted ones."""
    out = {}
    for name in sorted(set(trusted) | set(proposed)):
        t, p = trusted.get(name), proposed.get(name)
        if t is None:
            out[name] = {"status": "added", "sites": []}
            continue
        if p is None:
            out[name] = {"status": "removed", "sites": []}
            continue
        sites = []
        for k in sorted(set(t.sites) | set(p.sites)):
            ts = t.sites[k].samples if k in t.sites else 0
            ps = p.sites[k].samples if k in p.sites else 0
            tl = t.sites[k].live_samples if k in t.sites else 0
            pl = p.sites[k].live_samples if k in p.sites else 0
            if ts == ps and tl == pl:
                continue
            tb, pb = t.bytes_of(ts), p.bytes_of(ps)
            sites.append({"site": k, "trusted_samples": ts, "proposed_samples": ps,
                          "trusted_live_samples": tl, "proposed_live_samples": pl,
                          "trusted_bytes": tb, "proposed_bytes": pb,
                          "ratio": (pb / tb) if tb else None})
        sites.sort(key=lambda s: (-abs(s["proposed_bytes"] - s["trusted_bytes"]), s["site"]))
        gc = [{"counter": c, "trusted": t.gc.get(c, 0), "proposed": p.gc.get(c, 0)}
              for c in stats.GC_COUNTERS if t.gc.get(c) != p.gc.get(c)]
        cfg_t = (t.rate, t.seeds, t.frames, t.grouping)
        cfg_p = (p.rate, p.seeds, p.frames, p.grouping)
        changed = bool(sites or gc or cfg_t != cfg_p)
        out[name] = {"status": "changed" if changed else "unchanged", "sites": sites, "gc": gc,
                     "config_changed": cfg_t != cfg_p}
    return {"benchmarks": out}
