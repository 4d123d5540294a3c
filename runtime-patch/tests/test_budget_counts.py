"""Allocation budgets (runtime-patch/src/memprof_budgets.c and the
compiler's translcore.ml): a function annotated [@zero_alloc] or
[@memprof.words_per_call N] is counted per call, exactly, in the profile's
"budgets" section (format version 6).

programs/budgets.ml measures each annotated function's calls itself with
Gc.minor_words around each call; the profile must say the same."""

import os
import subprocess

import pytest

from runtime_testlib import PROGRAMS, profile, run

N = 20_000


def own_counts(stdout):
    """{function: (calls, words, max)} as the program measured them."""
    out = {}
    for line in stdout.splitlines():
        fn, calls, words, most = line.split()
        out[fn] = (int(calls), int(words), int(most))
    return out


def line_of(needle):
    text = (PROGRAMS / "budgets.ml").read_text()
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture(scope="module")
def exe(build):
    return build("budgets")


@pytest.mark.parametrize("points", [None, "on"])
@pytest.mark.parametrize("runparam", ["s=32k", "s=4M"])
def test_counts_per_call_are_the_programs_own_measurement(exe, tmp_path, points, runparam):
    prof, _, res = profile(exe, N, rate=1e-4, tmp=tmp_path, points=points,
                           runparam=runparam)
    assert prof["version"] == 6
    got = {b["function"]: b for b in prof["budgets"]}
    # the unannotated function has no entry; the four annotated ones do
    assert sorted(got) == ["Budgets.memo", "Budgets.pair", "Budgets.pick", "Budgets.scale"]
    for fn, (calls, words, most) in own_counts(res.stdout).items():
        b = got[fn]
        assert (b["calls"], b["words"], b["max_words"], b["other_domain_calls"]) == \
            (calls, words, most, 0), fn
    # what each call allocates, known from the source: nothing; a tuple;
    # a bucket on one call in a thousand; a tuple unless it raises (every
    # eighth call raises, and is counted)
    assert [(got[f]["calls"], got[f]["words"], got[f]["max_words"]) for f in
            ("Budgets.scale", "Budgets.pair", "Budgets.pick")] == \
        [(N, 0, 0), (N, 3 * N, 3), (N, 3 * (N - N // 8), 3)]
    assert got["Budgets.memo"]["max_words"] == 4
    assert got["Budgets.memo"]["words"] == 4 * (N // 1000 + 1)
    assert [(b["file"], b["line"], b["attribute"], b["limit"]) for b in prof["budgets"]] == [
        ("budgets.ml", line_of("let[@zero_alloc] scale"), "zero_alloc", 0),
        ("budgets.ml", line_of("let[@memprof.words_per_call 3] pair"), "words_per_call", 3),
        ("budgets.ml", line_of("let[@memprof.words_per_call 8] memo"), "words_per_call", 8),
        ("budgets.ml", line_of("let[@memprof.words_per_call 3] pick"), "words_per_call", 3)]


def test_without_the_tracker_the_program_runs_as_before(exe):
    res = run(exe, N)
    assert own_counts(res.stdout)["Budgets.pair"] == (N, 3 * N, 3)


def test_bytecode_compiles_annotations_without_counting(build, tmp_path):
    byte = build("budgets", backend="bytecode")
    prof, _, res = profile(byte, 100, rate=1e-4, tmp=tmp_path)
    assert prof["version"] == 3 and "budgets" not in prof
    # (bytecode's Gc.minor_words boxes its result, so the program's own
    # figures are not the native ones)
    assert own_counts(res.stdout)["Budgets.pair"][0] == 100


@pytest.mark.parametrize("src, warning", [
    ("let[@zero_alloc] x = Sys.opaque_identity 3\n", "Warning 53"),
    ("let[@memprof.words_per_call \"x\"] f x = (x, x)\n", "Warning 47"),
    ("let[@memprof.words_per_call (-1)] f x = (x, x)\n", "Warning 47"),
])
def test_a_misplaced_or_malformed_annotation_is_a_warning(runtime_bin, tmp_path, src, warning):
    (tmp_path / "m.ml").write_text(src)
    res = subprocess.run([str(runtime_bin / "ocamlopt"), "-c", "m.ml"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.returncode == 0 and warning in res.stderr, res.stderr


def test_a_function_named_in_OCAMLMEMPROF_COUNT_is_counted_without_a_limit(
        runtime_bin, tmp_path):
    """A dependency's function cannot be annotated: compiled with its name
    in OCAMLMEMPROF_COUNT it is counted per call, as "counted", limit 0;
    an annotated function listed too keeps its annotation, a name that
    matches nothing changes nothing, and spaces around names and empty
    names are ignored."""
    (tmp_path / "budgets.ml").write_text((PROGRAMS / "budgets.ml").read_text())
    env = {**os.environ, "OCAMLMEMPROF_COUNT": "Budgets.pair, Budgets.plain ,,Nowhere.f"}
    subprocess.run([str(runtime_bin / "ocamlopt"), "-g", "budgets.ml", "-o", "b.exe"],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    prof, _, _ = profile(tmp_path / "b.exe", N, rate=1e-4, tmp=tmp_path)
    got = {b["function"]: b for b in prof["budgets"]}
    assert sorted(got) == ["Budgets.memo", "Budgets.pair", "Budgets.pick", "Budgets.plain",
                           "Budgets.scale"]
    plain = got["Budgets.plain"]
    # each call conses one list cell: a header and two fields
    assert (plain["attribute"], plain["limit"], plain["line"]) == \
        ("counted", 0, line_of("let plain x"))
    assert (plain["calls"], plain["words"], plain["max_words"]) == (N, 3 * N, 3)
    assert (got["Budgets.pair"]["attribute"], got["Budgets.pair"]["limit"]) == \
        ("words_per_call", 3)
