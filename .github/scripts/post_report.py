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
  - the comment goes only to a pull request whose current head commit equals
    --expected-head-sha (the trusted `workflow_run.head_sha`), so a tampered
    artifact cannot aim the comment at another pull request, and a stale run
    never overwrites the report of a newer push;
  - one comment per pull request: the first comment by --bot-login whose body
    starts with the hidden marker is edited in place (PATCH); otherwise one is
    created (POST). Comments by anyone else are never edited;
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


def build_body(report, head_sha, conclusion=None, run_url=None):
    status = CONCLUSIONS.get(conclusion or "", None)
    title = "memprof-ci allocation report"
    if status:
        title += f": {status}"
    lines = [MARKER, f"### {title}", ""]
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
            raise ApiError(f"{method} {url} -> HTTP {err.code}: {detail}") from None
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


def post(gh, repo, pr, body, expected_head_sha, bot_login, log=print):
    pull, _ = gh.request("GET", f"/repos/{repo}/pulls/{pr}")
    head = ((pull or {}).get("head") or {}).get("sha")
    if head != expected_head_sha:
        log(f"post_report: PR #{pr} head is {head}, this run tested {expected_head_sha}; "
            "not posting (a newer run will report, or the artifact names the wrong PR)")
        return "skipped"
    comments = gh.paginate(f"/repos/{repo}/issues/{pr}/comments?per_page={PER_PAGE}")
    existing = find_existing(comments, bot_login)
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
    p.add_argument("--conclusion", default=None, help="workflow_run.conclusion (trusted)")
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
        token = os.environ.get("GITHUB_TOKEN", "")
        if not token:
            raise InputError("GITHUB_TOKEN is not set")
        pr = read_pr_number(args.artifact_dir)
        report = read_report(args.artifact_dir)
        body = build_body(report, args.expected_head_sha, args.conclusion, args.run_url)
        gh = GitHub(os.environ.get("GITHUB_API_URL", "https://api.github.com"), token)
        post(gh, args.repo, pr, body, args.expected_head_sha, args.bot_login)
    except InputError as err:
        print(f"::error title=memprof-ci comment::bad input: {err}")
        return 2
    except ApiError as err:
        print(f"::error title=memprof-ci comment::GitHub API error: {err}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
