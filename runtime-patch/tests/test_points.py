"""Exact counts per allocation point (OCAMLMEMPROF points=on;
runtime-patch/src/memprof_points.c): a program with known allocation is
counted exactly at each of its points, whatever the minor heap's size, and
counting moves no collection; two domains count every block once.

A point is [file, line, first char, last char, function, minor blocks,
minor words, major blocks, major words, promoted blocks, promoted words,
live blocks, live words] (profile-format.md, "Allocation points")."""

import subprocess

import pytest

from runtime_testlib import PROGRAMS, profile, read_profile, run
from runtime_testlib import points_minor_words as minor_words
from runtime_testlib import points_promoted_words as promoted_words

N, K, M = 3000, 2000, 11
RUNPARAMS = ("s=32k", "s=4M")
KEYS = ("minor_words", "promoted_words", "major_words",
        "minor_collections", "major_collections")


def points(prof):
    """{(file, line, function, first char): counts} of the profile's
    points (a point listed by several units adds up); the pseudo points
    under ("", 0, name, 0)."""
    out = {}
    for p in prof["points"]["points"]:
        key = (p[0], p[1], p[4], p[2])
        prev = out.get(key)
        counts = p[5:]
        out[key] = counts if prev is None else [
            None if a is None or b is None else a + b for a, b in zip(prev, counts)]
    return out


def calls(prof):
    """{(file, line, function, first char): counts} of the profile's call
    points (allocation in C, per OCaml call)."""
    out = {}
    for p in prof["points"]["calls"]:
        key = (p[0], p[1], p[4], p[2])
        prev = out.get(key)
        out[key] = p[5:] if prev is None else [a + b for a, b in zip(prev, p[5:])]
    return out


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def unprofiled_counters(exe, args, runparam):
    res = run(exe, *args, runparam=f"{runparam},v=0x400")
    stats = dict(line.split(": ") for line in res.stderr.splitlines() if ": " in line)
    return {k: int(stats[k]) for k in KEYS}


@pytest.fixture(scope="module")
def known(build):
    return build("points_known"), (PROGRAMS / "points_known.ml").read_text()


