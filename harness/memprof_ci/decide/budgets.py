"""The allocation budgets' verdict: exact words per run, and per call of an
annotated function, against each limit.

Job: for one benchmark, its budgets (inputs/budget.py), the first seed's
allocation points (inputs/points.Points, counted exactly with points=on)
and its annotated functions' counts (the profile's `budgets` section,
inputs/profile_budgets.py), the budget rows of report.json and the failure
message of the `budget` check.  A manifest words_per_run budget counts the
minor and major words of every allocation point and every call point (what
C allocated for an OCaml call there) that is its function's own or at its
line: the function's own allocation, not its callees' (a callee's points
name the callee).  An annotated function (`[@zero_alloc]`,
`[@memprof.words_per_call N]`) is judged per call, on the runtime's exact
counts: its row fails exactly when the most one call allocated (max_words)
exceeds its limit, the smaller of the annotation's and a manifest
words_per_call budget's; a function the compiler counted without an
annotation (OCAMLMEMPROF_COUNT: a dependency's) has a row only under a
manifest words_per_call budget, whose limit is its only one, and is
never an annotation that can change; its points say where it allocated, heaviest first:
its own and its nested functions' points, exact, and, from the sampled
stacks that pass through it, its callees' allocation, estimated (samples /
exposure, as the site rows estimate words) and marked `"estimated": true`.
Invariants: no baseline is read for a row: a manifest budget no point
matches counts 0 words and passes; a benchmark without counted points is
never judged on a words_per_run budget (needs_points says why, an error of
the run, exit 2), nor is a words_per_call budget of a function its profile
has no entry for (unannotated_error).  The accept label covers a
failing row only when the pull request changed that budget (it is in
report["settings_changes"], which the judge computes from the two
manifests) and the words fit the pull request's own limit, or it removed
the budget (accepted_rows).  Against a baseline that recorded the
annotations it saw, annotation_changes lists each one removed (or no longer
called), raised, lowered or new; removed and raised ones fail the check
unless the accept label is on.
"""

from __future__ import annotations

from ..inputs.profile import WORD_BYTES
from ..sites.grouping import frame_label
from ..sites.keys import norm_file
from ..text.mdsafe import printable

TOP_POINTS = 3   # the heaviest points a row names
REMOVED = "annotation removed or no longer called"


def _contributions(matches, pts) -> list:
    """[(words, point label, via C)] of the points and call points keyed
    (file, line, first, last, function) that allocated and `matches`
    accepts, heaviest first, named as the sites name their files
    (location-independent)."""
    out = []
    for table, via_c in ((pts.counts, False), (pts.calls or {}, True)):
        for pk, c in table.items():
            words = c[1] + c[3]
            if words and pk[0] and matches(pk):
                out.append((words, f"{norm_file(pk[0])}:{pk[1]}:{pk[2]}-{pk[3]}", via_c))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    return out


def budget_row(name: str, budget, pts) -> dict:
    """One budget of benchmark `name` judged on the first seed's points."""
    contrib = _contributions(budget.matches, pts)
    words = sum(w for w, _, _ in contrib)
    return {"benchmark": name, "what": budget.what,
            "kind": "function" if budget.function is not None else "point",
            "words_per_run": words, "limit": budget.words_per_run,
            "outcome": "failed" if words > budget.words_per_run else "passed",
            "points": [{"point": p, "words": w, **({"via_c": True} if c else {})}
                       for w, p, c in contrib[:TOP_POINTS]]}


def budget_rows(name: str, budgets: list, pts) -> list:
    return [budget_row(name, b, pts) for b in budgets]


def _in(fn, function: str) -> bool:
    """Whether `fn` is `function` or a function nested in it."""
    return fn == function or (fn is not None and fn.startswith(function + "."))


def _label_function(label: str) -> str:
    return label.rsplit(" @ ", 1)[0]


def _exact_points(a, pts) -> list:
    """[(words, point label, extra keys)] of the annotated function's own
    and nested functions' points and call points that allocated."""
    return [(w, p, {"via_c": True} if c else {})
            for w, p, c in _contributions(lambda pk: _in(pk[4], a.function), pts)]


