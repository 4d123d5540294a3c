"""The memtrace CTF trace of the built-in tracker (trace= of OCAMLMEMPROF,
memprof_ctf.c): a run writing both outputs gives a trace whose events
match the profile exactly (blocks, samples per source, promoted and
collected samples, per site), for native and bytecode, one domain or
several, and for one domain the peak too; trace= alone writes no profile; the file appears only complete,
through a temporary name that is never followed; memory stays bounded
however long the run.  The trace is read with the harness's CTF reader
(harness/memprof_ci/inputs/ctf.py), which checks what memtrace's reader checks."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from runtime_testlib import ROOT, read_profile, run

sys.path.insert(0, str(ROOT / "harness"))
from memprof_ci.inputs import ctf  # noqa: E402
from memprof_ci.inputs.ctf_profile import load_ctf  # noqa: E402
from memprof_ci.inputs.profile import COUNT_KEYS, PEAK_KEY  # noqa: E402
from memprof_ci.sites.grouping import GROUPINGS  # noqa: E402
from test_stacks_site import site_table  # noqa: E402

# A single domain's trace gives the profile's peak too; several domains'
# traces order their events by packet (format document, "The peak").
ONE_DOMAIN = COUNT_KEYS + (PEAK_KEY,)


def counts(totals, keys=ONE_DOMAIN):
    return {k: totals[k] for k in keys}


def by_frames(stacks, keys=ONE_DOMAIN):
    out = {}
    for st in stacks:
        key = json.dumps(st["frames"], sort_keys=True)
        acc = out.setdefault(key, dict.fromkeys(keys, 0))
        for k in keys:
            acc[k] += st[k]
    return out


def both(exe, tmp_path, *args, spec="rate=1e-3,seed=5"):
    run(exe, *args, memprof=f"{spec},out=p.json,trace=t.ctf", cwd=tmp_path)
    prof = read_profile((tmp_path / "p.json").read_bytes())
    return prof, load_ctf(str(tmp_path / "t.ctf"))


@pytest.mark.parametrize("backend", ["native", "bytecode"])
def test_trace_counts_equal_the_profile(build, tmp_path, backend):
    prof, tr = both(build("trace_mix", backend=backend), tmp_path, spec="rate=1e-3,seed=5")
    assert tr.totals == counts(prof["totals"])
    assert tr.totals["custom_samples"] > 0 and tr.totals["major_samples"] > 0
    assert tr.totals["promoted_samples"] > 0
    assert by_frames(tr.stacks) == by_frames(prof["stacks"])
    assert tr.rate == 1e-3 and tr.seed == 5 and tr.frames == 16


def test_deep_stacks_use_predictions(build, tmp_path):
    prof, tr = both(build("trace_mix"), tmp_path,
                    spec="rate=1e-3,seed=2,frames=4096,stackmem=1G")
    assert tr.totals == counts(prof["totals"])
    assert by_frames(tr.stacks) == by_frames(prof["stacks"])
    assert max(len(st["frames"]) for st in tr.stacks) > 300
    # 300 frames of `deep` cost a few bytes per alloc, not 2 per frame.
    size = (tmp_path / "t.ctf").stat().st_size
    assert size < 40 * tr.totals["blocks"]


def test_past_the_budget_the_trace_keeps_whole_stacks_and_the_same_sites(build, tmp_path):
    """The profile's stack budget (stackmem=) cuts new stacks to their
    sites' slots; the trace, streamed, keeps them whole: the two agree on
    every total and on the harness's site table, and the profile's cut
    lines sum the trace's stacks that they stand for."""
    prof, tr = both(build("trace_mix"), tmp_path,
                    spec="rate=1e-3,seed=2,frames=4096,stackmem=0")
    assert any(st.get("cut") for st in prof["stacks"])
    assert tr.totals == counts(prof["totals"])
    assert by_frames(tr.stacks) != by_frames(prof["stacks"])
    for grouping in GROUPINGS:
        assert site_table(tr.stacks, grouping, ONE_DOMAIN) == \
            site_table(prof["stacks"], grouping, ONE_DOMAIN), grouping


def test_domains_have_their_own_streams(build, tmp_path):
    prof, tr = both(build("domains"), tmp_path, spec="rate=1e-3,seed=7")
    assert counts(tr.totals, COUNT_KEYS) == counts(prof["totals"], COUNT_KEYS)
    assert by_frames(tr.stacks, COUNT_KEYS) == by_frames(prof["stacks"], COUNT_KEYS)
    # Several domains: the profile's peak is one moment of the order in
    # which their events took the tracker's lock.
    t = prof["totals"]
    assert t["live_samples"] <= t["peak_live_samples"] <= t["samples"]
    assert t["peak_live_samples"] == sum(st["peak_live_samples"] for st in prof["stacks"])
    _, evs, _ = ctf.events((tmp_path / "t.ctf").read_bytes())
    allocated, doms, late = set(), set(), 0
    for e in evs:
        if e[0] == "alloc":
            allocated.add(e[1])
            doms.add(e[-1])
        elif e[1] not in allocated:
            late += 1
    assert len(doms) == 3
    # memtrace's tools expect an object's events after its allocation in
    # the file, also when another domain collects it.
    assert late == 0


