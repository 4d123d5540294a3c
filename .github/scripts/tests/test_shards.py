"""Tests of the sharding and reporting plumbing: shard_plan.py,
publish-report.sh and comment-payload.sh. (Shards are judged together by
judge.sh, tested in test_judge.py.)
"""
import json
import os

import pytest

from ghci_helpers import PYTHON, SCRIPTS, run

SHARD_PLAN = str(SCRIPTS / "shard_plan.py")
PUBLISH = str(SCRIPTS / "publish-report.sh")
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


@pytest.mark.parametrize("status,expected", [(0, 0), (1, 1), (2, 2), (137, 2), ("x", 2)])
def test_publish_normalises_and_publishes(tmp_path, status, expected):
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("| bench | words |\n")
    summary = tmp_path / "summary.md"
    proc = run([PUBLISH, str(report), str(status)], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == expected, proc.stdout + proc.stderr
    assert (report / "exit-status").read_text().strip() == str(expected)
    assert "| bench | words |" in summary.read_text()
    if expected:
        assert "::error" in proc.stdout


@pytest.mark.parametrize("status", ["0", "1"])
def test_publish_without_report_is_an_error(tmp_path, status):
    report = tmp_path / "report"
    summary = tmp_path / "summary.md"
    proc = run([PUBLISH, str(report), status], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 2
    assert "No report.md was produced" in summary.read_text()


@pytest.mark.parametrize("verdict,expected", [(1, 1), (2, 2), (0, 2), ("junk", 2)])
def test_error_status_uses_report_verdict(tmp_path, verdict, expected):
    """An error status becomes a regression when report.json says so, never a pass."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("report\n")
    (report / "report.json").write_text(json.dumps({"verdict": {"exit_code": verdict}}))
    assert run([PUBLISH, str(report), "2"]).returncode == expected


def test_report_json_cannot_turn_regression_into_pass(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("report\n")
    (report / "report.json").write_text(json.dumps({"verdict": {"exit_code": 0}}))
    assert run([PUBLISH, str(report), "1"]).returncode == 1


@pytest.mark.parametrize("args", [[], ["dir"], ["dir", "0", "title", "extra"]])
def test_publish_usage(tmp_path, args):
    assert run([PUBLISH, *args], cwd=tmp_path).returncode == 2


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
