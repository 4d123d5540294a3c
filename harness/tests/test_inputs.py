"""Profile, baseline and manifest validation: clear errors, never tracebacks."""


import pytest
from harness_testlib import make_profile, to_version2, to_version3, write_json

from memprof_ci.store.baseline import load_baseline
from memprof_ci.errors import ConfigError, InputError
from memprof_ci.inputs.manifest import load_manifest, parse_shard, shard_names
from memprof_ci.inputs.profile import load_profile


def test_profile_rejects(tmp_path):
    good = make_profile([([("Main.f", "main.ml", 1)], 5, 1)])
    p = write_json(tmp_path / "ok.json", good)
    assert load_profile(p).totals["samples"] == 5
    cases = {
        "version": (dict(good, version=7), "version 7 is not supported"),
        "bool version": (dict(good, version=True), "version True is not supported"),
        "format": (dict(good, format="other"), "not a memprof-ci profile"),
        "missing": ({k: v for k, v in good.items() if k != "gc"}, r"missing key\(s\) gc"),
        "extra": (dict(good, extra=1), r"unknown key\(s\) extra"),
        "totals": (dict(good, totals=dict(good["totals"], samples=6)), "samples !="),
        "rate": (dict(good, config={"rate": 0, "seed": 1, "frames": 2}), "config.rate"),
    }
    for name, (doc, msg) in cases.items():
        with pytest.raises(InputError, match=msg) as e:
            load_profile(write_json(tmp_path / f"{name}.json", doc))
        assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "trunc.json").write_text('{"format": "memprof-ci/prof')
    with pytest.raises(InputError, match="not valid JSON"):
        load_profile(str(tmp_path / "trunc.json"))


def test_profile_version2_reads_as_version1(tmp_path):
    """Both format versions of one profile load to the same stacks and
    counts, whatever the order of the frame table."""
    stacks = [([("Main.f", "main.ml", 1), ("Main.main", "main.ml", 9)], 5, 1),
              ([("Main.g", "main.ml", 2), ("Main.main", "main.ml", 9)], 7, 0),
              ([("Main.f", "main.ml", 1)], 3, 3)]
    v1 = make_profile(stacks)
    v2 = to_version2(v1)
    assert len(v2["frame_table"]) == 3 and v2["stacks"][0]["frames"] != v1["stacks"][0]["frames"]
    a = load_profile(write_json(tmp_path / "v1.json", v1))
    b = load_profile(write_json(tmp_path / "v2.json", v2))
    assert a.stacks == b.stacks and a.totals == b.totals and a.gc == b.gc
    shuffled = dict(v2, frame_table=v2["frame_table"][::-1],
                    stacks=[dict(st, frames=[2 - k for k in st["frames"]]) for st in v2["stacks"]])
    assert load_profile(write_json(tmp_path / "v2r.json", shuffled)).stacks == a.stacks


def test_profile_version3_reads_as_version2(tmp_path):
    """A version-3 stack lists only its counts that are not zero; read with
    the others as zeros, it is the version-2 stack. A zero written out is
    read the same, and a stack's peak, when the profile records one, is
    zero when left out."""
    stacks = [([("Main.f", "main.ml", 1), ("Main.main", "main.ml", 9)], 5, 1),
              ([("Main.g", "main.ml", 2), ("Main.main", "main.ml", 9)], 7, 0),
              ([("Main.f", "main.ml", 1)], 3, 3)]
    v1 = make_profile(stacks)
    v3 = to_version3(v1)
    assert "live_samples" not in v3["stacks"][1] and "major_samples" in v3["totals"]
    a = load_profile(write_json(tmp_path / "v1.json", v1))
    b = load_profile(write_json(tmp_path / "v3.json", v3))
    assert a.stacks == b.stacks and a.totals == b.totals
    explicit = dict(v3, stacks=[dict(st, major_samples=0) for st in v3["stacks"]])
    assert load_profile(write_json(tmp_path / "v3z.json", explicit)).stacks == a.stacks
    peaked = dict(v3, config=dict(v3["config"], peak="events"),
                  totals=dict(v3["totals"], peak_live_samples=1),
                  stacks=[dict(v3["stacks"][0], peak_live_samples=1)] + v3["stacks"][1:])
    got = load_profile(write_json(tmp_path / "v3p.json", peaked)).stacks
    assert [st["peak_live_samples"] for st in got] == [1, 0, 0]


def _assert_rejected(tmp_path, doc, msg):
    """Both reading paths name the problem in one line: load_profile's own
    stack checks, and the grouping pass that validates stacks itself."""
    for check in (True, False):
        with pytest.raises(InputError, match=msg) as e:
            p = load_profile(write_json(tmp_path / "bad.json", doc), check_stacks=check)
            if not check:
                from memprof_ci.sites.grouping import aggregate
                aggregate([p], "function", "b")
        assert "\n" not in str(e.value)


