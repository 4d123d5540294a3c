"""`memprof-ci view FILE` (view.py, view_html.py) on real runs and bad input.

data/view/viewprog.ml is built with the patched runtime (_build/runtime,
`make runtime`) and run once with OCAMLMEMPROF=rate=1e-3,seed=1 writing a
profile and a trace.  Pinned:

1. The profile, our trace and memtrace's own trace (data/ctf) render in
   headless Chromium at 1400 x 900 with no console error and no
   Content-Security-Policy violation; the first screen shows the top site;
   the sections exist (the timeline and lifetime charts only for a trace).
2. The profile and the trace of one run give the same site table, and the
   trace's timeline peaks at the profile's live-at-peak words; the
   lifetime bins and the blocks never collected add up to the blocks.
3. Retainer paths are drawn only from an input that carries them, and a
   JSON kind registered with view.register_json_kind is read by its loader.
   A real profile with a snapshot (runtime-patch/tests/programs/
   snapshot_cache.ml, OCAMLMEMPROF=...,snapshot=exit: one site's tuples
   kept in a toplevel Hashtbl, another's dropped) shows on its first screen
   the top site with its path, and the heaviest site live at exit with its
   path hop by hop: the unit's global, the table, its bucket array, a
   bucket, the tuple.
4. A fixed profile renders as golden/view.html (CSS and script, which
   report_assets.py owns, replaced by markers).  Regenerate after an
   intended change with MEMPROF_CI_UPDATE_GOLDEN=1.
5. Bad input or output gives exit 2 and one line naming the file, writes
   nothing and leaves a planted symlink and its target alone.

Screenshots (view-*.png) are kept by chromium_cdp.keep, beside
test_report_first_screen.py's.
"""

import json
import os
import random
import shutil
import subprocess

import pytest

from chromium_cdp import VIEW_H, keep, opened, rect
from harness_testlib import (HERE, REPO, make_profile, no_traceback, run_cli, to_version3,
                             write_json)

