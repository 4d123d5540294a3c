"""How far a counted prefix's overhead is from the whole run's: one
program counted under cachegrind with profiling off and on, stopped after
the minor collection that holds about W words, for each W given, with the
profiled side's exit walk off as the gate counts a prefix; then the whole
run without the walk and with it (harness/STATISTICS.md, "A prefix of a
long run").

    /usr/bin/python3 benchmarks/prefix_bias.py [--bench lists] [--size 26000]
        [--words 8388608 16777216]
    /usr/bin/python3 benchmarks/prefix_bias.py --compiler typing/ctype

Prints one line per count: the part counted, the estimated cycles' and the
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
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from memprof_ci.measure.drivers import cachegrind  # noqa: E402
from check_cost import compiler_command  # noqa: E402

ON = "rate=0.0001,seed=1,frames=16,out=/dev/stdout"


def count(argv, cwd, spec):
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    if spec:
        env["OCAMLMEMPROF"] = spec
    t = time.monotonic()
    r = cachegrind.count(argv, env, cwd, timeout=3000, threads=False, capture_stdout=True)
    return cachegrind.estimated_cycles(r["events"]), r["events"]["Ir"], time.monotonic() - t


def pair(argv, cwd, what, off, on):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        (c0, i0, t0), (c1, i1, t1) = pool.map(lambda s: count(argv, cwd, s), [off, on])
    print(f"{what}: cycles {c1 / c0 - 1:+.2%}, instructions {i1 / i0 - 1:+.2%}, "
          f"valgrind wall {t0:.1f} s off, {t1:.1f} s on", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="lists")
    ap.add_argument("--size", default="26000")
    ap.add_argument("--compiler", metavar="FILE")
    ap.add_argument("--words", type=int, nargs="*", default=[1 << 23, 1 << 24])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="prefix-bias.") as cwd:
        if a.compiler:
            argv, cwd = compiler_command(cwd, a.compiler)
            name = f"the compiler on {a.compiler}.ml"
        else:
            argv = [os.path.join(ROOT, "_build", "benchmarks", f"{a.bench}.exe"), a.size]
            name = f"{a.bench} {a.size}"
        out = subprocess.run(argv, cwd=cwd, env=dict(os.environ, OCAMLMEMPROF=ON), check=True,
                             capture_output=True).stdout
        gc = json.loads(out[out.index(b'{"format"'):])["gc"]
        n, w = gc["minor_collections"], gc["minor_words"]
        print(f"{name}: {n:,} minor collections, {w:,} minor words")
        for words in a.words:
            k = math.ceil(words * n / w)
            if k >= n:
                print(f"{words:,} words: the whole run (it allocates no more)")
                continue
            pair(argv, cwd, f"first {k:,} of {n:,} collections ({words:,} words), no walk",
                 f"stop={k}", f"{ON},live=off,stop={k}")
        pair(argv, cwd, "whole run, no walk", "", f"{ON},live=off")
        pair(argv, cwd, "whole run, with the exit's walk", "", ON)
    return 0


if __name__ == "__main__":
    sys.exit(main())
