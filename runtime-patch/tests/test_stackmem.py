"""The stack budget (memprof_tracker.c, design 9; OCAMLMEMPROF stackmem=):
in native code the tracker keeps whole stacks while their records take at
most `stackmem` bytes; past that a new stack is cut to its site's slots (as
stacks=site cuts it), counted there, and its profile line says "cut".

So a program with a stack per sample keeps a bounded profile, the harness's
site table is the one whole stacks give, and the tracker's peak memory
follows the budget, not the number of samples.

The program is many_stacks.ml: leaf N allocates under a stack of DEPTH
return addresses that spells N in base 4, so at rate 1 every leaf has a
stack of its own."""

import sys

import pytest

from runtime_testlib import ROOT, read_profile, run
from test_stacks_site import COUNTS, site_table

sys.path.insert(0, str(ROOT / "harness"))
from memprof_ci.measure.overhead_rss import peak_kb  # noqa: E402
from memprof_ci.sites.grouping import GROUPINGS  # noqa: E402

LEAVES, DEPTH = "20000", "12"


def budget_profile(exe, tmp, stackmem, args=(LEAVES, DEPTH)):
    out = tmp / f"p.{stackmem}.json"
    run(exe, *args, memprof=f"rate=1,seed=1,stackmem={stackmem},out={out}")
    return read_profile(out.read_bytes())


def test_site_table_is_whole_stacks_and_cut_lines_are_marked(build, tmp_path):
    exe = build("many_stacks")
    whole = budget_profile(exe, tmp_path, "1G")
    cut = budget_profile(exe, tmp_path, "64k")
    assert whole["config"]["stackmem"] == 1 << 30 and cut["config"]["stackmem"] == 64 << 10
    assert not any(st.get("cut") for st in whole["stacks"])
    assert len(whole["stacks"]) >= int(LEAVES)            # a stack per leaf
    cut_lines = [st for st in cut["stacks"] if st.get("cut")]
    assert cut_lines and all(st["cut"] is True for st in cut_lines)
    # 64 KiB holds a few hundred whole records of 16 slots; the cut ones are
    # one per site, whatever the number of leaves.
    assert len(cut["stacks"]) < 600
    assert all(len(st["frames"]) <= 3 for st in cut_lines)
    # Most samples landed on cut lines, and every count is the whole run's.
    assert sum(st["samples"] for st in cut_lines) > cut["totals"]["samples"] // 2
    assert cut["totals"] == whole["totals"] and cut["gc"] == whole["gc"]
    for grouping in GROUPINGS:
        assert site_table(cut["stacks"], grouping, COUNTS) == \
            site_table(whole["stacks"], grouping, COUNTS), grouping


def test_zero_budget_cuts_every_stack_that_can_be_cut(build, tmp_path):
    exe = build("many_stacks")
    zero = budget_profile(exe, tmp_path, "0")
    whole = budget_profile(exe, tmp_path, "1G")
    assert len(zero["stacks"]) < 50 < len(whole["stacks"])
    assert zero["totals"] == whole["totals"]
    assert site_table(zero["stacks"], "function") == site_table(whole["stacks"], "function")


def test_default_budget_is_recorded_and_bytecode_keeps_whole_stacks(build, tmp_path):
    native = tmp_path / "n.json"
    run(build("many_stacks"), "3000", DEPTH, memprof=f"rate=1,seed=1,out={native}")
    assert read_profile(native.read_bytes())["config"]["stackmem"] == 256 << 10
    byte = tmp_path / "b.json"
    run(build("many_stacks", backend="bytecode"), "3000", DEPTH,
        memprof=f"rate=1,seed=1,stackmem=0,out={byte}")
    prof = read_profile(byte.read_bytes())
    assert "stackmem" not in prof["config"]
    assert not any(st.get("cut") for st in prof["stacks"])
    assert len(prof["stacks"]) >= 3000


def test_peak_memory_follows_the_budget(build, tmp_path):
    """A million leaves at rate 0.1, nearly every sample its own stack:
    kept whole, the records and the exit's work on them take tens of
    megabytes; within the default budget the tracker adds a few at most
    (memprof's own entries for the tracked blocks included)."""
    exe = build("many_stacks")
    args = [str(exe), "1000000", DEPTH]

    def peak(memprof):
        env = {"PATH": "/usr/bin:/bin"}
        if memprof:
            env["OCAMLMEMPROF"] = memprof + f",out={tmp_path / 'p.json'}"
        return peak_kb(args, env, str(tmp_path), 600, "many_stacks")

    off = peak(None)
    bounded = peak("rate=0.1,seed=1")
    whole = peak("rate=0.1,seed=1,stackmem=1G")
    print(f"peak RSS KiB: unprofiled {off}, default budget {bounded}, whole stacks {whole}")
    assert bounded - off < 4 * 1024
    assert whole - bounded > 30 * 1024
