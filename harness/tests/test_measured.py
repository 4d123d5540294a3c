"""check --measured-dir's documents (measured.write_measured): what the judge
of a push to main hands `memprof-ci record`.

A real baseline of this repository (an "auto" benchmark with a plan and a GC
schedule section) plays both the trusted baseline and the measurement.
"""
import json
import os
import pathlib

from memprof_ci.store import baseline as bl
from memprof_ci.store import measured
from memprof_ci.store.run_dirs import RunEntry

BASELINES = pathlib.Path(__file__).resolve().parents[2] / "baselines"


def test_documents_keep_the_trusted_plan_and_schedule_and_the_runs_patch_id(tmp_path):
    trusted = bl.load_baseline(str(BASELINES / "hashtables.json"), "hashtables")
    assert trusted.meta.get("plan") and trusted.meta.get("schedule")
    cur = bl.load_baseline(str(BASELINES / "hashtables.json"), "hashtables")
    entry = RunEntry(name="hashtables", directory=str(tmp_path), overhead=None)
    # A planted symlink at the target is replaced, never followed.
    out = tmp_path / "measured"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    os.symlink(victim, out / "hashtables.json")
    written = measured.write_measured(str(out), {"hashtables": (trusted, cur), "gone": (None, None)},
                                      {"hashtables": entry}, ["abc123", None, "abc123"])
    assert written == [str(out / "hashtables.json")]
    assert victim.read_text() == "keep\n" and not (out / "hashtables.json").is_symlink()
    doc = json.loads((out / "hashtables.json").read_text())
    src = json.loads((BASELINES / "hashtables.json").read_text())
    assert doc["config"] == src["config"] and doc["schedule"] == src["schedule"]
    assert doc["sites"] == src["sites"] and doc["gc"] == src["gc"]
    assert doc["patch_id"] == "abc123" and doc["git_commit"] is None
    again = bl.load_baseline(str(out / "hashtables.json"), "hashtables")
    assert again.meta["schedule"] == trusted.meta["schedule"]
    # Two patch ids in one run: none is claimed.
    measured.write_measured(str(out), {"hashtables": (trusted, cur)}, None, ["a1", "b2"])
    assert json.loads((out / "hashtables.json").read_text())["patch_id"] is None
