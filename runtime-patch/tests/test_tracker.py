"""The built-in C tracker: OCAMLMEMPROF=rate=... profiles a program with
no code change and writes a version-2 profile at exit (read_profile checks
it against the format's schema and gives each stack its frame objects).

Statistical checks use the 5.7-sigma binomial bound of upstream's
statmemprof tests (false failure rate about 1e-8 per check)."""

import json
import os
import subprocess
import sys
import threading

import pytest

from runtime_testlib import (ROOT, binomial_bound_ok, points_minor_words, profile,
                             read_profile, run, same_but_live_mode, site_totals)

COUNTS = ["blocks", "samples", "words", "minor_samples", "major_samples",
          "marshal_samples", "custom_samples", "promoted_samples",
          "collected_samples", "live_samples"]


def check_valid(prof):
    """The format's identities over a profile from read_profile (which
    checked it against the schema)."""
    for c in COUNTS:
        assert prof["totals"][c] == sum(s[c] for s in prof["stacks"]), c
    for s in prof["stacks"] + [prof["totals"]]:
        assert s["samples"] == s["minor_samples"] + s["major_samples"] + s["custom_samples"]
        assert s["collected_samples"] + s["live_samples"] == s["samples"]
        assert s["promoted_samples"] <= s["minor_samples"] + s["custom_samples"]
        assert s["marshal_samples"] <= s["minor_samples"] + s["major_samples"]
        assert s["blocks"] <= s["samples"]


def startup_offset(exe, tmp_path):
    """Words the runtime allocates before profiling starts (Sys.argv and
    the like), measured on the same executable, with an argument of the
    same length that makes it allocate nothing itself."""
    prof, _, _ = profile(exe, "0", rate=1, tmp=tmp_path, name="h.json")
    g, t = prof["gc"], prof["totals"]
    return (g["minor_words"] - t["minor_samples"],
            g["major_words"] - g["promoted_words"] - t["major_samples"])


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_rate_one_counts_every_word(build, tmp_path, backend):
    exe = build("tracker_sites", backend=backend)
    minor0, major0 = startup_offset(exe, tmp_path)
    prof, _, _ = profile(exe, "1", rate=1, tmp=tmp_path)
    check_valid(prof)
    g, t = prof["gc"], prof["totals"]
    assert t["minor_samples"] > 10_000_000
    assert g["minor_words"] - t["minor_samples"] == minor0
    assert g["major_words"] - g["promoted_words"] - t["major_samples"] == major0
    assert t["words"] == t["samples"]          # at rate 1 each word is one sample


@pytest.mark.parametrize("rate", [1e-1, 1e-2, 1e-3, 1e-4])
def test_per_site_counts_and_estimates(build, tmp_path, rate):
    prof, _, _ = profile(build("tracker_sites"), "1", rate=rate, tmp=tmp_path)
    check_valid(prof)
    samples = site_totals(prof)
    truth = {"Tracker_sites.alloc_ten": 10 * 1_000_000,
             "Tracker_sites.alloc_five": 5 * 1_000_000,
             "Tracker_sites.alloc_big": 1001 * 2_000}
    for fn, words in truth.items():
        n = samples.get(fn, 0)
        assert binomial_bound_ok(n, words, rate), (fn, n, words, rate)
        # The estimate samples/rate, in bytes, within the same bound of the truth.
        est_bytes = n / rate * 8
        sd_bytes = (words * (1 - rate) / rate) ** 0.5 * 8
        assert abs(est_bytes - words * 8) <= 5.7 * sd_bytes


def test_frames_have_locations(build, tmp_path):
    prof, _, _ = profile(build("tracker_sites"), rate=1e-2, tmp=tmp_path)
    top = max(prof["stacks"], key=lambda s: s["samples"])
    f = top["frames"][0]
    assert f["file"] == "tracker_sites.ml" and f["line"] > 0
    assert f["function"].startswith("Tracker_sites.alloc_")
    assert f["col_end"] >= f["col_start"] >= 0


