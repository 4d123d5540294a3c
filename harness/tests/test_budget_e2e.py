"""Allocation budgets end to end with the real patched runtime (marker:
needs_runtime): data/points/inject.ml built with _build/runtime's ocamlopt,
checked with no baseline at all; `small` allocates 50,000 tuples of 4 words,
200,000 words per run, counted exactly by the first seed's points.  A budget
at exactly those words passes, one word less fails with exit 1 naming the
function, and a line's budget counts the same point."""

import json
import os

import pytest
from harness_testlib import HERE, run_cli, write_manifest
from test_points_check import build

SMALL_WORDS = 4 * 50_000


def manifest(work, budgets: str):
    path = write_manifest(work, [{"name": "inject", "command": ["./inject.exe"],
                                  "timeout": 120}],
                          defaults={"mode": "sampled", "rate": 1e-4, "seeds": [1]})
    with open(path, "a") as fh:
        fh.write(budgets)


def check(work, rep):
    return run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                    "--report-dir", rep], cwd=work, timeout=600)


@pytest.mark.needs_runtime
def test_budget_at_the_exact_words_passes_and_one_word_less_fails(tmp_path):
    work = str(tmp_path)
    build(work, os.path.join(HERE, "data", "points", "inject.ml"), "inject")
    manifest(work, f'[[budget]]\nfunction = "Inject.small"\nwords_per_run = {SMALL_WORDS}\n'
                   f'[[budget]]\npoint = "inject.ml:7"\nwords_per_run = {SMALL_WORDS}\n'
                   f'benchmark = "inject"\n'
                   f'[[budget]]\nfunction = "Inject.nothing"\nwords_per_run = 0\n')
    r = check(work, "ok")
    assert r.returncode == 0, r.stdout + r.stderr
    b = json.load(open(tmp_path / "ok" / "report.json"))["benchmarks"]["inject"]
    assert b["checks"]["budget"]["outcome"] == "passed"
    fn, line, nothing = b["budgets"]
    assert (fn["what"], fn["words_per_run"], fn["limit"], fn["outcome"]) == \
        ("Inject.small", SMALL_WORDS, SMALL_WORDS, "passed")
    assert [p["words"] for p in fn["points"]] == [SMALL_WORDS]
    assert fn["points"][0]["point"].startswith("inject.ml:7:")
    assert line["words_per_run"] == SMALL_WORDS and line["kind"] == "point"
    assert (nothing["words_per_run"], nothing["points"]) == (0, [])
    assert "no allocation point of it allocated" in r.stdout

    manifest(work, f'[[budget]]\nfunction = "Inject.small"\n'
                   f'words_per_run = {SMALL_WORDS - 1}\n')
    r = check(work, "over")
    assert r.returncode == 1, r.stdout + r.stderr
    assert (f"Inject.small allocated {SMALL_WORDS:,} words per run, limit "
            f"{SMALL_WORDS - 1:,}") in r.stdout, r.stdout
    b = json.load(open(tmp_path / "over" / "report.json"))["benchmarks"]["inject"]
    assert b["checks"]["budget"]["outcome"] == "failed"
    assert b["budgets"][0]["outcome"] == "failed"
    row = [x for x in r.stdout.splitlines() if x.startswith("inject     Inject.small")]
    assert row and "FAILED" in row[0] and f"({SMALL_WORDS:,})" in row[0], r.stdout
    # memprof-ci's own report, from its verdict on (pytest's session lines
    # before it name temporary paths of any length).
    ours = r.stdout[r.stdout.index("memprof-ci: regression"):]
    assert max(map(len, ours.splitlines())) <= 120


@pytest.mark.needs_runtime
def test_ratchet_lowers_a_budget_to_what_the_code_now_allocates(tmp_path):
    """update-baselines --ratchet lowers Inject.small's budget from 300,000
    to its exact 200,000 words, keeping the manifest's other text; a budget
    the code now exceeds is warned about and never raised."""
    work = str(tmp_path)
    build(work, os.path.join(HERE, "data", "points", "inject.ml"), "inject")
    manifest(work, '[[budget]]  # the lookup\nfunction = "Inject.small"\n'
                   'words_per_run = 300_000  # agreed in review\n'
                   '[[budget]]\nfunction = "Inject.big"\nwords_per_run = 5\n')
    before = open(tmp_path / "benchmarks.toml").read()
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--ratchet"], cwd=work, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"[[budget]] #1 Inject.small: words_per_run 300,000 -> {SMALL_WORDS:,}" in r.stdout
    assert "Inject.big allocated" in r.stderr and "(check fails)" in r.stderr
    after = open(tmp_path / "benchmarks.toml").read()
    assert after == before.replace("words_per_run = 300_000  # agreed",
                                   "words_per_run = 200_000  # agreed")
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--ratchet"], cwd=work, timeout=600)
    assert r.returncode == 0 and "ratchet: no budget to lower" in r.stdout, r.stdout + r.stderr
    assert open(tmp_path / "benchmarks.toml").read() == after
