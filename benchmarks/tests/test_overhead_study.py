"""The overhead study (benchmarks/overhead): its verdict rule for noisy wall
times (PASS or MISS only when the intervals clear the target, UNRESOLVED
otherwise), --reanalyse, its use of the harness's manifest reader, and of
the overhead library the gate uses (memprof_ci.measure.drivers and the
paired interval): no module of it times, counts or edits sys.path itself."""

import ast
import json
from pathlib import Path

import pytest

from memprof_ci.decide.stats import paired_overhead_interval
from memprof_ci.inputs.manifest import SETTINGS
from overhead import analysis, cli, instructions
from overhead.common import rate_key

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("lows, highs, expected", [
    ([-0.02, 0.001], [0.004, 0.009], "PASS"),       # every interval below 1%
    ([0.012, -0.01], [0.03, 0.005], "MISS"),        # one interval wholly above
    ([-0.2, -0.1], [0.3, 0.005], "UNRESOLVED (see instructions)"),
    ([], [], "n/a"),
])
def test_interval_verdict(lows, highs, expected):
    assert analysis.interval_verdict(lows, highs, 0.01) == expected


def test_wall_verdicts_in_the_summary_follow_the_intervals():
    def bench(overhead, low, high):
        return {"analysis": {"c": {rate_key(1e-4): {
            "overhead": overhead, "ci_low": low, "ci_high": high}}}}
    results = {"a": bench(0.002, -0.01, 0.008), "b": bench(0.30, 0.15, 0.40),
               "c": bench(0.01, -0.05, 0.05)}
    rows = {r["id"]: r for r in analysis.summarise(results, [1e-4], None)}
    assert rows["wall_max_1e-4"]["verdict"] == "MISS"     # b's interval is above 10%
    # the median benchmark's interval, [-1%, +5%], straddles 1%
    assert rows["wall_median_1e-4"]["verdict"] == "UNRESOLVED (see instructions)"


def test_cost_ratio_interval_covers_the_ratio_and_refuses_unresolved_costs():
    c = {"on": [1.20, 1.21, 1.19, 1.22, 1.20], "off": [1.00, 1.01, 0.99, 1.00, 1.02],
         "samples": 1000}
    o = {"on": [1.80, 1.82, 1.79, 1.81, 1.80], "off": c["off"], "samples": 1000}
    lo, hi = analysis.cost_ratio_ci(c, o)
    assert lo <= 0.25 <= hi and hi - lo < 0.1        # true ratio 0.2 / 0.8
    # the OCaml tracker's cost straddles zero: no ratio can be formed
    flat = {"on": [1.0, 1.2, 0.8, 1.1, 0.9], "off": [1.1, 0.9, 1.0, 1.2, 0.8], "samples": 10}
    assert analysis.cost_ratio_ci(c, flat) is None


