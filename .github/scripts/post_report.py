#!/usr/bin/env python3
"""post_report.py: post or update the memprof-ci report comment on a pull request.

Run by the privileged `workflow_run` workflow (pull-requests: write) on the
artifact that the read-only test job uploaded. Standard library only
(urllib against $GITHUB_API_URL), so it is testable against a local fake API.

Invariants:
  - the artifact is untrusted data: it is only read, never executed or
    imported; only the two regular files `pr-number` and `report.md` are read
    (symlinks refused), each with a byte cap; the PR number must be a plain
    positive decimal integer;
  - the run is read from the API (GET actions/runs/--run-id), not from the
    artifact: it must be a `pull_request` run of --expected-head-sha (the
    trusted `workflow_run.head_sha`) whose workflow file is --workflow-path
    or, without it, a file of the default branch, so a workflow that a pull
    request adds (even one *named* like the gate) cannot post;
  - the comment goes only to a pull request whose current head commit equals
    --expected-head-sha, so a tampered artifact cannot aim the comment at
    another pull request, and a stale run never overwrites the report of a
    newer push;
  - the title's verdict is the conclusion of the run's one job named
    --judge-job (or `CALLER / --judge-job`, as GitHub names a reusable
    workflow's job), read from the API for the run's attempt; without exactly
    one such job it says so instead of reporting the run's conclusion;
  - one comment per pull request: the first comment by --bot-login whose body
    starts with the hidden marker is edited in place (PATCH); otherwise one is
    created (POST). Comments by anyone else are never edited. The comment
    records its run attempt (a second hidden line: when it started, run id,
    attempt), and a run attempt never overwrites the comment of one that
    started later (runs of one commit that finish out of order);
  - the report text is untrusted Markdown: md_inert.inert() defuses it
    (no HTML but <details>/<summary>/<sub>, no mentions, issue references,
    links, images or autolinks) before it is framed by the header this
    script writes itself (marker, title, commit, run link, and the link to
    the interactive report.html in the run's `alloc-report` artifact, built
    from the trusted --run-url only);
  - the token is only ever sent to the API origin (pagination links pointing
    elsewhere are refused), and the number of pages read is bounded;
  - exit 0: posted, updated, or skipped because the PR moved on;
    exit 2: bad input or API error.
"""
import argparse
import json
import os
import re
import stat
import sys
import urllib.error
import urllib.parse
import urllib.request

import md_inert

MARKER = "<!-- memprof-ci-report -->"
# A run attempt, in the order GitHub shows its checks: by when the attempt
# started (a re-run of an older run is the latest), then run id and attempt.
RUN_TAG = "<!-- memprof-ci-run: {started} {run_id}/{attempt} -->"
RUN_TAG_RE = re.compile(r"<!-- memprof-ci-run: ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z) "
                        r"([0-9]{1,20})/([0-9]{1,9}) -->")
STARTED_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
DEFAULT_BOT = "github-actions[bot]"
MAX_PR_FILE_BYTES = 64
MAX_REPORT_READ_BYTES = 1024 * 1024
# GitHub rejects comment bodies over 65536 characters; keep room for the frame.
MAX_REPORT_CHARS = 60000
TRUNCATED_NOTE = ("\n\n_Report truncated; download the `alloc-report` artifact of the run "
                  "for the full report._")
MAX_PAGES = 50
PER_PAGE = 100
CONCLUSIONS = {
    "success": "passed",
    "failure": "failed",
    "cancelled": "cancelled",
    "timed_out": "timed out",
    "neutral": "neutral",
    "skipped": "skipped",
    "action_required": "action required",
    "stale": "stale",
}


class InputError(Exception):
    """The artifact or the command line is not acceptable."""


class ApiError(Exception):
    """The GitHub API answered with an error or something unexpected."""


class NotFound(ApiError):
    """The GitHub API answered 404."""


NO_JUDGE = "no-judge"


