"""How far a counted prefix's overhead is from the whole run's: one
benchmark counted under cachegrind with profiling off and on, whole and
stopped after the minor collection that holds about W words, for each W
given (harness/STATISTICS.md, "A prefix of a long run").

    /usr/bin/python3 benchmarks/prefix_bias.py [--bench lists] [--size 26000]
        [--words 33554432 67108864]

Prints one line per size: the stop, the estimated cycles' and the
instructions' overhead, and each side's wall time under valgrind.  A
benchmark, not a test: it asserts nothing.
"""

import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness"))
from memprof_ci.measure.drivers import cachegrind  # noqa: E402

ON = "rate=0.0001,seed=1,frames=16,out=/dev/stdout"


def count(argv, spec):
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    if spec:
        env["OCAMLMEMPROF"] = spec
    t = time.monotonic()
    r = cachegrind.count(argv, env, "/tmp", timeout=3000, threads=False, capture_stdout=True)
    return cachegrind.estimated_cycles(r["events"]), r["events"]["Ir"], time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="lists")
    ap.add_argument("--size", default="26000")
    ap.add_argument("--words", type=int, nargs="*", default=[1 << 25, 1 << 26])
    a = ap.parse_args()
    argv = [os.path.join(ROOT, "_build", "benchmarks", f"{a.bench}.exe"), a.size]
    out = subprocess.run(argv, env=dict(os.environ, OCAMLMEMPROF=ON), check=True,
                         capture_output=True).stdout
    gc = json.loads(out[out.index(b"{"):])["gc"]
    n, w = gc["minor_collections"], gc["minor_words"]
    print(f"{a.bench} {a.size}: {n:,} minor collections, {w:,} minor words")
    for words in [*a.words, 0]:
        k = math.ceil(words * n / w) if words else None
        if k is not None and k >= n:
            print(f"{words:,} words: the whole run (it allocates no more)")
            continue
        specs = [f"stop={k}", f"{ON},stop={k}"] if k else ["", ON]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            (c0, i0, t0), (c1, i1, t1) = pool.map(lambda s: count(argv, s), specs)
        what = f"first {k:,} of {n:,} collections ({words:,} words)" if k else "whole run"
        print(f"{what}: cycles {c1 / c0 - 1:+.2%}, instructions {i1 / i0 - 1:+.2%}, "
              f"valgrind wall {t0:.1f} s off, {t1:.1f} s on", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
