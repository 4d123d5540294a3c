"""Tests of post_report.py against a fake GitHub REST API on 127.0.0.1.

The fake serves GET /repos/O/R/pulls/N, GET (paginated with Link headers)
and POST /repos/O/R/issues/N/comments, PATCH /repos/O/R/issues/comments/ID,
GET /repos/O/R (the default branch), GET /repos/O/R/contents/PATH?ref=B (the
workflow files of each branch), GET /repos/O/R/actions/runs/ID and its
attempts' jobs, and records every request, so the tests can assert that the
script creates one comment, edits it in place later, follows pagination,
never edits a comment by someone else, posts only for the gate's own runs,
never lets an earlier run overwrite a later one's report, titles it with the
judge job's conclusion, and sends nothing at all for a bad artifact.
"""
import json
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ghci_helpers import PYTHON, SCRIPTS, WORKFLOWS, interpolate, load_workflow, run, run_step, workflow_step

POST_REPORT = str(SCRIPTS / "post_report.py")
MARKER = "<!-- memprof-ci-report -->"
REPO = "octo/memprof-ci"
HEAD = "a" * 40
TOKEN = "test-token-123"
GATE = ".github/workflows/alloc-gate.yml"
RUN_ID = 1


def gate_run(head=HEAD, path=GATE, judge="failure", attempt=1, started="2024-05-01T10:00:00Z",
             conclusion="failure", event="pull_request", jobs=None):
    """A workflow run as GET actions/runs/ID describes it, with its jobs."""
    return {"head_sha": head, "path": path, "event": event, "run_attempt": attempt,
            "run_started_at": started, "conclusion": conclusion,
            "jobs": jobs if jobs is not None else [
                {"name": "plan", "conclusion": "success"},
                {"name": "build (shard 1/1)", "conclusion": "success"},
                {"name": "judge", "conclusion": judge}]}


class FakeGitHub:
    def __init__(self, per_page=3):
        self.per_page = per_page
        self.comments = {}  # pr -> list of {"id", "user": {"login"}, "body"}
        self.heads = {}
        self.runs = {}  # run id -> gate_run(...)
        self.default_branch = "main"
        self.files = {("main", GATE)}  # (branch, path) of the workflow files
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
                if parsed.path == f"/repos/{REPO}":
                    return self._send(200, {"full_name": REPO, "default_branch": fake.default_branch})
                m = re.fullmatch(rf"/repos/{REPO}/contents/(.+)", parsed.path)
                if m:
                    ref = query.get("ref", [fake.default_branch])[0]
                    if (ref, urllib.parse.unquote(m.group(1))) in fake.files:
                        return self._send(200, {"type": "file", "path": m.group(1)})
                    return self._send(404, {"message": "Not Found"})
                m = re.fullmatch(rf"/repos/{REPO}/actions/runs/(\d+)", parsed.path)
                if m and int(m.group(1)) in fake.runs:
                    run = {k: v for k, v in fake.runs[int(m.group(1))].items() if k != "jobs"}
                    return self._send(200, {"id": int(m.group(1)), **run})
                m = re.fullmatch(rf"/repos/{REPO}/actions/runs/(\d+)/attempts/(\d+)/jobs", parsed.path)
                if m and int(m.group(1)) in fake.runs:
                    run = fake.runs[int(m.group(1))]
                    if int(m.group(2)) != run["run_attempt"]:
                        return self._send(404, {"message": "Not Found"})
                    return self._send(200, {"total_count": len(run["jobs"]), "jobs": run["jobs"]})
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


def post(api, art, head=HEAD, extra=(), run_id=RUN_ID, workflow_path=GATE):
    """post_report.py as memprof-ci-comment.yml runs it for run `run_id`
    (registered as a gate run of `head` unless the test registered one)."""
    api.runs.setdefault(run_id, gate_run(head=head))
    env = {"GITHUB_API_URL": api.url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO}
    args = ["--workflow-path", workflow_path] if workflow_path else []
    return run([PYTHON, POST_REPORT, "--artifact-dir", str(art), "--expected-head-sha", head,
                "--run-id", str(run_id), *args,
                "--run-url", f"https://github.com/octo/memprof-ci/actions/runs/{run_id}", *extra], env=env)


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
    api.runs[2] = gate_run(head=second_head, started="2024-05-01T11:00:00Z")
    proc = post(api, artifact(tmp_path, report="second\n"), head=second_head, run_id=2)
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


# ---------------------------------------------------------------- which run may post

@pytest.mark.parametrize("workflow_path", [GATE, ""], ids=["named-gate", "default-branch"])
@pytest.mark.parametrize("path", [".github/workflows/evil.yml", f"{REPO}/.github/workflows/evil.yml@refs/pull/7/merge"],
                         ids=["plain", "full"])
