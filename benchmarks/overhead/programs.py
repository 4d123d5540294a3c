"""The programs the overhead study runs and the environment it runs them in.

Each benchmark of the manifest (a memprof_ci.inputs.manifest.Benchmark) has three
builds: `patched` (its command's argv[0], built with the patched runtime),
`ocamltracker` (the same program linked with the OCaml-level tracker, in
the ocamltracker/ folder beside it) and `stock` (built with stock OCaml,
in --stock-dir under the same file name).
Invariants: every command runs with OCAMLMEMPROF, OCAMLMEMPROF_OCAML_RATE,
OCAMLMEMPROF_OCAML_OUT and OCAMLRUNPARAM removed from the inherited
environment (and the benchmark's own env added), so on and off differ only
in the variable that turns profiling on; check_binaries raises StudyError
naming the make target or package to install before anything runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from memprof_ci.inputs.manifest import Benchmark

from .common import StudyError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRUBBED_ENV = ("OCAMLMEMPROF", "OCAMLMEMPROF_OCAML_RATE", "OCAMLMEMPROF_OCAML_OUT",
                "OCAMLRUNPARAM")
# The OCaml-level tracker's summary line on stderr, with its sample count.
OCAML_LINE = re.compile(r"^ocaml-tracker: .*\bsamples=(\d+)", re.M)


def variant_exes(bench: Benchmark, stock_dir: str) -> dict:
    exe = bench.command[0]
    d, base = os.path.split(exe)
    return {"patched": exe,
            "ocamltracker": os.path.join(d, "ocamltracker", base),
            "stock": os.path.join(stock_dir, base)}


def check_binaries(benches: list[Benchmark], stock_dir: str, callgrind: bool) -> None:
    need = [("patched", "make runtime benchmarks"),
            ("ocamltracker", "make benchmarks-ocamltracker")]
    if callgrind:
        need.append(("stock", "make stock-benchmarks"))
    for b in benches:
        exes = variant_exes(b, stock_dir)
        for kind, target in need:
            p = exes[kind]
            if not (os.path.isfile(p) and os.access(p, os.X_OK)):
                raise StudyError(f"missing {kind} binary {os.path.relpath(p, ROOT)} "
                                 f"for benchmark {b.name!r}: run `{target}` first")
    for tool, why in (("hyperfine", "apt-get install hyperfine"),) + (
            (("valgrind", "apt-get install valgrind (or pass --no-callgrind)"),)
            if callgrind else ()):
        if shutil.which(tool) is None:
            raise StudyError(f"{tool} not found on PATH: {why}")


def base_env(bench: Benchmark) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(bench.env)
    return env


def c_profile_samples(path: str) -> int:
    """The sample count of a profile written by the C tracker."""
    with open(path) as fh:
        return int(json.load(fh)["totals"]["samples"])


def tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"
