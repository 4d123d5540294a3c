"""ensure-deps.sh with a fake apt-get: lock waiting and apt's own error line.

The script runs under bash with PATH holding only a scratch directory: a fake
`id` that says root (the script installs only as root), a fake `apt-get` that
logs its arguments and plays a scenario, and links to the few utilities the
script uses.  Nothing is installed and the real apt is never called.
"""

import os
import shutil
import subprocess

from harness_testlib import HARNESS, REPO

SCRIPT = os.path.join(REPO, "harness", "scripts", "ensure-deps.sh")
TOOLS = ("mktemp", "grep", "tail", "rm", "sleep", "cat", "touch", "chmod", "printf")

FAKE_APT = r"""#!/bin/bash
echo "$*" >>"$FAKE_DIR/apt.log"
case " $* " in
  *" update "*)
    n=$(cat "$FAKE_DIR/updates" 2>/dev/null || echo 0); echo $((n + 1)) >"$FAKE_DIR/updates"
    if [ "$n" -lt "${UPDATE_LOCKED:-0}" ]; then
      echo "Reading package lists..."
      echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 77 (apt-get)" >&2
      echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
      exit 100
    fi ;;
  *" install "*)
    if [ -n "${INSTALL_ERROR:-}" ]; then
      echo "Reading package lists..."
      echo "E: first error, not the last" >&2
      echo "W: a warning" >&2
      echo "$INSTALL_ERROR" >&2
      echo "some trailing chatter"
      exit 100
    fi
    for p in valgrind hyperfine jq; do printf '#!/bin/bash\n' >"$FAKE_DIR/$p"; chmod +x "$FAKE_DIR/$p"; done ;;
esac
exit 0
"""


def run_script(tmp_path, group="bench", **env):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for t in TOOLS:
        os.symlink(shutil.which(t), bindir / t)
    (bindir / "id").write_text("#!/bin/bash\necho 0\n")
    (bindir / "apt-get").write_text(FAKE_APT)
    for f in ("id", "apt-get"):
        (bindir / f).chmod(0o755)
    full_env = {"PATH": str(bindir), "FAKE_DIR": str(bindir), **env}
    r = subprocess.run(["/bin/bash", SCRIPT, group], env=full_env, capture_output=True,
                       text=True, timeout=120)
    log = (bindir / "apt.log").read_text().splitlines() if (bindir / "apt.log").exists() else []
    return r, log


def test_failed_install_prints_apts_last_error_line(tmp_path):
    err = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)"
    r, log = run_script(tmp_path, INSTALL_ERROR=err, MEMPROF_CI_APT_LOCK_WAIT="7")
    assert r.returncode == 2
    assert f"ensure-deps: apt-get failed: {err}\n" in r.stderr
    assert "first error" not in r.stderr
    assert "run 'sudo apt-get install -y valgrind'" in r.stderr
    assert len(log) == 2 and "update" in log[0] and "install" in log[1]
    assert all("-o DPkg::Lock::Timeout=7 " in line for line in log), log


def test_update_waits_for_the_lists_lock(tmp_path):
    r, log = run_script(tmp_path, UPDATE_LOCKED="2", MEMPROF_CI_APT_LOCK_WAIT="60")
    assert r.returncode == 0, r.stderr
    assert [x.split()[-2] for x in log] == ["update", "update", "update", "hyperfine"]
    assert log[3].split()[-3:] == ["valgrind", "hyperfine", "jq"]
    assert "apt-get failed" not in r.stderr


def test_lock_wait_is_bounded_and_the_reason_printed(tmp_path):
    r, log = run_script(tmp_path, UPDATE_LOCKED="1000", MEMPROF_CI_APT_LOCK_WAIT="0")
    assert r.returncode == 2
    assert len(log) == 1
    assert "ensure-deps: apt-get failed: E: Unable to lock directory /var/lib/apt/lists/\n" in r.stderr


def test_default_lock_wait_is_300_seconds(tmp_path):
    err = "E: Unable to locate package valgrind"
    r, log = run_script(tmp_path, INSTALL_ERROR=err, MEMPROF_CI_APT_LOCK_WAIT="soon")
    assert f"apt-get failed: {err}\n" in r.stderr
    assert all("-o DPkg::Lock::Timeout=300 " in line for line in log), log


def test_an_interpreter_without_the_dependencies_gets_one_line_and_exit_2():
    # -S leaves Debian's dist-packages (numpy, scipy, pytest) off the path.
    r = subprocess.run(["/usr/bin/python3", "-S", "-m", "memprof_ci", "list"],
                       env=dict(os.environ, PYTHONPATH=HARNESS), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "internal error" not in r.stderr and not r.stdout
    assert lines[0].startswith("memprof-ci: error: /usr/bin/python3 cannot import ")
    assert "apt-get install python3-jsonschema python3-numpy python3-pytest" in lines[0]
