#!/usr/bin/env python3
"""judge_policy.py FACTS: what judge.sh decides, from what it observed.

judge.sh (the plumbing: git, files, the helpers, the harness) writes each
thing it learns into FACTS as it goes, and runs this script whenever it
needs a decision; the script reads every fact so far and prints the whole
decision again, so one pure function, decide(), holds the gate's policy:
the forced errors, the accept label's timing, which removed baselines are
restored, which reference and drift apply, the report's notes and the
final exit status.

FACTS and the decision are NUL-terminated `KEY=VALUE` records (a value may
hold any character but NUL; a list is its key repeated, in order).

Facts (judge.sh writes them; * repeatable, ? optional):
  pr                 1 on pull_request(_target) events, else 0
  accept_label       the accept label's name
  baselines, manifest  the baselines directory and manifest in the repository
  base               the base commit (the tested one on pushes)
  harness_dir?, workflows_dir?  as judge.sh's options
  base_has_manifest  0 when the base commit has no manifest
  run_dirs           how many RUN_DIRs were given; expect_runs? --expect-runs
  present            how many hold a run.json; missing* those that do not
  overhead           1 unless --no-overhead
  unmeasured*        unmeasured.py's benchmarks; unmeasured_error? its last
                     complaint when it failed
  plan_result, build_result  --plan-result, --build-result
  label?             has-label.py --added-by-event: true, false, earlier,
                     or unreadable (it failed); pull requests only
  baselines_changed*, harness_changed*, build_changed*, workflows_changed*
                     the files BASE...HEAD changes there (pull requests)
  sets*              bench_sets.py's lines (`unbaselined|untrusted|removed NAME`)
  reference_from?    with --runs-branch: where reference.py find starts
                     (the merge base, the first parent; `-` for none)
  found*             reference.py find's line; recorded_dir? 1 when it
                     wrote the record's documents
  composed?          1 once reference.py compose ran; compose* its lines
                     (`changed NAME`); strict? 1 when it wrote OUT/strict
  run_exit?, strict_exit?  memprof-ci check's exit status, per pass

Decision (this script prints; keys only once they are decided):
  propose            1: compose gets the proposed baselines
  compose_accept     1: compose gets --accept (the label was added by this event)
  restore*           removed benchmarks whose trusted baseline is put back
  reference          recorded (reference.py find's OUT) or committed
  drift, drift_title none, measured (this run) or recorded (main's record)
  accept             1: the harness gets --accept-changes
  forced_error       1: the verdict is an error whatever the harness says
  note*              the report's notes, in order (after the caller's --note)
  status             the final exit status: 0 pass, 1 regression, 2 error
  report             run or strict: whose report stands
  paragraph?         the line appended to that report when judged twice

judge_policy.py check-args [WORD...] decides the caller's --check-args
(judge.sh splits the string on whitespace): silent and exit 0 when every
word is allowed (CHECK_ARGS), else the one line judge.sh fails with on
stdout and exit 1.

Invariants:
  - the decision depends on FACTS alone: nothing is read, run or written
    but FACTS and stdout;
  - a verdict is never better than any forced error allows: a forced error,
    no run, or a harness exit other than 0/1 is status 2, never 1 or 0;
  - a FACTS that cannot be read, an unknown key, a repeated scalar, a value
    of the wrong form or a helper's line that is not its documented answer
    is one line on stderr naming FACTS and exit 2; an internal error is
    exit 2 too (never 1); otherwise exit 0.
"""
import os
import re
import sys
from dataclasses import dataclass

import judge_notes as say
from capped_read import read_capped

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SETS_KINDS = ("unbaselined", "untrusted", "removed")
LABELS = ("true", "false", "earlier", "unreadable")
MAX_FACTS_BYTES = 16 << 20

SCALARS = {  # key: "bool" | "int" | "text"
    "pr": "bool", "accept_label": "text", "baselines": "text", "manifest": "text",
    "base": "text", "harness_dir": "text", "workflows_dir": "text",
    "base_has_manifest": "bool", "run_dirs": "int", "expect_runs": "int", "present": "int",
    "overhead": "bool", "unmeasured_error": "text", "plan_result": "text",
    "build_result": "text", "label": "text", "reference_from": "text",
    "recorded_dir": "bool", "composed": "bool", "strict": "bool",
    "run_exit": "int", "strict_exit": "int",
}
LISTS = ("missing", "unmeasured", "baselines_changed", "harness_changed", "build_changed",
         "workflows_changed", "sets", "found", "compose")
REQUIRED = ("pr", "accept_label", "baselines", "manifest", "base", "run_dirs", "present",
            "overhead", "plan_result", "build_result")


