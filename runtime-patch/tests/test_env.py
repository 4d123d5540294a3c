"""OCAMLMEMPROF parsing: every malformed value stops the program before
any OCaml code runs, with exit status 2 and one line on stderr naming
the variable, the key and the value; well-formed values are accepted."""

import pytest

from runtime_testlib import run

BAD = [
    ("seed", "abc"), ("seed", "-1"), ("seed", "18446744073709551616"),
    ("seed", ""), ("seed", "1.5"), ("seed", " 1"), ("seed", "+1"),
    ("rate", "0"), ("rate", "-0.1"), ("rate", "nan"), ("rate", "NaN"),
    ("rate", "1.5"), ("rate", "inf"), ("rate", "1e-400x"), ("rate", ""),
    ("rate", "abc"),
    ("frames", "0"), ("frames", "-3"), ("frames", "100000"), ("frames", "x"),
    ("out", ""), ("out", "p%q.json"),
    ("live", ""), ("live", "yes"), ("live", "GC"),
]


@pytest.mark.parametrize("key,value", BAD)
def test_bad_value_exits_2_with_one_line(build, key, value):
    spec = f"{key}={value}"
    if key in ("frames", "out", "live"):
        spec = f"rate=0.01,{spec}"
    res = run(build("hello"), memprof=spec, check=False)
    assert res.returncode == 2
    assert res.stdout == "", "OCaml code ran despite the bad value"
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert "OCAMLMEMPROF" in lines[0] and f"'{key}'" in lines[0] and f"'{value}'" in lines[0]


@pytest.mark.parametrize("spec,what", [
    ("colour=red", "unknown key"),
    ("seed", "key=value"),
    ("seed=1,seed=2", "twice"),
    ("frames=4", "'4' for key 'frames': has no effect without rate"),
    ("out=x.json", "'x.json' for key 'out': has no effect without rate"),
    ("live=gc", "'gc' for key 'live': has no effect without rate"),
])
def test_malformed_spec(build, spec, what):
    res = run(build("hello"), memprof=spec, check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and "OCAMLMEMPROF" in res.stderr
    assert what in res.stderr


@pytest.mark.parametrize("spec", ["", "seed=0", "seed=18446744073709551615", "seed=42"])
def test_good_values_run(build, spec):
    res = run(build("hello"), memprof=spec)
    assert res.stdout == "hello\n" and res.stderr == ""


def test_bytecode_rejects_too(build):
    res = run(build("hello", backend="bytecode"), memprof="seed=x", check=False)
    assert res.returncode == 2 and res.stdout == "" and "'seed'" in res.stderr