def test_a_workflow_added_by_the_pull_request_cannot_post(api, tmp_path, workflow_path, path):
    """A pull request adds a workflow *named* alloc-gate: its run triggers
    the comment workflow too, with a forged artifact and a green conclusion.
    The run is of another file (not on the default branch): nothing is posted."""
    api.heads[7] = HEAD
    ours = api.add_comment(7, "github-actions[bot]", MARKER + "\nreal report: failed")
    api.runs[RUN_ID] = gate_run(path=path, judge="success", conclusion="success")
    proc = post(api, artifact(tmp_path, report="All good!\n"), workflow_path=workflow_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "not posting" in proc.stdout and "evil.yml" in proc.stdout
    assert api.writes() == []
    assert [c["body"] for c in api.comments[7] if c["id"] == ours] == [MARKER + "\nreal report: failed"]


@pytest.mark.parametrize("path", [GATE, f"{REPO}/{GATE}@refs/heads/main"], ids=["plain", "full"])
def test_the_gates_own_run_posts(api, tmp_path, path):
    api.heads[7] = HEAD
    api.runs[RUN_ID] = gate_run(path=path)
    for workflow_path in (GATE, ""):
        proc = post(api, artifact(tmp_path), workflow_path=workflow_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [w["method"] for w in api.writes()] == ["POST", "PATCH"]


@pytest.mark.parametrize("field,value", [("event", "push"), ("head_sha", "b" * 40)])
def test_a_run_of_something_else_cannot_post(api, tmp_path, field, value):
    api.heads[7] = HEAD
    api.runs[RUN_ID] = {**gate_run(), field: value}
    proc = post(api, artifact(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert api.writes() == []


def test_an_earlier_run_never_overwrites_a_later_ones_report(api, tmp_path):
    """Two runs of one commit (a push, then the accept label) finish out of
    order: the later run's report stays. A re-run of the earlier one starts
    later still, and replaces it, as its check does."""
    api.heads[7] = HEAD
    api.runs[10] = gate_run(judge="failure", started="2024-05-01T10:00:00Z")
    api.runs[11] = gate_run(judge="success", started="2024-05-01T10:05:00Z")
    assert post(api, artifact(tmp_path, report="labelled run\n"), run_id=11).returncode == 0
    proc = post(api, artifact(tmp_path, report="first run\n"), run_id=10)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "later than this run" in proc.stdout
    (comment,) = api.comments[7]
    assert "labelled run" in comment["body"] and "report: passed" in comment["body"]
    api.runs[10] = gate_run(judge="failure", attempt=2, started="2024-05-01T10:09:00Z")
    assert post(api, artifact(tmp_path, report="first run, again\n"), run_id=10).returncode == 0
    (comment,) = api.comments[7]
    assert "first run, again" in comment["body"] and "report: failed" in comment["body"]


@pytest.mark.parametrize("jobs,title", [
    ([{"name": "judge", "conclusion": "failure"}], "failed"),
    ([{"name": "alloc / judge", "conclusion": "success"}], "passed"),
    ([{"name": "judge", "conclusion": "skipped"}], "skipped"),
    ([{"name": "build", "conclusion": "success"}], "no verdict"),
    ([{"name": "judge", "conclusion": "success"}, {"name": "x / judge", "conclusion": "success"}], "no verdict"),
], ids=["judge-failed", "reusable", "judge-skipped", "no-judge", "two-judges"])
def test_the_title_is_the_judges_conclusion(api, tmp_path, jobs, title):
    """The run as a whole concluded "success" in every case (a skipped or
    missing judge does not fail a run): the title says what the judge did."""
    api.heads[7] = HEAD
    api.runs[RUN_ID] = gate_run(conclusion="success", jobs=jobs)
    proc = post(api, artifact(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"### memprof-ci allocation report: {title}" in api.writes()[0]["body"]["body"]


def test_head_mismatch_of_a_moved_pull_request(api, tmp_path):
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


# ---------------------------------------------------------------- the workflows' own step

def comment_step_env(api, tmp_path, run_id, caller):
    """The env: of memprof-ci-comment.yml's posting step, each expression
    evaluated for a workflow_run event of run `run_id`, with the inputs the
    caller workflow (`caller`, from WORKFLOWS) passes and their defaults."""
    callee = load_workflow(WORKFLOWS / "memprof-ci-comment.yml")
    inputs = {k: v.get("default", "") for k, v in callee["on"]["workflow_call"]["inputs"].items()}
    (job,) = load_workflow(WORKFLOWS / caller)["jobs"].values()
    inputs.update(job.get("with") or {})
    context = {f"inputs.{k}": v for k, v in inputs.items()}
    context.update({"github.event.workflow_run.head_sha": HEAD, "github.event.workflow_run.id": str(run_id),
                    "github.event.workflow_run.html_url": f"https://github.com/{REPO}/actions/runs/{run_id}",
                    "github.token": TOKEN, "runner.temp": str(tmp_path)})
    step = workflow_step("memprof-ci-comment.yml", "post", "Post or update the comment")
    env = {k: str(interpolate(v, context)) for k, v in step["env"].items()}
    env.update({"GITHUB_API_URL": api.url, "GITHUB_REPOSITORY": REPO})
    return step, env


@pytest.mark.parametrize("path,posted", [(GATE, True), (".github/workflows/evil.yml", False)])
def test_alloc_gate_comment_posts_only_the_gates_runs(api, tmp_path, path, posted):
    """alloc-gate-comment.yml -> memprof-ci-comment.yml's step, as GitHub
    would run it for a run of `path` named alloc-gate (the evil workflow is
    on the default branch too here: only the path given by the caller
    tells them apart)."""
    api.heads[7] = HEAD
    api.files.add(("main", ".github/workflows/evil.yml"))
    api.runs[5] = gate_run(path=path, judge="success", conclusion="success")
    step, env = comment_step_env(api, tmp_path, 5, "alloc-gate-comment.yml")
    assert env["ARTIFACT_DIR"] == str(tmp_path / "pr-comment")
    art = artifact(tmp_path, report="forged: all good\n")
    art.rename(tmp_path / "pr-comment")
    checkout = tmp_path / "job"
    (checkout / ".memprof-ci" / ".github").mkdir(parents=True)
    (checkout / ".memprof-ci" / ".github" / "scripts").symlink_to(SCRIPTS)
    proc = run_step(step, env, checkout)
    assert [w["method"] for w in api.writes()] == (["POST"] if posted else []), proc.stdout + proc.stderr
    assert proc.returncode == (0 if posted else 2)
