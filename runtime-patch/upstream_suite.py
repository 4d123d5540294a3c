#!/usr/bin/env python3
"""Run directories of OCaml's own testsuite (5.4.1's, or 5.3.0's) with the built-in tracker
on, in the patched build tree that `make runtime` keeps (_build/ocaml-src):
every program the tests run (the compilers and ocamltest included) writes a
profile, and every test must pass as it does without the tracker.

Usage: upstream_suite.py [--tree DIR] [--out DIR] [--memprof SPEC] [DIR...]
  DIR...         testsuite directories under tests/ (default: DIRS below)
  --tree         the patched OCaml build tree (default _build/ocaml-src)
  --out          where profiles go, one subdirectory per testsuite
                 directory, emptied first (default _build/test-upstream)
  --memprof      OCAMLMEMPROF without out= (default rate=1e-2,seed=1)

For each directory, ocamltest runs every test file in every mode it asks
for (native and bytecode); a file counts as failed when any of its runs
fails. A file that fails with the tracker is run again without it, so the
summary says whether the tracker is the cause. Every profile written is
checked against runtime-patch/format/profile.schema.json and must not be
marked incomplete, except by the one abnormal end the runtime documents
for a program that asks for it (an unhandled effect with Effect not
linked, which tests/effects does on purpose): those are counted apart.

Exit status: 0 when every file passed (or was skipped) and every profile
is valid and complete; 1 otherwise; 2 on bad arguments or a missing tree.
Nothing here changes the build tree beyond what ocamltest writes in it."""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "runtime-patch" / "format" / "profile.schema.json"

# The runtime-heavy directories of the testsuite.
DIRS = ["parallel", "gc-roots", "effects", "callback", "c-api", "lib-marshal",
        "lib-systhreads", "lib-threads", "memory-model", "weak-ephe-final",
        "ephe-c-api", "compaction", "lib-domain", "lib-sync",
        "lib-runtime-events", "runtime-errors", "statmemprof", "lib-hashtbl",
        "lib-bigarray", "misc", "lib-dynlink-domains", "backtrace"]

# The reason the runtime gives when it ends a program for an unhandled
# effect whose exception is not linked (fiber.c.patch): the profile is
# rightly incomplete.
ENDED_BY_RUNTIME = "exception Effect.Unhandled raised by the runtime but not registered"

RESULT = re.compile(r"testing '([^']+)'.*=> (\w+(?: \w+)?)")


def clean_env(memprof=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCAMLMEMPROF", "OCAMLRUNPARAM", "CAMLRUNPARAM")}
    if memprof is not None:
        env["OCAMLMEMPROF"] = memprof
    return env


def run_tests(tree, what, env, timeout=7200):
    """Run `make one` in the testsuite for `what` (DIR=... or TEST=...);
    return ({file: "passed"|"skipped"|"failed"...}, log)."""
    res = subprocess.run(["make", "-C", str(tree / "testsuite"), "one", what],
                         env=env, capture_output=True, text=True, timeout=timeout)
    log = res.stdout + res.stderr
    results = {}
    for name, outcome in RESULT.findall(log):
        # A file with several runs failed if any of them did.
        if results.get(name) not in (None, "passed", "skipped"):
            continue
        results[name] = outcome
    if res.returncode != 0 and not any(r not in ("passed", "skipped") for r in results.values()):
        results["(make)"] = f"exit {res.returncode}"
    return results, log


def check_profiles(directory):
    """(number of profiles, [(file, problem)], number that the runtime ended
    for an unhandled effect) for the profiles in directory."""
    import jsonschema
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    problems = []
    ended = 0
    files = sorted(directory.glob("*.json"))
    for f in files:
        try:
            doc = json.loads(f.read_bytes())
            validator.validate(doc)
        except (ValueError, jsonschema.ValidationError) as e:
            problems.append((f.name, f"invalid: {str(e).splitlines()[0]}"))
            continue
        if doc.get("incomplete", "").startswith(ENDED_BY_RUNTIME):
            ended += 1
        elif "incomplete" in doc:
            problems.append((f.name, f"incomplete: {doc['incomplete']}"))
    leftovers = [p.name for p in directory.iterdir() if ".tmp." in p.name]
    problems += [(name, "temporary file left behind") for name in leftovers]
    return len(files), problems, ended


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", default=DIRS)
    ap.add_argument("--tree", type=pathlib.Path, default=ROOT / "_build" / "ocaml-src")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "_build" / "test-upstream")
    ap.add_argument("--memprof", default="rate=1e-2,seed=1")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    if not (tree / "testsuite" / "tests").is_dir():
        print(f"upstream_suite: no OCaml build tree at {tree} (run `make runtime`)", file=sys.stderr)
        return 2
    if "out=" in args.memprof:
        print(f"upstream_suite: --memprof must not set out= ({args.memprof!r})", file=sys.stderr)
        return 2
    for d in args.dirs:
        if not (tree / "testsuite" / "tests" / d).is_dir():
            print(f"upstream_suite: no testsuite directory tests/{d} in {tree}", file=sys.stderr)
            return 2

    failed = False
    total_files = total_profiles = 0
    for d in args.dirs:
        out = args.out.resolve() / d
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        spec = f"{args.memprof},out={out}/%p.json"
        results, log = run_tests(tree, f"DIR=tests/{d}", clean_env(spec))
        (out.parent / f"{d}.log").write_text(log)
        bad = {f: r for f, r in results.items() if r not in ("passed", "skipped")}
        nprof, problems, ended = check_profiles(out)
        total_files += len(results)
        total_profiles += nprof
        print(f"{d}: {len(results)} files, {len(results) - len(bad)} passed or skipped, "
              f"{nprof} profiles, {len(problems)} profile problems"
              + (f" ({ended} ended by the runtime for an unhandled effect, "
                 "marked incomplete)" if ended else ""), flush=True)
        for f, r in sorted(bad.items()):
            failed = True
            if f == "(make)":
                print(f"  make: {r}")
                continue
            stock, _ = run_tests(tree, f"TEST=tests/{d}/{f}", clean_env())
            verdict = stock.get(f, "not run")
            cause = ("fails only with the tracker" if verdict in ("passed", "skipped")
                     else f"fails without it too ({verdict})")
            print(f"  {f}: {r}; {cause}")
        for f, p in problems:
            failed = True
            print(f"  profile {f}: {p}")
        if not results:
            failed = True
            print(f"  no results read from the testsuite's output (see {out.parent / (d + '.log')})")
    print(f"{'FAILED' if failed else 'ok'}: {len(args.dirs)} directories, {total_files} files, "
          f"{total_profiles} profiles, with OCAMLMEMPROF={args.memprof},out=...")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
