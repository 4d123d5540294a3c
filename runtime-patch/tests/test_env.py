"""OCAMLMEMPROF parsing (memprof_env_parse.c, design 1): one strict rule.
Every malformed value stops the program before any OCaml code runs,
with exit status 2 and exactly one line of printable ASCII on stderr
naming the variable, the key and the value (escaped); well-formed
values are accepted."""

import json

import pytest

from runtime_testlib import run


def escaped(s):
    """A value as the runtime echoes it: printable ASCII as is, a
    backslash doubled, any other byte as \\xHH."""
    out = []
    for b in s.encode():
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def assert_one_printable_line(stderr):
    assert stderr.endswith("\n") and stderr.count("\n") == 1, repr(stderr)
    assert all(0x20 <= ord(c) < 0x7F for c in stderr[:-1]), repr(stderr)
    assert stderr.startswith("OCAMLMEMPROF: "), stderr


BAD = [
    ("seed", "abc"), ("seed", "-1"), ("seed", "18446744073709551616"),
    ("seed", "99999999999999999999999"), ("seed", ""), ("seed", "1.5"),
    ("seed", " 1"), ("seed", "1 "), ("seed", "+1"), ("seed", "0x10"),
    ("seed", "1e3"), ("seed", "\t1"),
    ("rate", "0"), ("rate", "0.0"), ("rate", "0e5"), ("rate", "-0.1"),
    ("rate", "+0.5"), ("rate", ".5"), ("rate", "1.5"), ("rate", "1.0000001"),
    ("rate", "nan"), ("rate", "NaN"), ("rate", "inf"), ("rate", "INF"),
    ("rate", "infinity"), ("rate", "1e-400"), ("rate", "1e-400x"),
    ("rate", ""), ("rate", "abc"), ("rate", "0x1p-3"), ("rate", "0X1P-3"),
    ("rate", "0x0.1"), ("rate", " 0.5"), ("rate", "\v0.5"), ("rate", "\t0.5"),
    ("rate", "\n0.5"), ("rate", "0.5 "), ("rate", "0.5\n"), ("rate", "1e"),
    ("rate", "1e+"), ("rate", "0.5."), ("rate", "5e-1x"), ("rate", "0.5.5"),
    ("frames", "0"), ("frames", "-3"), ("frames", "4097"), ("frames", "100000"),
    ("frames", "99999999999999999999999"), ("frames", "x"), ("frames", " 4"),
    ("frames", "+4"), ("frames", "4.0"), ("frames", ""),
    ("out", ""), ("out", "p%q.json"), ("out", "p%"), ("out", "p.json\n"),
    ("out", " a.json"), ("out", "a.json "), ("out", "p\tq.json"), ("out", "\x1b[31mp.json"),
    ("out", "p\x7f.json"),
    ("trace", ""), ("trace", "t%q.ctf"), ("trace", "t%"), ("trace", "a.ctf "),
    ("trace", "t\x1b.ctf"),
    ("live", ""), ("live", "yes"), ("live", "GC"), ("live", " gc"), ("live", "gc\n"), ("live", "OFF"), ("live", "none"),
    ("stacks", ""), ("stacks", "Site"), ("stacks", "sites"), ("stacks", "site "),
    ("stacks", "1"), ("stacks", "full\x1b"),
    ("stackmem", ""), ("stackmem", "k"), ("stackmem", "512K"), ("stackmem", "512kB"),
    ("stackmem", "-1"), ("stackmem", "1.5M"), ("stackmem", " 1M"), ("stackmem", "1T"),
    ("stackmem", "1099511627777"), ("stackmem", "1025G"), ("stackmem", "0x100"),
    ("snapshot", ""), ("snapshot", "Exit"), ("snapshot", "exit "), ("snapshot", "1"),
    ("snapshot", "exit+exit"), ("snapshot", "exit+"), ("snapshot", "+call"),
    ("snapshot", "signal+call+signal"), ("snapshot", "Signal"),
    ("snapshot", "exit++call"), ("snapshot", "usr1"),
    ("snapshot_out", ""), ("snapshot_out", "s%q.json"), ("snapshot_out", "s%"),
    ("snapshot_out", " s.json"), ("snapshot_out", "s\x1b.json"),
    ("stop", ""), ("stop", "0"), ("stop", "-1"), ("stop", "x"), ("stop", " 3"),
    ("stop", "3 "), ("stop", "+3"), ("stop", "1e3"), ("stop", "4611686018427387905"),
]


