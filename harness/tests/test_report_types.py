"""The typed report (decide/report_types.py) round-trips report.json.

Golden inputs: the committed report.json files (golden/report.json, pinned
by test_golden.py, and two reports of real `check` runs on the fake
benchmarks in data/reports/: one with proposed baselines accepted by the
label, one with a regression; both with a failing live row's retention)
are read into the dataclasses and written back, and must come out byte for
byte.  Built reports (the golden comparison, the retention fixture with
real paths) round-trip the same way.  Then the types themselves: absent and
null keys stay apart, unknown keys survive, and the decided values read as
fields of the right type.
"""

import json
import os

import pytest

from harness_testlib import HERE

import test_golden
import test_retention
from memprof_ci.decide.report_doc import to_json
from memprof_ci.decide.report_types import (ABSENT, Benchmark, CheckOutcome, GcRow, Report,
                                            Retention, SiteRow, Verdict)
from memprof_ci.sites.retaining import Hop, RetainingPath

FILES = [os.path.join(HERE, "golden", "report.json"),
         os.path.join(HERE, "data", "reports", "check-accepted.json"),
         os.path.join(HERE, "data", "reports", "check-regression.json")]


def round_trip(doc: dict) -> str:
    return to_json(Report.from_json(doc).to_json())


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_a_report_file_comes_back_byte_for_byte(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert round_trip(json.loads(text)) == text


@pytest.mark.parametrize("build", [test_golden.fixed_report, test_retention.fixed_report],
                         ids=["golden", "retention"])
def test_a_decided_report_comes_back_byte_for_byte(build):
    rep = build()
    assert round_trip(json.loads(to_json(rep))) == to_json(rep)


def test_the_decided_values_read_as_typed_fields():
    rep = Report.from_json(json.loads(to_json(test_golden.fixed_report())))
    assert isinstance(rep.verdict, Verdict) and rep.verdict.exit_code == 1
    assert rep.verdict.regressions == ["changed::alloc_sites", "shared::alloc_sites"]
    changed = rep.benchmarks["changed"]
    assert isinstance(changed, Benchmark)
    assert isinstance(changed.checks["alloc_sites"], CheckOutcome)
    assert changed.checks["alloc_sites"].outcome == "failed"
    rows = {r.site: r for r in changed.alloc}
    assert all(isinstance(r, SiteRow) for r in rows.values())
    assert rows["Main.grow @ main.ml"].status == "regression"
    assert rows["Main.new_name @ main.ml"].renamed_from == "Main.old_name @ main.ml"
    assert rows["Main.grow @ main.ml"].renamed_from is ABSENT
    assert all(isinstance(g, GcRow) for g in changed.gc)
    assert rep.benchmarks["identical"].overhead.status == "~"
    assert rep.benchmarks["identical"].overhead.threshold == 0.12
    shared = {r.site: r for r in rep.benchmarks["shared"].alloc}
    [new] = [c for c in shared["Stdlib__Hashtbl.add @ hashtbl.ml"].caller_changes
             if c.site == "Memo.memo @ memo.ml"]
    assert new.baseline_words == 0 and new.change_words > 0


def test_retention_reads_as_paths_of_hops():
    rep = Report.from_json(json.loads(to_json(test_retention.fixed_report())))
    rows = {r.site: r for r in rep.benchmarks["leaky"].live}
    ret = rows[test_retention.CACHED].retention
    assert isinstance(ret, Retention) and ret.changed
    assert isinstance(ret.current, RetainingPath) and isinstance(ret.baseline, RetainingPath)
    assert all(isinstance(h, Hop) for h in ret.current.hops)
    assert ret.baseline.root == "global Log, field 0"
    assert ret.baseline.holder().site == test_retention.QUEUE
    logged = rows[test_retention.LOGGED].retention
    assert logged.baseline is None and logged.baseline_why.startswith("baseline: no path")
    assert rows[test_retention.QUIET].retention is ABSENT


def test_absent_null_and_unknown_keys_stay_as_they_were():
    row = json.loads(to_json(test_golden.fixed_report()))["benchmarks"]["changed"]["alloc"][0]
    assert "note" not in row
    typed = SiteRow.from_json(dict(row, mde=None, future_key={"a": [1]}))
    assert typed.mde is None and typed.note is ABSENT
    assert typed.extra == {"future_key": {"a": [1]}}
    out = typed.to_json()
    assert out["mde"] is None and "note" not in out and out["future_key"] == {"a": [1]}
    assert CheckOutcome.from_json({"outcome": "passed"}).to_json() == {"outcome": "passed"}
    with pytest.raises(KeyError, match="outcome"):
        CheckOutcome.from_json({"message": "x"})


def test_a_hop_and_a_path_round_trip_their_json_form():
    path = {"root": "global Cache", "live_words": 10.0, "shared_words": 4.0,
            "hops": [{"elided": 3}, {"site": None, "tag": "tag 0", "words": 2},
                     {"site": "A.f @ a.ml", "tag": "string", "words": 4,
                      "inner": "Stdlib__Bytes.create"}]}
    p = RetainingPath.from_json(path)
    assert p.hops[0] == Hop(elided=3) and p.hops[2].inner == "Stdlib__Bytes.create"
    assert p.to_json() == path
    assert p.holder() is None and p.signature() == ("global Cache", ("A.f @ a.ml",))
