"""Tests of the sharding and reporting plumbing: shard_plan.py, run-check.sh,
merge-shards.sh, publish-report.sh and comment-payload.sh.

`memprof-ci merge` is replaced by a stub executable (MEMPROF_CI=...) because the
harness is built in parallel and is not in the repository yet; the stub records
its arguments, writes report.md/report.json and exits with a chosen status,
which is all the plumbing relies on. test_real_harness_merge_if_present runs
the real `python3 -m memprof_ci merge` once harness/memprof_ci exists.
"""
import json
import os
import pathlib
import stat

import pytest

from ghci_helpers import PYTHON, REPO_ROOT, SCRIPTS, run

SHARD_PLAN = str(SCRIPTS / "shard_plan.py")
MERGE = str(SCRIPTS / "merge-shards.sh")
PUBLISH = str(SCRIPTS / "publish-report.sh")
RUN_CHECK = str(SCRIPTS / "run-check.sh")
PAYLOAD = str(SCRIPTS / "comment-payload.sh")


@pytest.mark.parametrize("raw,count,matrix", [("", "1", [1]), ("1", "1", [1]), ("3", "3", [1, 2, 3]),
                                              (" 4 ", "4", [1, 2, 3, 4]), ("32", "32", list(range(1, 33)))])
def test_shard_plan(tmp_path, raw, count, matrix):
    out = tmp_path / "out"
    proc = run([PYTHON, SHARD_PLAN, raw], env={"GITHUB_OUTPUT": str(out)})
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert lines["count"] == count and json.loads(lines["matrix"]) == matrix
    assert proc.stdout == out.read_text()


@pytest.mark.parametrize("raw", ["0", "33", "-1", "two", "1.5", "3; echo", "1e2", "0x2"])
def test_shard_plan_rejects(tmp_path, raw):
    out = tmp_path / "out"
    proc = run([PYTHON, SHARD_PLAN, raw], env={"GITHUB_OUTPUT": str(out)})
    assert proc.returncode == 2
    assert not out.exists()


@pytest.fixture
def stub(tmp_path):
    """A fake `memprof-ci` whose `merge` exits with $STUB_STATUS."""
    log = tmp_path / "stub.log"
    path = tmp_path / "memprof-ci-stub"
    path.write_text(f"""#!/bin/sh
printf '%s\\n' "$*" >> {log}
[ "$1" = merge ] || exit 64
out=$2
mkdir -p "$out"
printf '# merged report\\n\\nshards: %s\\n' "$(($# - 2))" > "$out/report.md"
printf '{{"verdict": "stub"}}\\n' > "$out/report.json"
exit "${{STUB_STATUS:-0}}"
""")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path, log


def make_shards(tmp_path, n, present=None):
    dirs = []
    for k in range(1, n + 1):
        d = tmp_path / "shards" / f"alloc-report-shard-{k}"
        if present is None or k in present:
            d.mkdir(parents=True)
            (d / "report.json").write_text(json.dumps({"shard": k}))
            (d / "report.md").write_text(f"shard {k}\n")
        dirs.append(str(d))
    return dirs


