"""Shared helpers for the tests of .github/ (workflows and their scripts).

Deliberately not a conftest.py: `make test` runs these tests in one pytest
session with runtime-patch/tests and harness/tests, whose conftest modules
would shadow a third one on `from conftest import ...`.

Run with: /usr/bin/python3 -m pytest .github/scripts/tests -q
Invariants: tests touch only temporary directories and 127.0.0.1; they never
reach the network and never modify the repository.
"""
import os
import re
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


def committed_repo(path, files, message):
    """A new git repository at `path` (created) whose branch main has one
    commit of `files` ({relative path: text}); returns the commit's id."""
    pathlib.Path(path).mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for rel, text in files.items():
        write(path, rel, text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD")


# ---------------------------------------------------------------- workflow expressions

_STATUS_FUNCS = ("success", "failure", "cancelled", "always")
_TOKEN_RE = re.compile(r"\s*(?:(?P<op>&&|\|\||==|!=|!|\(|\)|,)|'(?P<str>(?:[^']|'')*)'"
                       r"|(?P<num>-?[0-9]+(?:\.[0-9]+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_.\-*]*))")


def evaluate(expr, context=None, needs=None, cancelled=False):
    """Evaluate a GitHub Actions expression (`${{ }}` optional) the way the
    runner does for the subset our workflows use: `!`, `&&`, `||` (which
    return an operand), `==`/`!=` (strings compared case-insensitively),
    parentheses, literals, dotted context names looked up in `context` ('' if
    absent) and the status functions over `needs` ({job: result}). As in a
    job's or step's `if:`, an expression without a status function is
    `success() && (expr)` when `needs` is given."""
    text = expr.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse expression at {text[pos:]!r}")
        tokens.append(m)
        pos = m.end()
    context = {**{f"needs.{job}.result": r for job, r in (needs or {}).items()}, **(context or {})}
    results = list((needs or {}).values())

    def status(name):
        return {"success": not cancelled and all(r == "success" for r in results),
                "failure": any(r == "failure" for r in results),
                "cancelled": cancelled, "always": True}[name]

    def peek(i):
        return tokens[i].group("op") if i < len(tokens) else None

    def truthy(v):
        return v not in ("", 0, None, False)

    def equal(a, b):
        if isinstance(a, str) and isinstance(b, str):
            return a.casefold() == b.casefold()
        return a == b

    def primary(i):
        m = tokens[i]
        if m.group("op") == "(":
            v, i = either(i + 1)
            assert peek(i) == ")", expr
            return v, i + 1
        if m.group("op") == "!":
            v, i = primary(i + 1)
            return not truthy(v), i
        if m.group("str") is not None:
            return m.group("str").replace("''", "'"), i + 1
        if m.group("num") is not None:
            return float(m.group("num")), i + 1
        name = m.group("name")
        assert name, expr
        if peek(i + 1) == "(":
            assert name in _STATUS_FUNCS and peek(i + 2) == ")", f"unsupported call {name} in {expr}"
            return status(name), i + 3
        return {"true": True, "false": False, "null": None}.get(name, context.get(name, "")), i + 1

    def comparison(i):
        v, i = primary(i)
        while peek(i) in ("==", "!="):
            op = peek(i)
            w, i = primary(i + 1)
            v = equal(v, w) if op == "==" else not equal(v, w)
        return v, i

    def both(i):
        v, i = comparison(i)
        while peek(i) == "&&":
            w, i = comparison(i + 1)
            v = w if truthy(v) else v
        return v, i

    def either(i):
        v, i = both(i)
        while peek(i) == "||":
            w, i = both(i + 1)
            v = v if truthy(v) else w
        return v, i

    value, end = either(0)
    assert end == len(tokens), f"trailing tokens in {expr}"
    if needs is not None and not any(f in text for f in _STATUS_FUNCS):
        value = value if status("success") and truthy(value) else False
    return value


# ---------------------------------------------------------------- workflow files

def load_workflow(path):
    """A workflow file as a dict; PyYAML reads the bare key `on` as True."""
    import yaml
    doc = yaml.safe_load(pathlib.Path(path).read_text())
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def workflow_step(workflow, job, name):
    """The one step of WORKFLOWS/workflow's `job` whose name contains `name`."""
    steps = load_workflow(WORKFLOWS / workflow)["jobs"][job]["steps"]
    (step,) = [s for s in steps if name in s.get("name", "")]
    return step


def run_step(step, env, cwd, job_env=None):
    """Run a step's `run:` script as the runner does (bash --noprofile --norc
    -eo pipefail FILE) in `cwd`, with `env` giving a value to every variable
    of the step's (and job's) env: (a missing one is a test error, not an
    empty string)."""
    declared = set(step.get("env") or {}) | set(job_env or {})
    assert declared <= set(env), f"no value for {sorted(declared - set(env))}"
    script = pathlib.Path(cwd) / ".step.sh"
    script.write_text(step["run"])
    try:
        return run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env)
    finally:
        script.unlink()


def interpolate(value, context=None):
    """A workflow value with each `${{ expr }}` in it replaced by its value
    (evaluate); the value itself when it is one whole expression."""
    if not isinstance(value, str):
        return value
    whole = re.fullmatch(r"\$\{\{(.*?)\}\}", value.strip(), re.S)
    if whole:
        return evaluate(value, context)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), context)), value)


# ---------------------------------------------------------------- workflow commands

_COMMAND_RE = re.compile(r"::([A-Za-z][A-Za-z0-9_-]*)(?:\s[^:]*)?::(.*)|##\[([A-Za-z][A-Za-z0-9_-]*)[^\]]*\](.*)")


def workflow_commands(log):
    """[(command, value)]: the workflow commands a runner acts on in a
    step's log (stdout and stderr alike): a line that starts, after leading
    whitespace, with `::NAME ...::VALUE` (or the older `##[NAME ...]VALUE`);
    after `::stop-commands::TOKEN`, none until the line `::TOKEN::`."""
    active, stop = [], None
    for line in log.splitlines():
        line = line.lstrip()
        if stop is not None:
            if line == f"::{stop}::":
                stop = None
            continue
        m = _COMMAND_RE.match(line)
        if m:
            name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            active.append((name, value))
            if name == "stop-commands":
                stop = value
    return active
