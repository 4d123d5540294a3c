"""The exit-time reachability walk against the GC, on programs written by
others: single-domain programs of upstream's own testsuite (the same
OCaml tree) whose live-at-exit samples mix live and collected
blocks through lazy streams, finalisers, effects, deep structures and
hash tables. Profiled with `live=walk` (the default) and `live=gc` (two
major cycles decide), each pair of profiles must be byte-identical.

Chosen from a one-off run over 143 upstream test programs on 2026-11-22:
the 135 single-domain ones that wrote a profile gave identical pairs; the
rest spawn domains, whose sampling is not reproducible."""

import json
import subprocess

import pytest

from runtime_testlib import SRC_TREE, run, same_but_live_mode

TREE = SRC_TREE / "testsuite" / "tests"

PROGRAMS = [
    "misc/hamming.ml",                  # lazy streams: 44% of samples live
    "misc/gc_mark_stack_overflow.ml",   # a structure deep enough to overflow the mark stack
    "misc/bdd.ml",
    "misc/boyer.ml",
    "misc/sorts.ml",
    "weak-ephe-final/finaliser.ml",     # Gc.finalise and finalise_last
    "effects/manylive.ml",              # many live continuations
    "lib-hashtbl/htbl.ml",
    "lib-set/testmap.ml",
    "lib-dynarray/heap_sort.ml",
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_walk_and_gc_agree_on_upstream_program(runtime_bin, tmp_path, program):
    src = TREE / program
    if not src.is_file():
        pytest.fail(f"no {src}: run `make runtime` first (it keeps the source tree)")
    (tmp_path / "main.ml").write_text(src.read_text())
    res = subprocess.run([str(runtime_bin / "ocamlopt"), "-g", "main.ml", "-o", "main.exe"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    profiles = {}
    for live in ("walk", "gc"):
        out = tmp_path / f"{live}.json"
        run(tmp_path / "main.exe", memprof=f"rate=1e-2,seed=1,live={live},out={out}",
            cwd=tmp_path)
        profiles[live] = out.read_bytes()
    totals = json.loads(profiles["walk"])["totals"]
    assert totals["live_samples"] > 0 and totals["collected_samples"] > 0, \
        "a program whose blocks are all live or all dead tests nothing here"
    assert same_but_live_mode(profiles["walk"], profiles["gc"])