_TWO_STACKS = [([("Main.f", "main.ml", 1)], 5, 1), ([("Main.g", "main.ml", 2)], 2, 0)]


@pytest.mark.parametrize("edit,msg", [
    (lambda d: d["stacks"][0].__setitem__("samples", "5"), r"stacks\[0\].samples is missing or not"),
    (lambda d: d["stacks"][1].pop("samples"), "breaks samples = minor"),
    (lambda d: d["stacks"][0].pop("frames"), r"stacks\[0\].frames is missing"),
    (lambda d: d["stacks"].__setitem__(1, [1, 2]), r"stacks\[1\] is not an object"),
    (lambda d: d["totals"].pop("major_samples"), r"totals.major_samples is missing"),
])
def test_profile_version3_rejects(tmp_path, edit, msg):
    """Leaving zeros out does not hide a malformed stack: a wrong type, a
    count whose absence breaks an identity, or missing frames still name the
    stack; the totals must list every count."""
    doc = to_version3(make_profile(_TWO_STACKS))
    edit(doc)
    _assert_rejected(tmp_path, doc, msg)


@pytest.mark.parametrize("edit,msg", [
    (lambda d: d.pop("frame_table"), r"missing key\(s\) frame_table"),
    (lambda d: d.update(frame_table={}), "frame_table is not a list"),
    (lambda d: d["frame_table"].__setitem__(0, {"function": "f"}), r"frame_table\[0\] lacks"),
    (lambda d: d["stacks"][0].__setitem__("frames", [9]), r"stacks\[0\].frames\[0\] is 9, not an index"),
    (lambda d: d["stacks"][1].__setitem__("frames", [0, -1]), r"stacks\[1\].frames\[1\] is -1"),
    (lambda d: d["stacks"][0].__setitem__("frames", [True]), "is True, not an index"),
    (lambda d: d["stacks"][0].__setitem__("frames", [{"function": "f"}]), "not an index"),
])
def test_profile_version2_rejects(tmp_path, edit, msg):
    doc = to_version2(make_profile(_TWO_STACKS))
    edit(doc)
    _assert_rejected(tmp_path, doc, msg)


@pytest.mark.parametrize("key,value,kept,refusal", [
    ("stacks", "site", "stacks_mode", None), ("stacks", "full", "stacks_mode", None),
    ("stacks", "Site", None, "is neither full nor site"),
    ("stacks", 1, None, "is neither full nor site"),
    ("stacks", None, None, "is neither full nor site"),
    ("stackmem", 524288, "stackmem", None), ("stackmem", 0, "stackmem", None),
    ("stackmem", -1, None, "is not a non-negative integer"),
    ("stackmem", "512k", None, "is not a non-negative integer"),
    ("stackmem", 1.5, None, "is not a non-negative integer"),
    ("stackmem", True, None, "is not a non-negative integer"),
])
def test_profile_config_stacks_and_stackmem(tmp_path, key, value, kept, refusal):
    """config.stacks (stacks=site: each stack cut at its site) and
    config.stackmem (the runtime's budget for whole stacks) are read and
    kept; any other value is refused in one line naming the key."""
    doc = to_version3(make_profile(_TWO_STACKS))
    doc["config"][key] = value
    path = write_json(tmp_path / "p.json", doc)
    if refusal is None:
        assert getattr(load_profile(path), kept) == value
    else:
        with pytest.raises(InputError, match=f"config.{key} .* {refusal}") as e:
            load_profile(path)
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("value,refusal", [
    ("walk", None), ("gc", None),
    ("off", "profile made with OCAMLMEMPROF live=off: its live_samples count blocks not "
            "yet collected"),
    ("Walk", r"config.live 'Walk' is neither walk, gc nor off"),
    (None, r"config.live None is neither walk, gc nor off"),
])
def test_profile_config_live(tmp_path, value, refusal):
    """config.live names how the runtime decided live at exit: walk and gc
    are read (the same answer); a profile of live=off, whose live samples
    are only the blocks not yet collected, is refused in one line, as is
    any other value."""
    doc = to_version3(make_profile(_TWO_STACKS))
    doc["config"]["live"] = value
    path = write_json(tmp_path / "p.json", doc)
    if refusal is None:
        assert load_profile(path).totals["live_samples"] == doc["totals"]["live_samples"]
    else:
        with pytest.raises(InputError, match=refusal) as e:
            load_profile(path)
        assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_memprof_env_value_cuts_stacks_at_rate_1():
    """Every exact (rate 1) run asks the runtime for stacks=site; sampled
    runs keep whole stacks."""
    from memprof_ci.measure.runner import memprof_env_value
    assert memprof_env_value(1.0, 1, 16, "p.json").endswith(",stacks=site")
    assert "stacks" not in memprof_env_value(1e-4, 1, 16, "p.json")
    assert "stacks=site" in memprof_env_value(1.0, 1, 16, "p.json", trace="t.ctf")