def _estimated_points(a, agg, exact: bool) -> list:
    """[(words per run, site, {"estimated": True})] of the sampled stacks
    through the annotated function, by the site they are charged to; with
    `exact`, those whose innermost frame is the function or nested in it
    are left to the exact points."""
    own = frame_label(a.function, a.file)
    by_site: dict = {}
    for labels, key, _pos, n, _live in agg.stacks or ():
        if n and own in labels and not (exact and _in(_label_function(labels[-1]), a.function)):
            by_site[key] = by_site.get(key, 0) + n
    words = {key: round(agg.bytes_of(n) / WORD_BYTES) for key, n in by_site.items()}
    return [(w, key, {"estimated": True}) for key, w in words.items() if w]


def annotated_row(name: str, a, agg, call_budget=None) -> dict:
    """One annotated function (inputs/profile_budgets.Annotated) of
    benchmark `name` judged per call; `call_budget` is the manifest's
    words_per_call budget of it, if any; `agg` the run's Aggregate."""
    own = a.limit if a.annotated else None
    manifest = call_budget.words_per_call if call_budget is not None else None
    limit = min(x for x in (own, manifest) if x is not None)
    pts = agg.point_counts
    exact = pts is not None and pts.unavailable is None
    found = (_exact_points(a, pts) if exact else []) + _estimated_points(a, agg, exact)
    found.sort(key=lambda t: (-t[0], t[1], bool(t[2])))
    return {"benchmark": name, "what": a.function, "kind": "annotation", "file": a.file,
            "line": a.line, "attribute": a.attribute, "calls": a.calls, "words": a.words,
            "words_per_call": a.words / a.calls if a.calls else 0.0,
            "max_words": a.max_words, "limit": limit, "annotation_limit": own,
            **({"manifest_limit": call_budget.words_per_call} if call_budget else {}),
            **({"other_domain_calls": a.other_domain_calls} if a.other_domain_calls else {}),
            "outcome": "failed" if a.max_words > limit else "passed",
            "points": [] if not a.words else
            [{"point": p, "words": w, **x} for w, p, x in found[:TOP_POINTS]]}


def annotated_rows(name: str, agg, call_budgets: list) -> list:
    """A row per annotated entry of the run's profile (Aggregate.budgets),
    and per counted one a words_per_call budget names."""
    by_fn = {b.function: b for b in call_budgets}
    return [annotated_row(name, a, agg, by_fn.get(a.function)) for a in agg.budgets or ()
            if a.annotated or a.function in by_fn]


def unannotated(call_budgets: list, entries) -> list:
    """The words_per_call budgets whose function has no entry, annotated
    or counted."""
    have = {a.function for a in entries or ()}
    return [b for b in call_budgets if b.function not in have]


def unannotated_error(manifest_path: str, budget, name: str) -> str:
    return (f"{manifest_path}: [[budget]] #{budget.index} ({budget.what}) gives "
            f"words_per_call, but benchmark {name!r}'s profile counted no call of "
            f"{budget.what}: annotate it [@memprof.words_per_call N] or [@zero_alloc], or "
            f"compile it with OCAMLMEMPROF_COUNT={budget.what} (a dependency's), and call it")


def _row_text(r: dict) -> str:
    where = f" (most at {printable(r['points'][0]['point'])})" if r["points"] else ""
    what = printable(r["what"])
    if r["kind"] == "annotation":
        return (f"{what} ({r['calls']:,} calls) allocated up to {r['max_words']:,} words "
                f"in one call, limit {r['limit']:,} per call{where}")
    return f"{what} allocated {r['words_per_run']:,} words per run, limit {r['limit']:,}{where}"


def budget_failure(name: str, rows: list, changes=()) -> str | None:
    """The budget check's failure message, or None: a line naming the
    benchmark, then one line per row over its limit; the same for the
    annotation changes that need the label.  Names from the profile are
    escaped, so each row stays one line."""
    over = [r for r in rows if r["outcome"] == "failed"]
    flagged = [c for c in changes or () if c.get("needs_label")]
    lines = []
    if over:
        lines.append(f"benchmark {name!r} is over its allocation budget:")
        lines += [f"  {_row_text(r)}" for r in over]
    if flagged:
        lines.append(f"benchmark {name!r} changes annotations that need the accept label:")
        lines += [f"  {printable(c['setting'])}: {c['note']} (baseline's limit {c['base']:,})"
                  for c in flagged]
    return "\n".join(lines) or None


