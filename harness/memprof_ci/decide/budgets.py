"""The allocation budgets' verdict: exact words per run against each limit.

Job: for one benchmark, its budgets (inputs/budget.py) and the first seed's
allocation points (inputs/points.Points, counted exactly with points=on),
the budget rows of report.json and the failure message of the `budget`
check.  A budget counts the minor and major words of every allocation
point and every call point (what C allocated for an OCaml call there) that
is its function's own or at its line: the function's own allocation, not
its callees' (a callee's points name the callee).  Invariants: nothing is
sampled, scaled or estimated, and no baseline is read: a row fails exactly
when its words exceed its limit; a budget no point matches counts 0 words
and passes; a benchmark without counted points is never judged here
(needs_points says why, an error of the run, exit 2).  The accept label
covers a failing row only when the pull request changed that budget (it is
in report["settings_changes"], which the judge computes from the two
manifests) and the words fit the pull request's own limit, or it removed
the budget (accepted_rows).
"""

from __future__ import annotations

from ..sites.keys import norm_file

TOP_POINTS = 3   # the heaviest points a row names


def _contributions(budget, pts) -> list:
    """[(words, point label, via C)] of the budget's points that allocated,
    heaviest first, named as the sites name their files (location-independent)."""
    out = []
    for table, via_c in ((pts.counts, False), (pts.calls or {}, True)):
        for pk, c in table.items():
            words = c[1] + c[3]
            if words and pk[0] and budget.matches(pk):
                out.append((words, f"{norm_file(pk[0])}:{pk[1]}:{pk[2]}-{pk[3]}", via_c))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    return out


def budget_row(name: str, budget, pts) -> dict:
    """One budget of benchmark `name` judged on the first seed's points."""
    contrib = _contributions(budget, pts)
    words = sum(w for w, _, _ in contrib)
    return {"benchmark": name, "what": budget.what,
            "kind": "function" if budget.function is not None else "point",
            "words_per_run": words, "limit": budget.words_per_run,
            "outcome": "failed" if words > budget.words_per_run else "passed",
            "points": [{"point": p, "words": w, **({"via_c": True} if c else {})}
                       for w, p, c in contrib[:TOP_POINTS]]}


def budget_rows(name: str, budgets: list, pts) -> list:
    return [budget_row(name, b, pts) for b in budgets]


def budget_failure(name: str, rows: list) -> str | None:
    """The budget check's one-line failure message, or None."""
    over = [r for r in rows if r["outcome"] == "failed"]
    if not over:
        return None
    return f"benchmark {name!r} is over its allocation budget: " + "; ".join(
        f"{r['what']} allocated {r['words_per_run']:,} words per run, limit {r['limit']:,}"
        + (f" (most at {r['points'][0]['point']})" if r["points"] else "") for r in over)


def needs_points(manifest_path: str, budget, name: str, why: str) -> str:
    """The error line of a budget whose benchmark counted no points."""
    return (f"{manifest_path}: [[budget]] #{budget.index} ({budget.what}) applies to benchmark "
            f"{name!r}, which {why}; a budget needs the exact allocation-point counts "
            f"(`points = true` and the native-code memprof-ci runtime)")


def accepted_rows(report: dict, rows: list) -> bool:
    """Whether the accept label covers every failing row of `rows`: the
    label is on, and each failing row's budget is one the pull request
    changed, to a limit its words fit, or removed."""
    if not report.get("accept_changes"):
        return False
    changed = {(c.get("benchmark"), c.get("setting")): c
               for c in report.get("settings_changes") or []}
    for r in rows:
        if r["words_per_run"] <= r["limit"]:
            continue
        setting = f"budget {r['what']}"
        c = changed.get((r["benchmark"], setting)) or changed.get(("(every benchmark)", setting))
        if c is None:
            return False
        limit = c.get("pull_request")
        if limit is not None and not (isinstance(limit, int) and r["words_per_run"] <= limit):
            return False
    return True


def ratchet_limits(budgets: list, rows: dict, applies: dict) -> dict:
    """{budget index: lower limit} for each budget every benchmark of which
    (applies: index -> names) has its row in `rows` (name -> budget rows)
    and allocated less than the limit there: the most any of them did."""
    out = {}
    for b in budgets:
        mine = [r for name in applies.get(b.index, ()) for r in rows.get(name, ())
                if r["what"] == b.what and r["limit"] == b.words_per_run]
        if not mine or {r["benchmark"] for r in mine} != set(applies[b.index]):
            continue
        most = max(r["words_per_run"] for r in mine)
        if most < b.words_per_run:
            out[b.index] = most
    return out
