"""Injected regressions against the committed baselines: the bundled
suite must catch a deliberate change at the right site, and only there,
and must stay quiet when code only moves.

Each variant in variants/ is a patch to one benchmark (applied to a
copy, so it follows the benchmark as it evolves). It is built with the patched compiler as benchmarks/<name>.ml under a
temporary directory (so its site keys match the real benchmark's) and
checked with `memprof-ci check` against baselines/ with the real
manifest's settings (overhead timing off: it is not what is tested).
With fresh=True the baseline is instead made on the spot from the
unpatched benchmark (`update-baselines`), for checks that need what the
committed baselines may not record yet (live at the peak).

The report.html of an injected regression is opened in Debian's headless
Chromium (harness/tests/chromium_cdp.py, over the DevTools protocol): no
console error, the regressed site marked in the site table and outlined in
the differential flame graph, and a screenshot is taken (kept in
$MEMPROF_CI_SCREENSHOT_DIR when set).
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OCAMLOPT = ROOT / "_build" / "runtime" / "bin" / "ocamlopt"
PY = "/usr/bin/python3"
sys.path.insert(0, str(ROOT / "harness" / "tests"))


def toml_value(v):
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def _build(root, bench, variant):
    """The benchmark (patched with `variant` unless None) built under
    root/benchmarks, and a one-benchmark manifest beside it."""
    manifest = tomllib.loads((ROOT / "benchmarks" / "benchmarks.toml").read_text())
    entry = next(b for b in manifest["benchmark"] if b["name"] == bench)
    src_dir = root / "benchmarks"
    src_dir.mkdir(parents=True)
    src = src_dir / f"{bench}.ml"
    src.write_text((ROOT / "benchmarks" / f"{bench}.ml").read_text())
    if variant is not None:
        subprocess.run(["patch", "--quiet", str(src), str(HERE / "variants" / variant)],
                       check=True, capture_output=True)
    exe = src_dir / f"{bench}.exe"
    subprocess.run([str(OCAMLOPT), "-g", str(src), "-o", str(exe)], cwd=src_dir,
                   check=True, capture_output=True)
    lines = ["[defaults]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in manifest.get("defaults", {}).items()]
    lines += ["", "[[benchmark]]"]
    for k, v in entry.items():
        if k == "command":
            v = [str(exe)] + v[1:]
        if k != "cwd":
            lines.append(f"{k} = {toml_value(v)}")
    (src_dir / "variant.toml").write_text("\n".join(lines) + "\n")
    return src_dir / "variant.toml"


def check_variant(tmp_path, bench, variant, fresh=False):
    if not OCAMLOPT.exists():
        pytest.fail("no patched compiler: run `make runtime` first")
    manifest = _build(tmp_path, bench, variant)
    report = tmp_path / "report"
    # Only this benchmark's baseline: any other would be reported as a
    # benchmark that was not run.
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "harness"))
    if fresh:
        orig = _build(tmp_path / "orig", bench, None)
        subprocess.run([PY, "-m", "memprof_ci", "update-baselines", "--manifest", str(orig),
                        "--baselines", str(baselines), "--no-overhead"],
                       env=env, capture_output=True, text=True, timeout=600, check=True)
    else:
        shutil.copy(ROOT / "baselines" / f"{bench}.json", baselines / f"{bench}.json")
    res = subprocess.run([PY, "-m", "memprof_ci", "check", "--manifest",
                          str(manifest), "--baselines", str(baselines),
                          "--no-overhead", "--report-dir", str(report)],
                         env=env, capture_output=True, text=True, timeout=600)
    rep = json.loads((report / "report.json").read_text())
    assert set(rep["benchmarks"]) == {bench}
    b = rep["benchmarks"][bench]
    # A row counted at a standard-library allocation point names the
    # site through its callers (stacks_site: the heaviest, estimated).
    flagged = {(row["check"], row.get("stacks_site", row["site"]))
               for row in (b["alloc"] or []) + (b["live"] or []) + (b.get("peak") or [])
               if row["status"] == "regression"}
    return res, flagged, b["checks"]


def test_more_allocation_at_one_function_is_caught_there(tmp_path):
    res, flagged, _ = check_variant(tmp_path, "lists", "lists_more.patch")
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    assert flagged == {("alloc", "Lists.build_tree @ benchmarks/lists.ml")}
    assert "Lists.build_tree" in res.stdout


def test_retention_is_caught_at_the_retaining_site(tmp_path):
    res, flagged, _ = check_variant(tmp_path, "leak", "leak_retains.patch")
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    site = "Leak.transient_work @ benchmarks/leak.ml"
    # Allocation and live at exit name the retaining site alone; the peak
    # names it too, and may name other long-lived data as well: the
    # retained blocks change when the peak is, and with it what else is
    # live there.
    assert {s for check, s in flagged if check != "peak"} == {site}, flagged
    assert ("live", site) in flagged and ("peak", site) in flagged, flagged
    # The live words are counted exactly at List.init's point; the path of
    # its caller comes from a snapshot run at the sampled rate, which names
    # the global list that keeps it.
    rep = json.loads((tmp_path / "report" / "report.json").read_text())
    live = [r for r in rep["benchmarks"]["leak"]["live"]
            if r.get("stacks_site", r["site"]) == site and r["status"] == "regression"]
    cur = live[0]["retention"]["current"]
    assert cur is not None, live[0]["retention"]
    assert "Leak" in json.dumps(cur["root"]), cur


def test_retention_fails_the_gc_check_too(tmp_path):
    """Promotion counters are exact for a single-domain benchmark: keeping
    data alive until exit moves them beyond the GC tolerance."""
    res, _, checks = check_variant(tmp_path, "leak", "leak_retains.patch")
    assert checks["gc_totals"]["outcome"] == "failed", checks
    assert "promoted_words" in checks["gc_totals"]["message"]


def test_holding_a_phase_longer_fails_the_peak_check_only_there(tmp_path):
    """Same allocations, same live set at exit, data held until its phase
    ends: the peak check fails, naming the holding site; allocation and
    live-at-exit checks pass."""
    res, flagged, checks = check_variant(tmp_path, "leak", "leak_holds_phase.patch",
                                         fresh=True)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    assert flagged == {("peak", "Leak.transient_work @ benchmarks/leak.ml")}, flagged
    assert checks["peak"]["outcome"] == "failed"
    assert checks["alloc_sites"]["outcome"] == "passed"
    assert checks["live"]["outcome"] == "passed"
    assert "peak: +" in res.stdout and "held by `Leak.transient_work`" in res.stdout, \
        res.stdout[-3000:]


def test_moving_code_is_not_a_regression(tmp_path):
    res, flagged, _ = check_variant(tmp_path, "lists", "lists_moved.patch")
    assert flagged == set()
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


def test_html_report_of_an_injected_regression_in_chromium(tmp_path):
    from chromium_cdp import Browser, check_screenshot
    res, flagged, _ = check_variant(tmp_path, "lists", "lists_more.patch")
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    site = "Lists.build_tree @ benchmarks/lists.ml"
    page = tmp_path / "report" / "report.html"
    with Browser() as br:
        br.open(str(page))
        assert br.eval("document.body.getAttribute('data-ready')") == "1"
        bench = br.eval("Array.from(document.querySelectorAll('section.bench'))"
                        ".findIndex(s => s.getAttribute('data-name') === 'lists')")
        assert bench >= 0
        rows = br.eval(f"Array.from(document.querySelectorAll('#sites-{bench} tr.regression'))"
                       ".map(r => r.getAttribute('data-frame'))")
        assert rows == [site]
        marked = br.eval(f"Array.from(document.querySelectorAll('svg#diff-{bench} "
                         "rect.regressed')).map(r => r.getAttribute('data-frame'))")
        assert marked and set(marked) == {site}
        # The outlined nodes' share grew significantly: drawn strong red.
        hot = br.eval(f"Array.from(document.querySelectorAll('svg#diff-{bench} "
                      "rect.hot')).map(r => r.getAttribute('data-frame'))")
        assert site in hot, hot
        # The worst regression's graph is at the top of the page, the site outlined.
        assert br.eval("Array.from(document.querySelectorAll('svg#focus-svg rect.regressed'))"
                       ".map(r => r.getAttribute('data-frame'))")[:1] == [site]
        br.eval(f"document.querySelector('#sites-{bench} tr.regression').click()")
        assert site in br.eval(f"document.getElementById('panel-{bench}').textContent")
        shot = br.screenshot(str(tmp_path / "injected-regression.png"))
        br.settle()
        assert br.errors == []
    check_screenshot(shot, "injected-regression.png")
