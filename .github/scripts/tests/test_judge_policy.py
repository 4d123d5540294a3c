"""Unit tests of judge_policy.py, the gate's policy that judge.sh asks for
every decision: one test (or a few) per rule. judge.sh end to end, with the
real harness, is tested in test_judge.py and test_recorded_runs.py.

Run with: /usr/bin/python3 -m pytest .github/scripts/tests/test_judge_policy.py -q
"""
import json
import os
import subprocess
import sys

import pytest

from ghci_helpers import PYTHON, SCRIPTS

sys.path.insert(0, str(SCRIPTS))
import judge_notes  # noqa: E402
import judge_policy  # noqa: E402

LABEL = "memprof-ci: accept"
BASE = "b" * 40
REC = "c" * 40
FROM = "d" * 40

PUSH = {"pr": "0", "accept_label": LABEL, "baselines": "baselines", "manifest": "bench.toml",
        "base": BASE, "run_dirs": "1", "present": "1", "overhead": "0", "plan_result": "success",
        "build_result": "success", "base_has_manifest": "1"}
PR = {**PUSH, "pr": "1", "label": "false", "harness_dir": "harness", "workflows_dir": ".github/workflows"}


def encode(facts):
    """{key: value or [values]} as FACTS records."""
    out = []
    for key, value in facts.items():
        for v in value if isinstance(value, list) else [value]:
            out.append(f"{key}={v}\0")
    return "".join(out).encode()


def decide(base=PR, **extra):
    return judge_policy.decide(judge_policy.facts_from_bytes(encode({**base, **extra}), "FACTS"))


def composed(changed=(), strict=False, **extra):
    """Facts once reference.py compose ran (and answered `changed NAME` per name)."""
    more = {"composed": "1", "compose": [f"changed {n}" for n in changed]}
    if strict:
        more["strict"] = "1"
    return {**more, **extra}


def has_note(decision, text):
    return any(text in n for n in decision.notes)


# ---------------------------------------------------------------- a clean run

def test_a_clean_pull_request_has_no_note_and_its_harness_verdict_stands():
    for code in (0, 1):
        d = decide(**composed(), run_exit=str(code))
        assert d.notes == [] and not d.forced_error and d.status == code and d.report == "run"
        assert not d.accept and not d.propose and d.restore == ()


# ---------------------------------------------------------------- forced errors

def test_a_missing_run_directory_forces_an_error():
    d = decide(present="1", run_dirs="2", missing=["shard-2"], run_exit="0")
    assert d.forced_error and d.status == 2
    assert d.notes == [judge_notes.runs_missing(2, 1, ["shard-2"])]
    assert "missing: `shard-2`" in d.notes[0]


def test_fewer_runs_than_expected_force_an_error():
    d = decide(expect_runs="3", run_exit="0")
    assert d.forced_error and d.status == 2
    assert d.notes == ["Incomplete run: expected 3 run director(ies), got 1. The verdict is an error."]
    assert not decide(expect_runs="1", run_exit="0").forced_error


def test_a_benchmark_without_an_overhead_record_forces_an_error_when_the_gate_measures_it():
    d = decide(overhead="1", unmeasured=["a", "b"], run_exit="0")
    assert d.forced_error and d.status == 2 and "`a`, `b`" in d.notes[0]
    assert not decide(overhead="0", unmeasured=["a"], run_exit="0").forced_error


def test_unreadable_overhead_records_force_an_error():
    d = decide(overhead="1", unmeasured_error="unmeasured: ValueError: x", run_exit="0")
    assert d.forced_error and d.status == 2
    assert d.notes == [judge_notes.overhead_unreadable("unmeasured: ValueError: x")]


@pytest.mark.parametrize("job", ["plan_result", "build_result"])
def test_a_plan_or_build_job_that_did_not_succeed_forces_an_error(job):
    d = decide(**{job: "failure"}, run_exit="0")
    assert d.forced_error and d.status == 2 and "ended with 'failure'" in d.notes[0]


@pytest.mark.parametrize("pr", [PR, PUSH], ids=["pr", "push"])
def test_a_benchmark_without_a_baseline_forces_an_error(pr):
    d = decide(pr, sets=["unbaselined new"], run_exit="0")
    where = "this pull request" if pr is PR else "this commit"
    assert d.forced_error and d.status == 2
    assert d.notes == [judge_notes.unbaselined(["new"], pr is PR)] and where in d.notes[0]


