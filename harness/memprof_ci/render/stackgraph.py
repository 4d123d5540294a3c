"""The call-stack data behind report.html's icicle graphs.

stacks_entry() turns the two sides' Aggregates into the report's
per-benchmark "stacks" entry (the CLI attaches it before writing the
reports, so report.json carries it and `merge` can re-render); graph_data()
turns that entry, which may come from an untrusted shard report, into what
the page's script draws: the baseline and current trees and a differential
tree whose nodes carry the change decide/stack_changes.py finds in their
own samples, each node also carrying the samples of the regressed sites'
stacks through it and the change found in that share (the highlighted
paths);
focus_data() is the same for the heaviest stacks of one site.

Invariants:
1. graph_data() validates every index and count of the entry and drops a
   side that is malformed rather than raising; the page then says why.
2. Bounded size: a benchmark's stacks and tree are cut, lightest stacks
   first, to STACK_BUDGET bytes of JSON; a site's focus graph keeps fewer
   stacks until it is within FOCUS_BUDGET.
3. Nothing is decided here: which nodes changed is
   decide/stack_changes.node_changes's answer for the counts of the tree
   drawn; statuses come from verdict.py.
"""

from __future__ import annotations

import json
import math

from ..text import mdsafe
from ..decide.stack_changes import node_changes

STACK_BUDGET = 200_000      # bytes of JSON per benchmark for stacks + tree
FOCUS_BUDGET = 40_000       # bytes of JSON of the worst regressed site's graph
MISSING_STACKS = ("recorded without call stacks (a baseline written before memprof-ci kept "
                  "them); run `memprof-ci update-baselines` to add them")


def _side(agg):
    if agg is None or agg.stacks is None:
        return None, None
    return list(agg.stacks), list(agg.stacks_other)


def stacks_entry(base, cur) -> dict:
    """The report's per-benchmark "stacks": a shared frame table and each
    side's stacks as [site, site frame, samples, live, [frame indices]]."""
    bs, bo = _side(base)
    cs, co = _side(cur)
    frames = sorted({f for side in (bs or [], cs or []) for st in side for f in st[0]})
    index = {f: i for i, f in enumerate(frames)}

    def enc(side):
        return None if side is None else [[k, pos, n, live, [index[f] for f in labels]]
                                          for labels, k, pos, n, live in side]
    missing = {}
    if base is None:
        missing["baseline"] = "there is no baseline (a new benchmark)"
    elif bs is None:
        missing["baseline"] = ("the baseline's " + base.meta["stacks_ignored"]
                               if base.meta.get("stacks_ignored")
                               else "the baseline was " + MISSING_STACKS)
    if cur is None:
        missing["current"] = "the benchmark was not measured"
    elif cs is None:
        missing["current"] = "the current side was " + MISSING_STACKS
    return {"frames": frames, "baseline": enc(bs), "current": enc(cs),
            "baseline_other": bo, "current_other": co,
            "baseline_exposure": base.exposure if base is not None else None,
            "current_exposure": cur.exposure if cur is not None else None,
            "missing": missing}


def _valid_side(side, n_frames):
    """Untrusted (a shard report's) stacks -> list of (site, n, [idx]) or None."""
    if not isinstance(side, list):
        return None
    out = []
    for st in side:
        if not (isinstance(st, list) and len(st) == 5 and isinstance(st[0], str)
                and isinstance(st[4], list) and isinstance(st[2], int) and st[2] >= 0
                and isinstance(st[3], int) and st[3] >= 0
                and (st[1] is None or isinstance(st[1], int))):
            return None
        if not all(isinstance(i, int) and 0 <= i < n_frames for i in st[4]):
            return None
        out.append(st)
    return out


def _tree(base, cur, regressed):
    """Merged prefix tree of both sides: node = [frame, b, c, children{}, rb,
    rc], where rb and rc count the samples of stacks whose site is in
    `regressed`."""
    root = [-1, 0, 0, {}, 0, 0]
    for side, col in ((base or [], 1), (cur or [], 2)):
        for st in side:
            n = st[2]
            if not n:
                continue
            hot = st[0] in regressed
            node = root
            node[col] += n
            if hot:
                node[col + 3] += n
            for f in st[4]:
                ch = node[3].get(f)
                if ch is None:
                    ch = node[3][f] = [f, 0, 0, {}, 0, 0]
                ch[col] += n
                if hot:
                    ch[col + 3] += n
                node = ch
    return root


def _flatten(root):
    out, stack = [], [root]
    while stack:
        nd = stack.pop()
        out.append(nd)
        stack.extend(nd[3].values())
    return out


def _encode_tree(root, sig_of, hot_of):
    """[frame, b, c, sig, children] and, on a node that regressed stacks pass
    through, [rb, rc, their sig]; children with such stacks first (heaviest
    share first), then by weight."""
    def order(k):
        return (-(k[4] + k[5]), -(k[1] + k[2]), k[0])

    def enc(nd):
        out = [nd[0], nd[1], nd[2], sig_of.get(id(nd)),
               [enc(k) for k in sorted(nd[3].values(), key=order)]]
        if nd[4] or nd[5]:
            out += [nd[4], nd[5], hot_of.get(id(nd))]
        return out
    return enc(root)


