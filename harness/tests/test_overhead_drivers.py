"""The overhead library (memprof_ci.measure.drivers) that the gate's overhead
check and the overhead study share: the hyperfine driver's rounds (order,
pairing, environment, the times it reads, its errors), and the gate's timed
pairs made through it.  Real hyperfine runs small shell scripts; no time is
asserted, only which run ran when and what was read."""

import json
import os
import shutil

import pytest

from memprof_ci.errors import InfraError
from memprof_ci.inputs.manifest import load_manifest
from memprof_ci.measure import overhead_time
from memprof_ci.measure.drivers import hyperfine as hf

pytestmark = pytest.mark.skipif(shutil.which("hyperfine") is None,
                                reason="hyperfine not installed (make deps-bench)")


def _script(tmp_path, name, body="") -> str:
    """A shell script that appends "<name> <OCAMLMEMPROF or unset>" to log."""
    p = tmp_path / f"{name}.sh"
    p.write_text(f"#!/bin/sh\necho \"{name} ${{OCAMLMEMPROF:-unset}}\" >> {tmp_path}/log\n"
                 + body)
    p.chmod(0o755)
    return str(p)


def _log(tmp_path) -> list:
    return (tmp_path / "log").read_text().splitlines()


def test_rounds_rotate_the_order_and_pair_one_run_of_each(tmp_path):
    cmds = [(n, [_script(tmp_path, n)]) for n in ("a", "b", "c")]
    rounds = hf.interleaved(cmds, 3, first=1, cwd=str(tmp_path), env=dict(os.environ),
                            timeout=60)
    # Round 1 starts at b, round 2 at c, round 3 (= 0 mod 3) at a.
    assert [x.split()[0] for x in _log(tmp_path)] == list("bcacababc")
    assert len(rounds) == 3 and all(set(r) == {"a", "b", "c"} for r in rounds)
    assert all(isinstance(run, hf.Run) and isinstance(run.wall, float)
               for r in rounds for run in r.values())
    # Two commands alternate, and step skips as the study's rotation does.
    assert [c for c, _ in hf.rotated(cmds[:2], 5)] == ["b", "a"]
    assert [c for c, _ in hf.rotated(cmds, 1, step=2)] == ["c", "a", "b"]


def test_each_command_carries_its_own_environment(tmp_path):
    prog = _script(tmp_path, "p")
    env = dict(os.environ, OCAMLMEMPROF="inherited")
    hf.one_round([("off", hf.env_argv([prog], unset=("OCAMLMEMPROF",))),
                  ("on", hf.env_argv([prog], {"OCAMLMEMPROF": "rate=1e-4"}))],
                 cwd=None, env=env, timeout=60)
    assert _log(tmp_path) == ["p unset", "p rate=1e-4"]


def test_a_round_is_read_as_wall_cpu_and_system(tmp_path):
    js = tmp_path / "r.json"
    js.write_text(json.dumps({"results": [
        {"command": "a", "times": [0.5], "user": 0.25, "system": 0.125},
        {"command": "b", "times": [0.0], "user": 0.0, "system": 0.0}]}))
    # CPU is user + system; a run never costs less than the resolution.
    assert hf.read_round(str(js)) == {"a": hf.Run(0.5, 0.375, 0.125),
                                      "b": hf.Run(hf.RESOLUTION, hf.RESOLUTION, 0.0)}
    js.write_text('{"results": [{"command": "a"}]}')
    with pytest.raises(hf.HyperfineError, match="unreadable hyperfine JSON"):
        hf.read_round(str(js))


def test_failures_are_one_line_errors_never_times(tmp_path):
    with pytest.raises(hf.HyperfineError) as e:
        hf.one_round([("f", ["/bin/false"])], cwd=None, env=dict(os.environ), timeout=60)
    assert "hyperfine failed (status" in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, InfraError)
    with pytest.raises(hf.HyperfineError, match="timed out after 0.5s"):
        hf.one_round([("s", ["sleep", "5"])], cwd=None, env=dict(os.environ), timeout=0.5)
    with pytest.raises(hf.HyperfineError, match="hyperfine not found on PATH"):
        hf.find(str(tmp_path / "no-hyperfine"))


def test_the_gates_timed_pairs_alternate_off_and_on_through_the_driver(tmp_path):
    """overhead_time.measure: overhead_runs rounds, off first on even rounds,
    on first on odd ones, the profiled run with the benchmark's OCAMLMEMPROF
    (its rate, first seed, a profile per process) and the other without."""
    prog = _script(tmp_path, "bench")
    (tmp_path / "m.toml").write_text(
        f'[[benchmark]]\nname = "b"\nrate = 1e-3\nseeds = [7]\noverhead_runs = 4\n'
        f'command = ["{prog}"]\n')
    b = load_manifest(str(tmp_path / "m.toml")).benchmarks[0]
    t = overhead_time.measure(b, str(tmp_path / "w"))
    sides = ["on" if x.split()[1] != "unset" else "off" for x in _log(tmp_path)]
    assert sides == ["off", "on", "on", "off", "off", "on", "on", "off"]
    on = next(x.split()[1] for x in _log(tmp_path) if x.split()[1] != "unset")
    assert on.startswith("rate=0.001,seed=7,") and "%p" in on
    assert t["runs"] == 4 and all(len(t[k]) == 4 for k in overhead_time.LISTS)
    assert t["cpu"]["estimate"] is not None and t["wall"] is not None


def test_the_gate_names_the_benchmark_when_a_timed_run_fails(tmp_path):
    (tmp_path / "m.toml").write_text('[[benchmark]]\nname = "bad"\ncommand = ["/bin/false"]\n')
    b = load_manifest(str(tmp_path / "m.toml")).benchmarks[0]
    with pytest.raises(InfraError, match=r"benchmark 'bad': overhead timing: hyperfine failed"):
        overhead_time.measure(b, str(tmp_path / "w"))
    with pytest.raises(InfraError, match="or pass --no-overhead"):
        overhead_time.measure(b, str(tmp_path / "w"), hyperfine=str(tmp_path / "none"))
