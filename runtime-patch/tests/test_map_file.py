"""Unix.map_file memory under the built-in tracker. OCaml 5.4 samples a
file's mapping as a source of its own (CAML_MEMPROF_SRC_MAP_FILE,
ocaml/ocaml#13675); the tracker counts it as memory outside the heap, as it
counts custom blocks' (`custom` samples, words as mapped, no minor or major
samples for it), and 5.3, which does not sample it, shows none of it."""

from runtime_testlib import OCAML_VERSION, profile

MB = 64


def test_mapped_memory_is_counted_outside_the_heap(build, tmp_path):
    exe = build("map_file", threads=True)   # links unix
    prof, _, res = profile(exe, tmp_path / "data", MB, rate=1e-4, tmp=tmp_path)
    assert res.stdout.strip() == str(MB * 1024 * 1024)
    t = prof["totals"]
    mapped_words = MB * 1024 * 1024 // 8
    if OCAML_VERSION.startswith("5.3"):
        # not sampled: the run allocates a few hundred words in the heap
        assert t["custom_samples"] == 0, t
    else:
        # 8 M words mapped at 1e-4: about 839 samples, all custom
        expect = mapped_words * 1e-4
        assert abs(t["custom_samples"] - expect) < 6 * expect ** 0.5, t
        assert t["custom_samples"] > t["minor_samples"] + t["major_samples"], t
