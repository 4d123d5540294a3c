"""Seeded mutation tests of the newest inputs: one mutant at a time, each
through the command that reads it, in-process (memprof_ci.cli.main).

Surfaces and their commands:
- points and snapshot sections of a version-5 profile: `compare A B`;
- run directories (run.json, a profile of it): `check --from-run`;
- run records: `history`; a check report: `record --report`;
- baselines: `compare` and `plan`;
- a profile with points and a snapshot: `view`.

Every mutant must end with exit 0, 1 or 2, and its output (stdout, stderr,
and the report files a command wrote) must hold no traceback, no
"internal error" and no raw control character; an exit 2 of a command
that judges one input must say why in lines that start `memprof-ci:
error:`.  A mutation replaces, deletes, adds, duplicates or reshapes one
node of the document, or truncates its text.

The default run is a few hundred mutants (fast, seeded, in `make test`).
The longer fuzz run:

    MEMPROF_CI_MUTANTS=20 MEMPROF_CI_MUTANT_SEED=$RANDOM \\
        /usr/bin/python3 -m pytest -q harness/tests/test_mutants.py

multiplies each surface's count by MEMPROF_CI_MUTANTS and draws from
another seed; a failure prints the seed, the surface and the mutant's
number, which reproduce it.
"""

import contextlib
import copy
import io
import json
import os
import random
import re
import shutil

import pytest
from harness_testlib import write_json
from newest_inputs import load, make_world, points_profile, write_points_pair

from memprof_ci import cli

SCALE = int(os.environ.get("MEMPROF_CI_MUTANTS", "1"))
SEED = int(os.environ.get("MEMPROF_CI_MUTANT_SEED", "61"))
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
HOSTILE_TEXT = ["", "\u00b2", "\x1b[31mred\x07\x00", "a\u202eb", "x\n::error title=t::y",
                "<script>alert(1)</script>", "`|*_[x](y)", "@someone #1", "é" * 300]
HOSTILE = [None, True, False, 0, -1, -7, 1, 2 ** 53 + 1, 2 ** 64, 253402300800, 1e308, 5e-324,
           -0.0, 0.5, [], {}, [[[[[]]]]], {"a": {"b": {"c": {}}}}] + HOSTILE_TEXT
COUNTS = {}


def _nodes(doc, path=()):
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _nodes(v, path + (i,))


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def mutate(doc, rng, under=()):
    """A copy of `doc` with one node under the path `under` changed: half
    the time one within two levels of `under` (the fields a format names),
    else any node."""
    doc = copy.deepcopy(doc)
    nodes = list(_nodes(_get(doc, under), under))
    if rng.random() < 0.5:
        nodes = [(p, v) for p, v in nodes if len(p) - len(under) <= 2]
    path, node = rng.choice(nodes)
    parent = _get(doc, path[:-1]) if path else None
    op = rng.choices(["replace", "delete", "add", "rename", "int", "text", "reshape"],
                     [30, 10, 15, 15, 10, 10, 10])[0]
    if parent is None:
        op = "add" if isinstance(node, (dict, list)) else "replace"
    if op == "rename" and isinstance(parent, dict):
        parent[rng.choice(HOSTILE_TEXT + ["version", "live", "unavailable"])] = \
            parent.pop(path[-1])
    elif op == "add" and isinstance(node, dict):
        node[rng.choice(HOSTILE_TEXT + ["live", "unavailable", "calls", "version"])] = \
            copy.deepcopy(rng.choice(HOSTILE))
    elif op == "add" and isinstance(node, list):
        node.append(copy.deepcopy(rng.choice(node) if node and rng.random() < 0.5
                                  else rng.choice(HOSTILE)))
    elif op == "delete" and parent is not None:
        del parent[path[-1]]
    elif op == "int" and type(node) is int:
        parent[path[-1]] = rng.choice([node + 1, node - 1, node * 2 + 1, -node, node * 10 ** 6,
                                       2 ** 40 - 1, 253402300800])
    elif op == "text" and isinstance(node, str):
        parent[path[-1]] = node + rng.choice(HOSTILE_TEXT[1:])
    elif op == "reshape" and parent is not None:
        parent[path[-1]] = rng.choice([[node], {"x": node}, str(node)[:50]])
    elif parent is not None:
        parent[path[-1]] = copy.deepcopy(rng.choice(HOSTILE))
    return doc


_NUMBER = re.compile(r"(?<=[:\[,] )-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?=[,\]}])")


def write_text(path, doc, rng):
    """The mutant as JSON, now and then cut short, or with one number
    written as Python's JSON reader takes it but the format forbids (NaN,
    Infinity, an overflow)."""
    text = json.dumps(doc)
    r = rng.random()
    if r < 0.04:
        text = text[:rng.randrange(1, max(2, len(text)))]
    elif r < 0.10:
        nums = list(_NUMBER.finditer(text))
        if nums:
            m = rng.choice(nums)
            text = text[:m.start()] + rng.choice(["NaN", "Infinity", "-Infinity", "1e400"]) + \
                text[m.end():]
    with open(path, "w") as fh:
        fh.write(text)


