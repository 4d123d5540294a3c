"""`memprof-ci init` writes a working starting point and never overwrites."""

import os

import yaml
from harness_testlib import cli

from memprof_ci.inputs.manifest import load_manifest


def test_init_writes_manifest_baselines_and_workflows(tmp_path):
    r = cli(tmp_path, "init", "--repository", "acme/memprof-ci", "--ref", "v1.2.0")
    assert r.returncode == 0, r.stdout + r.stderr
    man = load_manifest(str(tmp_path / "bench" / "memprof-ci.toml"))
    assert man.names() == ["main"]
    assert man.benchmarks[0].command == [str(tmp_path / "_build/default/bench/main.exe")]
    assert os.path.isdir(tmp_path / "bench" / "baselines")
    gate = yaml.safe_load((tmp_path / ".github/workflows/alloc.yml").read_text())
    job = gate["jobs"]["alloc"]
    assert job["uses"] == "acme/memprof-ci/.github/workflows/memprof-ci.yml@v1.2.0"
    assert job["with"]["memprof-ci-repository"] == "acme/memprof-ci"
    assert job["with"]["memprof-ci-ref"] == "v1.2.0"
    assert job["with"]["manifest"] == "bench/memprof-ci.toml"
    assert job["with"]["accept-label"] == "memprof-ci: accept"
    # PyYAML reads `on` as True (YAML 1.1).
    assert "labeled" in gate[True]["pull_request"]["types"]
    comment = yaml.safe_load((tmp_path / ".github/workflows/alloc-comment.yml").read_text())
    assert comment["jobs"]["comment"]["uses"].endswith("memprof-ci-comment.yml@v1.2.0")
    assert comment[True]["workflow_run"]["workflows"] == ["alloc"]


def test_init_refuses_to_overwrite_anything(tmp_path):
    os.makedirs(tmp_path / ".github" / "workflows")
    (tmp_path / ".github" / "workflows" / "alloc.yml").write_text("mine\n")
    r = cli(tmp_path, "init", "--repository", "acme/memprof-ci")
    assert r.returncode == 2 and "alloc.yml: exists" in r.stderr, r.stderr
    assert (tmp_path / ".github" / "workflows" / "alloc.yml").read_text() == "mine\n"
    assert not (tmp_path / "bench").exists()


def test_init_rejects_bad_values(tmp_path):
    for args in (["--repository", "not a repo"], ["--repository", "a/b", "--ref", "x\ny"],
                 ["--repository", "a/b", "--manifest", "../out.toml"],
                 ["--repository", "a/b", "--build-command", "make'; rm -rf /"]):
        r = cli(tmp_path, "init", *args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    assert os.listdir(tmp_path) == []


def test_force_replaces_only_what_init_writes(tmp_path):
    assert cli(tmp_path, "init", "--repository", "acme/memprof-ci").returncode == 0
    wf = tmp_path / ".github" / "workflows"
    (wf / "alloc.yml").write_text("edited\n")
    (wf / "project.yml").write_text("the project's own\n")
    (tmp_path / "bench" / "baselines" / "main.json").write_text("{}\n")
    r = cli(tmp_path, "init", "--repository", "acme/memprof-ci", "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "uses: acme/memprof-ci" in (wf / "alloc.yml").read_text()
    assert (wf / "project.yml").read_text() == "the project's own\n"
    assert (tmp_path / "bench" / "baselines" / "main.json").read_text() == "{}\n"


def test_init_names_the_patch_id_or_how_to_record_it(tmp_path):
    # No id known (set and empty): the next steps set the variable.
    r = cli(tmp_path, "init", "--repository", "acme/memprof-ci",
            env_extra={"MEMPROF_CI_PATCH_ID": ""})
    assert "MEMPROF_CI_PATCH_ID=$(cat PREFIX/share/memprof-ci/patch-id) memprof-ci " \
        "update-baselines" in r.stdout
    (tmp_path / "x").mkdir()
    r = cli(tmp_path / "x", "init", "--repository", "acme/memprof-ci",
            env_extra={"MEMPROF_CI_PATCH_ID": "0123456789abcdef"})
    assert "runtime patch id 0123456789abcdef" in r.stdout
    assert "MEMPROF_CI_PATCH_ID=" not in r.stdout


def test_init_offers_main_runs_as_the_reference(tmp_path):
    """The gate's runs-branch is one uncommented line away, and the reusable
    workflow takes it as an input."""
    assert cli(tmp_path, "init", "--repository", "acme/memprof-ci", "--ref", "v1").returncode == 0
    text = (tmp_path / ".github/workflows/alloc.yml").read_text()
    assert "runs-branch" not in yaml.safe_load(text)["jobs"]["alloc"]["with"]
    (line,) = [x for x in text.splitlines() if x.strip() == "# runs-branch: memprof-ci-data"]
    on = yaml.safe_load(text.replace(line, line.replace("# ", "", 1)))
    assert on["jobs"]["alloc"]["with"]["runs-branch"] == "memprof-ci-data"
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    reusable = yaml.safe_load(open(os.path.join(repo, ".github/workflows/memprof-ci.yml")))
    assert "runs-branch" in reusable[True]["workflow_call"]["inputs"]


def test_init_writes_a_bare_exe_as_a_path_beside_the_manifest(tmp_path):
    """--exe is relative to the manifest: a bare name becomes ./NAME, which
    the manifest resolves against its directory (a command without a slash
    would be looked up on PATH)."""
    r = cli(tmp_path, "init", "--repository", "acme/memprof-ci", "--manifest", "memprof-ci.toml",
            "--exe", "main.exe")
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'command = ["./main.exe"]' in (tmp_path / "memprof-ci.toml").read_text()
    man = load_manifest(str(tmp_path / "memprof-ci.toml"))
    assert man.benchmarks[0].command == [str(tmp_path / "main.exe")]


def test_a_bare_command_beside_the_manifest_is_named_in_the_error(tmp_path):
    """A manifest written by hand with command = ["main.exe"]: the run stops
    with one line that says what would resolve."""
    (tmp_path / "bench").mkdir()
    exe = tmp_path / "bench" / "main.exe"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    (tmp_path / "bench" / "m.toml").write_text(
        '[[benchmark]]\nname = "main"\ncommand = ["main.exe"]\nmode = "sampled"\n')
    r = cli(tmp_path, "update-baselines", "--manifest", "bench/m.toml", "--baselines", "b",
            "--no-overhead")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "command not found: main.exe; did you mean ./main.exe?" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
