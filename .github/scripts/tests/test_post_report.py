"""Tests of post_report.py against a fake GitHub REST API on 127.0.0.1.

The fake serves GET /repos/O/R/pulls/N, GET (paginated with Link headers)
and POST /repos/O/R/issues/N/comments, and PATCH /repos/O/R/issues/comments/ID,
and records every request, so the tests can assert that the script creates one
comment, edits it in place later, follows pagination, never edits a comment by
someone else, and sends nothing at all for a bad artifact.
"""
import json
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ghci_helpers import PYTHON, SCRIPTS, run

POST_REPORT = str(SCRIPTS / "post_report.py")
MARKER = "<!-- memprof-ci-report -->"
REPO = "octo/memprof-ci"
HEAD = "a" * 40
TOKEN = "test-token-123"


class FakeGitHub:
    def __init__(self, per_page=3):
        self.per_page = per_page
        self.comments = {}  # pr -> list of {"id", "user": {"login"}, "body"}
        self.heads = {}
        self.requests = []
        self.next_id = 1000
        self.foreign_next = False
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def add_comment(self, pr, login, body):
        self.next_id += 1
        self.comments.setdefault(pr, []).append({"id": self.next_id, "user": {"login": login}, "body": body})
        return self.next_id

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _record(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append({"method": self.command, "path": self.path, "body": body,
                                      "auth": self.headers.get("Authorization")})
                return body

            def do_GET(self):
                self._record()
                parsed = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(parsed.query)
                m = re.fullmatch(rf"/repos/{REPO}/pulls/(\d+)", parsed.path)
                if m:
                    pr = int(m.group(1))
                    if pr not in fake.heads:
                        return self._send(404, {"message": "Not Found"})
                    return self._send(200, {"number": pr, "head": {"sha": fake.heads[pr]}})
                m = re.fullmatch(rf"/repos/{REPO}/issues/(\d+)/comments", parsed.path)
                if m:
                    pr = int(m.group(1))
                    per_page = min(int(query.get("per_page", ["30"])[0]), fake.per_page)
                    page = int(query.get("page", ["1"])[0])
                    items = fake.comments.get(pr, [])
                    chunk = items[(page - 1) * per_page: page * per_page]
                    headers = {}
                    if page * per_page < len(items):
                        base = "http://evil.example" if fake.foreign_next else fake.url
                        nxt = f"{base}{parsed.path}?per_page={per_page}&page={page + 1}"
                        headers["Link"] = f'<{nxt}>; rel="next", <{fake.url}{parsed.path}?page=1>; rel="first"'
                    return self._send(200, chunk, headers)
                return self._send(404, {"message": "Not Found"})

            def do_POST(self):
                body = self._record()
                m = re.fullmatch(rf"/repos/{REPO}/issues/(\d+)/comments", self.path)
                if not m:
                    return self._send(404, {"message": "Not Found"})
                cid = fake.add_comment(int(m.group(1)), "github-actions[bot]", body["body"])
                return self._send(201, {"id": cid, "body": body["body"]})

            def do_PATCH(self):
                body = self._record()
                m = re.fullmatch(rf"/repos/{REPO}/issues/comments/(\d+)", self.path)
                if not m:
                    return self._send(404, {"message": "Not Found"})
                for comments in fake.comments.values():
                    for c in comments:
                        if c["id"] == int(m.group(1)):
                            c["body"] = body["body"]
                            return self._send(200, c)
                return self._send(404, {"message": "Not Found"})

        return Handler

    def writes(self):
        return [r for r in self.requests if r["method"] in ("POST", "PATCH")]


@pytest.fixture
def api():
    fake = FakeGitHub()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def artifact(tmp_path, pr="7", report="# Allocation report\n\nAll benchmarks within budget.\n"):
    d = tmp_path / "artifact"
    d.mkdir(exist_ok=True)
    if pr is not None:
        (d / "pr-number").write_bytes(pr.encode() if isinstance(pr, str) else pr)
    if report is not None:
        (d / "report.md").write_bytes(report.encode() if isinstance(report, str) else report)
    return d


def post(api, art, head=HEAD, extra=()):
    env = {"GITHUB_API_URL": api.url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO}
    return run([PYTHON, POST_REPORT, "--artifact-dir", str(art), "--expected-head-sha", head,
                "--conclusion", "failure", "--run-url", "https://github.com/octo/memprof-ci/actions/runs/1",
                *extra], env=env)


def test_creates_comment_with_marker(api, tmp_path):
    api.heads[7] = HEAD
    proc = post(api, artifact(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (w,) = api.writes()
    assert w["method"] == "POST" and w["path"] == f"/repos/{REPO}/issues/7/comments"
    assert w["body"]["body"].startswith(MARKER)
    assert "All benchmarks within budget." in w["body"]["body"]
    assert "failed" in w["body"]["body"] and "actions/runs/1" in w["body"]["body"]
    assert "[interactive report](https://github.com/octo/memprof-ci/actions/runs/1#artifacts)" \
        in w["body"]["body"] and "report.html" in w["body"]["body"]
    assert all(r["auth"] == f"Bearer {TOKEN}" for r in api.requests)


def test_second_push_updates_in_place(api, tmp_path):
    api.heads[7] = HEAD
    assert post(api, artifact(tmp_path, report="first\n")).returncode == 0
    second_head = "b" * 40
    api.heads[7] = second_head
    proc = post(api, artifact(tmp_path, report="second\n"), head=second_head)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [w["method"] for w in api.writes()] == ["POST", "PATCH"]
    (comment,) = api.comments[7]
    assert "second" in comment["body"] and "first" not in comment["body"]


def test_finds_marker_comment_on_later_page(api, tmp_path):
    api.heads[7] = HEAD
    for i in range(7):
        api.add_comment(7, "reviewer", f"comment {i}")
    ours = api.add_comment(7, "github-actions[bot]", MARKER + "\nold report")
    api.add_comment(7, "reviewer", "after")
    proc = post(api, artifact(tmp_path, report="new report\n"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (w,) = api.writes()
    assert w["method"] == "PATCH" and w["path"].endswith(f"/comments/{ours}")
    gets = [r["path"] for r in api.requests if r["method"] == "GET" and "/comments" in r["path"]]
    assert len(gets) == 3  # pages 1..3 of 3 comments each
    assert len(api.comments[7]) == 9


def test_never_edits_someone_elses_marker_comment(api, tmp_path):
    api.heads[7] = HEAD
    api.add_comment(7, "mallory", MARKER + "\nfake report")
    proc = post(api, artifact(tmp_path))
    assert proc.returncode == 0
    (w,) = api.writes()
    assert w["method"] == "POST"
    assert api.comments[7][0]["body"] == MARKER + "\nfake report"


def test_report_cannot_smuggle_the_marker(api, tmp_path):
    api.heads[7] = HEAD
    proc = post(api, artifact(tmp_path, report=f"hello {MARKER} world\n"))
    assert proc.returncode == 0
    body = api.writes()[0]["body"]["body"]
    assert body.count(MARKER) == 1 and body.startswith(MARKER)


def test_head_mismatch_posts_nothing(api, tmp_path):
    """A stale run, or an artifact naming another PR, must not be posted."""
    api.heads[7] = "c" * 40
    proc = post(api, artifact(tmp_path))
    assert proc.returncode == 0
    assert "not posting" in proc.stdout
    assert api.writes() == []


@pytest.mark.parametrize("bad", ["", "0", "-3", "7; rm -rf /", "1e3", "12345678901", "７", "0x10", "7\n8",
                                 b"\xff\xfe", "9" * 100])
def test_bad_pr_number_is_rejected_before_any_request(api, tmp_path, bad):
    api.heads[7] = HEAD
    proc = post(api, artifact(tmp_path, pr=bad))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "bad input" in proc.stdout
    assert api.requests == []


def test_missing_files_are_rejected(api, tmp_path):
    assert post(api, artifact(tmp_path, pr=None)).returncode == 2
    other = tmp_path / "other"
    other.mkdir()
    assert post(api, artifact(other, report=None)).returncode == 2
    assert api.requests == []


def test_symlinked_artifact_files_are_refused(api, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("7\n")
    art = artifact(tmp_path, pr=None)
    os.symlink(secret, art / "pr-number")
    proc = post(api, art)
    assert proc.returncode == 2 and "not a regular file" in proc.stdout
    assert api.requests == []


def test_huge_report_is_truncated(api, tmp_path):
    api.heads[7] = HEAD
    proc = post(api, artifact(tmp_path, report="x" * (3 * 1024 * 1024)))
    assert proc.returncode == 0, proc.stderr
    body = api.writes()[0]["body"]["body"]
    assert len(body) < 65536
    assert "Report truncated" in body


def test_invalid_utf8_report_is_replaced_not_fatal(api, tmp_path):
    api.heads[7] = HEAD
    proc = post(api, artifact(tmp_path, report=b"ok \xff\xfe bytes\n"))
    assert proc.returncode == 0
    assert "ok" in api.writes()[0]["body"]["body"]


def test_pagination_link_off_origin_is_refused(api, tmp_path):
    api.heads[7] = HEAD
    for i in range(5):
        api.add_comment(7, "reviewer", f"c{i}")
    api.foreign_next = True
    proc = post(api, artifact(tmp_path))
    assert proc.returncode == 2
    assert "off the API origin" in proc.stdout
    assert api.writes() == []
    assert all(r["path"].startswith("/repos/") for r in api.requests)


def test_api_error_exits_2(api, tmp_path):
    # PR 8 is unknown to the fake: GET pulls/8 -> 404.
    proc = post(api, artifact(tmp_path, pr="8"))
    assert proc.returncode == 2
    assert "HTTP 404" in proc.stdout


@pytest.mark.parametrize("head", ["abc", "A" * 40, "g" * 40, "--repo"])
def test_bad_expected_head_sha(api, tmp_path, head):
    proc = post(api, artifact(tmp_path), head=head)
    assert proc.returncode == 2
    assert api.requests == []


@pytest.mark.parametrize("repo", ["../x", "octo/..", "octo", "octo/a/b", "-o/x", "octo/x?y", ""])
def test_bad_repo_is_rejected(api, tmp_path, repo):
    art = artifact(tmp_path)
    proc = run([PYTHON, POST_REPORT, "--artifact-dir", str(art), "--expected-head-sha", HEAD, "--repo", repo],
               env={"GITHUB_API_URL": api.url, "GITHUB_TOKEN": TOKEN})
    assert proc.returncode == 2
    assert api.requests == []


def test_missing_token(api, tmp_path):
    art = artifact(tmp_path)
    proc = run([PYTHON, POST_REPORT, "--artifact-dir", str(art), "--expected-head-sha", HEAD, "--repo", REPO],
               env={"GITHUB_API_URL": api.url, "GITHUB_TOKEN": ""})
    assert proc.returncode == 2
    assert api.requests == []