def _timing(on, off, samples, k="1e-2"):
    return {"off": {"times_s": off, "median_s": sorted(off)[len(off) // 2]},
            k: {"times_s": on, "median_s": sorted(on)[len(on) // 2], "samples": samples}}


META = {"rates": ["1e-2"], "finished": "x", "command_line": "x", "duration_s": 1,
        "nproc": 2, "hyperfine": "x", "runs": 5, "warmup": 1, "patch_id": "x"}


def test_reanalyse_rewrites_the_report_from_raw_times(tmp_path):
    off = [1.00, 1.01, 0.99, 1.00, 1.02]
    doc = {"meta": META,
           "summary": [], "callgrind": None,
           "benchmarks": {"b": {"command": [], "cwd": ".",
                                "preflight": {"ocaml_samples": {"1e-2": 1000}},
                                "timing": {"c": _timing([1.10, 1.11, 1.09, 1.10, 1.12], off, 1000),
                                           "ocaml": _timing([1.80, 1.82, 1.79, 1.81, 1.80],
                                                            off, None)}}}}
    src = tmp_path / "in.json"
    src.write_text(json.dumps(doc))
    assert cli.main(["--reanalyse", str(src), "--out", str(tmp_path / "out")]) == 0
    out = json.loads((tmp_path / "out" / "overhead.json").read_text())
    row = {r["id"]: r for r in out["summary"]}["cost_ratio_1e-2"]
    assert row["verdict"] == "PASS" and abs(row["value"] - 0.125) < 0.01
    assert (tmp_path / "out" / "overhead.md").is_file()


def _callgrind(names, repeated):
    """Callgrind entries built by the study's own aggregation from made-up
    run results: off, C at 1e-4, stock and the four per-sample-cost configs."""
    counts = {"off": 1000, "c_1e-4": 1006, "stock": 999, "cost_c_off": 250,
              "cost_c_1e-2": 450, "cost_ocaml_off": 251, "cost_ocaml_1e-2": 1251}
    samples = {"cost_c_1e-2": 2, "cost_ocaml_1e-2": 2}
    out = {}
    for i, n in enumerate(names):
        reps = 3 if n in repeated else 1
        done = [{"bench": n, "config": cfg, "rep": r, "argv": [f"/x/{n}.exe", "10"],
                 "size": "10", "extra_env": {}, "concurrent": n in repeated,
                 "instructions": (ir + r) * 10 ** 6 + i,
                 **({"samples": samples[cfg] * 1000} if cfg in samples else {})}
                for cfg, ir in counts.items() for r in range(reps)]
        out[n] = instructions._entry(n, done, 1.0, 0.25, True)
    return out


def test_reanalyse_reproduces_the_report_of_the_run(tmp_path):
    """A run's overhead.json, reanalysed, gives the same overhead.md (plus the
    line saying it was reanalysed), the same plot and the same numbers."""
    rates = [1e-4, 1e-2]
    off = [1.00, 1.01, 0.99, 1.00, 1.02]
    results = {}
    for n, f in (("lists", 1.0), ("domains", 1.5)):
        timing = {"c": {**_timing([x * (1 + 0.002 * f) for x in off], off, None, "1e-4"),
                        **_timing([x * (1 + 0.1 * f) for x in off], off, 1000)},
                  "ocaml": {**_timing([x * (1 + 0.01 * f) for x in off], off, None, "1e-4"),
                            **_timing([x * (1 + 0.5 * f) for x in off], off, None)}}
        pre = {"c_check_samples": 1000, "ocaml_samples": {"1e-4": 10, "1e-2": 1000}}
        results[n] = {"command": [f"/x/{n}.exe", "10"], "cwd": "/x", "preflight": pre,
                      "timing": timing, "analysis": analysis.analyse_timing(timing, pre, rates)}
    results["broken"] = {"command": ["/x/broken.exe"], "cwd": "/x", "error": "boom"}
    cg = _callgrind(["lists", "domains", "broken"], {"domains"})
    meta = {**META, "rates": [rate_key(r) for r in rates], "valgrind": "v",
            "callgrind_scale": 1.0, "callgrind_repeats": 3}
    run, again = tmp_path / "run", tmp_path / "again"
    cli.write_outputs(str(run), meta, analysis.summarise(results, rates, cg), results,
                      rates, cg)
    assert cli.main(["--reanalyse", str(run / "overhead.json"), "--out", str(again)]) == 0
    md_run = (run / "overhead.md").read_text().splitlines()
    md_again = (again / "overhead.md").read_text().splitlines()
    added = [i for i, x in enumerate(md_again)
             if x.startswith("Analysis and verdicts recomputed on ")]
    assert len(added) == 1 and md_again[added[0] + 1] == ""
    assert md_again[:added[0]] + md_again[added[0] + 2:] == md_run
    assert (again / "overhead.svg").read_text() == (run / "overhead.svg").read_text()
    doc_run = json.loads((run / "overhead.json").read_text())
    doc_again = json.loads((again / "overhead.json").read_text())
    assert doc_again["meta"].pop("reanalysed")
    assert doc_again == doc_run
    text = "\n".join(md_run)          # every section is there
    assert "## Errors" in text and "| domains † |" in text and "### Per-sample cost" in text


def test_reanalyse_of_a_foreign_file_names_it(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(SystemExit) as e:
        cli.main(["--reanalyse", str(bad), "--out", str(tmp_path)])
    assert e.value.code == 2 and str(bad) in capsys.readouterr().err


def test_the_manifest_is_read_by_the_harness(tmp_path, capsys):
    """Same keys, checks and defaults as memprof-ci itself: an unknown key is
    refused with the harness's message, and an unset timeout is the harness's."""
    m = tmp_path / "m.toml"
    m.write_text('[[benchmark]]\nname = "a"\ncommand = ["./a.exe"]\n')
    (b,) = cli.select(str(m), "")
    assert b.timeout == SETTINGS["timeout"] and b.command == [str(tmp_path / "a.exe")]
    m.write_text('[[benchmark]]\nname = "a"\ncommand = ["./a.exe"]\nbogus = 1\n')
    with pytest.raises(SystemExit) as e:
        cli.main(["--manifest", str(m), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"{m}: benchmark 'a': unknown key `bogus`; allowed: name, command" in err
    assert not (tmp_path / "out").exists()          # nothing ran, nothing written


def test_time_per_sample_at_every_rate_sits_beside_instructions_per_sample():
    """Item of the report: wall ns/sample at each rate from the C profile's
    sample count, next to callgrind's instructions per sample."""
    from overhead import render_md
    rates = [1e-4, 1e-2]
    off = [1.00, 1.00, 1.00]
    timing = {"c": {**_timing([1.002] * 3, off, 10, "1e-4"), **_timing([1.1] * 3, off, 1000)},
              "ocaml": {**_timing([1.01] * 3, off, None, "1e-4"),
                        **_timing([1.5] * 3, off, None)}}
    pre = {"c_check_samples": 10, "ocaml_samples": {"1e-4": 10, "1e-2": 1000}}
    res = analysis.analyse_timing(timing, pre, rates)
    assert res["c"]["1e-4"]["ns_per_sample"] == pytest.approx(200_000)
    assert res["c"]["1e-2"]["ns_per_sample"] == pytest.approx(100_000)
    results = {"lists": {"analysis": res}, "broken": {"error": "boom"}}
    cg = _callgrind(["lists"], set())
    cg["lists"]["configs"]["c_1e-4"]["samples"] = [3000]
    meta = {**META, "rates": ["1e-4", "1e-2"], "valgrind": "v", "callgrind_scale": 1.0,
            "callgrind_repeats": 1}
    md = render_md.render_markdown(meta, results, rates, cg, [])
    assert "| lists | 200,000 | 100,000 | 2,000 | 100,000 |" in md.splitlines()


def test_timing_rounds_write_a_profile_per_run_and_read_its_samples(tmp_path):
    """A real hyperfine round on a real benchmark: every profiled run writes
    its own <stem>.<pid>.json (no run times the removal of the one before),
    and the sample count is read from one of them."""
    import shutil
    from overhead import timing
    exe = ROOT / "_build" / "benchmarks" / "lists.exe"
    assert exe.is_file() and shutil.which("hyperfine"), \
        "needs `make benchmarks` and hyperfine (`make deps-bench`)"
    m = tmp_path / "m.toml"
    m.write_text(f'[[benchmark]]\nname = "lists"\ncommand = ["{exe}", "300"]\n')
    (b,) = cli.select(str(m), "")
    exes = {"patched": str(exe), "ocamltracker": str(exe)}
    work = tmp_path / "work"
    work.mkdir()
    out = timing.time_benchmark(b, exes, [1e-2], runs=2, warmup=0, tmp=str(work))
    written = sorted(work.glob("lists.1e-2.*.json"))
    assert len(written) == 2                          # two rounds, two files
    samples = json.loads(written[0].read_text())["totals"]["samples"]
    assert samples > 0 and out["c"]["1e-2"]["samples"] == samples


def test_the_wall_interval_is_the_gates_paired_interval():
    """Rounds that a slow phase of the machine stretches, on and off alike:
    the study's overhead and interval are those of the runs paired by round
    (the gate's method), +10% exactly, where unpaired per-run times would
    spread over the phases."""
    off = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
    on = [x * 1.1 for x in off]
    est, lo, hi = analysis.overhead_ci(on, off)
    assert (est, lo, hi) == pytest.approx((0.1, 0.1, 0.1))
    assert (est, lo, hi) == paired_overhead_interval(on, off)[:3]
    # The per-sample cost ratio pairs its rounds alike: C's cost per round
    # a quarter of OCaml's, whatever the phase.
    c = {"on": [x + 0.1 * x for x in off], "off": off, "samples": 1000}
    o = {"on": [x + 0.4 * x for x in off], "off": off, "samples": 1000}
    assert analysis.cost_ratio_ci(c, o) == pytest.approx((0.25, 0.25))


def _argv_of_a_tool(n) -> str | None:
    """The tool a list literal is the command line of ("hyperfine" or
    "valgrind"; asking for its version aside), or None."""
    words = [e.value if isinstance(e, ast.Constant) else None for e in n.elts]
    if words and words[0] in ("hyperfine", "valgrind") and words[1:] != ["--version"]:
        return words[0]
    return None


def driver_breaches(sources: dict) -> list:
    """What a study module does that belongs to the overhead library: edit
    sys.path, build a hyperfine or valgrind command line itself, or time a
    run with its own clock or rusage."""
    out = []
    for name, src in sources.items():
        for n in ast.walk(ast.parse(src)):
            if isinstance(n, ast.Attribute) and ast.unparse(n) == "sys.path":
                out.append(f"{name}:{n.lineno} edits sys.path")
            elif isinstance(n, ast.List) and _argv_of_a_tool(n):
                out.append(f"{name}:{n.lineno} runs {_argv_of_a_tool(n)} itself")
            elif isinstance(n, ast.Call) and ast.unparse(n.func) in (
                    "time.perf_counter", "resource.getrusage", "os.wait4"):
                out.append(f"{name}:{n.lineno} times with {ast.unparse(n.func)}")
    return out


def test_the_study_measures_only_through_the_overhead_library():
    sources = {p.name: p.read_text() for p in
               [*(ROOT / "benchmarks" / "overhead").glob("*.py"),
                ROOT / "benchmarks" / "trace_cost.py"]}
    assert len(sources) > 10 and driver_breaches(sources) == []
    # The check sees each breach.
    assert driver_breaches({
        "a.py": "import sys\nsys.path[:0] = ['x']\n",
        "b.py": "cmd = ['hyperfine', '-N', x]\nsubprocess.run(cmd)\n",
        "c.py": "subprocess.run(['valgrind', '--tool=callgrind', *argv])\n",
        "d.py": "t0 = time.perf_counter()\n",
        "e.py": "v = tool_version(['hyperfine', '--version'])\n"}) == [
        "a.py:2 edits sys.path", "b.py:1 runs hyperfine itself",
        "c.py:1 runs valgrind itself", "d.py:1 times with time.perf_counter"]
