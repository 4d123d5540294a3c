"""A stand-in for an OCaml benchmark built with the memprof-ci runtime.

Usage: fakebench.py SPEC.json [--exit N] [--crash] [--sleep S] [--work S] [--no-profile]
                   [--garbage] [--version V] [--count FILE]
                   [--slow-when-profiled S] [--slow-first-timed N FILE [--burst S]]
                   [--profiled-cost FILE]
SPEC lists allocation sites ({"frames": [[function, file, line], ...],
"words": W, "live": fraction, optionally "peak": fraction live at the peak,
at least "live"; with no "peak" anywhere the profile records none) and GC
totals, optionally "budgets" (a version-6 profile's section, written as
given), and optionally "schedule": {"gc": relative amplitude, "peak":
amplitude, "shift": n}, which moves promoted_words, major_words and
top_heap_words by up to that fraction of themselves and each site's
fraction live at the peak by up to that much, as a deterministic function
of the schedule a run gets: its minor heap size (OCAMLRUNPARAM s=),
the interpreter's argv[0] length and "shift" (a rebuild elsewhere).
It reads OCAMLMEMPROF like the
runtime does and writes a version-1 profile whose per-stack samples are
Poisson(rate * words) draws from an RNG seeded by the OCAMLMEMPROF seed, so
runs are deterministic per seed.  Invariant: the written profile satisfies the
identities of profile-format.md.

Under valgrind (the overhead check's counted runs) it is a Python program
like any other: the interpreter's instructions are counted, the same on
every run given PYTHONHASHSEED (the test manifests set it), and the cost
of profiling is what the profiled run does more: draw and write the
profile.
--profiled-cost FILE reads "N S" from FILE, if it exists, in each profiled
run: N loop iterations more (a real cost of profiling, counted), and a
child process that uses S seconds of CPU (a slow machine lined up with the
profiled runs: their time grows, their count does not, as valgrind counts
this process only), each stall logged as a line of FILE.stalls.
"""

import json
import math
import os
import re
import random
import sys
import time


class Rng:
    """Poisson/binomial draws without numpy, so a fake run starts fast."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def poisson(self, mu):
        if mu > 60:
            return max(0, round(self.r.gauss(mu, math.sqrt(mu))))
        k, p, limit = 0, 1.0, math.exp(-mu)
        while True:
            p *= self.r.random()
            if p <= limit:
                return k
            k += 1

    def binomial(self, n, q):
        if n > 200:
            return min(n, max(0, round(self.r.gauss(n * q, math.sqrt(n * q * (1 - q)) or 0.0))))
        return sum(self.r.random() < q for _ in range(n))


def spin(seconds):
    """Use `seconds` of CPU time (the overhead check times CPU, not wall)."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass


def frame(f):
    fn, fl, ln = f
    return {"file": fl, "line": ln, "col_start": None if ln is None else 2,
            "col_end": None if ln is None else 9, "function": fn, "inlined": False}


def _items(setting):
    """OCAMLMEMPROF items, split at the commas that no `%` escapes."""
    items, cur, i = [], "", 0
    while i < len(setting):
        c = setting[i]
        if c == "%" and i + 1 < len(setting):
            cur, i = cur + setting[i:i + 2], i + 2
            continue
        if c == ",":
            items.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    return items + [cur]


SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass\n"


def stall(seconds):
    """A child process uses `seconds` of CPU; this one waits for it."""
    pid = os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", SPIN.format(seconds)],
                         os.environ)
    os.waitpid(pid, 0)


def extra_work(n):
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 1000003
    return acc


def schedule_draw(spec, what):
    """A number in [-1, 1] fixed by the run's schedule (see the docstring)."""
    rp = os.environ.get("OCAMLRUNPARAM", "")
    s = [x[2:] for x in rp.split(",") if x.startswith("s=")]
    # The interpreter's argv[0] as invoked (a dithered run pads it), not the
    # script's path, which depends on where the checkout is.  The harness
    # names the program relative to the run's directory (`../../usr/bin/..`,
    # runner.program_argv0): its length is counted as the absolute path's,
    # which does not depend on where the test runs.
    a0 = sys.orig_argv[0]
    n = a0.count("../")
    length = len(a0) - 3 * n + (1 if n else 0)
    key = f"{what}/{s[-1] if s else ''}/{length}/{spec['schedule'].get('shift', 0)}"
    return random.Random(key).uniform(-1.0, 1.0)