def read_capped(path, cap):
    """Read a regular file (not a symlink) of at most `cap` bytes."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise InputError(f"{os.path.basename(path)} is missing from the artifact") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{os.path.basename(path)} is not a regular file")
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    return data, len(data) > cap


def read_pr_number(artifact_dir):
    data, too_big = read_capped(os.path.join(artifact_dir, "pr-number"), MAX_PR_FILE_BYTES)
    if too_big:
        raise InputError("pr-number is larger than expected")
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise InputError("pr-number is not ASCII") from None
    if not re.fullmatch(r"[1-9][0-9]{0,9}", text):
        raise InputError(f"pr-number is not a positive integer: {text[:20]!r}")
    return int(text)


def read_report(artifact_dir):
    data, too_big = read_capped(os.path.join(artifact_dir, "report.md"), MAX_REPORT_READ_BYTES)
    text = data[:MAX_REPORT_READ_BYTES].decode("utf-8", errors="replace")
    # The marker identifies our comment; the report must not be able to fake it.
    text = text.replace(MARKER, "")
    truncated = too_big
    if len(text) > MAX_REPORT_CHARS:
        text = text[:MAX_REPORT_CHARS]
        truncated = True
    if truncated:
        text += TRUNCATED_NOTE
    return text


def build_body(report, head_sha, conclusion=None, run_url=None, run=None):
    """The comment: marker, run tag (run=(started, id, attempt)), title with
    the judge's conclusion, commit, links, then the defused report."""
    status = CONCLUSIONS.get(conclusion or "", None)
    title = "memprof-ci allocation report"
    if status:
        title += f": {status}"
    elif conclusion == NO_JUDGE:
        title += ": no verdict (the run has no single judge job)"
    lines = [MARKER]
    if run:
        lines.append(RUN_TAG.format(started=run[0], run_id=run[1], attempt=run[2]))
    lines += [f"### {title}", ""]
    meta = [f"Commit `{head_sha[:12]}`"]
    if run_url:
        meta.append(f"[workflow run]({run_url})")
        meta.append(f"[interactive report]({run_url}#artifacts) (`report.html` in the "
                    f"`alloc-report` artifact: flame graphs, callers of each site)")
    # Defusing can lengthen the text: cap it again, at a line end.
    report, cut = md_inert.clip_lines(md_inert.inert(report), MAX_REPORT_CHARS)
    if cut:
        report += TRUNCATED_NOTE
    lines += [" · ".join(meta), "", report.rstrip("\n"), ""]
    return "\n".join(lines)