def test_unreadable_labels_force_an_error_and_accept_nothing():
    d = decide(label="unreadable", baselines_changed=["baselines/a.json"], **composed(["a"]), run_exit="0")
    assert d.forced_error and d.status == 2 and not d.compose_accept and not d.accept
    assert d.notes[0] == judge_notes.labels_unreadable()


def test_an_untrusted_baseline_is_an_error_without_the_label_and_the_reference_with_it():
    d = decide(sets=["untrusted a"], baselines_changed=["baselines/a.json"], **composed(["a"]), run_exit="0")
    assert d.forced_error and d.status == 2 and has_note(d, "only with the label")
    d = decide(label="true", sets=["untrusted a"], baselines_changed=["baselines/a.json"],
               **composed(["a"]), run_exit="0")
    assert not d.forced_error and d.status == 0 and has_note(d, "makes this pull request's baseline")


@pytest.mark.parametrize("code,status", [(0, 0), (1, 1), (2, 2), (3, 2), (124, 2), (255, 2)])
def test_the_harness_exit_status_is_normalised_and_an_error_is_never_a_regression(code, status):
    assert decide(run_exit=str(code)).status == status


def test_no_run_at_all_is_an_error():
    d = decide(present="0", missing=["run"])
    assert d.status == 2 and d.report == "none"
    # Even with nothing else forcing it (judge.sh always has a missing run then).
    d = decide(present="0")
    assert d.status == 2 and not d.forced_error


# ---------------------------------------------------------------- the label's timing

def test_the_label_added_by_this_event_accepts_the_changed_baselines():
    d = decide(label="true", baselines_changed=["baselines/a.json"], **composed(["a"]), run_exit="0")
    assert d.compose_accept and d.accept and d.propose
    assert d.notes == [judge_notes.label_accepts(LABEL, ["a"])]


def test_a_label_added_before_this_event_accepts_nothing():
    d = decide(label="earlier", baselines_changed=["baselines/a.json"], **composed(["a"], strict=True))
    assert not d.compose_accept and not d.accept
    assert d.notes[0] == judge_notes.label_earlier(LABEL)
    assert d.notes[1] == judge_notes.judged_twice(["a"], LABEL)


def test_the_label_without_a_changed_baseline_has_nothing_to_accept():
    d = decide(label="true", **composed())
    assert d.compose_accept and not d.accept
    assert d.notes == [judge_notes.nothing_to_accept(LABEL, "baselines")]


def test_no_label_is_read_on_a_push():
    d = decide(PUSH, **composed(["a"]))
    assert not d.compose_accept and not d.accept and not d.propose and d.notes == []
    # A push proposes no baselines, so restores nothing, whatever it changed.
    d = decide(PUSH, baselines_changed=["baselines/a.json"], sets=["removed a"])
    assert not d.propose and d.restore == () and d.notes == []


# ---------------------------------------------------------------- removed baselines

def test_a_removed_baseline_is_restored_without_the_label():
    d = decide(sets=["removed a", "removed b"], baselines_changed=["baselines/a.json"])
    assert d.restore == ("a", "b")
    assert d.notes == [judge_notes.removal(["a", "b"], LABEL, accepted=False)]
    assert "judged as missing" in d.notes[0]


@pytest.mark.parametrize("label", ["earlier", "unreadable"])
def test_only_the_label_added_by_this_event_spares_a_removal(label):
    assert decide(label=label, sets=["removed a"], baselines_changed=["baselines/a.json"]).restore == ("a",)


def test_the_label_accepts_a_removal():
    d = decide(label="true", sets=["removed a"], baselines_changed=["baselines/a.json"])
    assert d.restore == () and d.notes == [judge_notes.removal(["a"], LABEL, accepted=True)]


def test_nothing_is_restored_when_no_baseline_file_changed():
    d = decide(sets=["removed a"])
    assert d.restore == () and not d.propose and d.notes == []


# ---------------------------------------------------------------- the reference and the drift

def test_a_push_shows_the_drift_of_its_own_measurement():
    d = decide(PUSH)
    assert (d.drift, d.drift_title) == ("measured", judge_notes.DRIFT_PUSH) and d.reference is None


