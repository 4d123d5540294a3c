"""The report as types: report.json's document, its benchmarks, rows, check
outcomes, verdict and retaining paths as dataclasses.

report_doc.py says what report.json holds; verdict.py decides into it.
This module gives that document one typed form for the code that reads a
decided report: Report.from_json(doc) and Report.to_json() are exact
inverses on every document the harness writes, so
to_json(Report.from_json(doc).to_json()) is byte for byte the file it came
from (tests/test_report_types.py pins it on the golden reports).

How a key maps to a field:
1. A key the schema requires (merge.SHARD_SCHEMA) is a field without a
   default; from_json raises KeyError when it is missing.
2. An optional key is a field whose default is ABSENT, and ABSENT is
   written back as no key at all, so "absent" and "null" stay apart.
3. A key no field names is kept, with its value as read, in the object's
   `extra` dict and written back as it was: a report from a newer harness
   loses nothing on its way through an older one.
4. Nested documents become their types (a row's "retention" a Retention
   whose paths are sites/retaining.RetainingPath); null stays None.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..sites.retaining import RetainingPath


class Absent:
    """The value of a field whose key the document does not have."""
    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT = Absent()


def _nested(load, dump=None) -> dict:
    """Field metadata: how a nested value is read and written (None, and
    ABSENT, pass through unchanged)."""
    return {"load": load, "dump": dump or (lambda v: v.to_json())}


def _list_of(cls) -> dict:
    return _nested(lambda xs: [cls.from_json(x) for x in xs],
                   lambda xs: [x.to_json() for x in xs])


def _map_of(cls) -> dict:
    return _nested(lambda d: {k: cls.from_json(v) for k, v in d.items()},
                   lambda d: {k: v.to_json() for k, v in d.items()})


class Doc:
    """from_json and to_json by the rules of the module docstring, for a
    dataclass with an `extra` field."""

    @classmethod
    def from_json(cls, d: dict):
        rest, kw = dict(d), {}
        for f in dataclasses.fields(cls):
            if f.name == "extra" or f.name not in rest:
                continue
            v = rest.pop(f.name)
            load = f.metadata.get("load")
            kw[f.name] = load(v) if load is not None and v is not None else v
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in kw
                   and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]
        if missing:
            raise KeyError(f"{cls.__name__}: missing {', '.join(missing)}")
        return cls(**kw, extra=rest)

    def to_json(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "extra" or v is ABSENT:
                continue
            dump = f.metadata.get("dump")
            out[f.name] = dump(v) if dump is not None and v is not None else v
        out.update(self.extra)
        return out


@dataclass
class CheckOutcome(Doc):
    """passed, failed, accepted, error, skipped or not run; the message
    says why (the regressed sites of a failed check)."""
    outcome: str
    message: str | Absent = ABSENT
    extra: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.message or ""


@dataclass
class Verdict(Doc):
    """The exit code and what decided it: 2 errors, 1 failed checks, 0
    neither; accepted checks ("bench::check") do not fail."""
    exit_code: int
    errors: list
    regressions: list
    accepted: list
    extra: dict = field(default_factory=dict)


@dataclass
class Retention(Doc):
    """A failing live or peak row's retaining paths (measure/retention.py):
    current and baseline (None, with `why` / `baseline_why`), and whether
    the path changed."""
    current: RetainingPath | None = field(metadata=_nested(RetainingPath.from_json))
    baseline: RetainingPath | None = field(metadata=_nested(RetainingPath.from_json))
    changed: bool
    why: str | Absent = ABSENT
    baseline_why: str | Absent = ABSENT
    extra: dict = field(default_factory=dict)


@dataclass
class CallerChange(Doc):
    """A caller whose part of a shared allocation point changed, in words,
    with the interval of the change."""
    site: str
    baseline_words: float
    current_words: float
    change_words: float
    change_low: float
    change_high: float
    baseline_samples: int
    current_samples: int
    extra: dict = field(default_factory=dict)


@dataclass
class SiteRow(Doc):
    """One site compared for one check (alloc, live, peak, or a proposed
    baseline's): both sides' samples and bytes, the ratio with its
    interval, raw and adjusted p-values, and the decided status
    (regression, improvement, moved, renamed, mismatch or "~")."""
    benchmark: str
    check: str
    site: str
    baseline_samples: int
    current_samples: int
    baseline_bytes: float
    current_bytes: float
    share: float
    p0: float
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_raw: float
    p_raw_decrease: float
    alpha: float
    min_effect: float
    min_share: float
    baseline_exposure: float | Absent = ABSENT
    current_exposure: float | Absent = ABSENT
    file: str | None | Absent = ABSENT
    function: str | None | Absent = ABSENT
    via: str | None | Absent = ABSENT
    line: int | None | Absent = ABSENT
    lines: dict | None | Absent = ABSENT
    exact: bool | Absent = ABSENT
    mde: float | None | Absent = ABSENT
    p_adj: float | None | Absent = ABSENT
    p_adj_decrease: float | None | Absent = ABSENT
    significant: bool | Absent = ABSENT    # changed significantly either way (verdict.classify)
    status: str | Absent = ABSENT
    note: str | Absent = ABSENT
    renamed_from: str | Absent = ABSENT
    renamed_to: str | Absent = ABSENT
    renamed_because: str | Absent = ABSENT
    moved_from: list | Absent = ABSENT     # [{"site", "words"}]: where a moved row's words came from
    generated: str | Absent = ABSENT
    caller_changes: list | Absent = field(default=ABSENT, metadata=_list_of(CallerChange))
    retention: Retention | Absent = field(default=ABSENT,
                                          metadata=_nested(Retention.from_json))
    extra: dict = field(default_factory=dict)


@dataclass
class GcRow(Doc):
    """One GC counter: against a fixed tolerance (change), or, with p_raw,
    against the schedule's spread (effect from its reference)."""
    counter: str
    baseline: float
    current: float
    change: float | None
    tolerance: float
    status: str
    p_raw: float | Absent = ABSENT
    p_raw_decrease: float | Absent = ABSENT
    p_adj: float | Absent = ABSENT
    p_adj_decrease: float | Absent = ABSENT
    effect: float | None | Absent = ABSENT
    reference: float | Absent = ABSENT
    spread: float | Absent = ABSENT
    draws: int | Absent = ABSENT
    alpha: float | Absent = ABSENT
    extra: dict = field(default_factory=dict)


@dataclass
class Overhead(Doc):
    """A judged overhead record (decide/overhead_verdict.judge): the counted
    estimate and range, the threshold and its basis, and the status.  The
    counts, times and RSS it was derived from stay in `extra` as read."""
    estimate: float
    ci_low: float
    ci_high: float
    status: str | Absent = ABSENT
    threshold: float | Absent = ABSENT
    basis: str | Absent = ABSENT
    budget: float | None | Absent = ABSENT
    note: str | Absent = ABSENT
    baseline_estimate: float | None | Absent = ABSENT
    baseline_ci_high: float | None | Absent = ABSENT
    obtained: dict | Absent = ABSENT
    extra: dict = field(default_factory=dict)


_ROWS = _list_of(SiteRow)


@dataclass
class Benchmark(Doc):
    """One benchmark's part of the report: its check outcomes, its rows per
    check, GC rows, overhead, settings and notes."""
    checks: dict = field(metadata=_map_of(CheckOutcome))    # check -> CheckOutcome
    name: str | Absent = ABSENT
    settings: dict | None | Absent = ABSENT
    notes: list | Absent = ABSENT
    alloc: list | None | Absent = field(default=ABSENT, metadata=_ROWS)
    live: list | None | Absent = field(default=ABSENT, metadata=_ROWS)
    peak: list | None | Absent = field(default=ABSENT, metadata=_ROWS)
    proposed: list | None | Absent = field(default=ABSENT, metadata=_ROWS)
    gc: list | None | Absent = field(default=ABSENT, metadata=_list_of(GcRow))
    overhead: Overhead | None | Absent = field(default=ABSENT,
                                               metadata=_nested(Overhead.from_json))
    power: dict | None | Absent = ABSENT
    peak_summary: dict | None | Absent = ABSENT
    stream: dict | None | Absent = ABSENT
    status: str | Absent = ABSENT      # a benchmark not run: "removed" or "missing"
    budgets: list | None | Absent = ABSENT   # the budget rows (decide/budgets.py)
    annotation_changes: list | Absent = ABSENT   # annotations changed since the baseline
    extra: dict = field(default_factory=dict)

    def site_rows(self) -> list:
        """The alloc, live and peak rows, in that order."""
        return [r for rows in (self.alloc, self.live, self.peak) if rows for r in rows]


@dataclass
class Report(Doc):
    """report.json: every benchmark, the run's notes and errors, the
    families decided over, and the verdict."""
    format: str
    version: int
    benchmarks: dict = field(metadata=_map_of(Benchmark))   # name -> Benchmark
    kind: str | Absent = ABSENT
    shard: dict | None | Absent = ABSENT
    proposed_baselines: dict | None | Absent = ABSENT
    notes: list | Absent = ABSENT
    errors: list | Absent = ABSENT
    verdict: Verdict | Absent = field(default=ABSENT, metadata=_nested(Verdict.from_json))
    family: dict | None | Absent = ABSENT
    proposed_family: dict | None | Absent = ABSENT
    gc_family: dict | None | Absent = ABSENT
    accept_changes: bool | Absent = ABSENT
    accepted: list | Absent = ABSENT
    settings_changes: list | Absent = ABSENT
    patch_notes: list | Absent = ABSENT
    extra: dict = field(default_factory=dict)