def run(argv, files=()):
    """cli.main in this process: (exit code, everything it printed or wrote)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    text = out.getvalue() + err.getvalue()
    for f in files:
        if os.path.isfile(f):
            with open(f, encoding="utf-8", errors="replace") as fh:
                text += fh.read()
    return code, text, err.getvalue()


def verify(where, code, text, err, judged_one=True):
    assert code in (0, 1, 2), f"{where}: exit {code}\n{text[-3000:]}"
    assert "Traceback" not in text, f"{where}: traceback\n{text[-3000:]}"
    assert "internal error" not in text, f"{where}: internal error\n{text[-3000:]}"
    raw = [x for x in text.splitlines() if RAW.search(x)]
    assert not raw, f"{where}: raw control characters: {raw[:3]!r}"
    if code == 2 and judged_one:
        assert any(x.startswith("memprof-ci: error: ") for x in err.splitlines()), \
            f"{where}: exit 2 without an error line\n{text[-3000:]}"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(str(tmp_path_factory.mktemp("mutants")))


@pytest.fixture(scope="module", autouse=True)
def counts():
    yield
    # The run's figures, printed with -s (the report quotes them).
    print("\nmutants per surface (exit 0/1/2):",
          {k: dict(sorted(v.items())) for k, v in sorted(COUNTS.items())})


def tally(surface, code):
    COUNTS.setdefault(surface, {}).setdefault(code, 0)
    COUNTS[surface][code] += 1


def _each(surface, n):
    rng = random.Random(f"{SEED}/{surface}")
    for i in range(n * SCALE):
        yield f"seed {SEED}, {surface} mutant {i}", rng


def test_points_and_snapshot_sections_through_compare(tmp_path):
    a, b = write_points_pair(str(tmp_path))
    good = load(b)
    for where, rng in _each("points+snapshot", 120):
        doc = mutate(good, rng, (rng.choice(["points", "snapshot"]),))
        write_text(b, doc, rng)
        code, text, err = run(["compare", a, b, "--report-dir", str(tmp_path / "rep")],
                              [str(tmp_path / "rep" / "report.md")])
        verify(where, code, text, err)
        tally("points+snapshot", code)


def test_profiles_through_view(tmp_path):
    good = points_profile()
    p, out = str(tmp_path / "p.json"), str(tmp_path / "view.html")
    for where, rng in _each("view", 50):
        write_text(p, mutate(good, rng), rng)
        code, text, err = run(["view", p, "-o", out])
        verify(where, code, text, err)
        tally("view", code)


def test_baselines_through_compare_and_plan(world, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(os.path.join(world["dir"], "baselines"), d)
    path, good = str(d / "alpha.json"), load(world["baseline"])
    for where, rng in _each("baselines", 80):
        write_text(path, mutate(good, rng), rng)
        code, text, err = run(["compare", world["baseline"], path])
        verify(where + " (compare)", code, text, err)
        code2, text, err = run(["plan", "--manifest", world["manifest"], "--baselines", str(d)])
        verify(where + " (plan)", code2, text, err)
        tally("baselines", code)


def test_run_records_through_history(world, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    path = str(runs / os.path.basename(world["record"]))
    good = load(world["record"])
    for where, rng in _each("records", 60):
        under = rng.choice([(), (), ("benchmarks", "alpha")])
        write_text(path, mutate(good, rng, under), rng)
        code, text, err = run(["history", "--runs", str(runs), "--out",
                               str(tmp_path / "h.html")])
        verify(where, code, text, err)
        tally("records", code)


def test_check_reports_through_record(world, tmp_path, monkeypatch):
    monkeypatch.chdir(world["dir"])
    rep = str(tmp_path / "report.json")
    code, _, _ = run(["check", "--manifest", world["manifest"], "--no-overhead", "-q",
                      "--baselines", os.path.join(world["dir"], "baselines"),
                      "--from-run", world["run"], "--results-json", rep])
    assert code == 0
    good = load(rep)
    for where, rng in _each("record --report", 40):
        write_text(rep, mutate(good, rng), rng)
        code, text, err = run(["record", "--runs", str(tmp_path / "runs"), "--baselines",
                               os.path.join(world["dir"], "baselines"), "--report", rep])
        verify(where, code, text, err)
        tally("record --report", code)


def test_run_directories_through_check_from_run(world, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(world["run"], run_dir)
    run_json = str(run_dir / "run.json")
    good_run = load(run_json)
    prof = str(run_dir / "profiles" / sorted(os.listdir(run_dir / "profiles"))[0])
    good_prof = load(prof)
    rep = tmp_path / "rep"
    for where, rng in _each("run dirs", 40):
        write_json(run_json, good_run)
        write_json(prof, good_prof)
        if rng.random() < 0.6:
            write_text(run_json, mutate(good_run, rng), rng)
        else:
            v5 = dict(good_prof, **{k: v for k, v in points_profile().items()
                                    if k in ("points", "snapshot", "version", "frame_table")})
            v5["stacks"] = points_profile()["stacks"]
            v5["totals"] = points_profile()["totals"]
            write_text(prof, mutate(v5, rng), rng)
        code, text, err = run(["check", "--manifest", world["manifest"], "--no-overhead", "-q",
                               "--baselines", os.path.join(world["dir"], "baselines"),
                               "--from-run", str(run_dir), "--report-dir", str(rep)],
                              [str(rep / "report.md")])
        verify(where, code, text, err, judged_one=False)
        tally("run dirs", code)