def _cut(side, keep):
    """The `keep` heaviest stacks of a side, the rest summed as other."""
    if side is None:
        return None, [0, 0]
    order = sorted(side, key=lambda s: (-s[2], -s[3]))
    rest = order[keep:]
    return order[:keep], [sum(s[2] for s in rest), sum(s[3] for s in rest)]


def _valid_entry(entry):
    """(frames, baseline, current, e_b, e_c) of an untrusted entry, or None."""
    if not isinstance(entry, dict) or not isinstance(entry.get("frames"), list):
        return None
    frames = [mdsafe.shown(f) if isinstance(f, str) else "?" for f in entry["frames"]]
    base = _valid_side(entry.get("baseline"), len(frames))
    cur = _valid_side(entry.get("current"), len(frames))
    e_b, e_c = entry.get("baseline_exposure"), entry.get("current_exposure")
    for e in (e_b, e_c):
        if e is not None and not (isinstance(e, (int, float)) and math.isfinite(e) and e > 0):
            return None
    if base is not None and e_b is None or cur is not None and e_c is None:
        return None
    return frames, base, cur, e_b, e_c


def _drawn(frames, b2, c2, e_b, e_c, regressed):
    """The tree and frame table the script draws for these stacks."""
    root = _tree(b2, c2, regressed)
    nodes = _flatten(root)
    both = b2 is not None and c2 is not None
    sig = node_changes([(nd[1], nd[2]) for nd in nodes], e_b, e_c) if both else \
        [None] * len(nodes)
    hot_nodes = [nd for nd in nodes if nd[4] or nd[5]]
    hot = node_changes([(nd[4], nd[5]) for nd in hot_nodes], e_b, e_c) if both else \
        [None] * len(hot_nodes)
    tree = _encode_tree(root, {id(nd): s for nd, s in zip(nodes, sig)},
                        {id(nd): s for nd, s in zip(hot_nodes, hot)})
    used = sorted({f for side in (b2 or [], c2 or []) for s in side for f in s[4]})
    remap = {f: i for i, f in enumerate(used)}

    def rm(side):
        return None if side is None else [[s[0], s[1], s[2], s[3], [remap[f] for f in s[4]]]
                                          for s in side]

    def rt(t):
        return [remap.get(t[0], -1), *t[1:4], [rt(k) for k in t[4]], *t[5:]]
    return {"frames": [frames[f] for f in used], "baseline": rm(b2), "current": rm(c2),
            "tree": rt(tree), "be": e_b, "ce": e_c}


def graph_data(entry, regressed=()) -> dict | None:
    """What the page's script draws for one benchmark, within STACK_BUDGET;
    `regressed` names the benchmark's regressed sites, whose stacks the
    differential view highlights."""
    valid = _valid_entry(entry)
    if valid is None:
        return None
    frames, base, cur, e_b, e_c = valid
    regressed = frozenset(regressed)
    missing = {k: str(v) for k, v in (entry.get("missing") or {}).items()
               if k in ("baseline", "current")}
    keep = max(len(base or []), len(cur or []))
    other = {"baseline": list(entry.get("baseline_other") or [0, 0]),
             "current": list(entry.get("current_other") or [0, 0])}
    while True:
        b2, bo = _cut(base, keep)
        c2, co = _cut(cur, keep)
        data = _drawn(frames, b2, c2, e_b, e_c, regressed)
        data["missing"] = missing
        data["other"] = {
            "baseline": [other["baseline"][0] + bo[0], other["baseline"][1] + bo[1]],
            "current": [other["current"][0] + co[0], other["current"][1] + co[1]]}
        size = len(json.dumps(data, separators=(",", ":")))
        if size <= STACK_BUDGET or keep <= 1:
            if keep < max(len(base or []), len(cur or [])):
                data["cut"] = keep
            return data
        keep = max(1, keep * 2 // 3)


def focus_data(entry, site, per_side=8) -> dict | None:
    """The graph of one site: the call paths of its `per_side` heaviest
    stacks of each side (fewer when needed to stay within FOCUS_BUDGET),
    with both sides' samples on those paths, every node carrying the site's
    share (the whole node).  None without stacks of both sides for it."""
    valid = _valid_entry(entry)
    if valid is None:
        return None
    frames, base, cur, e_b, e_c = valid
    if base is None or cur is None:
        return None
    mine = [[s for s in side if s[0] == site] for side in (base, cur)]
    heavy = [sorted(side, key=lambda s: (-s[2], s[4])) for side in mine]
    while True:
        paths = {tuple(s[4]) for side in heavy for s in side[:per_side]}
        if not paths:
            return None
        b2, c2 = ([s for s in side if tuple(s[4]) in paths] for side in mine)
        data = _drawn(frames, b2, c2, e_b, e_c, frozenset([site]))
        data["site"] = mdsafe.shown(site)
        if per_side <= 1 or len(json.dumps(data, separators=(",", ":"))) <= FOCUS_BUDGET:
            return data
        per_side //= 2