def test_frame_table_holds_each_frame_once(build, tmp_path):
    """Formats 2 and 3: every distinct frame object once, in the byte order of its
    JSON text, each used by some stack; stacks are index lists into it."""
    _, raw, _ = profile(build("tracker_sites"), rate=1e-2, tmp=tmp_path)
    lines = raw.decode().split("\n")
    start = lines.index('"frame_table":[')
    end = lines.index('],', start)
    texts = [ln.rstrip(",") for ln in lines[start + 1:end]]
    assert len(texts) > 3 and texts == sorted(texts, key=str.encode)
    assert len(set(texts)) == len(texts)
    doc = json.loads(raw)
    assert doc["version"] == 3 and [json.loads(t) for t in texts] == doc["frame_table"]
    used = {k for st in doc["stacks"] for k in st["frames"]}
    assert used == set(range(len(texts)))
    assert sum(len(st["frames"]) for st in doc["stacks"]) > len(texts)  # shared, not repeated


def test_stack_lines_leave_zero_counts_out(build, tmp_path):
    """Format 3: a stack's line lists its counts that are not zero, in the
    order of the totals' keys (which list every count), then its frames;
    read with the zeros given back, the profile is whole."""
    prof, raw, _ = profile(build("tracker_sites"), rate=1e-2, tmp=tmp_path)
    check_valid(prof)
    doc = json.loads(raw)
    order = list(doc["totals"])
    assert len(order) == 11
    left_out = 0
    for st in doc["stacks"]:
        keys = list(st)
        assert keys[-1] == "frames" and {"blocks", "samples", "words"} <= set(keys)
        counts = keys[:-1]
        assert counts == [k for k in order if k in st] and all(st[k] > 0 for k in counts)
        left_out += len(order) - len(counts)
    assert left_out > len(doc["stacks"])


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_a_stack_per_sample_profile_is_whole_and_in_order(build, tmp_path, backend):
    """Tens of thousands of distinct stacks, as in programs that recurse
    through their data, kept whole (a budget above them): the exit sorts
    them beside the heap walk and, in native code, renders the lines in
    blocks taken in turn by two threads. Every sampled word is in exactly
    one line (the totals are the lines' sums and each leaf's 2-word block
    is counted once), and the lines are in strictly increasing order of
    their frame indices, which are ranks in the frame table's text order:
    no line lost, repeated or misplaced at the blocks' seams."""
    leaves, depth = 20_000, 14
    exe = build("many_stacks", backend=backend)
    prof, raw, _ = profile(exe, leaves, depth, rate=1, stackmem="1G", tmp=tmp_path)
    check_valid(prof)
    doc = json.loads(raw)
    keys = [st["frames"] for st in doc["stacks"]]
    assert len(keys) > 2 * 4096
    assert all(a < b for a, b in zip(keys, keys[1:]))
    src = (ROOT / "runtime-patch/tests/programs/many_stacks.ml").read_text()
    line = src.split("\n").index("    sink := Some bits;") + 1
    leaf = [st for st in prof["stacks"]
            if st["frames"][0]["function"] == "Many_stacks.walk"
            and st["frames"][0]["line"] == line]
    assert len(leaf) == leaves and all(st["samples"] == 2 for st in leaf)


@pytest.mark.parametrize("backend", ["native", "bytecode"])
@pytest.mark.parametrize("program,args,rate", [
    ("trace_mix", (), "1e-3"),          # minor, major, custom; promotions
    ("many_stacks", (3000, 12), "1e-1"),  # a new stack at most samples
])
def test_batched_samples_count_as_one_at_a_time(build, tmp_path, backend,
                                                program, args, rate):
    """The tracker takes samples in batches (memprof.c, design 8.10)
    except when it also writes a trace, where it takes them one at a
    time: both runs give the same stacks with the same counts, deaths,
    promotions and peak, so no batch reaches the tracker late for a
    collection, a compaction or the exit."""
    exe = build(program, backend=backend)
    spec = f"rate={rate},seed=3"
    # In bytecode a trace reads the executable's debug information onto
    # the heap when it starts (memprof_ctf.c, design 2), which moves the
    # collections; b=2 has both runs read it at startup.
    runparam = "b=2" if backend == "bytecode" else None
    run(exe, *args, memprof=f"{spec},out=b.json", runparam=runparam, cwd=tmp_path)
    run(exe, *args, memprof=f"{spec},out=o.json,trace=o.ctf", runparam=runparam, cwd=tmp_path)
    batched, single = (json.loads((tmp_path / n).read_bytes())
                       for n in ("b.json", "o.json"))
    for doc in (batched, single):
        doc.pop("config")
        doc.pop("argv")
    assert batched["totals"]["promoted_samples"] > 0
    assert batched["totals"]["collected_samples"] > 0
    assert batched == single