@pytest.mark.parametrize("runparam", RUNPARAMS)
def test_known_allocation_is_counted_exactly_at_each_point(known, tmp_path, runparam):
    exe, src = known
    small = (N, K, 1000, 40, M, 3)
    large = (N, K, 2000, 80, M, 7)
    runs, in_c = {}, {}
    for args in (small, large):
        d = tmp_path / "-".join(map(str, args))
        d.mkdir()
        prof, _, _ = profile(exe, *args, rate=1e-4, tmp=d, points="on",
                             runparam=runparam)
        assert prof["points"]["live"] is True and prof["points"]["complete"]
        # Counting moves no collection: the GC's own counters are the
        # unprofiled run's.
        assert {k: prof["gc"][k] for k in KEYS} == unprofiled_counters(exe, args, runparam)
        # Every word allocated in the minor heap is some point's.
        assert minor_words(prof) == prof["gc"]["minor_words"]
        runs[args] = points(prof)
        in_c[args] = calls(prof)
    tuple_line = line_of(src, "Sys.opaque_identity (i, -i)")
    float_line = line_of(src, "Sys.opaque_identity (float_of_int i")
    for args, pts in runs.items():
        tup = [c for (f, ln, fn, _), c in pts.items()
               if f == "points_known.ml" and ln == tuple_line]
        # the tuple, then the list cell that keeps it: both kept to the
        # end, so each is promoted once and live at exit
        assert sorted(tup) == [[N, 3 * N, 0, 0, N, 3 * N, N, 3 * N]] * 2, tup
        flo = sorted(c[:4] for (f, ln, fn, _), c in pts.items()
                     if f == "points_known.ml" and ln == float_line)
        assert flo == [[K, 2 * K, 0, 0], [K, 3 * K, 0, 0]], flo     # box, cell
        assert pts[("", 0, "(unmarshal)", 0)][:4] == [M, 3 * M, 0, 0]
    s, lg = runs[small], runs[large]
    delta = lambda name: [b - a for a, b in zip(s[("", 0, name, 0)][:4], lg[("", 0, name, 0)][:4])]
    # What C allocates counts at the OCaml call that ran it: the array goes
    # straight to the major heap; the string is made in the minor heap
    # (40 bytes in 6 words and a header, 80 in 11) and promoted by the
    # collection it is still in use at; neither is live at exit.
    at_call = lambda cs, needle: [c for k, c in cs.items()
                                  if k[:2] == ("points_known.ml", line_of(src, needle))]
    for args, pts in in_c.items():
        a, b = args[2], args[3]
        assert at_call(pts, "Array.make a 0") == [[0, 0, 1, a + 1, 0, 0, 0, 0]]
        assert at_call(pts, "Bytes.create b") == [[1, 1 + (b + 8) // 8, 0, 0, 1, 1 + (b + 8) // 8, 0, 0]]
    assert delta("(runtime)") == [0, 0, 0, 0]
    assert delta("(Obj.dup)") == [4, 8, 0, 0]


def test_counts_do_not_depend_on_the_minor_heap(known, tmp_path):
    exe, _ = known
    allocated = []
    for runparam in RUNPARAMS:
        d = tmp_path / runparam
        d.mkdir()
        prof, _, _ = profile(exe, N, K, 1000, 40, M, 3, rate=1e-4, tmp=d,
                             points="on", runparam=runparam)
        allocated.append({k: c[:4] for k, c in points(prof).items()})
        allocated.append({k: c[:4] for k, c in calls(prof).items()})
    assert allocated[0] == allocated[2] and allocated[1] == allocated[3]
    assert ("points_known.ml", line_of(PROGRAMS.joinpath("points_known.ml").read_text(),
                                      "Array.make a 0")) in {k[:2] for k in allocated[1]}


def test_a_message_that_fails_part_way_counts_every_minor_word_once(build, tmp_path):
    """Marshal.from_bytes reads a small message into one minor-heap block
    and cuts it into the message's blocks as it goes; a message that
    fails after its first two blocks leaves the rest of that block
    unused, over words whose bits are all set (the program fills the
    heap with them first). The rest is counted as unmarshalled, and
    every minor word is counted once."""
    n = 40
    exe = build("points_bad_marshal")
    prof, _, res = profile(exe, n, rate=1e-4, tmp=tmp_path, points="on")
    assert res.stdout.split() == ["failed"]
    assert minor_words(prof) == prof["gc"]["minor_words"]
    # n cons cells and n pairs, 6n words: the first cell and the first
    # pair were cut before the failure, and the rest is one block.
    assert points(prof)[("", 0, "(unmarshal)", 0)][:2] == [3, 6 * n]


@pytest.mark.parametrize("runparam", RUNPARAMS)
def test_counts_stay_exact_past_the_packed_counters_room(build, tmp_path, runparam):
    """A run allocating more than 2^26 minor words, in runs of equal
    headers and mixed ones, counts every block and word: no counter
    wraps or loses a block."""
    n = 24_000_000
    exe = build("points_many")
    src = (PROGRAMS / "points_many.ml").read_text()
    prof, _, _ = profile(exe, n, rate=1e-4, tmp=tmp_path, points="on",
                         runparam=runparam)
    assert prof["gc"]["minor_words"] > 2 ** 26
    assert minor_words(prof) == prof["gc"]["minor_words"]
    pts = points(prof)
    at = lambda needle: [c[:2] for (f, ln, fn, _), c in pts.items()
                         if f == "points_many.ml" and ln == line_of(src, needle)]
    assert at("Sys.opaque_identity (i, -i)") == [[n, 3 * n]]
    assert at("Sys.opaque_identity (i, i)") == [[n, 3 * n]]
    assert at("Sys.opaque_identity (float_of_int i)") == [[n // 3, 2 * (n // 3)]]


def test_promotions_stay_exact_past_the_packed_counters_room(build, tmp_path):
    """Promotions are packed too and added up once 2^26 words have been
    promoted (memprof_points.c): a run whose tuples are all kept past
    the next collection and promote more than that counts each one."""
    n = 24_000_000
    exe = build("points_ring")
    src = (PROGRAMS / "points_ring.ml").read_text()
    prof, _, _ = profile(exe, n, rate=1e-4, tmp=tmp_path, points="on",
                         live="off", runparam="s=32k")
    assert prof["gc"]["promoted_words"] > 2 ** 26
    assert promoted_words(prof) == prof["gc"]["promoted_words"]
    tup = [c for (f, ln, fn, _), c in points(prof).items()
           if f == "points_ring.ml" and ln == line_of(src, "Sys.opaque_identity (i, i)")]
    assert len(tup) == 1 and tup[0][:2] == [n, 3 * n], tup
    # all but those of the minor heap the program ends in (32k words)
    assert n - 32 * 1024 // 3 <= tup[0][4] <= n and tup[0][5] == 3 * tup[0][4], tup


def test_two_domains_count_every_block_once(build, tmp_path):
    n = 200_000
    exe = build("points_domains")
    src = (PROGRAMS / "points_domains.ml").read_text()
    prof, _, _ = profile(exe, n, rate=1e-4, tmp=tmp_path, points="on",
                         runparam="s=32k")
    line = line_of(src, "Sys.opaque_identity (id, i)")
    tup = [c for (f, ln, fn, _), c in points(prof).items()
           if f == "points_domains.ml" and ln == line]
    # every tuple is promoted once; at exit only the 64 in `shared` are live
    assert tup == [[2 * n, 6 * n, 0, 0, 2 * n, 6 * n, 64, 192]], tup


def test_a_c_program_that_embeds_ocaml_is_profiled_at_shutdown(build, tmp_path):
    """embed_stub.c's main runs embed.ml through caml_startup, allocates n
    strings from C with no OCaml code running, then calls caml_shutdown:
    the profile is written there, the array counts at its OCaml call, the
    strings (2 words each) at (runtime), having no OCaml call to count at."""
    exe = build("embed")
    runs = {}
    for n in (100, 1100):
        d = tmp_path / str(n)
        d.mkdir()
        prof, _, _ = profile(exe, n, rate=1e-4, tmp=d, points="on")
        assert prof["points"]["live"] is True
        runs[n] = (points(prof)[("", 0, "(runtime)", 0)], calls(prof))
    (rt_small, c_small), (rt_large, c_large) = runs[100], runs[1100]
    assert [b - a for a, b in zip(rt_small[:2], rt_large[:2])] == [1000, 2000]
    assert c_small == c_large
    arr = [c for k, c in c_large.items() if k[0] == "embed.ml"]
    assert arr == [[1, 11, 0, 0, 1, 11, 1, 11]], c_large


def test_points_in_bytecode_say_they_are_unavailable(build, tmp_path):
    exe = build("points_known", backend="bytecode")
    prof, _, _ = profile(exe, 10, 10, 10, 10, 1, 1, rate=1e-4, tmp=tmp_path,
                         points="on")
    assert prof["points"]["points"] == [] and not prof["points"]["complete"]
    assert "bytecode" in prof["points"]["unavailable"]


def test_without_points_the_profile_has_no_section(known, tmp_path):
    exe, _ = known
    prof, _, _ = profile(exe, 10, 10, 10, 10, 1, 1, rate=1e-4, tmp=tmp_path)
    assert "points" not in prof and prof["version"] == 3


@pytest.mark.parametrize("runparam", RUNPARAMS)
def test_blocks_allocated_by_memprof_callbacks_and_cancelled_allocations(build, tmp_path, runparam):
    """The program's own Gc.Memprof callbacks allocate while the points
    are counted at each allocation, and a callback that raises cancels the
    sampled allocation: every block made is counted once, and a cancelled
    one is not."""
    n = 40_000
    exe = build("points_callbacks")
    src = (PROGRAMS / "points_callbacks.ml").read_text()
    prof, _, res = profile(exe, n, rate=1e-4, tmp=tmp_path, points="on",
                           runparam=runparam)
    kept, made, raised = map(int, res.stdout.split())
    assert kept == n and made + raised == n and raised > 0, res.stdout
    assert minor_words(prof) == prof["gc"]["minor_words"]
    pts = points(prof)

    def minor(needle):
        line = line_of(src, needle)
        return [c[:2] for (f, ln, fn, _), c in pts.items()
                if f == "points_callbacks.ml" and ln == line]

    assert sorted(minor("Sys.opaque_identity (i, -i, i)")) == [[n, 3 * n], [n, 4 * n]]
    assert minor("Sys.opaque_identity (float_of_int i") == [[n, 2 * n]]
    assert minor("Sys.opaque_identity (ref i)") == [[made, 2 * made]]


def test_a_plugin_loaded_by_natdynlink_has_points_of_its_own(runtime_bin, tmp_path):
    """natdynlink registers a plugin's table before its code runs: the
    plugin's blocks are counted at its own points, apart from the main
    program's and from the unregistered id."""
    n = 5000
    work = tmp_path / "dl"
    work.mkdir()
    for name in ("points_plugin", "points_dynlink"):
        (work / f"{name}.ml").write_text((PROGRAMS / f"{name}.ml").read_text())
    ocamlopt = str(runtime_bin / "ocamlopt")
    for cmd in ([ocamlopt, "-g", "-shared", "-o", "points_plugin.cmxs", "points_plugin.ml"],
                [ocamlopt, "-g", "-I", "+dynlink", "dynlink.cmxa", "points_dynlink.ml",
                 "-o", "points_dynlink.exe"]):
        res = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    prof, _, res = profile(work / "points_dynlink.exe", work / "points_plugin.cmxs", n,
                           rate=1e-4, tmp=tmp_path, points="on")
    assert res.stdout.split() == [str(n), str(n)]
    pts = points(prof)
    for name in ("points_plugin", "points_dynlink"):
        src = (PROGRAMS / f"{name}.ml").read_text()
        line = line_of(src, "Sys.opaque_identity (i,")
        pair = sorted(c[:2] for (f, ln, fn, _), c in pts.items()
                      if f == f"{name}.ml" and ln == line)
        assert pair == [[n, 3 * n], [n, 3 * n]], (name, pair)    # the pair, its cell
    assert ("", 0, "(unregistered)", 0) not in pts


def test_a_forked_child_goes_on_with_the_counts_it_inherited(build, tmp_path):
    """A forked child goes on with the counters it inherited: parent and child each count every pair at its point once,
    and their minor words add up to their GC's."""
    n = 200_000
    exe = build("points_fork", threads=True)
    src = (PROGRAMS / "points_fork.ml").read_text()
    lines = {name: line_of(src, f"let[@inline never] {name} i") for name in
             ("before", "in_child", "after")}
    res = run(exe, n, memprof=f"rate=1e-4,seed=1,points=on,out={tmp_path}/p.%p.json",
              runparam="s=32k", timeout=120)
    child = int(res.stdout)
    profiles = {"child" if f.name == f"p.{child}.json" else "parent": read_profile(f.read_bytes())
                for f in tmp_path.glob("p.*.json")}
    assert set(profiles) == {"parent", "child"}
    expected = {"parent": {"before": n, "in_child": 0, "after": n},
                "child": {"before": n, "in_child": n, "after": 0}}
    for side, prof in profiles.items():
        assert minor_words(prof) == prof["gc"]["minor_words"], side
        got = {name: sum(c[0] for (f, ln, _, _), c in points(prof).items()
                         if f == "points_fork.ml" and ln == line)
               for name, line in lines.items()}
        assert got == expected[side], side


def test_domains_and_systhreads_with_reused_slots_count_every_block_once(build, tmp_path):
    """Domains spawned and joined round after round (their slots reused),
    each running two systhreads on its minor heap: every pair is counted
    once, minor words add up to the GC's."""
    n = 100_000
    exe = build("points_threads", threads=True)
    src = (PROGRAMS / "points_threads.ml").read_text()
    prof, _, res = profile(exe, n, rate=1e-4, tmp=tmp_path, points="on",
                           runparam="s=32k")
    made, kept = map(int, res.stdout.split())
    assert kept == made // 16
    assert minor_words(prof) == prof["gc"]["minor_words"]
    line = line_of(src, "Sys.opaque_identity (id, i)")
    pair = [c[:4] for (f, ln, fn, _), c in points(prof).items()
            if f == "points_threads.ml" and ln == line]
    assert pair == [[made, 3 * made, 0, 0]], pair