from memprof_ci.render import view
from memprof_ci.sites.retaining import Hop, RetainingPath
from memprof_ci.render.report_assets import CSP_META, CSS, JS
from memprof_ci.render.view_html import render_view

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
TOP = "Viewprog.make_rows @ viewprog.ml"
LABEL = "Viewprog.label @ viewprog.ml"
MEMTRACE = os.path.join(HERE, "data", "ctf", "after.ctf")
SNAPSHOT_PROG = os.path.join(REPO, "runtime-patch", "tests", "programs", "snapshot_cache.ml")
DEMAND_PROG = os.path.join(REPO, "runtime-patch", "tests", "programs", "snapshot_demand.ml")
KEPT = "Snapshot_cache.make_kept @ snapshot_cache.ml"
DROPPED = "Snapshot_cache.make_dropped @ snapshot_cache.ml"
GOLDEN = os.path.join(HERE, "golden", "view.html")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(profile, trace) of one run of viewprog with the patched runtime."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first "
                    f"(or deselect with -m 'not needs_runtime')")
    d = tmp_path_factory.mktemp("view-run")
    shutil.copy(os.path.join(HERE, "data", "view", "viewprog.ml"), d)
    r = subprocess.run([OCAMLOPT, "-g", "-o", "viewprog.exe", "viewprog.ml"], cwd=d,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, OCAMLMEMPROF="rate=1e-3,seed=1,out=p.json,trace=t.ctf")
    r = subprocess.run(["./viewprog.exe"], cwd=d, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == "kept 1562\n", r.stdout + r.stderr
    return d / "p.json", d / "t.ctf"


@pytest.fixture(scope="module")
def snapshot_run(tmp_path_factory):
    """(profile with a snapshot, number of buckets of the program's table)
    of one run of snapshot_cache.ml with the patched runtime at rate 1."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first "
                    f"(or deselect with -m 'not needs_runtime')")
    d = tmp_path_factory.mktemp("view-snapshot")
    shutil.copy(SNAPSHOT_PROG, d)
    r = subprocess.run([OCAMLOPT, "-g", "-o", "snap.exe", "snapshot_cache.ml"], cwd=d,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, OCAMLMEMPROF="rate=1,seed=1,snapshot=exit,out=s.json")
    r = subprocess.run(["./snap.exe"], cwd=d, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((d / "s.json").read_text())["version"] == 4
    return d / "s.json", int(r.stdout)


def render(src, out):
    r = run_cli(["view", str(src), "-o", str(out)])
    no_traceback(r)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == f"memprof-ci: wrote {out}\n"
    return out


@pytest.mark.needs_runtime
def test_profile_and_traces_render_in_chromium_with_the_top_site_first(run, tmp_path):
    pages = {"profile": render(run[0], tmp_path / "profile.html"),
             "trace": render(run[1], tmp_path / "trace.html"),
             "memtrace": render(MEMTRACE, tmp_path / "memtrace.html")}
    tops = {"profile": TOP, "trace": TOP, "memtrace": "Fixprog @ fixprog.ml"}
    for kind, page in pages.items():
        text = page.read_text()
        assert CSP_META in text and text.count("Content-Security-Policy") == 1
        with opened(page) as br:
            br.settle()
            assert br.errors == [], (kind, br.errors)
            first = br.eval("document.querySelector('#top-sites-table tbody tr')"
                            ".getAttribute('data-site')")
            assert first == tops[kind]
            cell = rect(br, "#top-sites-table tbody tr td code")
            assert cell and 0 < cell["top"] and cell["bottom"] <= VIEW_H, cell
            assert br.eval("document.querySelector('#top-sites-table tbody tr td code')"
                           ".checkVisibility()") is True
            assert br.eval("document.querySelector('#top-sites-table tbody tr td code')"
                           ".textContent") == tops[kind]
            for sec in ("#top-sites", "#stacks", "#timeline", "#lifetimes"):
                assert rect(br, sec), (kind, sec)
            blocks = br.eval("Array.from(document.querySelectorAll('svg#cur-0 rect.n'))"
                             ".map(r => [r.getAttribute('data-frame'), "
                             "r.querySelector('title').textContent])")
            assert any(f == tops[kind] for f, _ in blocks), blocks
            # One run: its graph alone, nothing about a baseline.
            assert br.eval("document.querySelectorAll('#stacks svg').length") == 1
            assert "baseline" not in br.eval("document.getElementById('stacks').textContent")
            assert all(t.startswith(f + "\n") and "NaN" not in t and "samples" in t
                       for f, t in blocks)
            charts = br.eval("[!!document.getElementById('timeline-svg'), "
                             "!!document.getElementById('lifetimes-svg')]")
            assert charts == ([False, False] if kind == "profile" else [True, True]), kind
            assert br.eval("document.getElementById('retainers')") is None
            keep(br, f"view-{kind}-1400.png")
            if kind == "trace":
                keep(br, "view-trace-whole-1400.png", full=True)


@pytest.mark.needs_runtime
def test_a_profile_and_the_trace_of_its_run_agree(run):
    p, t = view.load_view(str(run[0])), view.load_view(str(run[1]))
    assert (p.kind, t.kind) == ("profile", "trace")

    def table(v):
        return [(s.key, s.words, s.blocks, s.promoted, s.collected, s.live, s.peak)
                for s in v.sites]
    assert table(p) == table(t)
    assert [s.key for s in p.sites[:2]] == [TOP, LABEL]
    assert p.sites[0].words / p.total_words > 0.8 and p.sites[0].line == 7
    assert p.sites[0].live > 0 and p.sites[1].live == 0 and p.sites[1].collected > 0
    assert p.timeline is None and p.lifetimes is None
    # The trace's timeline peaks where the profile's peak is (one domain).
    peak = sum(s.peak for s in p.sites)
    assert peak > 0 and t.timeline.peak_words == pytest.approx(peak, rel=1e-12)
    assert max(w for _, w in t.timeline.points) == t.timeline.peak_words
    assert 0 < t.timeline.peak_us <= t.timeline.end_us
    lt = t.lifetimes
    assert sum(b for b, _ in lt.bins) + lt.live[0] == sum(s.blocks for s in t.sites)
    assert lt.live[1] == pytest.approx(sum(s.live for s in t.sites), rel=1e-12)


def _shown(br, selector):
    """[(text, whole element on the first screen and visible)] of the
    elements matching `selector`."""
    return br.eval(f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
                   ".map(e => {const r = e.getBoundingClientRect(); return [e.textContent, "
                   f"r.top >= 0 && r.bottom <= {VIEW_H} && r.height > 0 && "
                   "e.checkVisibility()];})")


@pytest.mark.needs_runtime
def test_a_profile_with_a_snapshot_shows_the_top_site_and_its_path_first(snapshot_run,
                                                                         tmp_path):
    src, buckets = snapshot_run
    v = view.load_view(str(src))
    top = v.sites[0]
    assert v.kind == "profile" and top.retainers, [s.key for s in v.sites]
    page = render(src, tmp_path / "snapshot.html")
    with opened(page) as br:
        br.settle()
        assert br.errors == [], br.errors
        # The table's top site, its path on one line under its name.
        first = br.eval("document.querySelector('#top-sites-table tbody tr')"
                        ".getAttribute('data-site')")
        assert first == top.key
        row = "#top-sites-table tbody tr:first-child"
        assert _shown(br, f"{row} td code")[0] == [top.key, True]
        held = _shown(br, f"{row} div.held")
        assert len(held) == 1 and held[0][1], held
        assert held[0][0].startswith("held by global Snapshot_cache, field 0 → "
                                     "Snapshot_cache.cache @ snapshot_cache.ml "
                                     "(in Stdlib__Hashtbl.create, tag 0, 4 words)"), held
        # The heaviest site live at exit (the kept tuples), hop by hop.
        assert br.eval("document.querySelector('#held p').getAttribute('data-site')") == KEPT
        hops = _shown(br, "#held ol.path li")
        assert all(on for _, on in hops), hops
        texts = [text for text, _ in hops]
        assert texts[:2] == [
            "root: global Snapshot_cache, field 0",
            "Snapshot_cache.cache @ snapshot_cache.ml (in Stdlib__Hashtbl.create, tag 0, "
            "4 words, field 1)"]
        assert texts[2].startswith("Snapshot_cache @ snapshot_cache.ml (in Stdlib__Hashtbl"
                                   f".resize, tag 0, {buckets} words, field ")
        assert texts[3:] == [
            "Snapshot_cache @ snapshot_cache.ml (in Stdlib__Hashtbl.replace, tag 0, 3 words, "
            "field 1)",
            f"{KEPT} (tag 0, 5 words)"]
        assert "1.2 k words of its live words share the first hops" in br.eval(
            "document.querySelector('#held p').textContent")
        # The dropped site: not live, no path anywhere.
        assert br.eval(f"document.querySelector('tr[data-site=\"{DROPPED}\"] div.held')") \
            is None
        sec = br.eval("document.getElementById('retainers').textContent")
        assert KEPT in sec and DROPPED not in sec
        keep(br, "view-snapshot-1400.png")


@pytest.mark.needs_runtime
def test_a_snapshot_taken_at_the_programs_call_says_so(tmp_path):
    """A snapshot written while the program ran (OCAMLMEMPROF snapshot=call)
    is viewed as a profile of that moment: held and live "at the snapshot"."""
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    shutil.copy(DEMAND_PROG, tmp_path)
    r = subprocess.run([OCAMLOPT, "-g", "-I", "+unix", "unix.cmxa", "-o", "d.exe",
                        "snapshot_demand.ml"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, OCAMLMEMPROF="rate=1,seed=1,out=p.json,snapshot=call,"
               "snapshot_out=s%n.json")
    r = subprocess.run(["./d.exe", "call", "-"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["s1.json", "s2.json"], r.stderr
    v = view.load_view(str(tmp_path / "s1.json"))
    assert v.moment == "at the snapshot" and v.live_what == "live at the snapshot"
    facts = dict(v.facts)
    assert facts["snapshot"].startswith("at the program's call, breadth first")
    page = render(tmp_path / "s1.json", tmp_path / "s1.html")
    with opened(page) as br:
        br.settle()
        assert br.errors == [], br.errors
        assert br.eval("document.querySelector('#held h2').textContent") == \
            "Held at the snapshot"
        # Both sites are held at the first snapshot; the dropped one is
        # the heavier (7-field tuples against 5).
        assert br.eval("document.querySelector('#held p').getAttribute('data-site')") == \
            "Snapshot_demand.make_dropped @ snapshot_demand.ml"
    # The exit's profile has no snapshot and says "at exit".
    assert view.load_view(str(tmp_path / "p.json")).live_what == "live at exit"


# ------------------------------------------------------------ model and golden

def fixed_profile():
    return make_profile([
        ([("Stdlib__Bytes.create", "bytes.ml", 80), ("Shop.Cart.add", "shop/cart.ml", 14),
          ("Shop.main", "shop/main.ml", 3)], 700, 40),
        ([("Shop.Cart.add", "shop/cart.ml", 15), ("Shop.main", "shop/main.ml", 4)], 100, 0),
        ([("Shop.Log.line", "shop/log.ml", 9), ("Shop.main", "shop/main.ml", 5)], 250, 10),
        ([("Shop.<script>alert(1)</script>", "x.ml", 1)], 3, 0)], rate=1e-3)


def strip_assets(page: str) -> str:
    assert page.count(CSS) == 1 and page.count(JS) == 1
    return page.replace(CSS, "/* report_assets.CSS */").replace(JS, "/* report_assets.JS */")


def test_a_fixed_profile_renders_as_golden(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_json("shop.json", fixed_profile())
    page = strip_assets(render_view(view.load_view("shop.json")))
    if os.environ.get("MEMPROF_CI_UPDATE_GOLDEN") == "1":
        with open(GOLDEN, "w", encoding="utf-8") as fh:
            fh.write(page)
    with open(GOLDEN, encoding="utf-8") as fh:
        assert page == fh.read(), ("view.html differs from golden/view.html; if intended, "
                                   "regenerate with MEMPROF_CI_UPDATE_GOLDEN=1")
    assert "<script>alert" not in page


def test_sites_are_the_harness_sites_heaviest_first(tmp_path):
    v = view.load_view(write_json(tmp_path / "shop.json", fixed_profile()))
    assert [(s.key, s.samples, s.blocks) for s in v.sites] == [
        ("Shop.Cart.add @ shop/cart.ml", 800, 800), ("Shop.Log.line @ shop/log.ml", 250, 250),
        ("Shop.<script>alert(1)</script> @ x.ml", 3, 3)]
    cart = v.sites[0]
    assert cart.words == pytest.approx(800 / 1e-3) and cart.line == 14
    assert cart.live == pytest.approx(40 / 1e-3) and cart.peak is None
    assert v.total_words == pytest.approx(1053 / 1e-3) and v.rest == (0, 0.0)


def test_a_profile_of_live_off_shows_what_was_not_collected(tmp_path):
    """A profile of OCAMLMEMPROF live=off, which the checks refuse, is
    viewed with its live column named for what it counts."""
    doc = to_version3(make_profile([([("A.f", "a.ml", 3)], 10, 4)]))
    doc["config"]["live"] = "off"
    path = write_json(tmp_path / "p.json", doc)
    v = view.load_view(str(path))
    assert v.live_what == "not collected by exit (live=off)"
    assert "not collected by exit (live=off)" in dict(v.facts)
    page = render(path, tmp_path / "p.html").read_text()
    assert "not collected by exit (live=off)" in page and "live at exit" not in page


def test_the_kind_is_read_from_the_content_not_the_name(tmp_path):
    trace = tmp_path / "trace.json"
    shutil.copy(MEMTRACE, trace)
    prof = write_json(tmp_path / "profile.ctf", fixed_profile())
    assert view.load_view(str(trace)).kind == "trace"
    assert view.load_view(prof).kind == "profile"


def test_sites_beyond_the_bound_are_summed(tmp_path, monkeypatch):
    monkeypatch.setattr(view, "MAX_SITES", 2)
    v = view.load_view(write_json(tmp_path / "shop.json", fixed_profile()))
    assert [s.key for s in v.sites] == ["Shop.Cart.add @ shop/cart.ml",
                                        "Shop.Log.line @ shop/log.ml"]
    assert v.rest == (1, pytest.approx(3 / 1e-3))
    assert "1 more site(s), 3.0 k words in all, are not listed" in render_view(v)


@pytest.fixture
def kinds():
    saved = dict(view.JSON_KINDS)
    yield view.JSON_KINDS
    view.JSON_KINDS.clear()
    view.JSON_KINDS.update(saved)


def test_retainer_paths_are_drawn_only_from_an_input_that_has_them(tmp_path, kinds):
    """A third kind (here a stand-in loader for a snapshot format) plugs in
    by its format and its sites' retainer paths reach the page."""
    src = write_json(tmp_path / "shop.json", fixed_profile())
    plain = render_view(view.load_view(src))
    assert 'id="retainers"' not in plain and "Retainer paths" not in plain

    def loader(doc, path):
        v = view.load_view(src)
        v.kind = "snapshot"
        v.sites[0].retainers = [RetainingPath(
            root="global Shop.Cart.table", shared_words=30_000.0,
            hops=[Hop("Stdlib__Hashtbl.create @ hashtbl.ml", "bucket array", 17),
                  Hop("Shop.Cart.add @ shop/cart.ml", "string", 5)])]
        return v
    view.register_json_kind("test/snapshot", loader)
    snap = write_json(tmp_path / "snap.json", {"format": "test/snapshot"})
    page = render_view(view.load_view(snap))
    assert page.count('<section id="retainers">') == 1
    sec = page[page.index('<section id="retainers">'):]
    sec = sec[:sec.index("</section>")]
    assert "global Shop.Cart.table" in sec and "bucket array, 17 words" in sec
    assert "Shop.Cart.add @ shop/cart.ml" in sec and "30.0 k words of its live words" in sec
    assert page.index('id="retainers"') < page.index('id="stacks"')


def snapshot_profile(snapshot=None):
    """fixed_profile in version 4: a snapshot whose one site, Shop.Cart.add
    (its first stack), is held from a stack frame through an unsampled
    cons cell, three hops not recorded and a continuation."""
    doc = to_version3(fixed_profile())
    table = doc["frame_table"]
    frames = doc["stacks"][0]["frames"]
    assert table[frames[1]]["function"] == "Shop.Cart.add"
    doc["version"] = 4
    doc["snapshot"] = snapshot or {
        "at": "exit", "taken": True, "walk": "breadth-first", "sites_limit": 20,
        "reachable_blocks": 500, "tracked_blocks": 90, "tracked_reachable": 50,
        "table_bytes": 4096,
        "sites": [{"frames": frames, "live_blocks": 40, "live_samples": 40,
                   "live_words": 120, "shared_samples": 30, "shared_words": 90,
                   "root": {"kind": "stack", "function": "Shop.main", "file": "shop/main.ml",
                            "line": 3},
                   "depth": 6,
                   "path": [{"tag": 0, "size": 2, "field": 0}, {"elided": 3},
                            {"tag": 245, "size": 9, "field": None},
                            {"tag": 252, "size": 4, "frames": frames}]}]}
    return doc


def test_a_snapshot_gives_its_site_a_path_hop_by_hop(tmp_path):
    v = view.load_view(write_json(tmp_path / "s.json", snapshot_profile()))
    cart = v.sites[0]
    assert cart.key == "Shop.Cart.add @ shop/cart.ml" and not v.sites[1].retainers
    [p] = cart.retainers
    assert p.root == "stack frame of Shop.main (shop/main.ml:3)"
    assert p.shared_words == pytest.approx(30 / 1e-3) and p.live_words == pytest.approx(40 / 1e-3)
    assert p.hops == [
        Hop(site=None, tag="tag 0", words=2, field=0),
        Hop(site=None, elided=3),
        Hop(site=None, tag="continuation", words=9),
        Hop(site="Shop.Cart.add @ shop/cart.ml", tag="string", words=4,
                 inner="Stdlib__Bytes.create")]
    assert dict(v.facts)["snapshot"].startswith("at exit, breadth first: 1 stack(s) with a "
                                                "retainer path (at most 20), for 1 of the "
                                                "sites below")
    page = render_view(v)
    held = page[page.index('<section id="held">'):]
    held = held[:held.index("</section>")]
    assert ("<li>root: stack frame of Shop.main (shop/main.ml:3)</li>"
            "<li>a block not sampled (tag 0, 2 words, field 0)</li>"
            "<li>… 3 hop(s) not recorded …</li>"
            "<li>a block not sampled (continuation, 9 words)</li>"
            "<li><code>Shop.Cart.add @ shop/cart.ml</code> (in Stdlib__Bytes.create, string, "
            "4 words)</li>") in held
    # The site's stack holds all its live samples: "of its live words".
    assert "30.0 k words of its live words share the first hops" in held
    assert page.index('id="held"') < page.index('id="top-sites"') < page.index('id="retainers"')


def test_a_snapshot_not_taken_says_why_and_draws_no_path(tmp_path):
    doc = snapshot_profile({"at": "exit", "taken": False, "reason": "live=gc"})
    v = view.load_view(write_json(tmp_path / "s.json", doc))
    assert dict(v.facts)["snapshot"] == "not taken: live=gc"
    page = render_view(v)
    assert not v.has_retainers and 'id="held"' not in page and 'id="retainers"' not in page


# ------------------------------------------------------------ bad input

def garbage_ctf(tmp_path):
    data = bytearray(open(MEMTRACE, "rb").read()[:4])
    data += bytes(random.Random(7).randrange(256) for _ in range(3000))
    p = tmp_path / "garbage.ctf"
    p.write_bytes(bytes(data))
    return p


def bad_inputs(tmp_path):
    """name -> path of an input that must be refused."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "empty.json").write_bytes(b"")
    (d / "corrupt.json").write_text('{"format": "memprof-ci/profile", "version": 1, ')
    write_json(d / "other.json", {"format": "something/else"})
    doc = fixed_profile()
    doc["totals"]["samples"] += 1
    write_json(d / "bad-totals.json", doc)
    (d / "cut.ctf").write_bytes(open(MEMTRACE, "rb").read()[:5000])
    doc = snapshot_profile()
    doc["snapshot"]["sites"][0]["root"] = {"kind": "heap"}
    write_json(d / "bad-snapshot.json", doc)
    (d / "sub").mkdir()
    return {"missing": d / "nothere.json", "directory": d / "sub", "empty": d / "empty.json",
            "corrupt JSON": d / "corrupt.json", "unknown format": d / "other.json",
            "inconsistent profile": d / "bad-totals.json", "truncated CTF": d / "cut.ctf",
            "malformed snapshot": d / "bad-snapshot.json",
            "garbage CTF": garbage_ctf(d)}


CASES = ("missing", "directory", "empty", "corrupt JSON", "unknown format",
         "inconsistent profile", "malformed snapshot", "truncated CTF", "garbage CTF")


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_naming_the_file_and_writes_nothing(tmp_path, case):
    src = bad_inputs(tmp_path)[case]
    out = tmp_path / "out"
    out.mkdir()
    r = run_cli(["view", str(src), "-o", str(out / "report.html")])
    no_traceback(r)
    assert r.returncode == 2, (case, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"memprof-ci: error: {src}:"), lines
    assert "internal error" not in r.stderr
    assert os.listdir(out) == []


def test_a_planted_symlink_at_the_output_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    r = run_cli(["view", MEMTRACE, "-o", str(link)])
    no_traceback(r)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"memprof-ci: error: -o {link}: is a symbolic link; memprof-ci neither writes "
        f"through nor replaces one: remove it or name another file"]
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["elsewhere.txt", "report.html"]


@pytest.mark.parametrize("case", ("directory", "parent is a file"))
def test_an_unwritable_output_is_one_line_naming_it(tmp_path, case):
    (tmp_path / "file").write_text("x")
    out = tmp_path if case == "directory" else tmp_path / "file" / "report.html"
    r = run_cli(["view", MEMTRACE, "-o", str(out)])
    no_traceback(r)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"memprof-ci: error: -o {out}: "), lines
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_an_existing_page_is_replaced_whole(tmp_path):
    out = tmp_path / "report.html"
    out.write_text("old")
    render(MEMTRACE, out)
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.endswith("</html>\n")
    assert json.loads(text.split('id="memprof-data">')[1].split("</script>")[0])["benches"]
    assert sorted(os.listdir(tmp_path)) == ["report.html"]
