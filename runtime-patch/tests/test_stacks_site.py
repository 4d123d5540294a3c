"""stacks=site (memprof_tracker.c, design 8): each sampled callstack keeps
at most 3 slots (the innermost known one, the site: the innermost one
outside the standard library, and the standard-library one just inside
it), so a profile at rate 1 has about one stack per site, and the harness's
site table (every grouping: per-site counts, lines and `via`) is the one
whole stacks give.

The programs are suite benchmarks (benchmarks/*.ml) built with the patched
runtime, run at rate 1 (the harness's exact mode) with and without the cut.
A control shows the comparison notices a cut one frame too early."""

import subprocess
import sys
from collections import Counter

import pytest

from runtime_testlib import ROOT, read_profile, run

sys.path.insert(0, str(ROOT / "harness"))
from memprof_ci.inputs.profile import COUNT_KEYS, PEAK_KEY  # noqa: E402
from memprof_ci.sites.grouping import GROUPINGS, classify  # noqa: E402

COUNTS = COUNT_KEYS + (PEAK_KEY,)

# Exact-mode suite benchmarks at their manifest sizes, and bdd (a distinct
# stack per sample).
BENCHMARKS = [("strings", "180"), ("hashtables", "9"), ("marshal_rt", "120"),
              ("bdd", "28")]


@pytest.fixture(scope="module")
def bench_exe(runtime_bin, tmp_path_factory):
    built = {}

    def get(name, backend="native"):
        if (name, backend) not in built:
            work = tmp_path_factory.mktemp(f"{name}.{backend}")
            src = work / f"{name}.ml"
            src.write_text((ROOT / "benchmarks" / f"{name}.ml").read_text())
            comp = "ocamlopt" if backend == "native" else "ocamlc"
            subprocess.run([str(runtime_bin / comp), "-g", src.name, "-o", f"{name}.exe"],
                           cwd=work, check=True, capture_output=True)
            built[(name, backend)] = work / f"{name}.exe"
        return built[(name, backend)]
    return get


def exact_profile(exe, arg, tmp, stacks=None, frames=16):
    out = tmp / f"{exe.stem}.{stacks or 'full'}.{frames}.json"
    spec = f"rate=1,seed=1,frames={frames},out={out}"
    if stacks is not None:
        spec += f",stacks={stacks}"
    run(exe, arg, memprof=spec)
    raw = out.read_bytes()
    return read_profile(raw), len(raw)


# The counts of allocations themselves, independent of the GC's timing.
ALLOC_COUNTS = ("blocks", "samples", "words", "minor_samples", "major_samples",
                "marshal_samples", "custom_samples")


def site_table(stacks, grouping, counts=COUNTS):
    """The harness's sites of these stacks with every count summed, and
    their lines and `via`, as sites.py groups them."""
    table = {}
    for st in stacks:
        frames = st["frames"]
        idx, fl, fn, via = classify(frames, grouping)
        line = frames[idx]["line"] if idx is not None else None
        key = (fl, fn, line if grouping == "line" else None)
        row = table.setdefault(key, {"counts": Counter(), "lines": Counter(),
                                     "via": Counter()})
        row["counts"].update({k: st[k] for k in counts})
        row["lines"][line] += st["samples"]
        if via:
            row["via"][via] += st["samples"]
    return table


def cut_one_frame_early(stacks):
    """Each stack cut just inside its site frame (function grouping): the
    cut a wrong verdict or an off-by-one would make."""
    out = []
    for st in stacks:
        idx = classify(st["frames"], "function")[0]
        keep = st["frames"][:idx] if idx else st["frames"]
        out.append(dict(st, frames=keep))
    return out


@pytest.mark.parametrize("name,arg", BENCHMARKS)
def test_site_table_equals_full_stacks(bench_exe, tmp_path, name, arg):
    exe = bench_exe(name)
    full, full_bytes = exact_profile(exe, arg, tmp_path)
    cut, cut_bytes = exact_profile(exe, arg, tmp_path, stacks="site")
    assert "stacks" not in full["config"] and cut["config"]["stacks"] == "site"
    assert cut["totals"] == full["totals"]
    assert cut["gc"] == full["gc"]
    for grouping in GROUPINGS:
        assert site_table(cut["stacks"], grouping) == site_table(full["stacks"], grouping), \
            grouping
    assert len(cut["stacks"]) <= len(full["stacks"])
    assert cut_bytes <= full_bytes
    # The control: a cut one frame too early gives another table.
    assert site_table(cut_one_frame_early(full["stacks"]), "function") != \
        site_table(full["stacks"], "function")


def test_bdd_profile_is_bounded(bench_exe, tmp_path):
    """sandmark-style bdd has a distinct 16-frame stack per sample; cut at
    the site its exact profile has about as many stacks as the program
    has allocation points."""
    cut, cut_bytes = exact_profile(bench_exe("bdd"), "28", tmp_path, stacks="site")
    assert cut_bytes <= 1_000_000
    assert len(cut["stacks"]) <= 1000


def test_frames_limit_still_applies(bench_exe, tmp_path):
    """Slots are kept among the first `frames` only: with frames=1 the two
    settings are one and the same profile but for config.stacks (and the
    budget for whole stacks, which stacks=site has no use for)."""
    exe = bench_exe("strings")
    one, _ = exact_profile(exe, "20", tmp_path, frames=1)
    cut, _ = exact_profile(exe, "20", tmp_path, stacks="site", frames=1)
    del cut["config"]["stacks"]
    del one["config"]["stackmem"]
    assert cut == one


def test_bytecode_site_table_equals_full_stacks(bench_exe, tmp_path):
    """In bytecode the debug information is read onto the heap when the
    tracker starts, which moves collections (as with trace=): the
    allocation counts are compared, not promotion, death or the peak."""
    exe = bench_exe("strings", backend="bytecode")
    full, _ = exact_profile(exe, "20", tmp_path)
    cut, _ = exact_profile(exe, "20", tmp_path, stacks="site")
    assert {k: cut["totals"][k] for k in ALLOC_COUNTS} == \
        {k: full["totals"][k] for k in ALLOC_COUNTS}
    assert len(cut["stacks"]) < len(full["stacks"])
    for grouping in GROUPINGS:
        assert site_table(cut["stacks"], grouping, ALLOC_COUNTS) == \
            site_table(full["stacks"], grouping, ALLOC_COUNTS), grouping