def test_the_recorded_run_of_the_merge_base_is_the_reference():
    d = decide(reference_from=FROM, found=[f"recorded\t{REC}\t0\t2\t-\t-"], recorded_dir="1")
    assert d.reference == "recorded" and d.drift == "recorded"
    assert d.drift_title == judge_notes.drift_recorded(REC) and REC[:12] in d.drift_title
    assert d.notes == [judge_notes.reference_recorded(REC, "0", judge_notes.WHAT_PR, FROM)]
    assert "(distance 0)" in d.notes[0]


def test_a_nearer_ancestors_record_names_its_distance_kept_and_stale_benchmarks():
    d = decide(PUSH, reference_from=FROM, found=[f"recorded\t{REC}\t3\t1\tk1,k2\ts1"])
    assert d.reference == "recorded" and d.drift == "measured"
    assert d.notes == [judge_notes.reference_recorded(REC, "3", judge_notes.WHAT_PUSH, FROM),
                       judge_notes.reference_kept(["k1", "k2"]),
                       judge_notes.reference_stale_some(["s1"], REC, BASE)]
    assert "3 commit(s) before it" in d.notes[0] and FROM[:12] in d.notes[0]
    # The drift of a push is its own measurement's, even beside a record.
    assert decide(PUSH, reference_from=FROM, found=[f"recorded\t{REC}\t3\t1\t-\t-"],
                  recorded_dir="1").drift == "measured"


def test_a_record_stale_for_every_benchmark_falls_back_to_the_committed_baselines():
    d = decide(reference_from=FROM, found=[f"stale\t{REC}\t2\ta,b"])
    assert d.reference == "committed"
    assert d.notes == [judge_notes.reference_stale_all(REC, "2", judge_notes.WHAT_PR, BASE)]


def test_no_record_falls_back_with_its_reason():
    d = decide(reference_from=FROM, found=["none\tno recorded run among the 51 first-parent commits"])
    assert d.reference == "committed" and d.drift == "none"
    assert d.notes == ["Reference: the committed baselines (the fallback): no recorded run among "
                       "the 51 first-parent commits."]


def test_a_push_without_a_parent_falls_back():
    d = decide(PUSH, reference_from="-")
    assert d.reference is None and d.notes == [judge_notes.REFERENCE_NO_PARENT]


# ---------------------------------------------------------------- the notes of the pull request's changes

def test_changes_to_the_harness_build_and_workflows_are_noted():
    d = decide(harness_changed=["harness/x.py", "harness/y.py"], build_changed=["Makefile"],
               workflows_changed=[".github/workflows/gate.yml"])
    assert d.notes == [judge_notes.harness_changed("harness", BASE, ["harness/x.py", "harness/y.py"]),
                       judge_notes.build_changed(["Makefile"]),
                       judge_notes.workflows_changed(".github/workflows", [".github/workflows/gate.yml"])]
    assert "(2 file(s) under `harness/`" in d.notes[0] and BASE[:12] in d.notes[0]
    assert not d.forced_error
    assert decide(PUSH, harness_dir="harness", harness_changed=["harness/x.py"], build_changed=["Makefile"],
                  workflows_dir="w", workflows_changed=["w/a.yml"]).notes == []


def test_a_base_without_a_manifest_is_noted():
    d = decide(base_has_manifest="0")
    assert d.notes == [judge_notes.no_base_manifest("bench.toml")] and not d.forced_error


def test_a_formatting_only_change_of_the_baselines_is_noted():
    d = decide(baselines_changed=["baselines/a.json"], **composed())
    assert d.notes == [judge_notes.formatting_only("baselines")] and not d.accept


def test_a_changed_baseline_without_the_label_is_judged_twice_and_the_worse_verdict_stands():
    d = decide(baselines_changed=["baselines/a.json"], **composed(["a"], strict=True),
               run_exit="0", strict_exit="1")
    assert d.notes == [judge_notes.judged_twice(["a"], LABEL)]
    assert (d.status, d.report) == (1, "strict")
    assert d.paragraph == judge_notes.stricter_report(["a"], 0) and "was a pass" in d.paragraph
    d = decide(baselines_changed=["baselines/a.json"], **composed(["a"], strict=True),
               run_exit="1", strict_exit="1")
    assert (d.status, d.report) == (1, "run") and d.paragraph == judge_notes.stricter_run(["a"], 1)
    d = decide(baselines_changed=["baselines/a.json"], **composed(["a"], strict=True),
               run_exit="1", strict_exit="7")
    assert (d.status, d.report) == (2, "strict")


