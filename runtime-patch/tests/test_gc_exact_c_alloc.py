"""Samples taken from the runtime's C allocation functions, or followed
by a call to C, move no collection (memprof.c, design 8.9): for each C
allocation entry point, a small program run under the built-in tracker
with 20 seeds, native and bytecode, ends with exactly the GC counters of
its unprofiled run.

Every program keeps a list of its recent blocks and drops it at a fixed
step, so what a minor collection promotes depends on exactly which
allocation it falls at; a collection moved by even a few words shows in
`promoted_words`. A small minor heap (s=32k) gives each run dozens of
minor collections and a few major cycles in a few milliseconds.
"""

import concurrent.futures
import os

import pytest

from runtime_testlib import profile, run

# program -> (iterations, the entry point it exercises)
PROGRAMS = {
    "c_alloc_small": (60_000, "caml_alloc_small (Array.make)"),
    "c_alloc": (60_000, "caml_alloc (Obj.new_block)"),
    "c_alloc_shr": (40_000, "caml_alloc_shr (Array.make, large)"),
    "c_alloc_string": (60_000, "caml_alloc_string (Bytes.create, Buffer)"),
    "c_alloc_custom": (60_000, "caml_alloc_custom (Int64.of_string)"),
    "c_alloc_bigarray": (30_000, "caml_alloc_custom_mem (Bigarray)"),
    "c_alloc_unmarshal": (30_000, "unmarshalling (Marshal.from_string)"),
    # Not an entry point: samples of OCaml allocations followed by the
    # return from a C primitive (how the `kb` benchmark's GC moved).
    "c_call_after_sample": (60_000, "OCaml allocations, C calls (compare)"),
}
SEEDS = range(1, 21)
RATE = 1e-2
RUNPARAM = "s=32k"
KEYS = ("minor_words", "promoted_words", "major_words",
        "minor_collections", "major_collections")


def unprofiled_counters(exe, n):
    """The counters OCAMLRUNPARAM=v=0x400 prints at exit."""
    res = run(exe, n, runparam=f"{RUNPARAM},v=0x400")
    stats = dict(line.split(": ") for line in res.stderr.splitlines() if ": " in line)
    return {k: int(stats[k]) for k in KEYS}


@pytest.mark.parametrize("backend", ["native", "bytecode"])
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_c_allocation_samples_move_no_collection(build, tmp_path, program, backend):
    n, entry = PROGRAMS[program]
    exe = build(program, backend=backend)
    off = unprofiled_counters(exe, n)
    assert off["minor_collections"] >= 10, off  # the program is GC-sensitive enough

    def counters(seed):
        d = tmp_path / f"seed{seed}"
        d.mkdir()
        prof, _, _ = profile(exe, n, rate=RATE, seed=seed, frames=4, tmp=d,
                             runparam=RUNPARAM)
        assert prof["totals"]["samples"] > 0
        return seed, {k: prof["gc"][k] for k in KEYS}

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = dict(pool.map(counters, SEEDS))
    moved = {seed: {k: (got[k], off[k]) for k in KEYS if got[k] != off[k]}
             for seed, got in results.items() if got != off}
    assert not moved, (f"{entry}, {backend}: profiled counters (profiled, unprofiled) "
                       f"differ for {len(moved)} of {len(SEEDS)} seeds: {moved}")