def test_frames_limit(build, tmp_path):
    prof, _, _ = profile(build("tracker_sites"), rate=1e-2, frames=1, tmp=tmp_path)
    assert prof["config"]["frames"] == 1
    # One raw slot per stack; inlining may expand it, never beyond that slot.
    assert all(len([f for f in s["frames"] if not f["inlined"]]) <= 1 for s in prof["stacks"])


def test_without_debug_info_locations_are_unknown(build, tmp_path):
    prof, _, _ = profile(build("tracker_sites", debug=False), rate=1e-2, tmp=tmp_path)
    check_valid(prof)
    assert prof["totals"]["samples"] > 0
    # Without -g, OCaml's inline allocations carry no debug information
    # (calls still do, and the stdlib keeps its -g): the biggest sites,
    # alloc_ten and alloc_five, keep an unknown innermost frame.
    top2 = sorted(prof["stacks"], key=lambda s: -s["samples"])[:2]
    for s in top2:
        f = s["frames"][0]
        assert f["file"] is None and f["function"] is None and f["line"] is None


def test_bytecode_profile(build, tmp_path):
    prof, _, _ = profile(build("tracker_sites", backend="bytecode"), rate=1e-2, tmp=tmp_path)
    check_valid(prof)
    assert prof["backend"] == "bytecode"
    fns = site_totals(prof)
    assert any(fn and fn.startswith("Tracker_sites.alloc_") for fn in fns)


def test_argv_strings_are_escaped_as_json(build, tmp_path):
    """Strings reach the profile through one JSON escaper
    (memprof_jsonbuf.c), which copies runs of plain bytes at once and
    escapes quotes, backslashes and control bytes between them: the
    program's arguments come back exactly."""
    args = ['a"b', "\\", 'x\\"y', "tab\there", "\x01\x1fend", "\x7f",
            "caf\u00e9 \u2192", "", '""\\\\', "plain " * 50]
    prof, raw, _ = profile(build("hello"), *args, rate=1e-2, tmp=tmp_path)
    assert prof["argv"][1:] == args
    assert b"\\u0001" in raw and b"\\u001f" in raw and b"\\u0009" in raw


def test_live_at_exit_keep_and_drop(build, tmp_path):
    exe = build("retain")
    keep, _, _ = profile(exe, "keep", rate=1e-2, tmp=tmp_path, name="keep.json")
    drop, _, _ = profile(exe, "drop", rate=1e-2, tmp=tmp_path, name="drop.json")
    check_valid(keep)
    check_valid(drop)
    k = site_totals(keep, "live_samples")["Retain.make_block"]
    ks = site_totals(keep)["Retain.make_block"]
    assert k == ks and binomial_bound_ok(ks, 100_000 * 10, 1e-2)
    assert site_totals(drop, "live_samples").get("Retain.make_block", 0) == 0
    assert drop["totals"]["live_samples"] <= 0.01 * drop["totals"]["samples"]
    assert keep["totals"]["promoted_samples"] > 0


REACH_KEPT = ["kept_global", "kept_fiber", "kept_closure", "kept_lazy",
              "kept_finalised", "kept_thread"]
REACH_DROPPED = ["dropped", "dropped_fiber", "dropped_finalised_last"]