def test_the_notes_keep_judge_shs_order():
    d = decide(base_has_manifest="0", plan_result="cancelled", label="earlier",
               harness_changed=["harness/x.py"], sets=["removed r", "unbaselined u", "untrusted t"],
               baselines_changed=["baselines/t.json"], reference_from=FROM,
               found=["none\tthere is no data branch yet"], **composed(["t"], strict=True))
    starts = ["The base commit has no", "The plan job ended", "The label `", "This pull request changes the harness",
              "Benchmarks without a baseline", "This pull request removes", "Reference: the committed",
              "The base branch runs", "This pull request changes the baseline of"]
    assert len(d.notes) == len(starts)
    for note, start in zip(d.notes, starts):
        assert note.startswith(start), (note, start)


def test_every_text_is_the_one_judge_sh_wrote():
    """golden/judge_notes.json holds the 28 notes and 2 paragraphs of
    judge.sh before the policy moved out of it, each evaluated by that
    bash with the values below (in the order of that script)."""
    golden = json.loads((SCRIPTS / "tests" / "golden" / "judge_notes.json").read_text())
    n, what = judge_notes, judge_notes.WHAT_PR
    harness = [f"harness/m{i}.py" for i in range(1, 26)]
    texts = [
        n.no_base_manifest("benchmarks/benchmarks.toml"), n.REFERENCE_NO_PARENT,
        n.reference_recorded(REC, "0", what, FROM), n.reference_recorded(REC, "3", what, FROM),
        n.reference_kept(["k1", "k`2"]), n.reference_stale_some(["s1", "s2"], REC, BASE),
        n.reference_stale_all(REC, "3", what, BASE),
        n.reference_none("no recorded run among the 51 first-parent commits"),
        n.runs_missing(3, 1, ["run-b", "run-c"]), n.runs_miscounted(3, 1),
        n.overhead_unmeasured(["u1", "u2"]),
        n.overhead_unreadable("unmeasured: ValueError: run.json: `benchmarks` must be an object"),
        n.plan_failed("failure"), n.build_failed("cancelled"), n.labels_unreadable(), n.label_earlier(LABEL),
        n.harness_changed("harness", BASE, harness), n.build_changed(["Makefile", "runtime-patch/x.patch"]),
        n.workflows_changed(".github/workflows", [".github/workflows/gate.yml"]),
        n.unbaselined(["new1", "new2"], True), n.removal(["gone"], LABEL, accepted=True),
        n.removal(["gone"], LABEL, accepted=False), n.formatting_only("baselines"),
        n.label_accepts(LABEL, ["a", "b"]), n.nothing_to_accept(LABEL, "baselines"),
        n.untrusted_accepted(["t"], LABEL), n.untrusted(["t"], LABEL), n.judged_twice(["a", "b"], LABEL),
        n.stricter_report(["a", "b"], 0), n.stricter_run(["a", "b"], 1)]
    assert len(golden) == len(texts) == 30
    for got, want in zip(texts, golden):
        assert got == want


def test_file_lists_show_twenty_names_in_backticks():
    names = [f"n`{i}" for i in range(23)] + [""]
    shown = judge_notes.list_files(names)
    assert shown.startswith("`n0`, `n1`") and shown.endswith("`n19` and 3 more")
    assert judge_notes.list_files(["a"]) == "`a`"


# ---------------------------------------------------------------- the command and bad input

def run_policy(tmp_path, raw):
    path = tmp_path / "facts"
    path.write_bytes(raw)
    return subprocess.run([PYTHON, str(SCRIPTS / "judge_policy.py"), str(path)], capture_output=True), path


def test_the_command_prints_the_decision_as_records(tmp_path):
    proc, _ = run_policy(tmp_path, encode({**PR, "sets": ["removed a"], "baselines_changed": ["baselines/x"],
                                           "run_exit": "1"}))
    assert proc.returncode == 0 and proc.stderr == b""
    recs = [r.decode().partition("=")[::2] for r in proc.stdout.split(b"\0")[:-1]]
    assert ("restore", "a") in recs and ("status", "1") in recs and ("propose", "1") in recs
    assert [v for k, v in recs if k == "note"] == [judge_notes.removal(["a"], LABEL, accepted=False)]


