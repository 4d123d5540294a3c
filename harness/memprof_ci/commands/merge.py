"""`memprof-ci merge`: shard reports merged into one report and verdict.

Each shard of a sharded `check` writes a report.json; merging re-applies the
family-wise correction over every shard's raw p-values (verdict.decide)
and derives one verdict.  Shard reports travel as CI artifacts, so they are
untrusted input.

Invariants:
1. Every shard report is validated against SHARD_SCHEMA (jsonschema) before
   any of it is used: right types everywhere the merge or the renderers
   read, finite numbers only (validate.load_json), and bounded sizes.  A
   report that fails is an InputError naming the file and the key.
2. A missing, duplicated or foreign shard, or a benchmark in two shards, is
   an error (exit 2), never a pass.
"""

from __future__ import annotations

import os

import jsonschema

from ..errors import InputError
from ..text.mdsafe import printable
from ..inputs.profile import load_json
from ..decide.report_doc import REPORT_FORMAT, REPORT_VERSION, new_report
from ..decide.verdict import decide
from ..render.outputs import check_output_paths, finish, write_reports
from ..render.report import render_terminal

_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_STR = {"type": "string", "maxLength": 100_000}
_STR_OR_NULL = {"type": ["string", "null"], "maxLength": 100_000}
_COUNT = {"type": "integer", "minimum": 0, "maximum": 2 ** 53}
_PROB = {"type": "number", "minimum": 0, "maximum": 1}
# A path record of retention.py, and a flagged row's "retention".
_PATH = {
    "type": ["object", "null"],
    "required": ["root", "hops", "live_words", "shared_words"],
    "additionalProperties": False,
    "properties": {
        "root": _STR, "live_words": {"type": "number", "minimum": 0},
        "shared_words": {"type": "number", "minimum": 0},
        "hops": {"type": "array", "minItems": 1, "maxItems": 64, "items": {
            "type": "object", "additionalProperties": False,
            "properties": {"site": _STR_OR_NULL, "tag": _STR, "words": _COUNT,
                           "inner": _STR, "elided": _COUNT}}},
    },
}
_RETENTION = {
    "type": "object", "required": ["current", "baseline", "changed"],
    "additionalProperties": False,
    "properties": {"current": _PATH, "baseline": _PATH, "changed": {"type": "boolean"},
                   "why": _STR, "baseline_why": _STR},
}