def _manifest(tmp_path, text):
    p = tmp_path / "m.toml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text,msg", [
    ('[[benchmark]]\nname="a"\ncommand=["x"]\nrtae=1\n', "unknown key `rtae`"),
    ('[[benchmark]]\nname="a"\ncommand="x"\n', "`command` must be a non-empty list"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\nrate="1e-4"\n', "`rate` must be a number"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\nseeds=[1,1]\n', "duplicate seeds"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\ngrouping="file"\n', "`grouping` must be one of"),
    ('[defaults]\nalpah=0.1\n[[benchmark]]\nname="a"\ncommand=["x"]\n', "unknown key `alpah`"),
    ('[[benchmark]]\nname="a/b"\ncommand=["x"]\n', "`name` must be"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\n[[benchmark]]\nname="a"\ncommand=["y"]\n',
     "duplicate benchmark name"),
    ('bench = 1\n', "unknown top-level key"),
    ('[[benchmark]\n', "not valid TOML"),
    ('[defaults]\nrate=1e-4\n', "no [[benchmark]]"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\noverhead_args="1"\n',
     "`overhead_args` must be a list of strings"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\noverhead_args=[1]\n',
     "`overhead_args` must be a list of strings"),
    ('[defaults]\noverhead_args=["1"]\n[[benchmark]]\nname="a"\ncommand=["x"]\n',
     "unknown key `overhead_args`"),
    ('[[benchmark]]\nname="a"\ncommand=["x"]\nconcurrent=1\n', "`concurrent` must be true"),
    ('[defaults]\noverhead_time_fails="yes"\n[[benchmark]]\nname="a"\ncommand=["x"]\n',
     "`overhead_time_fails` must be true"),
])
def test_manifest_errors(tmp_path, text, msg):
    with pytest.raises(ConfigError, match=msg.replace("[", r"\[")) as e:
        load_manifest(_manifest(tmp_path, text))
    assert "m.toml" in str(e.value)


def test_manifest_defaults_and_paths(tmp_path):
    m = load_manifest(_manifest(tmp_path, (
        '[defaults]\nrate = 1e-3\nseeds = [4, 5]\n'
        '[[benchmark]]\nname = "a"\ncommand = ["./bin/a.exe", "./data", "plain"]\n'
        'cwd = "sub"\nframes = 8\ntimeout = 5\n')))
    b = m.benchmarks[0]
    assert b.command == [str(tmp_path / "bin/a.exe"), str(tmp_path / "data"), "plain"]
    assert b.cwd == str(tmp_path / "sub") and b.rate == 1e-3 and b.seeds == [4, 5]
    assert b.frames == 8 and b.alpha == 0.01 and b.min_effect == 0.05 and b.grouping == "function"
    assert b.overhead_budget == 0.10 and b.gc_tolerance == 0.01 and b.gc_timing_tolerance == 0.10 and b.min_share == 0.005
    assert b.overhead_args is None and not b.concurrent and not b.overhead_time_fails


def test_manifest_overhead_keys(tmp_path):
    """overhead_args resolves like the command's arguments; concurrent and
    overhead_time_fails take defaults and per-benchmark values."""
    m = load_manifest(_manifest(tmp_path, (
        '[defaults]\nconcurrent = true\noverhead_time_fails = true\n'
        '[[benchmark]]\nname = "a"\ncommand = ["./a.exe", "100"]\n'
        'overhead_args = ["./in.txt", "2"]\nconcurrent = false\n')))
    b = m.benchmarks[0]
    assert b.overhead_args == [str(tmp_path / "in.txt"), "2"]
    assert not b.concurrent and b.overhead_time_fails


def test_shards_partition():
    names = [f"b{i}" for i in range(7)]
    parts = [shard_names(names, k, 3) for k in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(names)
    assert parts == [shard_names(list(reversed(names)), k, 3) for k in (1, 2, 3)]
    for bad in ("0/2", "3/2", "x", "1/0"):
        with pytest.raises(ConfigError):
            parse_shard(bad)


def test_baseline_errors(tmp_path):
    (tmp_path / "b.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_baseline(str(tmp_path / "b.json"))
    write_json(tmp_path / "v.json", {"format": "memprof-ci/baseline", "version": 9})
    with pytest.raises(InputError, match="version 9"):
        load_baseline(str(tmp_path / "v.json"))
    write_json(tmp_path / "k.json", {"format": "memprof-ci/baseline", "version": 1,
                                     "profile_format_version": 1, "config": {}})
    with pytest.raises(InputError, match="malformed baseline"):
        load_baseline(str(tmp_path / "k.json"))
