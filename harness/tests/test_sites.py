"""Site grouping: code-motion robustness, stdlib 'via', unknown frames."""

from harness_testlib import make_profile

from memprof_ci.inputs.profile import parse_profile
from memprof_ci.sites import keys
from memprof_ci.sites.grouping import aggregate


def agg(stacks, grouping="function", seeds=(1,)):
    ps = [parse_profile(make_profile(stacks, seed=s), f"p{s}.json") for s in seeds]
    return aggregate(ps, grouping, "b")


def test_line_shift_keeps_sites():
    before = agg([([("Stdlib__List.init", "list.ml", 60), ("Main.f", "main.ml", 10)], 100, 5),
                  ([("Main.g.(fun)", "main.ml", 30)], 50, 0)])
    after = agg([([("Stdlib__List.init", "list.ml", 60), ("Main.f", "main.ml", 17)], 100, 5),
                 ([("Main.g.(fun)", "main.ml", 37)], 50, 0)])
    assert set(before.sites) == set(after.sites) == {"Main.f @ main.ml", "Main.g.(fun) @ main.ml"}
    assert after.sites["Main.f @ main.ml"].lines == {17: 100}
    assert before.sites["Main.f @ main.ml"].via == {"Stdlib__List.init": 100}


def test_line_grouping_does_split_by_line():
    a = agg([([("Main.f", "main.ml", 10)], 1, 0), ([("Main.f", "main.ml", 11)], 2, 0)], "line")
    assert set(a.sites) == {"Main.f @ main.ml:10", "Main.f @ main.ml:11"}


def test_stdlib_only_and_unknown_stacks():
    a = agg([([(None, None, None), ("Stdlib__Hashtbl.resize", "hashtbl.ml", 9),
               ("CamlinternalFormat.make", "camlinternalFormat.ml", 3)], 4, 0),
             ([(None, None, None)], 3, 0)])
    assert set(a.sites) == {"Stdlib__Hashtbl.resize @ hashtbl.ml", "<unknown>"}
    assert a.sites["<unknown>"].samples == 3
    # Frames with all-null fields are the unknown ones; a file alone is known.
    assert not keys.is_known({"function": None, "file": None, "line": None})
    assert keys.is_known({"function": None, "file": "a.ml", "line": None})


def test_unknown_frames_are_skipped_to_user_frame_and_via_is_entry_point():
    a = agg([([(None, None, None), ("Stdlib__List.rev_append", "list.ml", 1),
               ("Stdlib__List.rev", "list.ml", 2), ("Dune__exe__Foo.bar", "foo.ml", 7)], 9, 1)])
    s = a.sites["Dune__exe__Foo.bar @ foo.ml"]
    assert s.via == {"Stdlib__List.rev": 9} and s.live_samples == 1


def test_user_file_named_like_stdlib_is_user_code():
    a = agg([([("List.helper", "list.ml", 4), ("Main.f", "main.ml", 1)], 2, 0)])
    assert set(a.sites) == {"List.helper @ list.ml"}


def test_innermost_grouping_keeps_stdlib_frames():
    a = agg([([("Stdlib__List.init", "list.ml", 60), ("Main.f", "main.ml", 10)], 100, 5)],
            "innermost")
    assert set(a.sites) == {"Stdlib__List.init @ list.ml"}


def test_sums_over_seeds_and_totals():
    a = agg([([("Main.f", "main.ml", 10)], 10, 2)], seeds=(1, 2, 3))
    assert a.sites["Main.f @ main.ml"].samples == 30 and a.total_samples == 30
    assert abs(a.exposure - 3e-4) < 1e-18 and a.seeds == [1, 2, 3]


def test_absolute_paths_do_not_depend_on_checkout_location():
    a = agg([([("Stdlib__List.init", "list.ml", 60),
               ("Bench.f", "/home/dev/proj/bench/bench.ml", 10)], 100, 5)])
    b = agg([([("Stdlib__List.init", "list.ml", 60),
               ("Bench.f", "/home/runner/work/proj/proj/bench/bench.ml", 10)], 100, 5)])
    assert set(a.sites) == set(b.sites) == {"Bench.f @ bench/bench.ml"}