@pytest.mark.parametrize("stub_status,expected", [(0, 0), (1, 1), (2, 2), (3, 2)])
def test_merge_all_shards(tmp_path, stub, stub_status, expected):
    path, log = stub
    dirs = make_shards(tmp_path, 3)
    out = tmp_path / "merged"
    summary = tmp_path / "summary.md"
    proc = run([MERGE, str(out), "3", *dirs],
               env={"MEMPROF_CI": str(path), "STUB_STATUS": str(stub_status), "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == expected, proc.stdout + proc.stderr
    assert log.read_text().split() == ["merge", str(out), *dirs]
    assert (out / "exit-status").read_text().strip() == str(expected)
    text = summary.read_text()
    assert "# merged report" in text and "shards: 3" in text
    if expected:
        assert "::error" in proc.stdout


def test_merge_missing_shard_is_an_error(tmp_path, stub):
    path, log = stub
    dirs = make_shards(tmp_path, 3, present={1, 3})
    out = tmp_path / "merged"
    summary = tmp_path / "summary.md"
    proc = run([MERGE, str(out), "3", *dirs],
               env={"MEMPROF_CI": str(path), "STUB_STATUS": "0", "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 2
    assert log.read_text().split() == ["merge", str(out), dirs[0], dirs[2]]
    assert "Expected 3 shard report(s), found 2" in (out / "report.md").read_text()
    assert "alloc-report-shard-2" in summary.read_text()


def test_merge_no_shards_at_all(tmp_path, stub):
    path, log = stub
    dirs = make_shards(tmp_path, 2, present=set())
    out = tmp_path / "merged"
    proc = run([MERGE, str(out), "2", *dirs], env={"MEMPROF_CI": str(path)})
    assert proc.returncode == 2
    assert not log.exists()
    assert (out / "exit-status").read_text().strip() == "2"


def test_merge_more_reports_than_expected_is_an_error(tmp_path, stub):
    path, _ = stub
    dirs = make_shards(tmp_path, 3)
    proc = run([MERGE, str(tmp_path / "m"), "2", *dirs], env={"MEMPROF_CI": str(path)})
    assert proc.returncode == 2


@pytest.mark.parametrize("expected", ["0", "x", "", "-1"])
def test_merge_bad_expected(tmp_path, stub, expected):
    path, _ = stub
    dirs = make_shards(tmp_path, 1)
    assert run([MERGE, str(tmp_path / "m"), expected, *dirs], env={"MEMPROF_CI": str(path)}).returncode == 2


def test_merge_default_command_is_the_harness(tmp_path):
    """Without MEMPROF_CI the script runs `python -m memprof_ci` with PYTHONPATH=harness;
    check that wiring with a throwaway memprof_ci package."""
    harness = tmp_path / "harness" / "memprof_ci"
    harness.mkdir(parents=True)
    (harness / "__init__.py").write_text("")
    (harness / "__main__.py").write_text(
        "import sys, pathlib\n"
        "assert sys.argv[1] == 'merge'\n"
        "out = pathlib.Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)\n"
        "(out / 'report.md').write_text('fake harness merged %d\\n' % (len(sys.argv) - 3))\n"
        "sys.exit(1)\n")
    dirs = make_shards(tmp_path, 2)
    out = tmp_path / "merged"
    proc = run([MERGE, str(out), "2", *dirs], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fake harness merged 2" in (out / "report.md").read_text()


def shard_report(k, n):
    """A minimal shard report.json in the harness's format (no benchmarks)."""
    return {"format": "memprof-ci/report", "version": 1, "kind": "check",
            "shard": {"index": k, "count": n}, "benchmarks": {}, "proposed_baselines": None, "notes": []}


@pytest.mark.skipif(not (REPO_ROOT / "harness" / "memprof_ci" / "cli.py").is_file(),
                    reason="harness/memprof_ci not in the repository")
def test_real_harness_merge(tmp_path):
    """merge-shards.sh with the real `python3 -m memprof_ci merge`: all shards
    merge to a pass; a missing shard is an error both for the harness and us."""
    dirs = []
    for k in (1, 2, 3):
        d = tmp_path / f"alloc-report-shard-{k}"
        d.mkdir()
        (d / "report.json").write_text(json.dumps(shard_report(k, 3)))
        dirs.append(str(d))
    env = {"MEMPROF_CI_HARNESS": str(REPO_ROOT / "harness"), "GITHUB_STEP_SUMMARY": str(tmp_path / "sum.md")}
    proc = run([MERGE, str(tmp_path / "merged"), "3", *dirs], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "merged" / "report.json").read_text())["verdict"]["exit_code"] == 0
    assert "memprof-ci" in (tmp_path / "sum.md").read_text()
    gone = tmp_path / "gone"
    proc = run([MERGE, str(tmp_path / "merged2"), "3", dirs[0], str(gone), dirs[2]], env=env)
    assert proc.returncode == 2
    assert "Incomplete sharded run" in (tmp_path / "merged2" / "report.md").read_text()


@pytest.mark.parametrize("status,expected", [(0, 0), (1, 1), (2, 2), (137, 2)])
def test_run_check_normalises_and_publishes(tmp_path, status, expected):
    report = tmp_path / "report"
    summary = tmp_path / "summary.md"
    cmd = f"mkdir -p {report} && echo '| bench | words |' > {report}/report.md && exit {status}"
    proc = run([RUN_CHECK, str(report), "--", "sh", "-c", cmd], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == expected, proc.stdout + proc.stderr
    assert (report / "exit-status").read_text().strip() == str(expected)
    assert "| bench | words |" in summary.read_text()


@pytest.mark.parametrize("cmd", ["true", "false"])
def test_run_check_without_report_is_an_error(tmp_path, cmd):
    report = tmp_path / "report"
    summary = tmp_path / "summary.md"
    proc = run([RUN_CHECK, str(report), "--", cmd], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 2
    assert "No report.md was produced" in summary.read_text()


@pytest.mark.parametrize("verdict,expected", [(1, 1), (2, 2), (0, 2), ("junk", 2)])
def test_make_style_status_uses_report_verdict(tmp_path, verdict, expected):
    """`make check-alloc` exits 2 for a regression; report.json tells them apart,
    but can never turn a failure into a pass."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("report\n")
    (report / "report.json").write_text(json.dumps({"verdict": {"exit_code": verdict}}))
    proc = run([RUN_CHECK, str(report), "--", "sh", "-c", "exit 2"])
    assert proc.returncode == expected


def test_report_json_cannot_turn_regression_into_pass(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("report\n")
    (report / "report.json").write_text(json.dumps({"verdict": {"exit_code": 0}}))
    assert run([RUN_CHECK, str(report), "--", "sh", "-c", "exit 1"]).returncode == 1


def test_run_check_usage(tmp_path):
    assert run([RUN_CHECK, str(tmp_path), "true"]).returncode == 2


def test_publish_caps_summary(tmp_path):
    report = tmp_path / "r"
    report.mkdir()
    (report / "report.md").write_text("y" * (2 * 1024 * 1024))
    summary = tmp_path / "summary.md"
    proc = run([PUBLISH, str(report), "0"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0
    assert summary.stat().st_size < 600 * 1024
    assert "Report truncated" in summary.read_text()


def test_comment_payload(tmp_path):
    report = tmp_path / "r"
    report.mkdir()
    (report / "report.md").write_text("regression in bench_x\n")
    out = tmp_path / "payload"
    assert run([PAYLOAD, str(out), "42", str(report)]).returncode == 0
    assert sorted(os.listdir(out)) == ["pr-number", "report.md"]
    assert (out / "pr-number").read_text() == "42\n"
    assert (out / "report.md").read_text() == "regression in bench_x\n"


def test_comment_payload_without_report(tmp_path):
    out = tmp_path / "payload"
    assert run([PAYLOAD, str(out), "42", str(tmp_path / "none")]).returncode == 0
    assert "produced no report" in (out / "report.md").read_text()


@pytest.mark.parametrize("pr", ["", "0", "x", "4 2", "-1", "42\n"])
def test_comment_payload_rejects_bad_pr(tmp_path, pr):
    assert run([PAYLOAD, str(tmp_path / "p"), pr, str(tmp_path)]).returncode == 2