class GitHub:
    """A tiny GitHub REST client bound to one API origin and one token."""

    def __init__(self, api_url, token, timeout=30):
        self.api_url = api_url.rstrip("/")
        parsed = urllib.parse.urlsplit(self.api_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InputError(f"GITHUB_API_URL is not an http(s) URL: {api_url!r}")
        self.origin = (parsed.scheme, parsed.netloc)
        self.token = token
        self.timeout = timeout

    def _check_origin(self, url):
        parsed = urllib.parse.urlsplit(url)
        if (parsed.scheme, parsed.netloc) != self.origin:
            raise ApiError(f"refusing to follow a link off the API origin: {url}")

    def request(self, method, path_or_url, payload=None):
        url = path_or_url if "://" in path_or_url else self.api_url + path_or_url
        self._check_origin(url)
        data = None
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "memprof-ci-post-report",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if payload is not None:
            data = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read()
                link = resp.headers.get("Link", "")
        except urllib.error.HTTPError as err:
            detail = err.read(500).decode("utf-8", errors="replace")
            kind = NotFound if err.code == 404 else ApiError
            raise kind(f"{method} {url} -> HTTP {err.code}: {detail}") from None
        except urllib.error.URLError as err:
            raise ApiError(f"{method} {url} failed: {err.reason}") from None
        try:
            return (json.loads(body) if body else None), link
        except ValueError:
            raise ApiError(f"{method} {url} returned non-JSON") from None

    def paginate(self, path):
        url = path
        for _ in range(MAX_PAGES):
            items, link = self.request("GET", url)
            if not isinstance(items, list):
                raise ApiError(f"GET {url} did not return a list")
            yield from items
            url = next_link(link)
            if url is None:
                return
        raise ApiError(f"more than {MAX_PAGES} pages of comments; giving up")


def next_link(header):
    """The rel="next" URL of an RFC 8288 Link header, or None."""
    for part in header.split(","):
        match = re.match(r'\s*<([^>]*)>\s*;(.*)', part)
        if match and re.search(r'\brel="?next"?', match.group(2)):
            return match.group(1)
    return None


def find_existing(comments, bot_login):
    for comment in comments:
        user = (comment.get("user") or {}).get("login")
        body = comment.get("body") or ""
        if user == bot_login and body.lstrip().startswith(MARKER):
            return comment
    return None


def comment_run(body):
    """(started, run id, attempt) recorded on a comment's second line, or None."""
    lines = body.lstrip().split("\n", 2)
    m = RUN_TAG_RE.fullmatch(lines[1].strip()) if len(lines) > 1 else None
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def workflow_file(path, repo):
    """A run's `path` as a repository path: GitHub gives
    `.github/workflows/F.yml`, or `OWNER/REPO/.github/workflows/F.yml@REF`."""
    path = path.rsplit("@", 1)[0] if "@" in path else path
    if path.startswith(repo + "/"):
        path = path[len(repo) + 1:]
    if not re.fullmatch(r"\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml", path):
        raise ApiError(f"the run's workflow path {path[:200]!r} is not a workflow file")
    return path


def check_run(gh, repo, run_id, expected_head_sha, workflow_path):
    """The triggering run, as the API describes it: ((started, run id,
    attempt), why it must not post or None)."""
    run, _ = gh.request("GET", f"/repos/{repo}/actions/runs/{run_id}")
    run = run if isinstance(run, dict) else {}
    attempt = run.get("run_attempt")
    started = run.get("run_started_at")
    if not isinstance(attempt, int) or attempt < 1:
        raise ApiError(f"run {run_id} has no run_attempt")
    if not isinstance(started, str) or not STARTED_RE.fullmatch(started):
        raise ApiError(f"run {run_id} has no run_started_at")
    key = (started, int(run_id), attempt)
    if run.get("head_sha") != expected_head_sha:
        return key, f"run {run_id} tested {run.get('head_sha')}, not {expected_head_sha}"
    if run.get("event") != "pull_request":
        return key, f"run {run_id} was started by {run.get('event')!r}, not a pull request"
    path = workflow_file(str(run.get("path") or ""), repo)
    if workflow_path:
        if path != workflow_path:
            return key, f"run {run_id} is of {path}, not of the gate's workflow {workflow_path}"
        return key, None
    info, _ = gh.request("GET", f"/repos/{repo}")
    branch = (info or {}).get("default_branch")
    if not isinstance(branch, str) or not branch:
        raise ApiError("the repository has no default branch")
    try:
        gh.request("GET", f"/repos/{repo}/contents/{urllib.parse.quote(path)}"
                          f"?ref={urllib.parse.quote(branch, safe='')}")
    except NotFound:
        return key, (f"run {run_id} is of {path}, which the default branch {branch} does not "
                     f"have (a workflow added by a pull request)")
    return key, None


def judge_conclusion(gh, repo, run, judge_job):
    """The conclusion of the run attempt's (run: (started, id, attempt)) one
    job named judge_job (or `CALLER / judge_job`); NO_JUDGE without exactly
    one."""
    found = []
    url = f"/repos/{repo}/actions/runs/{run[1]}/attempts/{run[2]}/jobs?per_page={PER_PAGE}"
    for _ in range(MAX_PAGES):
        doc, link = gh.request("GET", url)
        jobs = (doc or {}).get("jobs") if isinstance(doc, dict) else None
        if not isinstance(jobs, list):
            raise ApiError(f"GET {url} did not return jobs")
        found += [j for j in jobs if isinstance(j, dict) and isinstance(j.get("name"), str)
                  and (j["name"] == judge_job or j["name"].endswith(" / " + judge_job))]
        url = next_link(link)
        if url is None:
            break
    else:
        raise ApiError(f"more than {MAX_PAGES} pages of jobs; giving up")
    if len(found) != 1:
        return NO_JUDGE
    return found[0].get("conclusion") or NO_JUDGE


def post(gh, repo, pr, body, expected_head_sha, bot_login, run=None, log=print):
    pull, _ = gh.request("GET", f"/repos/{repo}/pulls/{pr}")
    head = ((pull or {}).get("head") or {}).get("sha")
    if head != expected_head_sha:
        log(f"post_report: PR #{pr} head is {head}, this run tested {expected_head_sha}; "
            "not posting (a newer run will report, or the artifact names the wrong PR)")
        return "skipped"
    comments = gh.paginate(f"/repos/{repo}/issues/{pr}/comments?per_page={PER_PAGE}")
    existing = find_existing(comments, bot_login)
    if existing is not None and run is not None:
        theirs = comment_run(existing.get("body") or "")
        if theirs is not None and theirs > tuple(run):
            log(f"post_report: the comment on PR #{pr} reports run {theirs[1]} (attempt "
                f"{theirs[2]}, started {theirs[0]}), later than this run {run[1]} (attempt "
                f"{run[2]}, started {run[0]}); not posting")
            return "skipped"
    if existing is not None:
        comment_id = existing.get("id")
        if not isinstance(comment_id, int):
            raise ApiError("existing comment has no integer id")
        gh.request("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body})
        log(f"post_report: updated comment {comment_id} on PR #{pr}")
        return "updated"
    gh.request("POST", f"/repos/{repo}/issues/{pr}/comments", {"body": body})
    log(f"post_report: created a comment on PR #{pr}")
    return "created"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--artifact-dir", required=True, help="directory holding pr-number and report.md")
    p.add_argument("--expected-head-sha", required=True, help="workflow_run.head_sha (trusted)")
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", ""), help="owner/name")
    p.add_argument("--run-id", required=True, help="workflow_run.id (trusted): the run to report")
    p.add_argument("--workflow-path", default="",
                   help="the gate's workflow file (.github/workflows/F.yml) the run must be of; "
                        "default: any workflow file of the default branch")
    p.add_argument("--judge-job", default="judge",
                   help="name of the job whose conclusion the title reports (default: judge)")
    p.add_argument("--run-url", default=None, help="workflow_run.html_url (trusted)")
    p.add_argument("--bot-login", default=DEFAULT_BOT, help="author of the comment to update")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        owner, _, name = args.repo.partition("/")
        if (not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}", owner)
                or not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", name) or name in (".", "..")):
            raise InputError(f"--repo / GITHUB_REPOSITORY must be owner/name, got {args.repo!r}")
        if not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", args.expected_head_sha):
            raise InputError("--expected-head-sha must be a full hex commit id")
        if args.run_url and not re.fullmatch(r"https?://[^\s()<>\[\]]+", args.run_url):
            raise InputError("--run-url is not a plain URL")
        if not re.fullmatch(r"[1-9][0-9]{0,19}", args.run_id):
            raise InputError("--run-id must be a positive integer")
        if args.workflow_path and not re.fullmatch(r"\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml",
                                                   args.workflow_path):
            raise InputError("--workflow-path must be .github/workflows/NAME.yml")
        if not re.fullmatch(r"[^\x00-\x1f/]{1,100}", args.judge_job):
            raise InputError("--judge-job must be a job name")
        token = os.environ.get("GITHUB_TOKEN", "")
        if not token:
            raise InputError("GITHUB_TOKEN is not set")
        pr = read_pr_number(args.artifact_dir)
        report = read_report(args.artifact_dir)
        gh = GitHub(os.environ.get("GITHUB_API_URL", "https://api.github.com"), token)
        run, refused = check_run(gh, args.repo, args.run_id, args.expected_head_sha,
                                 args.workflow_path)
        if refused:
            print(f"::error title=memprof-ci comment::not posting: {refused}")
            return 2
        conclusion = judge_conclusion(gh, args.repo, run, args.judge_job)
        body = build_body(report, args.expected_head_sha, conclusion, args.run_url, run)
        post(gh, args.repo, pr, body, args.expected_head_sha, args.bot_login, run)
    except InputError as err:
        print(f"::error title=memprof-ci comment::bad input: {err}")
        return 2
    except ApiError as err:
        print(f"::error title=memprof-ci comment::GitHub API error: {err}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
