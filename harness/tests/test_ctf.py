"""The CTF reader (ctf.py, ctf_profile.py) on traces written by memtrace's
own writer (data/ctf, see its README): they load as profiles, `compare`
finds the regression between them, and truncated, garbled or hostile traces
give one line naming the file and exit 2, never a traceback."""

import json
import os
import random

import pytest
from harness_testlib import make_profile, no_traceback, run_cli, write_json

from memprof_ci.inputs import ctf
from memprof_ci.inputs.ctf_profile import is_ctf_file, load_ctf
from memprof_ci.errors import InputError

DATA = os.path.join(os.path.dirname(__file__), "data", "ctf")
BEFORE, AFTER = os.path.join(DATA, "before.ctf"), os.path.join(DATA, "after.ctf")


def test_memtrace_fixture_loads_as_a_profile():
    p = load_ctf(BEFORE)
    t = p.totals
    assert p.rate == 1e-3 and p.seed is None and p.frames == 3
    assert t["blocks"] == 1000 and t["samples"] == 1008
    assert (t["minor_samples"], t["major_samples"], t["custom_samples"]) == (999, 9, 0)
    assert t["collected_samples"] + t["live_samples"] == t["samples"] and t["live_samples"] > 0
    assert 0 < t["promoted_samples"] <= t["minor_samples"]
    assert sum(st["samples"] for st in p.stacks) == t["samples"]
    top = {st["frames"][0]["function"] for st in p.stacks}
    assert "Stdlib.string_of_int" in top
    fr = next(f for st in p.stacks for f in st["frames"] if f["file"] == "fixprog.ml")
    assert fr["function"] == "Fixprog" and fr["line"] in range(5, 16)


def test_memtrace_fixture_peaks_are_memtrace_viewers():
    """The peaks memtrace_viewer's algorithm finds with memtrace's own reader
    (data/ctf/viewer_peak.ml: 322 and 379 samples), and the stacks that
    hold them."""
    for path, peak in ((BEFORE, 322), (AFTER, 379)):
        p = load_ctf(path)
        assert p.totals["peak_live_samples"] == peak
        assert sum(st["peak_live_samples"] for st in p.stacks) == peak
        assert all(0 <= st["peak_live_samples"] <= st["samples"] for st in p.stacks)


def test_memtrace_fixture_events():
    info, evs, locs = ctf.events(open(AFTER, "rb").read())
    assert info["context"] == "memprof-ci fixture" and info["word_size"] == 64
    kinds = {}
    for e in evs:
        kinds[e[0]] = kinds.get(e[0], 0) + 1
    assert kinds == {"alloc": 2385, "promote": 192, "collect": 2051}
    assert len(locs) == 15


def test_compare_two_memtrace_traces():
    r = run_cli(["compare", BEFORE, AFTER])
    no_traceback(r)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "before..after" in r.stdout and "alloc" in r.stdout
    r = run_cli(["compare", BEFORE, BEFORE])
    assert r.returncode == 0, r.stdout + r.stderr


def test_traces_carry_no_gc_totals_and_say_so(tmp_path):
    """A trace has no GC totals: the GC check reads "not measured" (never
    "ok" from 0 vs 0, nor -100% against a profile that has them), and two
    traces of one benchmark are labelled with its name."""
    old, new = tmp_path / "compile_many.old.ctf", tmp_path / "compile_many.new.ctf"
    old.write_bytes(open(BEFORE, "rb").read())
    new.write_bytes(open(AFTER, "rb").read())
    r = run_cli(["compare", str(old), str(new), "--format", "json"])
    rep = json.loads(r.stdout)
    assert list(rep["benchmarks"]) == ["compile_many"]
    b = rep["benchmarks"]["compile_many"]
    assert b["gc"] == [] and b["checks"]["gc_totals"]["outcome"] == "skipped"
    out = run_cli(["compare", str(old), str(new)]).stdout
    head = out.split("\n\nbenchmark ")[1].splitlines()
    assert head[0].split()[:3] == ["alloc_sites", "gc_totals", "live"]
    assert head[2].split()[2:4] == ["not", "measured"], out
    prof = tmp_path / "compile_many.1.json"
    write_json(str(prof), make_profile([([("Main.f", "main.ml", 3)], 500, 0)],
                                       gc={"minor_words": 10 ** 6}))
    r = run_cli(["compare", str(prof), str(old), "--format", "json"])
    b = json.loads(r.stdout)["benchmarks"]["compile_many"]
    assert b["gc"] == [], b["gc"]


def cut(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_truncated_traces_are_input_errors(tmp_path):
    data = open(AFTER, "rb").read()
    for n in (4, 40, 100, 150, 200, 5000, len(data) // 2, len(data) - 1):
        p = cut(tmp_path, f"t{n}.ctf", data[:n])
        with pytest.raises(InputError, match="malformed memtrace trace") as e:
            load_ctf(p)
        assert p in str(e.value) and "\n" not in str(e.value)


def test_garbled_traces_are_input_errors(tmp_path):
    data = bytearray(open(BEFORE, "rb").read())
    rng = random.Random(19)
    for i in range(40):
        bad = bytearray(data)
        for _ in range(rng.choice([1, 4, 50])):
            bad[rng.randrange(4, len(bad))] = rng.randrange(256)
        p = cut(tmp_path, f"g{i}.ctf", bytes(bad))
        try:
            load_ctf(p)             # a flip may land where nothing checks it
        except InputError as e:
            assert p in str(e) and "\n" not in str(e)
    p = cut(tmp_path, "noise.ctf", data[:4] + bytes(rng.randrange(256) for _ in range(3000)))
    with pytest.raises(InputError, match="malformed memtrace trace"):
        load_ctf(p)


def packet_starts(data: bytes) -> list:
    _, pos = ctf.read_info(data)
    starts = []
    while pos < len(data):
        starts.append(pos)
        pos += int.from_bytes(data[pos + 4:pos + 8], "little") // 8
    return starts


def test_cache_check_catches_a_header_that_disagrees(tmp_path):
    """The packet header's check of the backtrace cache (index, prediction,
    slot): a packet whose check does not match the decoder's cache."""
    data = open(AFTER, "rb").read()
    checked = [p for p in packet_starts(data) if data[p + 40:p + 42] != b"\xff\xff"]
    assert checked
    for field in (42, 44):          # the prediction, then the slot value
        bad = bytearray(data)
        bad[checked[0] + field] ^= 0x01
        with pytest.raises(InputError, match="backtrace cache check failed"):
            load_ctf(cut(tmp_path, f"v{field}.ctf", bytes(bad)))


def test_cli_exit_2_on_corrupt_trace(tmp_path):
    data = open(BEFORE, "rb").read()
    p = cut(tmp_path, "bad.ctf", data[:3000])
    r = run_cli(["compare", p, BEFORE])
    no_traceback(r)
    assert r.returncode == 2
    msg = [line for line in (r.stdout + r.stderr).splitlines() if "bad.ctf" in line]
    assert msg and "malformed memtrace trace" in msg[0]


def test_sniffing():
    assert is_ctf_file(BEFORE) and not is_ctf_file(__file__)
    assert not is_ctf_file("/nonexistent/x.ctf")
