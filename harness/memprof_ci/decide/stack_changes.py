"""Which call-stack nodes changed: the decision behind the icicle colouring.

report.html's differential icicle (render/stackgraph.py) and the regressed
sites' highlighted paths colour a node only where this module says its
samples changed.  stackgraph builds the merged tree of the two sides and
hands each node's (baseline, current) sample counts here; node_changes()
answers, per node, the change to draw or None.

Invariants:
1. One rule: a two-sided exact test of the node's counts at the two
   sides' exposures (stats.test_counts), Holm over the nodes handed in
   together, significant below NODE_ALPHA.
2. The answer is log2 of the current over the baseline rate, clipped to
   +-CLIP (a side with no sample is the clip), rounded to 3 decimals; None
   for a node whose change is not significant, and for every node when
   either exposure is missing or zero.
3. It colours a page and fails nothing: no check's outcome reads it; the
   statuses are verdict.py's.
"""

from __future__ import annotations

import math

import numpy as np

from . import stats

NODE_ALPHA = 0.01           # level of the differential colouring (Holm over nodes)
CLIP = 4.0                  # log2 rate ratio drawn at most (a side without samples)


def node_changes(pairs, e_b, e_c) -> list:
    """Per (baseline, current) count pair: the clipped log2 rate ratio
    where the change is significant, else None (module invariants 1-2)."""
    if not pairs or not e_b or not e_c:
        return [None] * len(pairs)
    b = np.array([p[0] for p in pairs], dtype=np.int64)
    c = np.array([p[1] for p in pairs], dtype=np.int64)
    t = stats.test_counts(c, b, e_c, e_b)
    p2 = np.minimum(1.0, 2 * np.minimum(t["p_inc"], t["p_dec"]))
    adj = stats.holm(p2)
    out = []
    for i in range(len(pairs)):
        if not adj[i] < NODE_ALPHA:
            out.append(None)
        elif b[i] == 0:
            out.append(CLIP)
        elif c[i] == 0:
            out.append(-CLIP)
        else:
            ratio = math.log2((c[i] / e_c) / (b[i] / e_b))
            out.append(round(max(-CLIP, min(CLIP, ratio)), 3))
    return out
