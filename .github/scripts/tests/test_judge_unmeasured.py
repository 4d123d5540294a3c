"""The gate's judge on a run that lacks what the trusted baseline measured
(issue 61): the base branch's baseline counts every allocation point
exactly, the manifest asks for points (the default), and the pull
request's build job hands over profiles without them. Judged through
judge.sh as the other judge fixtures are (test_judge.py's repository,
profile.sh, judge.sh): an error naming the benchmark, never a pass of the
weaker sampled test.
"""
import json

from test_judge import (MANIFEST, commit_on_main, judge, manifest_text, pr_merge, profile,  # noqa: F401
                        repo, template, write)

# Exact counts per site of fakebench's `a` (A_WORDS), as update-baselines
# writes the section from a run with OCAMLMEMPROF points=on.
POINTS = {"live": True, "calls": True, "in_c": {}, "sites": {
    "Main.f0 @ main.ml": {"file": "main.ml", "function": "Main.f0", "line": None,
                          "words": 2_000_000, "blocks": 500_000, "live_words": 200_000,
                          "lines": {"10": 2_000_000}, "live_lines": {"10": 200_000}},
    "Main.f1 @ main.ml": {"file": "main.ml", "function": "Main.f1", "line": None,
                          "words": 1_000_000, "blocks": 250_000, "live_words": 100_000,
                          "lines": {"11": 1_000_000}, "live_lines": {"11": 100_000}}}}


def _with_points(r):
    path = r / "baselines" / "a.json"
    doc = json.loads(path.read_text())
    doc["points"] = POINTS
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def test_a_run_without_the_baselines_points_is_an_error(repo, tmp_path):
    r, _ = repo
    base = commit_on_main(r, _with_points, "baseline a counted exactly")
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    checks = js["benchmarks"]["a"]["checks"]
    for check in ("alloc_sites", "live"):
        assert checks[check]["outcome"] == "error", checks[check]
        assert "benchmark 'a'" in checks[check]["message"]
        assert "allocation-point counts" in checks[check]["message"]
    assert js["benchmarks"]["b"]["checks"]["alloc_sites"]["outcome"] == "passed"
    assert "allocation-point counts" in md


def test_the_base_manifest_without_points_judges_the_same_run_sampled(repo, tmp_path):
    """The rule reads the base branch's manifest: `points = false` there
    (not in the pull request) is what lets a run without points be judged
    by sampling."""
    r, _ = repo

    def no_points(rr):
        _with_points(rr)
        write(rr, MANIFEST, manifest_text(settings={"points": "false"}))
    base = commit_on_main(r, no_points, "points off")
    head = pr_merge(r, base, lambda rr: write(rr, "README", "x\n"))
    runs = [profile(r, tmp_path / "run", base)]
    proc, md, js = judge(r, tmp_path, head, runs, base=base, labels=[])
    assert proc.returncode == 0, proc.stdout + proc.stderr