@pytest.mark.parametrize("raw,says", [
    (encode({**PR, "colour": "blue"}), "unknown key 'colour'"),
    (encode({**PR, "pr": "yes"}), "pr must be 0 or 1"),
    (encode({**PR, "present": "-1"}), "present must be a non-negative integer"),
    (encode(PR) + b"pr=1\0", "pr given twice"),
    (encode(PR)[:-1], "not NUL-terminated"),
    (encode({k: v for k, v in PR.items() if k != "base"}), "no base"),
    (encode(PR) + b"\xff=1\0", "not UTF-8"),
    (encode(PR) + b"novalue\0", "not KEY=VALUE"),
    (encode({**PR, "label": "maybe"}), "label must be one of"),
    (encode({**PR, "sets": "gone a"}), "bench_sets.py printed an unexpected line"),
    (encode({**PR, "sets": "removed ../x"}), "bench_sets.py printed an unexpected line"),
    (encode({**PR, "reference_from": FROM}), "reference.py printed an unexpected answer"),
    (encode({**PR, "reference_from": FROM, "found": "recorded\tx\t1"}), "unexpected answer"),
    (encode({**PR, "composed": "1", "compose": "kept a"}), "reference.py printed an unexpected line"),
], ids=["key", "bool", "int", "twice", "unterminated", "required", "utf8", "no-equals", "label", "sets-kind",
        "sets-name", "found-missing", "found-fields", "compose"])
def test_bad_facts_are_one_line_naming_the_file_and_exit_2(tmp_path, raw, says):
    proc, path = run_policy(tmp_path, raw)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b""
    assert err.count("\n") == 1 and err.startswith(f"judge_policy: {path}") and says in err, err


def test_an_unreadable_facts_file_is_exit_2(tmp_path):
    proc = subprocess.run([PYTHON, str(SCRIPTS / "judge_policy.py"), str(tmp_path / "nothing")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith(f"judge_policy: {tmp_path / 'nothing'}: ")


def test_an_internal_error_is_exit_2_never_1(tmp_path, monkeypatch, capsys):
    path = tmp_path / "facts"
    path.write_bytes(encode(PR))

    def broken(facts):
        raise KeyError("bug")
    monkeypatch.setattr(judge_policy, "decide", broken)
    assert judge_policy.main(["judge_policy.py", str(path)]) == 2
    assert "internal error" in capsys.readouterr().err


# ---------------------------------------------------------------- --check-args

@pytest.mark.parametrize("words", [[], ["--strict"], ["-v", "--quiet"], ["-vvv", "-qq", "--verbose"]])
def test_check_args_allows_only_flags_that_change_nothing_judged(words):
    assert judge_policy.check_args_refusal(words) is None


@pytest.mark.parametrize("words,named", [
    (["--baselines", ".memprof-ci-tested/baselines"], "--baselines"),
    (["--strict", "-k", "b"], "-k"),
    (["-m", "gc_totals"], "-m"),
    (["--strict", "--baselines=.memprof-ci-tested/baselines"], "--baselines=.memprof-ci-tested/baselines"),
    (["--", "--deselect", "x"], "--"),
    (["-vvvv"], "-vvvv"),
])
def test_check_args_refuses_the_first_other_word_in_one_line(words, named):
    why = judge_policy.check_args_refusal(words)
    assert why.startswith(f"--check-args: '{named}' is not allowed (only --strict, -v, -q,")
    assert "\n" not in why


def test_check_args_shows_at_most_80_bytes_of_a_refused_word():
    word = "--" + "é" * 100
    why = judge_policy.check_args_refusal([word])
    shown = why.split("'")[1]
    assert os.fsencode(shown) == os.fsencode(word)[:judge_policy.SHOWN_BYTES]
    assert judge_policy.SHOWN_BYTES == 80


def test_the_check_args_command_is_silent_when_allowed_and_one_line_exit_1_when_not():
    ok = subprocess.run([PYTHON, str(SCRIPTS / "judge_policy.py"), "check-args", "--strict", "-v"],
                        capture_output=True)
    assert ok.returncode == 0 and ok.stdout == b"" and ok.stderr == b""
    no = subprocess.run([PYTHON, str(SCRIPTS / "judge_policy.py"), "check-args", "-q", "-k", "b"],
                        capture_output=True, text=True)
    assert no.returncode == 1 and no.stderr == ""
    assert no.stdout == judge_policy.check_args_refusal(["-k"]) + "\n"