def gc_cycles_after_exit_begins(res):
    """Major cycles the runtime completed after the program's last line
    ("exiting" on stderr), from the GC log of OCAMLRUNPARAM=v=0x800."""
    tail = res.stderr.split("exiting\n", 1)[1]
    return sum("cycle" in line and "completed" in line for line in tail.splitlines())


@pytest.mark.parametrize("backend", ["native", "bytecode"])
@pytest.mark.parametrize("live", ["walk", "gc", "snapshot"])
def test_live_at_exit_follows_every_kind_of_reference(build, tmp_path, backend, live):
    """Each site of reach.ml is wholly reachable at exit or wholly not,
    through globals, fiber stacks, closures (infix), lazies,
    finalisers and a blocked systhread; each way of deciding must say
    so: the default walk, the snapshot's breadth-first walk (which
    meets an infix pointer's closure only when it scans the pointer's
    queue entry), and live=gc. The walks must decide without any major
    cycle at exit, live=gc with the GC's two."""
    exe = build("reach", backend=backend, threads=True)
    snapshot = "exit" if live == "snapshot" else None
    prof, _, res = profile(exe, rate=1e-2, live=None if snapshot else live,
                           snapshot=snapshot, tmp=tmp_path, runparam="v=0x800")
    check_valid(prof)
    if snapshot:
        assert prof["snapshot"]["taken"] is True
        shown = {f["function"] for s in prof["snapshot"]["sites"]
                 for f in s["frames"]}
        assert {f"Reach.{k}" for k in REACH_KEPT} <= shown
        assert not {f"Reach.{k}" for k in REACH_DROPPED} & shown
    samples, live_samples = site_totals(prof), site_totals(prof, "live_samples")
    for site in REACH_KEPT + REACH_DROPPED:
        fn = f"Reach.{site}"
        # 20,000 blocks of 4 + 3 words at 1e-2: ~1,400 samples expected.
        assert binomial_bound_ok(samples[fn], 20_000 * 7, 1e-2), (fn, samples[fn])
        assert live_samples[fn] == (samples[fn] if site in REACH_KEPT else 0), fn
    cycles = gc_cycles_after_exit_begins(res)
    assert cycles == 0 if live != "gc" else cycles >= 2


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_live_off_decides_nothing_at_exit(build, tmp_path, backend):
    """live=off neither walks nor collects at exit: with a minor heap
    that no collection empties (s=4M), every sampled block of reach.ml,
    reachable or dropped, is still uncollected and counts as live, where
    the walk finds the dropped sites dead; the points' live counts and
    the snapshot say why they are missing; config.live names the mode."""
    exe = build("reach", backend=backend, threads=True)
    sites = [f"Reach.{k}" for k in REACH_KEPT + REACH_DROPPED]
    decided = {}
    for live in ("walk", "off"):
        prof, _, res = profile(exe, rate=1e-2, live=live, tmp=tmp_path,
                               name=f"{live}.json", runparam="s=4M,v=0x800",
                               points="on" if backend == "native" else None)
        check_valid(prof)
        assert prof["config"]["live"] == live
        assert gc_cycles_after_exit_begins(res) == 0
        samples, live_samples = site_totals(prof), site_totals(prof, "live_samples")
        assert all(samples[fn] > 0 for fn in sites)
        decided[live] = {fn: live_samples[fn] == samples[fn] for fn in sites}
        if backend == "native":
            assert (prof["points"]["live"] is True) == (live == "walk")
            # Every young block counted at its point, with no collection.
            assert points_minor_words(prof) == prof["gc"]["minor_words"]
    assert decided["walk"] == {f"Reach.{k}": k in REACH_KEPT for k in REACH_KEPT + REACH_DROPPED}
    assert all(decided["off"].values())
    assert prof["totals"]["collected_samples"] == 0
    if backend == "native":
        assert prof["points"]["live"] == "live=off: liveness not decided"
    snap, _, _ = profile(exe, rate=1e-2, live="off", snapshot="exit", tmp=tmp_path,
                         name="snap.json")
    assert snap["snapshot"] == {"at": "exit", "taken": False, "reason": "live=off: no walk at exit"}


