"""What the gate itself costs: `check` and `update-baselines` on one benchmark,
as wall-time ratios to one unprofiled run of it, measured in one run.

    /usr/bin/python3 benchmarks/check_cost.py [--bench lists] [--size 17000]
        [--variant benchmarks/tests/variants/lists_more.patch] [--old-harness DIR]
    /usr/bin/python3 benchmarks/check_cost.py --compiler typing/ctype

The benchmark's program (built by `make benchmarks`) is copied into a
scratch directory with a manifest that sets nothing but its command: a
default manifest, as a new user writes it (no `overhead_args`, so the
counted runs use the full command).  Then, one after the other:

1. `update-baselines` (fresh: nothing to carry from), then again (the same
   code: the count is carried);
2. `check` of the same code (the default check);
3. `check` of the benchmark with `--variant` applied (a change that
   allocates more: the check fails, and the overhead is estimated from
   the baseline's count, or counted when the estimate nears the limit);
   the same check with no patch id (nothing carried or estimated: it
   counts); `update-baselines` of the variant (it counts again);
4. `check --overhead-info` with no patch id (nothing carried, timed pairs
   and peak RSS): what a default check cost before this study;
5. with `--old-harness DIR` (a copy of an older harness/), its default
   check and update-baselines.

The unit, one unprofiled run's wall time, is measured around each row (the
median of 3 runs just before and 3 just after it: the shared machine's
speed drifts over minutes); each figure is a step's wall time over it.
The per-step breakdown comes from the report's `cost` entry (check) and
the `wall time by step` line (update-baselines).  Prints a Markdown table.
A benchmark, not a test: it asserts nothing.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
OCAMLOPT = os.path.join(ROOT, "_build", "runtime", "bin", "ocamlopt")


def patch_id() -> str:
    with open(os.path.join(ROOT, "_build", "runtime", "patch-id")) as fh:
        return fh.read().strip()


def unit(argv: list, cwd: str, n: int = 5) -> list:
    env = {k: v for k, v in os.environ.items() if k != "OCAMLMEMPROF"}
    out = []
    for _ in range(n):
        t = time.monotonic()
        subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
        out.append(time.monotonic() - t)
    return out


def compiler_command(tmp: str, file: str) -> tuple[list, str]:
    """(argv, cwd): the patched compiler compiling one of its own files (a
    copy of `file` and its interface in `tmp`/src, its directory), through
    instruction scheduling and no further (all of the compiler's work but
    the assembler's), its output in `tmp`/out (an absolute path: the
    manifest would resolve a relative one against its own directory). The
    compiler lists the directories it searches, its own included, so
    nothing is written there: each run then allocates exactly as the
    last."""
    src = os.path.join(ROOT, "_build", "ocaml-src")
    for d in ("src", "out"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    for ext in (".ml", ".mli"):
        shutil.copy(os.path.join(src, file + ext), os.path.join(tmp, "src"))
    incs = [a for d in ("stdlib", "utils", "parsing", "typing", "file_formats", "lambda")
            for a in ("-I", os.path.join(src, d))]
    name = os.path.basename(file)
    return ([os.path.join(ROOT, "_build", "runtime", "bin", "ocamlopt.opt"), "-g",
             "-strict-sequence", "-principal", "-strict-formats", "-nostdlib", *incs,
             "-stop-after", "scheduling", "-c", name + ".ml", "-o",
             os.path.join(tmp, "out", name + ".cmx")], os.path.join(tmp, "src"))


def harness(tmp, harness_dir, args, pid):
    env = dict(os.environ, PYTHONPATH=harness_dir, MEMPROF_CI_PATCH_ID=pid)
    env.pop("MEMPROF_CI_SCHEDULE_RUNS", None)
    t = time.monotonic()
    r = subprocess.run([PY, "-m", "memprof_ci", *args], cwd=tmp, env=env,
                       capture_output=True, text=True)
    return time.monotonic() - t, r


def steps_of_update(stdout: str) -> dict:
    for line in stdout.splitlines():
        if "wall time by step:" in line:
            parts = line.split("wall time by step:")[1].split(";")[0].split(",")
            return {p.rsplit(" ", 2)[0].strip(): float(p.rsplit(" ", 2)[1]) for p in parts}
    return {}


def steps_of_check(tmp, rep, name) -> dict:
    with open(os.path.join(tmp, rep, "report.json")) as fh:
        b = json.load(fh)["benchmarks"][name]
    return dict(b.get("cost") or {}), b.get("overhead")


def overhead_of_baseline(tmp, name):
    with open(os.path.join(tmp, "baselines", f"{name}.json")) as fh:
        return json.load(fh).get("overhead")


def describe(o) -> str:
    """The overhead cell: how it was obtained, its estimate, and the part
    of the run a count covered."""
    if not o:
        return "-"
    stop = (o.get("counted") or {}).get("stop")
    part = f", first {stop['after']} of {stop['of']} collections" if stop else ""
    return f"{(o.get('obtained') or {}).get('count', '-')} {o['estimate']:+.2%}{part}"


def build_variant(bench: str, patch: str, out: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(ROOT, "benchmarks", f"{bench}.ml"), d)
        subprocess.run(["patch", "-s", "-p0", "-i", os.path.abspath(patch)], cwd=d, check=True)
        subprocess.run([OCAMLOPT, "-g", "-o", out, f"{bench}.ml"], cwd=d, check=True,
                       stdout=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="lists")
    ap.add_argument("--size", default="17000")
    ap.add_argument("--variant", default=os.path.join(ROOT, "benchmarks", "tests", "variants",
                                                      "lists_more.patch"))
    ap.add_argument("--old-harness", metavar="DIR")
    ap.add_argument("--overhead-args", metavar="ARG", help="the manifest's overhead_args "
                    "(one argument; default: none, the counted runs use the command)")
    ap.add_argument("--compiler", metavar="FILE", help="instead of a bundled benchmark, the "
                    "patched compiler compiling FILE (.ml, without it) of _build/ocaml-src, "
                    "e.g. typing/ctype; no variant rows")
    args = ap.parse_args()
    pid = patch_id()
    new = os.path.join(ROOT, "harness")
    rows = []
    if args.compiler:
        return compiler_rows(args, pid, new)
    with tempfile.TemporaryDirectory(prefix="check-cost.") as tmp:
        exe = os.path.join(tmp, "prog.exe")
        orig = os.path.join(ROOT, "_build", "benchmarks", f"{args.bench}.exe")
        shutil.copy(orig, exe)
        variant = os.path.join(tmp, "variant.exe")
        build_variant(args.bench, args.variant, variant)
        with open(os.path.join(tmp, "benchmarks.toml"), "w") as fh:
            fh.write(f'[[benchmark]]\nname = "{args.bench}"\n'
                     f'command = ["./prog.exe", "{args.size}"]\ntimeout = 300\n'
                     + (f'overhead_args = ["{args.overhead_args}"]\n'
                        if args.overhead_args else ""))
        before = unit([exe, args.size], tmp)
        man = ["--manifest", "benchmarks.toml", "--baselines", "baselines"]

        def run(label, harness_dir, argv, rep=None, p=pid):
            # The unit of this row: 3 unprofiled runs just before it and 3
            # just after (the machine's speed drifts over minutes).
            near = unit([exe, args.size], tmp, 3)
            wall, r = harness(tmp, harness_dir, argv, p)
            near += unit([exe, args.size], tmp, 3)
            cost, how = (steps_of_check(tmp, rep, args.bench) if rep else
                         (steps_of_update(r.stdout), overhead_of_baseline(tmp, args.bench)))
            rows.append((label, wall, r.returncode, cost, how, statistics.median(near)))
            print(f"{label}: {wall:.1f} s, exit {r.returncode}", file=sys.stderr)
            if r.returncode not in (0, 1):
                print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stderr)

        run("update-baselines (fresh)", new, ["update-baselines", *man])
        run("update-baselines (same code again)", new, ["update-baselines", *man])
        run("check (same code)", new, ["check", *man, "--report-dir", "r1"], "r1")
        shutil.copy(variant, exe)
        run("check (allocation changed: " + os.path.basename(args.variant) + ")", new,
            ["check", *man, "--report-dir", "r2"], "r2")
        run("check (allocation changed), patch id unknown: counted", new,
            ["check", *man, "--report-dir", "r4"], "r4", p="")
        shutil.copytree(os.path.join(tmp, "baselines"), os.path.join(tmp, "baselines.orig"))
        run("update-baselines (allocation changed)", new, ["update-baselines", *man])
        shutil.rmtree(os.path.join(tmp, "baselines"))
        os.rename(os.path.join(tmp, "baselines.orig"), os.path.join(tmp, "baselines"))
        shutil.copy(orig, exe)
        run("check --overhead-info, nothing carried (the former default)", new,
            ["check", *man, "--overhead-info", "--report-dir", "r3"], "r3", p="")
        if args.old_harness:
            shutil.rmtree(os.path.join(tmp, "baselines"))
            run("former harness: update-baselines", args.old_harness,
                ["update-baselines", *man])
            run("former harness: check", args.old_harness, ["check", *man])
        after = unit([exe, args.size], tmp)
    print_table(f"{args.bench}.exe {args.size}", before, after, rows)
    return 0


def print_table(what, before, after, rows) -> None:
    print(f"\nOne unprofiled run of `{what}`: median "
          f"{statistics.median(before):.3f} s before the steps, "
          f"{statistics.median(after):.3f} s after; each row's unit is the median of 3 runs "
          f"just before it and 3 just after\n")
    print("| what | wall | unit | runs | exit | by step (runs) | overhead count |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, wall, rc, cost, how, u in rows:
        steps = ", ".join(f"{k} {v / u:.1f}" for k, v in sorted(cost.items(),
                                                                  key=lambda x: -x[1]))
        print(f"| {label} | {wall:.1f} s | {u:.3f} s | {wall / u:.1f} | {rc} | {steps or '-'} | "
              f"{describe(how)} |")


def compiler_rows(args, pid, new) -> int:
    rows = []
    name = "compiler"
    with tempfile.TemporaryDirectory(prefix="check-cost.") as tmp:
        argv, cwd = compiler_command(tmp, args.compiler)
        with open(os.path.join(tmp, "benchmarks.toml"), "w") as fh:
            fh.write(f'[[benchmark]]\nname = "{name}"\ncommand = {json.dumps(argv)}\n'
                     f'cwd = "src"\ntimeout = 300\n')
        before = unit(argv, cwd)
        man = ["--manifest", "benchmarks.toml", "--baselines", "baselines"]

        def run(label, argv_h, rep=None, p=pid):
            near = unit(argv, cwd, 3)
            wall, r = harness(tmp, new, argv_h, p)
            near += unit(argv, cwd, 3)
            cost, how = (steps_of_check(tmp, rep, name) if rep else
                         (steps_of_update(r.stdout), overhead_of_baseline(tmp, name)))
            rows.append((label, wall, r.returncode, cost, how, statistics.median(near)))
            print(f"{label}: {wall:.1f} s, exit {r.returncode}", file=sys.stderr)
            if r.returncode not in (0, 1):
                print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stderr)

        run("update-baselines (fresh)", ["update-baselines", *man])
        run("update-baselines (same code again)", ["update-baselines", *man])
        run("check (same code)", ["check", *man, "--report-dir", "r1"], "r1")
        run("check, patch id unknown: counted", ["check", *man, "--report-dir", "r2"], "r2",
            p="")
        run("check --overhead-info, patch id unknown", ["check", *man, "--overhead-info",
                                                          "--report-dir", "r3"], "r3", p="")
        after = unit(argv, cwd)
    print_table(f"ocamlopt.opt ... -stop-after scheduling -c {args.compiler}.ml", before,
                after, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