# The only extra `memprof-ci check` arguments a caller may pass: none of them
# changes what is judged, against which baselines or with which settings.
CHECK_ARGS = ("--strict", "--verbose", "--quiet", "-v", "-vv", "-vvv", "-q", "-qq")
SHOWN_BYTES = 80    # of a refused argument, in judge.sh's line


def check_args_refusal(words):
    """None when every word of --check-args is allowed, else the line that
    refuses the first one that is not (its first SHOWN_BYTES bytes)."""
    for word in words:
        if word not in CHECK_ARGS:
            shown = os.fsencode(word)[:SHOWN_BYTES].decode("utf-8", "surrogateescape")
            return (f"--check-args: '{shown}' is not allowed (only --strict, -v, -q, --verbose, "
                    f"--quiet: the judge alone decides what is judged, against which baselines "
                    f"and settings).")
    return None


class BadFacts(Exception):
    """FACTS, or a helper's answer recorded in it, is not what it must be."""


@dataclass(frozen=True)
class Found:
    """reference.py find's answer: kind recorded, stale or none."""
    kind: str
    commit: str = ""
    distance: str = ""
    kept: tuple = ()
    stale: tuple = ()
    reason: str = ""


@dataclass(frozen=True)
class Facts:
    """What judge.sh observed (see the module's docstring for each key)."""
    scalars: dict
    lists: dict
    label: str = "false"
    unbaselined: tuple = ()
    untrusted: tuple = ()
    removed: tuple = ()
    found: Found = None
    changed: tuple = None  # None until compose ran

    def get(self, key, default=None):
        return self.scalars.get(key, default)

    def items(self, key):
        return self.lists.get(key, ())


@dataclass
class Decision:
    """What judge.sh does next; None/empty where not decided yet."""
    propose: bool = False
    compose_accept: bool = False
    restore: tuple = ()
    reference: str = None
    drift: str = "none"
    drift_title: str = ""
    accept: bool = False
    forced_error: bool = False
    notes: list = None
    status: int = None
    report: str = None
    paragraph: str = None


# ---------------------------------------------------------------- reading FACTS

def parse_records(raw, where):
    """{scalar key: str}, {list key: [str]} from NUL-terminated KEY=VALUE records."""
    if raw and not raw.endswith(b"\0"):
        raise BadFacts(f"{where}: the last record is not NUL-terminated")
    scalars, lists = {}, {}
    for i, rec in enumerate(raw.split(b"\0")[:-1], 1):
        try:
            text = rec.decode("utf-8")
        except UnicodeDecodeError:
            raise BadFacts(f"{where}: record {i} is not UTF-8") from None
        key, eq, value = text.partition("=")
        if not eq:
            raise BadFacts(f"{where}: record {i} is not KEY=VALUE: {text[:60]!r}")
        if key in LISTS:
            lists.setdefault(key, []).append(value)
        elif key not in SCALARS:
            raise BadFacts(f"{where}: record {i}: unknown key {key[:40]!r}")
        elif key in scalars:
            raise BadFacts(f"{where}: record {i}: {key} given twice")
        else:
            scalars[key] = typed(key, value, f"{where}: record {i}")
    missing = [k for k in REQUIRED if k not in scalars]
    if missing:
        raise BadFacts(f"{where}: no {missing[0]}")
    return scalars, {k: tuple(v) for k, v in lists.items()}


def typed(key, value, where):
    kind = SCALARS[key]
    if kind == "bool":
        if value not in ("0", "1"):
            raise BadFacts(f"{where}: {key} must be 0 or 1, got {value[:40]!r}")
        return value == "1"
    if kind == "int":
        if not re.fullmatch(r"[0-9]{1,9}", value):
            raise BadFacts(f"{where}: {key} must be a non-negative integer, got {value[:40]!r}")
        return int(value)
    return value


def parse_sets(lines, where):
    """bench_sets.py's `KIND NAME` lines -> {kind: (names...)}."""
    out = {k: [] for k in SETS_KINDS}
    for line in lines:
        kind, _, name = line.partition(" ")
        if kind not in out or not NAME_RE.fullmatch(name):
            raise BadFacts(f"{where}: sets: bench_sets.py printed an unexpected line: {line[:80]!r}")
        out[kind].append(name)
    return {k: tuple(v) for k, v in out.items()}


