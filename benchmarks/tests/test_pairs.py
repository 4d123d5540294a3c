"""benchmarks/overhead/pairs.py (`python3 -m overhead.pairs`), the paired
wall-time measurement of one program: what it prints (each figure from the
hyperfine rounds of the overhead library, the interval from the harness's
own paired_overhead_interval), that it removes each run's profile, and one
line with exit 2 for a bad argument or a failed run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The study's modules run with the harness and benchmarks/ on PYTHONPATH.
ENV = dict(os.environ, PYTHONPATH=f"{ROOT / 'harness'}:{ROOT / 'benchmarks'}")


def pairs(*args):
    return subprocess.run([sys.executable, "-m", "overhead.pairs", *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=ENV)


def test_prints_ratios_interval_and_system_time(tmp_path):
    """A shell that sleeps longer when OCAMLMEMPROF is set and writes a file
    where its out= says: the wall ratio, its interval and range follow the
    runs, and no profile is left behind (each is removed after its pair)."""
    seen = tmp_path / "seen"
    script = tmp_path / "prog.sh"
    script.write_text(
        "#!/bin/sh\n"
        "if [ -n \"$OCAMLMEMPROF\" ]; then\n"
        "  out=${OCAMLMEMPROF##*out=}; out=$(echo \"$out\" | sed \"s/%p/$$/\")\n"
        "  echo x > \"$out\"; dirname \"$out\" >> " + str(seen) + "; ls \"$(dirname \"$out\")\" | wc -l >> " + str(seen) + "\n"
        "  sleep 0.2\n"
        "fi\n")
    script.chmod(0o755)
    res = pairs(script, "", "1e-4", 5)
    assert res.returncode == 0, res.stderr
    m = re.search(r"wall median ([0-9.]+) \(([0-9.]+)% interval ([0-9.]+)-([0-9.]+)\) "
                  r"range ([0-9.]+)-([0-9.]+); cpu median [0-9.]+ .*; system [-+][0-9.]+ ms; "
                  r"peak RSS ([0-9.]+) -> ([0-9.]+) MB \(([-+][0-9.]+) MB\); "
                  r"load [0-9.]+$", res.stdout.strip())
    assert m, res.stdout
    med, cov, lo, hi, rmin, rmax, rss_off, rss_on, added = map(float, m.groups())
    # A shell's peak: above zero, and the difference is the two printed.
    assert rss_off > 0 and abs(rss_on - rss_off - added) < 0.11
    # The profiled side sleeps 0.2 s more: only the direction is asserted
    # (a busy machine stretches both sides by any amount).
    assert med > 1 and rmin <= lo <= med <= hi <= rmax and cov > 90
    lines = seen.read_text().split()
    dirs, counts = lines[0::2], lines[1::2]
    # Five pairs and the profiled peak RSS run; the previous pair's removed.
    assert len(dirs) == 6 and all(c == "1" for c in counts)
    assert not Path(dirs[0]).exists()                          # and the directory itself


def test_versus_binary_runs_the_other_program_and_nothing_profiled(tmp_path):
    """--versus-binary=OTHER: PROGRAM against OTHER with the same
    arguments, neither profiled; the slower PROGRAM shows above 1."""
    log = tmp_path / "log"
    for name, nap in (("slow.sh", "0.2"), ("fast.sh", "0")):
        s = tmp_path / name
        s.write_text(f"#!/bin/sh\necho \"$0 $1 ${{OCAMLMEMPROF:-unset}}\" >> {log}\nsleep {nap}\n")
        s.chmod(0o755)
    res = pairs(tmp_path / "slow.sh", "arg", "1e-4", 3, f"--versus-binary={tmp_path / 'fast.sh'}")
    assert res.returncode == 0, res.stderr
    assert f"unprofiled against {tmp_path / 'fast.sh'}" in res.stdout
    med = float(re.search(r"wall median ([0-9.]+)", res.stdout).group(1))
    assert med > 1, res.stdout
    runs = log.read_text().splitlines()
    # three pairs and one peak-RSS run a side
    assert sorted(runs) == sorted([f"{tmp_path / 'slow.sh'} arg unset"] * 4
                                  + [f"{tmp_path / 'fast.sh'} arg unset"] * 4)


@pytest.mark.parametrize("args, msg", [
    (["/bin/true", "", "1e-4", "3", "--versus-binary=/bin/true", "--versus-profiled"],
     "goes alone"),
    (["/bin/true", "", "2", "3"], "RATE must be in"),
    (["/bin/true", "", "x", "3"], "is not a number"),
    (["/bin/false", "", "1e-4", "2"], "running /bin/false"),
    (["/bin/true", ""], "usage"),
])
def test_bad_input_is_one_line_and_exit_2(args, msg):
    res = pairs(*args)
    assert res.returncode == 2 and res.stdout == ""
    assert msg in res.stderr and res.stderr.count("\n") == 1