_ROW = {
    "type": "object",
    "required": ["benchmark", "check", "site", "baseline_samples", "current_samples",
                 "baseline_bytes", "current_bytes", "share", "p0", "ratio", "ci_low",
                 "ci_high", "p_raw", "p_raw_decrease", "alpha", "min_effect", "min_share"],
    "properties": {
        "benchmark": _STR, "check": {"enum": ["alloc", "live", "peak"]}, "site": _STR,
        "file": _STR_OR_NULL, "function": _STR_OR_NULL, "via": _STR_OR_NULL,
        "line": {"type": ["integer", "null"]},
        "lines": {"type": ["object", "null"], "additionalProperties": _COUNT},
        "baseline_samples": _COUNT, "current_samples": _COUNT,
        "baseline_bytes": _NUM, "current_bytes": _NUM,
        "share": {"type": "number", "minimum": 0, "maximum": 1},
        "p0": {"type": "number", "minimum": 0, "maximum": 1},
        "ratio": _NUM_OR_NULL, "ci_low": _NUM_OR_NULL, "ci_high": _NUM_OR_NULL,
        "p_raw": {"type": "number", "minimum": 0, "maximum": 1},
        "p_raw_decrease": {"type": "number", "minimum": 0, "maximum": 1},
        "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "min_effect": {"type": "number", "minimum": 0},
        "min_share": {"type": "number", "minimum": 0, "maximum": 1},
        "mde": _NUM_OR_NULL, "p_adj": _NUM_OR_NULL, "p_adj_decrease": _NUM_OR_NULL,
        "significant": {"type": "boolean"},
        "status": _STR, "retention": _RETENTION, "generated": _STR,
        "caller_changes": {"type": "array", "maxItems": 100, "items": {
            "type": "object",
            "required": ["site", "baseline_words", "current_words", "change_words",
                         "change_low", "change_high", "baseline_samples", "current_samples"],
            "properties": {"site": _STR, "baseline_words": _NUM, "current_words": _NUM,
                           "change_words": _NUM, "change_low": _NUM, "change_high": _NUM,
                           "baseline_samples": _COUNT, "current_samples": _COUNT}}},
    },
}
_GC_ROW = {
    "type": "object",
    "required": ["counter", "baseline", "current", "change", "tolerance", "status"],
    # A row judged against the schedule's spread carries what decide_gc reads.
    "dependentRequired": {"p_raw": ["p_raw_decrease", "alpha", "effect", "reference",
                                    "spread", "draws"]},
    "properties": {"counter": _STR, "baseline": _NUM, "current": _NUM,
                   "change": _NUM_OR_NULL, "tolerance": _NUM,
                   "status": {"enum": ["regression", "improvement", "~"]},
                   "p_raw": _PROB, "p_raw_decrease": _PROB, "p_adj": _PROB,
                   "p_adj_decrease": _PROB, "effect": _NUM_OR_NULL, "reference": _NUM,
                   "spread": {"type": "number", "minimum": 0}, "draws": _COUNT,
                   "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}},
}
_OVERHEAD = {
    "type": ["object", "null"],
    "required": ["estimate", "ci_low", "ci_high"],
    "properties": {"estimate": _NUM, "ci_low": _NUM, "ci_high": _NUM,
                   "p_value": _NUM_OR_NULL, "runs": _COUNT, "budget": _NUM_OR_NULL,
                   "baseline_estimate": _NUM_OR_NULL, "status": _STR},
}
_CHECK = {
    "type": "object", "required": ["outcome"],
    "properties": {"outcome": {"enum": ["passed", "failed", "accepted", "error",
                                        "skipped", "not run"]},
                   "message": _STR},
}
_ROWS = {"type": ["array", "null"], "items": _ROW, "maxItems": 1_000_000}
_BENCH = {
    "type": "object",
    "required": ["checks"],
    "properties": {
        "name": _STR,
        "checks": {"type": "object", "additionalProperties": _CHECK},
        "notes": {"type": "array", "items": _STR, "maxItems": 10_000},
        "alloc": _ROWS, "live": _ROWS, "peak": _ROWS, "proposed": _ROWS,
        "peak_summary": {"type": ["object", "null"], "properties": {
            "baseline_words": _NUM, "current_words": _NUM, "p_rise": _PROB,
            "spread_words": {"type": "number", "minimum": 0}}},
        "stream": {"type": ["object", "null"], "properties": {
            "baseline_words": _NUM_OR_NULL, "current_words": _NUM_OR_NULL,
            "same_sampling": {"type": "boolean"},
            "baseline_samples": _COUNT, "current_samples": _COUNT}},
        "gc": {"type": ["array", "null"], "items": _GC_ROW},
        "overhead": _OVERHEAD,
        "status": _STR,
        "settings": {"type": ["object", "null"]},
    },
}
_PROPOSED = {
    "type": ["object", "null"],
    "properties": {"benchmarks": {"type": "object", "additionalProperties": {
        "type": "object", "required": ["status"],
        "properties": {"status": _STR, "sites": {"type": "array", "items": {
            "type": "object",
            "required": ["site", "trusted_bytes", "proposed_bytes"],
            "properties": {"site": _STR, "trusted_bytes": _NUM, "proposed_bytes": _NUM,
                           "ratio": _NUM_OR_NULL}}},
            "gc": {"type": "array", "items": {
                "type": "object", "required": ["counter", "trusted", "proposed"],
                "properties": {"counter": _STR, "trusted": _NUM, "proposed": _NUM}}},
            "sections": {"type": "array", "items": _STR, "maxItems": 10}}}}},
}
SHARD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["format", "version", "benchmarks"],
    "properties": {
        "format": {"const": REPORT_FORMAT},
        "version": {"const": REPORT_VERSION},
        "shard": {"type": ["object", "null"], "required": ["index", "count"],
                  "properties": {"index": {"type": "integer", "minimum": 1, "maximum": 1000},
                                 "count": {"type": "integer", "minimum": 1,
                                           "maximum": 1000}}},
        "benchmarks": {"type": "object", "additionalProperties": _BENCH,
                       "propertyNames": {"maxLength": 200}},
        "notes": {"type": "array", "items": _STR, "maxItems": 10_000},
        "errors": {"type": "array", "items": _STR, "maxItems": 10_000},
        "proposed_baselines": _PROPOSED,
        "settings_changes": {"type": "array", "maxItems": 10_000, "items": {
            "type": "object", "required": ["benchmark", "setting", "pull_request", "base"],
            "properties": {"benchmark": _STR, "setting": _STR}}},
        "patch_notes": {"type": "array", "items": _STR},
        "accept_changes": {"type": "boolean"},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(SHARD_SCHEMA)


def _where(err) -> str:
    return ".".join(str(p) for p in err.absolute_path) or "(top level)"


def load_shard(path: str, what: str = "shard report") -> dict:
    """A check report (report.json) read as untrusted input: strict JSON,
    then SHARD_SCHEMA; `what` names it in the one-line error."""
    doc = load_json(path, what, regular=True)
    if not isinstance(doc, dict) or doc.get("format") != REPORT_FORMAT or \
            type(doc.get("version")) is not int or doc.get("version") != REPORT_VERSION:
        raise InputError(f"{path}: {what}: not a memprof-ci report (version {REPORT_VERSION}); "
                         f"pass the --report-dir or --results-json output of `memprof-ci check`")
    err = next(iter(sorted(_VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))), None)
    if err is not None:
        msg = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        raise InputError(f"{path}: malformed {what} at {_where(err)}: {printable(msg)}")
    return doc


def merge(paths: list) -> dict:
    """Shard report files or directories -> one decided report."""
    rep = new_report("merge")
    rep["errors"] = []
    seen_shards, count = set(), None
    prop = {"benchmarks": {}}
    any_prop = False
    for d in paths:
        path = os.path.join(d, "report.json") if os.path.isdir(d) else d
        doc = load_shard(path)
        sh = doc.get("shard")
        if sh:
            if count is not None and sh["count"] != count:
                raise InputError(f"{path}: shard {sh['index']}/{sh['count']} does not belong to "
                                 f"a run of {count} shards")
            count = sh["count"]
            if sh["index"] in seen_shards:
                raise InputError(f"{path}: shard {sh['index']}/{count} given twice")
            seen_shards.add(sh["index"])
        for name, b in doc["benchmarks"].items():
            if name in rep["benchmarks"]:
                raise InputError(f"{path}: benchmark {name!r} appears in more than one shard")
            rep["benchmarks"][name] = b
        rep["notes"].extend(doc.get("notes", []))
        rep["errors"].extend(doc.get("errors", []))
        for k in ("settings_changes", "patch_notes"):
            for x in doc.get(k) or []:
                if x not in rep.setdefault(k, []):
                    rep[k].append(x)
        if doc.get("accept_changes"):
            rep["accept_changes"] = True
        if doc.get("proposed_baselines"):
            any_prop = True
            prop["benchmarks"].update(doc["proposed_baselines"].get("benchmarks", {}))
    if count is not None:
        missing = sorted(set(range(1, count + 1)) - seen_shards)
        if missing:
            rep["errors"].append(f"missing shard report(s) "
                                 f"{', '.join(f'{k}/{count}' for k in missing)}")
    if any_prop:
        rep["proposed_baselines"] = prop
    decide(rep)
    return rep


def run(args) -> int:
    check_output_paths(args.out_dir, None)
    rep = merge(args.shards)
    write_reports(rep, args.out_dir, None)
    print(render_terminal(rep, verbose=args.verbose > 0), end="")
    return finish(rep)
