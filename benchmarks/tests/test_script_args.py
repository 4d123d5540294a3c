"""The command line that benchmarks/overhead/pairs.py and counts.py share
(overhead/script_args.py), reached both ways the scripts are used: run as
`python3 -m overhead.pairs` (or `.counts`) from another directory, the
harness and benchmarks/ on PYTHONPATH, and imported as modules of the
overhead package.  Each bad command line is one line naming the script,
exit 2, nothing on stdout."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {"pairs.py": ("PAIRS", "1..1000"), "counts.py": ("RUNS", "1..100")}
ENV = {"PATH": os.environ.get("PATH", os.defpath),
       "PYTHONPATH": f"{ROOT / 'harness'}:{ROOT / 'benchmarks'}"}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("args, msg", [
    (["/bin/true", ""], "usage: {s} PROGRAM 'ARGS' RATE {c}"),
    (["/bin/true", "", "x", "3"], "{s}: RATE 'x' or {c} '3' is not a number"),
    (["/bin/true", "", "1e-4", "y"], "{s}: RATE '1e-4' or {c} 'y' is not a number"),
    (["/bin/true", "", "2", "3"], "{s}: RATE must be in (0, 1] and {c} in {r}"),
    (["/bin/true", "", "1e-4", "0"], "{s}: RATE must be in (0, 1] and {c} in {r}"),
    (["/bin/true", "", "1e-4", "100001"], "{s}: RATE must be in (0, 1] and {c} in {r}"),
])
def test_run_as_a_module_from_elsewhere_a_bad_command_line_is_one_line(tmp_path, script,
                                                                      args, msg):
    count, most = SCRIPTS[script]
    r = subprocess.run([sys.executable, "-m", "overhead." + script[:-3], *args],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert msg.format(s=script, c=count, r=most) in r.stderr, r.stderr


def test_counts_usage_names_its_own_flag(tmp_path):
    r = subprocess.run([sys.executable, "-m", "overhead.counts"],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.rstrip().endswith("RATE RUNS [--threads]"), r.stderr


def test_both_scripts_import_as_modules_of_the_package(tmp_path):
    """As the overhead package's tests import them: benchmarks/ and
    harness/ on the path, any working directory; main() parses alike."""
    code = ("import io, contextlib\n"
            "from overhead import counts, pairs\n"
            "for m in (counts, pairs):\n"
            "    err = io.StringIO()\n"
            "    with contextlib.redirect_stderr(err):\n"
            "        assert m.main(['/bin/true', '', '2', '1']) == 2\n"
            "    print(err.getvalue().strip())\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120,
                       env=ENV)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["counts.py: RATE must be in (0, 1] and RUNS in 1..100",
                                     "pairs.py: RATE must be in (0, 1] and PAIRS in 1..1000"]