@pytest.mark.parametrize("key,value", BAD)
def test_bad_value_exits_2_with_one_line(build, key, value):
    spec = f"{key}={value}"
    if key in ("frames", "out", "live", "trace", "stacks", "stackmem", "snapshot"):
        spec = f"rate=0.01,{spec}"
    elif key == "snapshot_out":
        spec = f"rate=0.01,snapshot=call,{spec}"
    res = run(build("hello"), memprof=spec, check=False)
    assert res.returncode == 2
    assert res.stdout == "", "OCaml code ran despite the bad value"
    assert_one_printable_line(res.stderr)
    line = res.stderr.rstrip("\n")
    assert f"'{key}'" in line and f"'{escaped(value)}'" in line


@pytest.mark.parametrize("spec,what", [
    ("colour=red", "unknown key"),
    ("RATE=0.1", "unknown key"),
    ("=0.1", "unknown key"),
    ("rate =0.1", "'rate ': unknown key"),
    (" rate=0.1", "' rate': unknown key"),
    ("rate=0.1, seed=1", "' seed': unknown key"),
    ("rate=0.1,\nseed=1", "'\\x0aseed': unknown key"),
    ("seed", "key=value"),
    ("seed=1,rate", "key=value"),
    ("seed=1,seed=2", "twice"),
    ("seed=1,seed=1", "twice"),
    ("rate=0.1,rate=0.1", "twice"),
    ("rate=0.1,out=a.json,out=a.json", "twice"),
    (",", "empty item"),
    (",,,", "empty item"),
    ("seed=1,", "'seed=1,': empty item"),
    (",seed=1", "empty item"),
    ("seed=1,,rate=0.1", "empty item"),
    ("rate=0.1,,\x1b[2J", "'rate=0.1,,\\x1b[2J': empty item"),
    ("frames=4", "'4' for key 'frames': has no effect without rate"),
    ("out=x.json", "'x.json' for key 'out': has no effect without rate"),
    ("live=gc", "'gc' for key 'live': has no effect without rate"),
    ("trace=t.ctf", "'t.ctf' for key 'trace': has no effect without rate"),
    ("stacks=site", "'site' for key 'stacks': has no effect without rate"),
    ("stackmem=1M", "'1M' for key 'stackmem': has no effect without rate"),
    ("rate=1,stacks=site,stacks=site", "twice"),
    ("snapshot=exit", "'exit' for key 'snapshot': has no effect without rate"),
    ("rate=1,snapshot_sites=5", "'5' for key 'snapshot_sites': has no effect without snapshot"),
    ("rate=1,snapshot=exit,snapshot_sites=0", "'0' for key 'snapshot_sites': expected an integer"),
    ("rate=1,snapshot=exit,snapshot_sites=1001", "'1001' for key 'snapshot_sites'"),
    ("rate=1,snapshot=exit,snapshot_sites=+5", "'+5' for key 'snapshot_sites'"),
    ("rate=1,snapshot=exit,snapshot=exit", "twice"),
    ("rate=1,snapshot_mem=1M", "'1M' for key 'snapshot_mem': has no effect without snapshot"),
    ("rate=1,snapshot=exit,snapshot_mem=1T", "'1T' for key 'snapshot_mem': expected a number"),
    ("rate=1,snapshot=exit,snapshot_mem=2048G", "'2048G' for key 'snapshot_mem': expected at most"),
    ("rate=1,snapshot_out=s.json", "'s.json' for key 'snapshot_out': has no effect without snapshot"),
    ("rate=1,snapshot=call,out=p%n.json", "only %p (the pid), %% and %, may follow"),
    ("rate=1,snapshot=call,trace=t%n.ctf", "only %p (the pid), %% and %, may follow"),
    ("rate=1,snapshot=call,snapshot_out=s%q", "%n (the snapshot's number)"),
    ("snapshot=signal", "'signal' for key 'snapshot': has no effect without rate"),
    ("rate=0.1,trace=a.ctf,trace=a.ctf", "twice"),
    ("rate=0.1,out=a,b.json", "'b.json': expected key=value"),
    ("rate=0.1,out=a%,,,seed=1", "empty item"),
])
def test_malformed_spec(build, spec, what):
    res = run(build("hello"), memprof=spec, check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert_one_printable_line(res.stderr)
    assert what in res.stderr


def test_escape_byte_does_not_reach_the_terminal(build):
    res = run(build("hello"), memprof="rate=0.1,out=\x1b]0;pwned\x07p.json", check=False)
    assert res.returncode == 2
    assert_one_printable_line(res.stderr)
    assert "\x1b" not in res.stderr and "\\x1b]0;pwned\\x07p.json" in res.stderr


def test_backslash_is_doubled(build):
    res = run(build("hello"), memprof="seed=\\x41", check=False)
    assert res.returncode == 2
    assert "'\\\\x41'" in res.stderr


def test_long_value_is_cut_and_stays_one_line(build):
    value = "\n" * 5000 + "%q"
    res = run(build("hello"), memprof=f"rate=0.1,out={value}", check=False)
    assert res.returncode == 2
    assert_one_printable_line(res.stderr)
    assert "...' for key 'out'" in res.stderr and len(res.stderr) < 1024


@pytest.mark.parametrize("spec", ["", "seed=0", "seed=18446744073709551615", "seed=42",
                                  "seed=007", "stop=4611686018427387904", "seed=1,stop=1000"])
def test_good_values_run(build, spec):
    res = run(build("hello"), memprof=spec)
    assert res.stdout == "hello\n" and res.stderr == ""


@pytest.mark.parametrize("spec,name,rate,frames", [
    ("rate=1,out=p.json", "p.json", 1.0, 16),
    ("rate=1.,out=p.json", "p.json", 1.0, 16),
    ("rate=0.5,frames=1,out=p.json", "p.json", 0.5, 1),
    ("rate=1e-4,out=p.json", "p.json", 1e-4, 16),
    ("rate=1E-4,out=p.json", "p.json", 1e-4, 16),
    ("rate=5e-1,out=p.json", "p.json", 0.5, 16),
    ("rate=0.001e+1,out=p.json", "p.json", 0.01, 16),
    ("rate=0010.0e-3,out=p.json", "p.json", 0.01, 16),
    ("out=p%%.json,frames=4096,live=gc,seed=3,rate=1e-2", "p%.json", 1e-2, 4096),
    ("rate=1e-2,out=a=b.json", "a=b.json", 1e-2, 16),
    ("rate=1e-2,out=caf\u00e9.json", "caf\u00e9.json", 1e-2, 16),
    # A space inside a path is kept; a comma is written %, (the harness
    # escapes them so, for a checkout under such a directory).
    ("rate=1e-2,out=my profile.json", "my profile.json", 1e-2, 16),
    ("rate=1e-2,out=a%,b.json,seed=2", "a,b.json", 1e-2, 16),
    ("rate=1e-2,out=%%%,%%.json", "%,%.json", 1e-2, 16),
])
def test_good_tracking_values(build, tmp_path, spec, name, rate, frames):
    res = run(build("hello"), memprof=spec, cwd=tmp_path)
    assert res.stdout == "hello\n" and res.stderr == ""
    prof = json.loads((tmp_path / name).read_bytes())
    assert prof["config"]["rate"] == rate and prof["config"]["frames"] == frames


@pytest.mark.parametrize("spec,recorded", [
    ("rate=1,out=p.json", None),
    ("rate=1,stacks=full,out=p.json", None),
    ("stacks=site,rate=1,out=p.json", "site"),
])
def test_stacks_key_is_recorded(build, tmp_path, spec, recorded):
    res = run(build("hello"), memprof=spec, cwd=tmp_path)
    assert res.stdout == "hello\n" and res.stderr == ""
    prof = json.loads((tmp_path / "p.json").read_bytes())
    assert prof["config"].get("stacks") == recorded


@pytest.mark.parametrize("spec,recorded", [
    ("rate=1,out=p.json", 256 << 10),
    ("rate=1,stackmem=0,out=p.json", 0),
    ("rate=1,stackmem=3k,out=p.json", 3 << 10),
    ("rate=1,stackmem=2M,out=p.json", 2 << 20),
    ("rate=1,stackmem=1024G,out=p.json", 1 << 40),
    ("rate=1,stackmem=1099511627776,out=p.json", 1 << 40),
])
def test_stackmem_is_recorded(build, tmp_path, spec, recorded):
    res = run(build("hello"), memprof=spec, cwd=tmp_path)
    assert res.stdout == "hello\n" and res.stderr == ""
    prof = json.loads((tmp_path / "p.json").read_bytes())
    assert prof["config"]["stackmem"] == recorded


@pytest.mark.parametrize("value", ["exit", "signal", "call", "exit+signal", "signal+exit",
                                   "call+signal+exit", "exit+call"])
def test_snapshot_values_are_accepted(build, tmp_path, value):
    res = run(build("hello"), memprof=f"rate=1,snapshot={value},out=p.json,"
              "snapshot_out=s%n.%p%%.json", cwd=tmp_path)
    assert res.stdout == "hello\n" and res.stderr == ""
    # Only `exit` puts a snapshot section into the exit's profile.
    prof = json.loads((tmp_path / "p.json").read_bytes())
    assert ("snapshot" in prof) == ("exit" in value.split("+"))


def test_bytecode_rejects_too(build):
    res = run(build("hello", backend="bytecode"), memprof="seed=x\ny", check=False)
    assert res.returncode == 2 and res.stdout == "" and "'seed'" in res.stderr
    assert_one_printable_line(res.stderr)
