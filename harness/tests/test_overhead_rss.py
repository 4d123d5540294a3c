"""The added peak RSS beside the overhead: measured on a real OCaml program
built with the patched runtime, derived again from its runs when read back,
and rendered in one place (fmt.rss_text)."""

import os
import subprocess

import pytest

from memprof_ci.text import fmt
from memprof_ci.measure import overhead_rss
from memprof_ci.errors import InputError
from memprof_ci.inputs.manifest import load_manifest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "rss", "live_list.ml")


def bench(tmp_path, rate):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    exe = tmp_path / "live_list.exe"
    if not exe.exists():
        # Compiled from a copy: ocamlopt writes its objects beside the source.
        src = tmp_path / "live_list.ml"
        src.write_text(open(SRC).read())
        r = subprocess.run([OCAMLOPT, "-g", "-o", str(exe), str(src)], cwd=tmp_path,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    (tmp_path / "m.toml").write_text(
        f'[[benchmark]]\nname = "live"\nmode = "sampled"\nrate = {rate}\nseeds = [1]\n'
        f'command = ["{exe}"]\n')
    return load_manifest(str(tmp_path / "m.toml")).benchmarks[0]


def test_tracking_many_live_blocks_shows_as_added_peak_rss(tmp_path):
    # At rate 0.5 about 500,000 live cells are tracked to the end; at 1e-5,
    # about ten.  Each tracked block costs the profiler tens of bytes.  The
    # harness itself may be large (a long pytest session): a child forked
    # from it would report at least the harness's peak on both sides.
    ballast = b"\1" * (150 << 20)
    high = overhead_rss.measure(bench(tmp_path, 0.5), str(tmp_path / "w"))
    low = overhead_rss.measure(bench(tmp_path, 1e-5), str(tmp_path / "w"))
    print(f"added peak RSS: rate 0.5 {high['added_bytes']} B, rate 1e-5 {low['added_bytes']} B")
    assert high["off_kb"][0] > 20_000          # the list itself: 24 MB
    assert high["added_bytes"] > 4 * 2**20
    assert low["added_bytes"] < high["added_bytes"] / 4
    assert overhead_rss.parse(high, "rss") == high
    assert high["off_kb"][0] < len(ballast) // 1024


def test_a_record_cannot_state_a_size_its_runs_do_not_give():
    r = overhead_rss.parse({"off_kb": [10_000], "on_kb": [12_048], "added_bytes": 1}, "rss")
    assert r["added_bytes"] == 2048 * 1024
    assert fmt.rss_text(r) == "peak RSS +2.0 MB"
    assert overhead_rss.parse(None, "rss") is None and fmt.rss_text(None) == ""


@pytest.mark.parametrize("bad", [
    [], {"off_kb": [1]}, {"off_kb": [], "on_kb": []}, {"off_kb": [-1], "on_kb": [1]},
    {"off_kb": [1.5], "on_kb": [1]}, {"off_kb": "1", "on_kb": [1]}])
def test_hostile_rss_records_are_input_errors(bad):
    with pytest.raises(InputError, match=r"^x\.rss"):
        overhead_rss.parse(bad, "x.rss")