def parse_found(lines, where):
    """reference.py find's one tab-separated line -> Found."""
    if len(lines) != 1:
        raise BadFacts(f"{where}: found: reference.py printed an unexpected answer "
                       f"({len(lines)} lines, not 1)")
    line = lines[0]
    fields = line.split("\t")
    dash = lambda s: tuple(n for n in ("" if s == "-" else s).split(",") if n)  # noqa: E731
    if fields[0] == "recorded" and len(fields) == 6 and fields[2].isdigit():
        return Found("recorded", fields[1], fields[2], dash(fields[4]), dash(fields[5]))
    if fields[0] == "stale" and len(fields) == 4 and fields[2].isdigit():
        return Found("stale", fields[1], fields[2], stale=dash(fields[3]))
    if fields[0] == "none" and len(fields) >= 2:
        return Found("none", commit=fields[1], reason=line[len("none\t"):])
    raise BadFacts(f"{where}: found: reference.py printed an unexpected answer: {line[:80]!r}")


def parse_compose(lines, where):
    names = []
    for line in lines:
        kind, _, name = line.partition(" ")
        if kind != "changed" or not NAME_RE.fullmatch(name):
            raise BadFacts(f"{where}: compose: reference.py printed an unexpected line: {line[:80]!r}")
        names.append(name)
    return tuple(names)


def facts_from_bytes(raw, where):
    """Facts from the bytes of a FACTS file named `where` (BadFacts if malformed)."""
    scalars, lists = parse_records(raw, where)
    label = scalars.get("label", "false")
    if label not in LABELS:
        raise BadFacts(f"{where}: label must be one of {', '.join(LABELS)}, got {label[:40]!r}")
    sets = parse_sets(lists.get("sets", ()), where)
    found = None
    if scalars.get("reference_from", "-") != "-":
        found = parse_found(lists.get("found", ()), where)
    changed = parse_compose(lists.get("compose", ()), where) if scalars.get("composed") else None
    return Facts(scalars, lists, label, sets["unbaselined"], sets["untrusted"], sets["removed"],
                 found, changed)


def read_facts(path):
    return facts_from_bytes(read_capped(path, MAX_FACTS_BYTES, BadFacts), path)


# ---------------------------------------------------------------- the policy

class Notes:
    """The ordered notes, and whether any of them forces an error."""

    def __init__(self):
        self.texts, self.forced = [], False

    def add(self, text, error=False):
        self.texts.append(text)
        self.forced = self.forced or error


def run_rules(f, notes):
    """Missing runs, the overhead records, the plan and build jobs."""
    present, expect = f.get("present"), f.get("expect_runs")
    miscounted = expect is not None and present != expect
    if f.items("missing"):
        notes.add(say.runs_missing(expect if expect is not None else f.get("run_dirs"), present,
                                   f.items("missing")), error=True)
    elif miscounted:
        notes.add(say.runs_miscounted(expect, present), error=True)
    if f.get("overhead") and present > 0:
        if f.get("unmeasured_error") is not None:
            notes.add(say.overhead_unreadable(f.get("unmeasured_error")), error=True)
        elif f.items("unmeasured"):
            notes.add(say.overhead_unmeasured(f.items("unmeasured")), error=True)
    if f.get("plan_result") != "success":
        notes.add(say.plan_failed(f.get("plan_result")), error=True)
    if f.get("build_result") != "success":
        notes.add(say.build_failed(f.get("build_result")), error=True)


def pr_rules(f, notes):
    """The label's timing and what else the pull request changes."""
    if not f.get("pr"):
        return
    label = f.get("accept_label")
    if f.label == "unreadable":
        notes.add(say.labels_unreadable(), error=True)
    if f.label == "earlier":
        notes.add(say.label_earlier(label))
    if f.get("harness_dir") and f.items("harness_changed"):
        notes.add(say.harness_changed(f.get("harness_dir"), f.get("base"), f.items("harness_changed")))
    if f.items("build_changed"):
        notes.add(say.build_changed(f.items("build_changed")))
    if f.get("workflows_dir") and f.items("workflows_changed"):
        notes.add(say.workflows_changed(f.get("workflows_dir"), f.items("workflows_changed")))


def restored(f):
    """The removed benchmarks whose trusted baseline is put back among the
    proposed ones: all of them, unless the label added by this event accepts."""
    if f.removed and proposes(f) and f.label != "true":
        return f.removed
    return ()


def proposes(f):
    """The pull request's baselines are proposed iff it changes files there."""
    return bool(f.get("pr")) and bool(f.items("baselines_changed"))


