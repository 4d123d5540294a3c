"""Shared helpers for the tests of .github/ (workflows and their scripts).

Deliberately not a conftest.py: `make test` runs these tests in one pytest
session with runtime-patch/tests and harness/tests, whose conftest modules
would shadow a third one on `from conftest import ...`.

Run with: /usr/bin/python3 -m pytest .github/scripts/tests -q
Invariants: tests touch only temporary directories and 127.0.0.1; they never
reach the network and never modify the repository.
"""
import os
import pathlib
import subprocess

GITHUB_DIR = pathlib.Path(__file__).resolve().parents[2]
REPO_ROOT = GITHUB_DIR.parent
SCRIPTS = GITHUB_DIR / "scripts"
WORKFLOWS = GITHUB_DIR / "workflows"
PYTHON = "/usr/bin/python3"


def run(cmd, cwd=None, env=None, check=False, input=None):
    """Run a command, capturing text output; never inherits GITHUB_* outputs."""
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH")}
    full_env.update(env or {})
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, input=input, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


# ---------------------------------------------------------------- git repos

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo, *args):
    return run(["git", *args], cwd=repo, env=GIT_ENV, check=True).stdout.strip()


def write(repo, rel, text):
    p = pathlib.Path(repo) / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p