@pytest.mark.parametrize("debug", [True, False], ids=["g", "no-g"])
def test_bytecode_trace_reads_debug_information_before_sampling(build, tmp_path, debug):
    # In bytecode the first location lookup reads the executable's debug
    # information onto the OCaml heap. At rate 1 that allocation is sampled;
    # made from inside the trace's writer (packets flush during this run),
    # the sample came back to the writer and waited for its own lock.
    exe = build("trace_mix", backend="bytecode", debug=debug)
    try:
        run(exe, memprof=f"rate=1,trace={tmp_path / 't.ctf'}", timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the traced bytecode program did not finish in 120 s")
    tr = load_ctf(str(tmp_path / "t.ctf"))
    assert tr.totals["samples"] > 100_000


def test_trace_alone_writes_no_profile(build, tmp_path):
    res = run(build("hello"), memprof="rate=1e-2,trace=t.%p.ctf", cwd=tmp_path)
    assert res.stdout == "hello\n" and res.stderr == ""
    (t,) = tmp_path.iterdir()
    assert t.name.startswith("t.") and t.name.endswith(".ctf") and t.name[2:-4].isdigit()
    info, _ = ctf.read_info(t.read_bytes())
    assert info["pid"] == int(t.name[2:-4]) and info["sample_rate"] == 1e-2
    assert info["word_size"] == 64 and info["context"] == "rate=1e-2,trace=t.%p.ctf"


def test_long_run_streams_packets_with_bounded_memory(build, tmp_path):
    """Ten times the events: ten times the trace, and the peak RSS grows by
    far less than the trace (a generous margin: only a buffer that grows
    with the trace would fail it)."""
    exe = build("trace_mix")
    peaks, sizes = [], []
    for scale in (2, 20):
        res = run(exe, scale, "rss", memprof="rate=1e-2,seed=1,trace=t.ctf", cwd=tmp_path)
        peaks.append(int(res.stdout.split()[-1]))
        sizes.append((tmp_path / "t.ctf").stat().st_size)
        assert load_ctf(str(tmp_path / "t.ctf")).totals["blocks"] > 0
    assert sizes[1] > 8 * sizes[0] and sizes[1] > 1 << 20
    assert peaks[1] - peaks[0] < (sizes[1] - sizes[0]) // 1024 // 4, (peaks, sizes)


def test_final_name_appears_only_when_complete(build, tmp_path):
    res = run(build("trace_mid"), "t.ctf", memprof="rate=1e-2,trace=t.ctf", cwd=tmp_path)
    assert res.stdout == "false\n"
    assert load_ctf(str(tmp_path / "t.ctf")).totals["samples"] > 0
    assert os.listdir(tmp_path) == ["t.ctf"]


def test_planted_symlink_at_the_temporary_name_is_not_followed(build, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    script = 'ln -s victim.txt "t.ctf.tmp.$$" && exec "$0" normal'
    res = run(pathlib.Path("/bin/sh"), "-c", script, build("exits"),
              memprof="rate=1e-2,trace=t.ctf", cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr
    assert victim.read_text() == "precious\n"
    assert load_ctf(str(tmp_path / "t.ctf")).totals["samples"] > 0
    (link,) = tmp_path.glob("t.ctf.tmp.*")
    assert link.is_symlink()


def test_unwritable_trace_stops_before_the_program(build, tmp_path):
    res = run(build("hello"), memprof=f"rate=1e-2,trace={tmp_path}/no/such/t.ctf",
              check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert res.stderr.startswith("OCAMLMEMPROF: cannot create the trace")


def test_exit_status_is_kept_and_no_temporary_file_stays(build, tmp_path):
    res = run(build("exits"), "exit3", memprof="rate=1e-2,out=p.json,trace=t.ctf",
              cwd=tmp_path, check=False)
    assert res.returncode == 3
    assert sorted(os.listdir(tmp_path)) == ["p.json", "t.ctf"]
    prof = read_profile((tmp_path / "p.json").read_bytes())
    assert load_ctf(str(tmp_path / "t.ctf")).totals == counts(prof["totals"])


def test_a_trace_of_live_off_is_read_as_undecided_and_not_compared(build, tmp_path):
    """With live=off the exit collects nothing, so blocks dead at exit keep
    no collect event: the trace's live counts equal the profile's (blocks
    not yet collected), it reads as undecided (live_mode "off", from the
    setting the runtime writes into its context), and `compare`, which
    judges live samples, refuses it in one line with exit 2."""
    prof, tr = both(build("trace_mix"), tmp_path, spec="rate=1e-3,seed=5,live=off")
    assert prof["config"]["live"] == "off" and tr.live_mode == "off"
    assert tr.totals == counts(prof["totals"])
    r = subprocess.run([sys.executable, "-m", "memprof_ci", "compare", "t.ctf", "t.ctf"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "harness")))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "t.ctf" in lines[0] and "live=off" in lines[0], r.stderr
    _, walked = both(build("trace_mix"), tmp_path, spec="rate=1e-3,seed=5")
    assert walked.live_mode == "walk"