def test_ephemerons_leave_live_at_exit_to_the_gc(build, tmp_path):
    """The walk does not model ephemerons: once one exists the tracker
    falls back on major cycles, and the data of an ephemeron whose key
    is kept stays live."""
    exe = build("reach", threads=True)
    prof, _, res = profile(exe, "ephemeron", rate=1e-2, tmp=tmp_path, runparam="v=0x800")
    check_valid(prof)
    fn = "Reach.kept_ephemeron"
    assert site_totals(prof, "live_samples")[fn] == site_totals(prof)[fn] > 0
    assert gc_cycles_after_exit_begins(res) >= 2


@pytest.mark.parametrize("program,args", [
    ("retain", ["keep"]), ("retain", ["drop"]), ("tracker_sites", []), ("gc_pacing", ["3000"]),
])
def test_live_walk_and_gc_cycles_give_identical_profiles(build, tmp_path, program, args):
    """The walk and the GC's cycles decide the same blocks dead: on these
    single-threaded programs the two profiles are byte-identical."""
    exe = build(program)
    _, walk, _ = profile(exe, *args, rate=1e-2, live="walk", tmp=tmp_path, name="walk.json")
    _, gc, _ = profile(exe, *args, rate=1e-2, live="gc", tmp=tmp_path, name="gc.json")
    assert same_but_live_mode(walk, gc)


def test_same_seed_byte_identical(build, tmp_path):
    exe = build("tracker_sites")
    _, a, _ = profile(exe, rate=1e-3, seed=5, tmp=tmp_path, name="a.json")
    _, b, _ = profile(exe, rate=1e-3, seed=5, tmp=tmp_path, name="b.json")
    assert a == b


def test_minor_heap_size_does_not_change_allocation_samples(build, tmp_path):
    exe = build("retain")
    def alloc_counts(runparam, name):
        prof, _, _ = profile(exe, "keep", rate=1e-2, seed=9, tmp=tmp_path, name=name,
                             runparam=runparam)
        return {json.dumps(s["frames"]): (s["blocks"], s["samples"], s["words"],
                                          s["minor_samples"], s["major_samples"])
                for s in prof["stacks"]}, prof
    small, p1 = alloc_counts("s=32k", "s.json")
    large, p2 = alloc_counts("s=4M", "l.json")
    assert small == large
    assert p1["gc"]["minor_collections"] != p2["gc"]["minor_collections"]


def test_different_seeds_differ(build, tmp_path):
    exe = build("tracker_sites")
    _, a, _ = profile(exe, rate=1e-3, seed=1, tmp=tmp_path, name="a.json")
    _, b, _ = profile(exe, rate=1e-3, seed=2, tmp=tmp_path, name="b.json")
    assert a != b


def test_multi_domain(build, tmp_path):
    exe = build("domains")
    prof, _, res = profile(exe, rate=1, seed=None, tmp=tmp_path)
    check_valid(prof)
    assert res.stdout.strip() == "3"
    fns = site_totals(prof)
    # Each of the three domains made 300_000 two-word cons cells
    # (3 words with the header) at domain_work, and 3_000 arrays.
    assert fns["Domains.domain_work"] == 3 * (300_000 * 3 + 3_000 * 301)
    # None of it is reachable at exit, including what the joined domains
    # left to memprof's orphan tables.
    assert site_totals(prof, "live_samples")["Domains.domain_work"] == 0


def test_systhreads(build, tmp_path):
    exe = build("threads", threads=True)
    prof, _, _ = profile(exe, rate=1, seed=None, tmp=tmp_path)
    check_valid(prof)
    # Five threads each made 200_000 lists [i; i]: two cons cells, 6 words.
    assert site_totals(prof)["Threads.thread_work"] == 5 * 200_000 * 6