def main():
    args = sys.argv[1:]
    spec = json.load(open(args[0]))
    opts = args[1:]
    if "--sleep" in opts:
        time.sleep(float(opts[opts.index("--sleep") + 1]))
    if "--work" in opts:
        spin(float(opts[opts.index("--work") + 1]))
    if "--crash" in opts:
        sys.stderr.write("Fatal error: exception Not_found\n")
        os.abort()
    if "--exit" in opts:
        sys.stderr.write("bench: something went wrong\n")
        sys.exit(int(opts[opts.index("--exit") + 1]))
    env = os.environ.get("OCAMLMEMPROF")
    if "--count" in opts:
        with open(opts[opts.index("--count") + 1], "a") as fh:
            fh.write(f"{env}\n")
    if env and "--slow-when-profiled" in opts:
        spin(float(opts[opts.index("--slow-when-profiled") + 1]))
    if env and "--slow-first-timed" in opts and ".overhead." in env:
        # Slow only in the first N profiled runs of the overhead timing,
        # counted in FILE: a burst of load that confirmation rounds outlast.
        i = opts.index("--slow-first-timed")
        first, counter = int(opts[i + 1]), opts[i + 2]
        with open(counter, "a+") as fh:
            fh.seek(0)
            seen = len(fh.read().splitlines())
            fh.write("run\n")
        if seen < first:
            spin(float(opts[opts.index("--burst") + 1]) if "--burst" in opts else 0.3)
    if env and "--profiled-cost" in opts:
        path = opts[opts.index("--profiled-cost") + 1]
        if os.path.exists(path):
            with open(path) as fh:
                n, s = fh.read().split()
            extra_work(int(n))
            if float(s) > 0:
                stall(float(s))
                with open(path + ".stalls", "a") as fh:
                    fh.write("stalled\n")
    if not env or "--no-profile" in opts:
        return
    cfg = dict(kv.split("=", 1) for kv in _items(env))
    rate, seed, frames = float(cfg["rate"]), int(cfg["seed"]), int(cfg["frames"])
    # As the runtime expands `out`: %p is the pid, %% a literal %, %, a comma.
    out = re.sub("%[p%,]", lambda m: str(os.getpid()) if m.group() == "%p" else m.group()[1],
                 cfg["out"])
    rng = Rng(seed + 1000 * spec.get("salt", 0))
    stacks = []
    keys = ("blocks", "samples", "words", "minor_samples", "major_samples", "marshal_samples",
            "custom_samples", "promoted_samples", "collected_samples", "live_samples")
    with_peak = any("peak" in s for s in spec["sites"])
    if with_peak:
        keys = keys[:-1] + ("peak_live_samples", "live_samples")
    totals = dict.fromkeys(keys, 0)
    for s in spec["sites"]:
        n = int(rng.poisson(rate * s["words"]))
        if n == 0:
            continue
        live = int(rng.binomial(n, s.get("live", 0.0)))
        st = {"frames": [frame(f) for f in s["frames"]], "blocks": n, "samples": n,
              "words": 4 * n, "minor_samples": n, "major_samples": 0, "marshal_samples": 0,
              "custom_samples": 0, "promoted_samples": live, "collected_samples": n - live,
              "live_samples": live}
        if with_peak:
            extra = max(0.0, s.get("peak", 0.0) - s.get("live", 0.0))
            if "schedule" in spec:
                extra = max(0.0, extra + spec["schedule"].get("peak", 0.0) * schedule_draw(
                    spec, str(s["frames"])))
            st["peak_live_samples"] = live + int(rng.binomial(n - live, min(1.0, extra)))
        stacks.append(st)
        for k in keys:
            totals[k] += st[k]
    gc = {"minor_words": 0, "promoted_words": 0, "major_words": 0, "minor_collections": 1,
          "major_collections": 1, "compactions": 0}
    gc.update(spec.get("gc", {}))
    if not spec.get("gc"):
        gc["minor_words"] = int(sum(s["words"] for s in spec["sites"]))
    if "schedule" in spec:
        u = 1 + spec["schedule"].get("gc", 0.0) * schedule_draw(spec, "gc")
        for k in ("promoted_words", "major_words", "top_heap_words"):
            if k in gc:
                gc[k] = int(gc[k] * u)
    doc = {"format": "memprof-ci/profile", "version": int(opts[opts.index("--version") + 1])
           if "--version" in opts else 1, "ocaml_version": spec.get("ocaml_version", "5.3.0"),
           "backend": "native",
           "argv": sys.argv, "config": {"rate": rate, "seed": seed, "frames": frames,
                                        **({"peak": "events"} if with_peak else {}),
                                        # As the runtime records a setting of live.
                                        **({"live": cfg["live"]} if "live" in cfg else {})},
           "gc": gc, "totals": totals, "stacks": stacks}
    if "budgets" in spec:
        # Format version 6: frames in a table, and the annotated functions'
        # counts as given (a spec's "budgets" is the profile's section).
        index: dict = {}
        for st in stacks:
            st["frames"] = [index.setdefault(json.dumps(f, sort_keys=True), len(index))
                            for f in st["frames"]]
        table = [json.loads(k) for k in index]
        doc.update(version=6, frame_table=table, budgets=spec["budgets"])
    # Like the runtime: a name that is not a regular file (/dev/stdout) is
    # written in place, anything else through a temporary file.
    in_place = os.path.exists(out) and not os.path.isfile(out)
    tmp = out if in_place else f"{out}.tmp.{os.getpid()}"
    with open(tmp, "w") as fh:
        if "--garbage" in opts:
            fh.write('{"format": "memprof-ci/profile", "version": 1, "stac')
        else:
            json.dump(doc, fh)
    if not in_place:
        os.replace(tmp, out)


main()
