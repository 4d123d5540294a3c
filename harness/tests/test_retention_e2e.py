"""End to end with the real patched runtime (marker: needs_runtime): a hidden
leak caught by the gate shows what holds it, in report.md and report.html.

tests/data/retention/leaky_base.ml keeps its last 100 entries in a bounded
queue (toplevel `recent`, field 0 of the unit); leaky_leak.ml instead keeps
every entry in a toplevel Hashtbl `memo` (field 1) and never evicts one.
update-baselines on the first records the queue's path in the baseline's
"retainers" section; `check` on the second fails the live-at-exit check on
Leaky.make_entry, makes one run with snapshot=exit, and the report's
headline for the site is the changed path: now held by the unit's field 1
through the table's bucket array (a block of Stdlib__Hashtbl.resize), where
the baseline had field 0.  report.html is opened in headless Chromium at
1400 px: the section is on the page, visible, with no console error, and a
screenshot of it is kept (retention-1400.png, chromium_cdp.keep).
"""

import html
import json
import re
import os
import shutil
import subprocess

import pytest

from chromium_cdp import keep, opened, rect
from harness_testlib import HERE, REPO, run_cli

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
DATA = os.path.join(HERE, "data", "retention")
ENTRY = "Leaky.make_entry @ leaky.ml"
MANIFEST = """\
[defaults]
mode = "sampled"
rate = 1e-2
seeds = [1, 2]
frames = 32
timeout = 60

[[benchmark]]
name = "leaky"
command = ["./leaky.exe"]
"""


def build(work, source):
    shutil.copy(os.path.join(DATA, source), os.path.join(work, "leaky.ml"))
    r = subprocess.run([OCAMLOPT, "-g", "-o", "leaky.exe", "leaky.ml"], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


@pytest.fixture(scope="module")
def caught(tmp_path_factory):
    """(work dir, check's result) of the leak checked against the base."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first "
                    f"(or deselect with -m 'not needs_runtime')")
    work = tmp_path_factory.mktemp("retention-e2e")
    (work / "benchmarks.toml").write_text(MANIFEST)
    build(str(work), "leaky_base.ml")
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"],
                cwd=str(work))
    assert r.returncode == 0, r.stdout + r.stderr
    build(str(work), "leaky_leak.ml")
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", "rep"], cwd=str(work), timeout=300)
    return work, r


@pytest.mark.needs_runtime
def test_the_baseline_records_the_queue_path(caught):
    work, _ = caught
    base = json.loads((work / "baselines" / "leaky.json").read_text())
    rec = base["retainers"][ENTRY]
    assert rec["root"] == "global Leaky, field 0"
    assert rec["hops"][-1]["site"] == ENTRY


@pytest.mark.needs_runtime
def test_the_leak_fails_the_live_check_and_the_changed_path_is_the_headline(caught):
    work, r = caught
    assert r.returncode == 1, r.stdout + r.stderr
    rep = json.loads((work / "rep" / "report.json").read_text())
    row = next(x for x in rep["benchmarks"]["leaky"]["live"] if x["site"] == ENTRY)
    assert row["status"] == "regression"
    ret = row["retention"]
    assert ret["changed"] is True
    assert ret["current"]["root"] == "global Leaky, field 1"
    assert ret["baseline"]["root"] == "global Leaky, field 0"
    table = [h for h in ret["current"]["hops"] if h.get("inner") == "Stdlib__Hashtbl.resize"]
    assert len(table) == 1 and table[0]["words"] >= 16384, ret["current"]
    headline = ("now held by global Leaky, field 1, through a block of Leaky.remember @ "
                "leaky.ml (Stdlib__Hashtbl.resize, tag 0, ")
    md = (work / "rep" / "report.md").read_text()
    # Markdown text escapes _ as &#95; (mdsafe.text); GitHub shows an underscore.
    line = html.unescape(next(x for x in md.splitlines()
                              if f"` {ENTRY} ` (live at exit)" in x))
    assert f"**{headline}" in line and "; was held by global Leaky, field 0**" in line, line
    assert "  - baseline: ` global Leaky, field 0 → " in md
    assert f"  leaky: {ENTRY} (live): {headline}" in r.stdout


@pytest.mark.needs_runtime
def test_report_html_shows_the_path_in_chromium(caught):
    work, _ = caught
    page = work / "rep" / "report.html"
    with opened(page) as br:
        br.settle()
        assert br.errors == [], br.errors
        sel = f'#retention li.changed[data-site="{ENTRY}"]'
        assert br.eval(f"document.querySelector({json.dumps(sel)}).checkVisibility()") is True
        head = br.eval(f"document.querySelector({json.dumps(sel + ' .headline strong')})"
                       ".textContent")
        assert head.startswith("now held by global Leaky, field 1, through a block of "
                               "Leaky.remember @ leaky.ml (Stdlib__Hashtbl.resize"), head
        base = br.eval(f"document.querySelector({json.dumps(sel + ' li.baseline code')})"
                       ".textContent")
        assert base.startswith("global Leaky, field 0 → "), base
        box = rect(br, "#retention")
        assert box and box["width"] <= 1400 and box["height"] > 0, box
        keep(br, "retention-1400.png", at="#retention")


WRAP = """\
import json, os, re, subprocess, sys
r = subprocess.run(["./leaky.exe"], stdout=subprocess.DEVNULL)
spec = os.environ["OCAMLMEMPROF"]
if r.returncode == 0 and "snapshot=exit" in spec:
    out = re.search(r"out=((?:%.|[^,%])*)", spec).group(1)
    out = re.sub("%(.)", r"\\1", out)
    doc = json.load(open(out))
    doc["snapshot"]["sites"][0]["depth"] += 1
    json.dump(doc, open(out, "w"))
sys.exit(r.returncode)
"""


@pytest.mark.needs_runtime
def test_a_malformed_snapshot_is_one_line_naming_the_file_and_keeps_the_report(
        caught, tmp_path):
    """The extra run's profile has a snapshot whose depth is not its path's
    length: exit 2, one line naming that profile, and the report is still
    written with the decided rows."""
    work, _ = caught
    shutil.copytree(work / "baselines", tmp_path / "baselines")
    shutil.copy(work / "leaky.exe", tmp_path / "leaky.exe")
    (tmp_path / "wrap.py").write_text(WRAP)
    (tmp_path / "benchmarks.toml").write_text(MANIFEST.replace(
        'command = ["./leaky.exe"]', 'command = ["/usr/bin/python3", "wrap.py"]'))
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead",
                 "--report-dir", "rep"], cwd=str(tmp_path), timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    bad = [x for x in r.stderr.splitlines() if "retaining paths" in x]
    assert len(bad) == 1, r.stderr
    assert re.search(r"leaky\.1\.snapshot\.json: malformed profile: snapshot\.sites\[0\]: "
                     r"depth \d+ is not the path's length", bad[0]), bad[0]
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    row = next(x for x in rep["benchmarks"]["leaky"]["live"] if x["site"] == ENTRY)
    assert row["status"] == "regression"
    assert row["retention"]["current"] is None
    assert row["retention"]["why"] == "no path: the run with a snapshot failed (see errors)"
    assert row["retention"]["baseline"]["root"] == "global Leaky, field 0"