@pytest.mark.parametrize("mode,status", [("normal", 0), ("exit3", 3), ("raise", 2)])
@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_exit_paths_write_profile(build, tmp_path, mode, status, backend):
    exe = build("exits", backend=backend)
    out = tmp_path / "p.json"
    res = run(exe, mode, memprof=f"rate=1e-2,seed=1,out={out}", check=False)
    assert res.returncode == status
    if mode == "raise":
        assert "deliberate uncaught exception" in res.stderr
    prof = read_profile(out.read_bytes())
    check_valid(prof)
    assert site_totals(prof)["Exits.work"] > 0
    assert not list(tmp_path.glob("*.tmp.*"))


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_unhandled_effect_exit_writes_incomplete_profile(build, tmp_path, backend):
    """The runtime's own exit for an unhandled effect (Effect not linked)
    writes the profile, marked incomplete with the reason, and keeps
    status 2; the harness refuses to judge it."""
    exe = build("unhandled_effect", backend=backend)
    out = tmp_path / "p.json"
    res = run(exe, memprof=f"rate=1e-2,seed=1,out={out}", check=False)
    assert res.returncode == 2
    assert "Fatal error: exception Effect.Unhandled" in res.stderr
    prof = read_profile(out.read_bytes())
    check_valid(prof)
    assert "Effect.Unhandled" in prof["incomplete"]
    assert site_totals(prof)["Unhandled_effect.work"] > 0
    assert not list(tmp_path.glob("*.tmp.*"))
    normal = read_profile(run(build("exits"), "normal", check=False,
                              memprof=f"rate=1e-2,seed=1,out={tmp_path / 'n.json'}")
                          and (tmp_path / "n.json").read_bytes())
    assert "incomplete" not in normal
    harness = subprocess.run([sys.executable, "-m", "memprof_ci", "compare", str(out), str(out)],
                             env=dict(os.environ, PYTHONPATH=str(ROOT / "harness")),
                             capture_output=True, text=True, timeout=120)
    assert harness.returncode == 2, harness.stderr
    assert "incomplete profile" in harness.stderr and "Effect.Unhandled" in harness.stderr
    assert len(harness.stderr.strip().splitlines()) == 1


def test_out_pid_expansion_and_default(build, tmp_path):
    exe = build("exits")
    run(exe, "normal", memprof="rate=1e-2,out=prof.%p.json", cwd=tmp_path)
    run(exe, "normal", memprof="rate=1e-2", cwd=tmp_path)
    assert len(list(tmp_path.glob("prof.*.json"))) == 1
    default = list(tmp_path.glob("memprof.*.json"))
    assert len(default) == 1 and default[0].name.split(".")[1].isdigit()


def test_unwritable_out(build, tmp_path):
    # A missing directory: unwritable even for root, unlike a read-only one.
    exe = build("exits")
    target = tmp_path / "missing" / "p.json"
    res = run(exe, "normal", memprof=f"rate=1e-2,out={target}", check=False)
    assert res.returncode == 2
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "OCAMLMEMPROF" in lines[0] and str(target) in lines[0]
    res = run(exe, "exit3", memprof=f"rate=1e-2,out={target}", check=False)
    assert res.returncode == 3


def test_out_to_a_pipe_is_written_in_place(build, tmp_path):
    # A FIFO stands in for /dev/stdout: renaming a temporary file over it
    # would replace the device instead of writing to it.
    fifo = tmp_path / "profile.pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    res = run(build("exits"), "normal", memprof=f"rate=1e-2,out={fifo}", check=False)
    reader.join(timeout=60)
    assert res.returncode == 0, res.stderr
    assert fifo.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.pipe"]
    check_valid(read_profile(received[0]))


def test_out_naming_a_directory(build, tmp_path):
    res = run(build("exits"), "normal", memprof=f"rate=1e-2,out={tmp_path}", check=False)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "Is a directory" in res.stderr
    assert tmp_path.is_dir()


def make_cell_stacks(stacks):
    """Stacks of Fast_path.make_cell as "function:line" frames, cut after
    Fast_path.fibers (the two runs call it from different lines) and
    without frames that have no debug information (the profile keeps
    them, Printexc drops them)."""
    out = set()
    for frames in stacks:
        if not frames or not frames[0].startswith("Fast_path.make_cell:"):
            continue
        cut = [f for f in frames if f != "?"]
        fibers = [i for i, f in enumerate(cut) if f.startswith("Fast_path.fibers:")]
        out.add(" | ".join(cut[:fibers[0] + 1] if fibers else cut))
    return out


