"""Valid documents of the newest input kinds, made without the OCaml
runtime, for the bad-input tests and the mutation tests
(test_bad_input_newest.py, test_mutants.py):

- a version-5 profile with a `points` and a `snapshot` section;
- a project of one fakebench benchmark with its baseline (update-baselines),
  a run directory of it (`memprof-ci profile --out`), a git repository and
  a run record of it (`memprof-ci record`).
"""

import json
import os
import shutil
import subprocess

from harness_testlib import cli, make_profile, project, to_version3, update, write_json

SPEC_GC = {"minor_words": 2_000_000, "promoted_words": 40_000, "major_words": 90_000,
           "minor_collections": 8, "major_collections": 1, "compactions": 0,
           "heap_words": 100_000, "top_heap_words": 120_000}


def points_profile(seed=1, extra_words=0, snapshot=True):
    """A version-5 profile: two stacks, their allocation points counted
    exactly, and (snapshot=True) one retaining path."""
    doc = to_version3(make_profile([([("Main.f0", "main.ml", 10), ("Main.main", "main.ml", 200)],
                                     40, 4),
                                    ([("Main.f1", "main.ml", 11), ("Main.main", "main.ml", 200)],
                                     20, 0)], seed=seed))
    doc["version"] = 5
    doc["points"] = {"live": True, "complete": True, "points": [
        ["", 0, 0, 0, "(runtime)", 8, 22, 0, 0, 8, 22, 9, 88],
        ["main.ml", 10, 2, 9, "Main.f0", 4000, 12000 + extra_words, 0, 0, 400, 1200, 400, 1200],
        ["main.ml", 11, 2, 9, "Main.f1", 2000, 6000, 10, 500, 0, 0, 0, 0]],
        "calls": [["main.ml", 12, 2, 9, "Main.f1", 0, 0, 1, 1000, 0, 0, 1, 1000]]}
    if snapshot:
        f0 = next(i for i, f in enumerate(doc["frame_table"]) if f["function"] == "Main.f0")
        doc["snapshot"] = {
            "at": "exit", "taken": True, "walk": "breadth-first", "sites_limit": 20,
            "reachable_blocks": 500, "tracked_blocks": 40, "tracked_reachable": 4,
            "table_bytes": 4096,
            "sites": [{"frames": [f0], "root": {"kind": "stack", "function": "Main.main",
                                                "file": "main.ml", "line": 200},
                       "depth": 2, "path": [{"tag": 0, "size": 2, "field": 1},
                                            {"tag": 0, "size": 3, "frames": [f0]}],
                       "live_blocks": 4, "live_samples": 4, "live_words": 12,
                       "shared_samples": 0, "shared_words": 0}]}
    return doc


def write_points_pair(d):
    """Two version-5 profiles, A and B, for `compare A B`."""
    return (write_json(os.path.join(d, "a.json"), points_profile()),
            write_json(os.path.join(d, "b.json"), points_profile(extra_words=60)))


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_world(d):
    """The project, its baseline, a run directory and a run record under
    `d`; returns a dict of their paths."""
    os.makedirs(d, exist_ok=True)
    spec = {"sites": [{"frames": [("Main.f0", "main.ml", 10), ("Main.main", "main.ml", 200)],
                       "words": 2e7, "live": 0.1, "peak": 0.3},
                      {"frames": [("Main.f1", "main.ml", 11), ("Main.main", "main.ml", 200)],
                       "words": 1e7, "live": 0.0, "peak": 0.1}], "gc": SPEC_GC}
    project(d, [{"name": "alpha", "spec": spec}])
    update(d)
    r = cli(d, "profile", "--manifest", "benchmarks.toml", "--no-overhead", "--out", "run", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    git(d, "init", "-q", "-b", "main")
    git(d, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q",
        "--allow-empty", "-m", "the measured commit")
    r = cli(d, "record", "--runs", "runs", "--baselines", "baselines")
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = os.listdir(os.path.join(d, "runs"))
    return {"dir": d, "baseline": os.path.join(d, "baselines", "alpha.json"),
            "run": os.path.join(d, "run"), "record": os.path.join(d, "runs", rec),
            "manifest": os.path.join(d, "benchmarks.toml")}


def copy_world(world, d):
    """A private copy of the world (symlinks kept as links)."""
    shutil.copytree(world["dir"], d, symlinks=True)
    return {k: v.replace(world["dir"], str(d), 1) for k, v in world.items()}


def load(path):
    with open(path) as fh:
        return json.load(fh)