def reference_rules(f, notes, decision):
    """Which reference the run is judged against, and the drift shown."""
    if not f.get("pr"):
        decision.drift, decision.drift_title = "measured", say.DRIFT_PUSH
    start = f.get("reference_from")
    if start is None:
        return
    what = say.WHAT_PR if f.get("pr") else say.WHAT_PUSH
    if start == "-":
        notes.add(say.REFERENCE_NO_PARENT)
        return
    found, base = f.found, f.get("base")
    decision.reference = "recorded" if found.kind == "recorded" else "committed"
    if found.kind == "recorded":
        notes.add(say.reference_recorded(found.commit, found.distance, what, start))
        if found.kept:
            notes.add(say.reference_kept(found.kept))
        if found.stale:
            notes.add(say.reference_stale_some(found.stale, found.commit, base))
    elif found.kind == "stale":
        notes.add(say.reference_stale_all(found.commit, found.distance, what, base))
    else:
        notes.add(say.reference_none(found.reason))
    if f.get("pr") and f.get("recorded_dir"):
        decision.drift, decision.drift_title = "recorded", say.drift_recorded(found.commit)


def compose_rules(f, notes, decision):
    """What the label accepts once compose said which baselines change."""
    label = f.get("accept_label")
    changed = f.changed
    if changed is None:
        return
    if f.items("baselines_changed") and not changed:
        notes.add(say.formatting_only(f.get("baselines")))
    if f.label == "true" and changed:
        decision.accept = True
        notes.add(say.label_accepts(label, changed))
    elif f.label == "true":
        notes.add(say.nothing_to_accept(label, f.get("baselines")))
    if f.untrusted:
        if decision.accept:
            notes.add(say.untrusted_accepted(f.untrusted, label))
        else:
            notes.add(say.untrusted(f.untrusted, label), error=True)
    if f.get("strict"):
        notes.add(say.judged_twice(changed, label))


def normalised(code):
    """A harness exit status as a verdict: 0 and 1 are theirs, anything else 2."""
    return code if code in (0, 1) else 2


def final_status(f, decision):
    """The exit status once the harness ran (or could not: no run at all)."""
    if f.get("present") == 0:
        decision.status, decision.report = 2, "none"
    elif f.get("run_exit") is not None:
        status, decision.report = normalised(f.get("run_exit")), "run"
        if f.get("strict") and f.get("strict_exit") is not None:
            strict = normalised(f.get("strict_exit"))
            if strict > status:
                decision.paragraph = say.stricter_report(f.changed or (), status)
                status, decision.report = strict, "strict"
            else:
                decision.paragraph = say.stricter_run(f.changed or (), strict)
        decision.status = status
    if decision.status is not None and decision.forced_error:
        decision.status = 2


def decide(f):
    """The gate's decision on the facts so far (see the module's docstring)."""
    decision, notes = Decision(), Notes()
    decision.propose = proposes(f)
    decision.compose_accept = f.label == "true"
    if not f.get("base_has_manifest", True):
        notes.add(say.no_base_manifest(f.get("manifest")))
    run_rules(f, notes)
    pr_rules(f, notes)
    if f.unbaselined:
        notes.add(say.unbaselined(f.unbaselined, bool(f.get("pr"))), error=True)
    if f.removed and decision.propose:
        decision.restore = restored(f)
        notes.add(say.removal(f.removed, f.get("accept_label"), accepted=f.label == "true"))
    reference_rules(f, notes, decision)
    compose_rules(f, notes, decision)
    decision.notes, decision.forced_error = notes.texts, notes.forced
    final_status(f, decision)
    return decision


# ---------------------------------------------------------------- the answer

def records(decision):
    """The decision as NUL-terminated KEY=VALUE records (see the docstring)."""
    d = decision
    out = [("propose", int(d.propose)), ("compose_accept", int(d.compose_accept))]
    out += [("restore", n) for n in d.restore]
    if d.reference is not None:
        out.append(("reference", d.reference))
    out += [("drift", d.drift), ("drift_title", d.drift_title), ("accept", int(d.accept)),
            ("forced_error", int(d.forced_error))]
    out += [("note", n) for n in d.notes]
    for key in ("status", "report", "paragraph"):
        if getattr(d, key) is not None:
            out.append((key, getattr(d, key)))
    text = "".join(f"{k}={v}\0" for k, v in out)
    return text.encode("utf-8", "surrogateescape")


def main(argv):
    if len(argv) >= 2 and argv[1] == "check-args":
        refusal = check_args_refusal(argv[2:])
        if refusal is None:
            return 0
        sys.stdout.buffer.write((refusal + "\n").encode("utf-8", "surrogateescape"))
        return 1
    if len(argv) != 2:
        print("usage: judge_policy.py FACTS | judge_policy.py check-args [WORD...]",
              file=sys.stderr)
        return 2
    try:
        decision = decide(read_facts(argv[1]))
    except BadFacts as err:
        print(f"judge_policy: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # an internal error is an error verdict, never a regression
        print(f"judge_policy: internal error: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(records(decision))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