def test_fast_walk_matches_stock_walker_across_fibers(build, tmp_path):
    # The C tracker walks stacks with its own inlined loop (design 8.4);
    # the program's own Gc.Memprof sampling uses the stock walker. Each
    # distinct stack of make_cell occurs hundreds of times at 1e-2, so
    # both runs see all of them.
    exe = build("fast_path", threads=True)
    prof, _, _ = profile(exe, "fibers", rate=1e-2, tmp=tmp_path)
    check_valid(prof)
    ours = make_cell_stacks(
        [f"{f['function']}:{f['line']}" if f["function"] else "?" for f in st["frames"]]
        for st in prof["stacks"])
    stock = make_cell_stacks(
        line.split(" | ") for line in run(exe, "fibers", "ocaml").stdout.splitlines())
    # make_cells runs on the handler's fiber; `fibers` is on the parent
    # stack (run_in_fiber tail-calls match_with, so it has no frame).
    assert any("Fast_path.make_cells" in s and "Fast_path.fibers" in s
               for s in ours), ours
    assert ours == stock


@pytest.mark.parametrize("mode, expected", [("signals", "handled=20"),
                                            ("finalisers", "finalised=1000")])
def test_actions_still_run_when_samples_skip_the_poll(build, tmp_path, mode, expected):
    # At these rates nearly every allocation is a sample that bypasses the
    # poll of delayable actions; every timer signal must still be handled
    # (the program waits for each) and finalisers must still run. A sanity
    # check: a build whose short path ignored a raised limit still passed
    # it (signals reach their handler by other polls too).
    exe = build("fast_path", threads=True)
    rate = 1 if mode == "signals" else 0.1
    _, _, res = profile(exe, mode, rate=rate, tmp=tmp_path)
    assert res.stdout.split()[0] == expected, res.stdout


def gc_stats_at_exit(res):
    """The counters OCAMLRUNPARAM=v=0x400 prints at exit."""
    stats = dict(line.split(": ") for line in res.stderr.splitlines() if ": " in line)
    return {k: int(stats[k]) for k in ("minor_words", "promoted_words", "major_words",
                                        "minor_collections", "major_collections")}


@pytest.mark.parametrize("rate", [1e-4, 1e-2])
def test_gc_counters_are_those_of_the_unprofiled_run(build, tmp_path, rate):
    # The profile's config lives outside the heap, samples of the C
    # tracker never poll for GC work, and polls do not fire while the
    # allocation pointer rests on the trigger (design 8.3, 8.4, 8.7):
    # profiling must not move a single collection.
    # gc_pacing's promotion depends on exactly when minor collections
    # fall: before the config moved off the heap, its profiled runs
    # promoted 0.1% more and ran three fewer major cycles; before 8.7,
    # its non-allocating fold promoted 1,405 more words at 1e-2.
    exe = build("gc_pacing")
    off = gc_stats_at_exit(run(exe, "20000", runparam="v=0x400"))
    prof, _, _ = profile(exe, "20000", rate=rate, tmp=tmp_path)
    assert {k: prof["gc"][k] for k in off} == off


def test_compaction_during_profile(build, tmp_path):
    # The profile's configuration is an out-of-heap block: compaction
    # must leave it alone, and sampled blocks that compaction moves must
    # still be followed to the end.
    exe = build("fast_path", threads=True)
    prof, _, res = profile(exe, "compact", rate=1e-2, tmp=tmp_path)
    check_valid(prof)
    assert res.stdout.splitlines()[-1] == "round 5 kept 10000"
    kept = site_totals(prof, "live_samples").get("Fast_path.compact", 0)
    # 10_000 of the 100_000 nine-word arrays stay reachable, with the
    # three-word cons cells that hold them.
    assert binomial_bound_ok(kept, 10_000 * (9 + 3), 1e-2), kept