def needs_points(manifest_path: str, budget, name: str, why: str) -> str:
    """The error line of a budget whose benchmark counted no points."""
    return (f"{manifest_path}: [[budget]] #{budget.index} ({budget.what}) applies to benchmark "
            f"{name!r}, which {why}; a budget needs the exact allocation-point counts "
            f"(`points = true` and the native-code memprof-ci runtime)")


def _row_accepted(r: dict, changed: dict) -> bool:
    """A failing row's budget was changed by the pull request to a limit
    its words fit, or removed."""
    per_call = r["kind"] == "annotation"
    setting = f"budget {r['what']}" + (" per call" if per_call else "")
    c = changed.get((r["benchmark"], setting)) or changed.get(("(every benchmark)", setting))
    if c is None:
        return False
    limit = c.get("pull_request")
    if per_call:
        # The annotation's own limit still holds whatever the manifest says.
        own = r["annotation_limit"]
        return isinstance(limit, int) and r["max_words"] <= (limit if own is None
                                                             else min(limit, own))
    return limit is None or (isinstance(limit, int) and r["words_per_run"] <= limit)


def accepted_rows(report: dict, rows: list) -> bool:
    """Whether the accept label covers every failing row of `rows` (and
    so the annotation changes that need it): the label is on, and each
    failing row's budget is one the pull request changed, to a limit its
    words fit, or removed."""
    if not report.get("accept_changes"):
        return False
    changed = {(c.get("benchmark"), c.get("setting")): c
               for c in report.get("settings_changes") or []}
    return all(r["outcome"] != "failed" or _row_accepted(r, changed) for r in rows)


def annotation_changes(name: str, recorded: list, entries) -> list:
    """The annotations of the run (Annotated entries) against those the
    baseline recorded, each change in settings_changes' shape with a note:
    removed (or no longer called) and raised limits need the accept label."""
    base = {(r["function"], norm_file(r["file"])): r for r in recorded}
    cur = {(a.function, norm_file(a.file)): a for a in entries or () if a.annotated}
    out = []
    for key in sorted(set(base) | set(cur)):
        b, a = base.get(key), cur.get(key)
        if a is not None and b is not None and a.limit == b["limit"]:
            continue
        if a is None:
            note, label = REMOVED, True
        elif b is None:
            note, label = "new annotation", False
        else:
            note, label = ("limit raised", True) if a.limit > b["limit"] else \
                ("limit lowered", False)
        out.append({"benchmark": name, "setting": f"annotation {key[0]}",
                    "pull_request": None if a is None else a.limit,
                    "base": None if b is None else b["limit"], "note": note,
                    "needs_label": label})
    return out


def ratchet_limits(budgets: list, rows: dict, applies: dict) -> dict:
    """{budget index: lower limit} for each budget every benchmark of which
    (applies: index -> names) has its row in `rows` (name -> budget rows)
    and allocated less than the limit there: the most any of them did, per
    run, or for a words_per_call budget in one call."""
    out = {}
    for b in budgets:
        per_call = b.words_per_call is not None
        mine = [r for name in applies.get(b.index, ()) for r in rows.get(name, ())
                if r["what"] == b.what and (r["kind"] == "annotation") == per_call
                and (r.get("manifest_limit") if per_call else r["limit"]) == b.limit]
        if not mine or {r["benchmark"] for r in mine} != set(applies[b.index]):
            continue
        most = max(r["max_words" if per_call else "words_per_run"] for r in mine)
        if most < b.limit:
            out[b.index] = most
    return out


def annotation_hints(rows: list) -> list:
    """update-baselines' advice, one line per annotated function whose
    most in one call, over every benchmark measured, is below its
    annotation's limit (sources are never edited)."""
    most: dict = {}
    for r in rows:
        if r["kind"] == "annotation" and r["annotation_limit"] is not None:
            key = (r["file"], r["line"], r["what"])
            most[key] = max(most.get(key, (0, r["annotation_limit"]))[0], r["max_words"]), \
                r["annotation_limit"]
    return [f"{fn}: could be [@memprof.words_per_call {m}] ({file}:{line})"
            for (file, line, fn), (m, limit) in sorted(most.items()) if m < limit]


def split(budgets: list) -> tuple:
    """(words_per_run budgets, words_per_call budgets)."""
    return ([b for b in budgets if b.words_per_call is None],
            [b for b in budgets if b.words_per_call is not None])
