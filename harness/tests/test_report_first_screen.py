"""report.html as a reviewer first sees it, in Debian's headless Chromium.

A fakebench project shaped like a real library (26 sites with call stacks
14 frames deep and library-prefixed names such as
`Re__Automata.State.create`, every site holding memory at the peak) records
its baselines; then one site allocates three times as much through one of
its two callers while an unrelated, much larger site allocates 16% less.
`memprof-ci check` writes the report, which is opened with a 1400 x 900
viewport (chromium_cdp.py).  Pinned, from the DOM's bounding rectangles
and attributes:

1. The first screen shows the verdict, the regressed site rows and the
   graph of the worst regressed site, down to its own (outlined) frame.
2. Unchanged site rows, of the alloc and the peak checks alike, are hidden
   until their <details> toggle is opened; regressions and improvements
   are visible from the start.
3. Every icicle block has a tooltip with its full name; a label never
   overflows its block; a click zooms to the block and a button restores.
4. The differential graph has a legend; the regressed paths are strong
   red only for the regressed site's share of a block (the trunk is not
   wholly highlighted), and the large decrease is drawn pale.

Screenshots at 1400 px wide are written to $MEMPROF_CI_SCREENSHOT_DIR, or
else to _build/test-artifacts/report-html/ under the repository, and their
paths printed.
"""

import json
import os

import pytest

from chromium_cdp import VIEW_H, VIEW_W, keep, opened, rect
from harness_testlib import check, project, update, write_json

SITE = "Re__Automata.State.create @ re/automata.ml"
DECREASED = "App__Buffer_pool.alloc_chunk @ src/buffer_pool.ml"

TRUNK = [("App__Driver.process_file", "src/driver.ml", 61),
         ("App__Driver.process_files", "src/driver.ml", 88),
         ("Cmdliner_eval.run_parser", "cmdliner_eval.ml", 30),
         ("Dune__exe__Main.main", "bin/main.ml", 40)]          # innermost first
AUTOMATA = [("Re__Automata.State.create", "re/automata.ml", 300),
            ("Re__Automata.delta_seq", "re/automata.ml", 520),
            ("Re__Automata.delta", "re/automata.ml", 560),
            ("Re__Compile.loop", "re/compile.ml", 140),
            ("Re__Compile.match_str", "re/compile.ml", 210),
            ("Re__Core.exec_internal", "re/core.ml", 120), ("Re__Core.exec", "re/core.ml", 150)]
LEXER = [("App__Lexer.next_token", "src/lexer.ml", 77), ("App__Lexer.tokenize", "src/lexer.ml", 90),
         ("App__Parser.parse_document", "src/parser.ml", 30)]
CONFIG = [("App__Config.match_key", "src/config.ml", 12), ("App__Config.load", "src/config.ml", 40)]


def sites(grown=1.0, shrunk=1.0):
    """The library's allocation sites; `grown` scales the regressed site's
    stacks through the lexer, `shrunk` the buffer pool's."""
    out = [{"frames": AUTOMATA + LEXER + TRUNK, "words": 3e6 * grown, "live": 0.02, "peak": 0.05},
           {"frames": AUTOMATA + CONFIG + TRUNK, "words": 2e6, "live": 0.02, "peak": 0.05},
           {"frames": [("Stdlib__Bytes.create", "bytes.ml", 80),
                       ("App__Buffer_pool.alloc_chunk", "src/buffer_pool.ml", 22),
                       ("App__Buffer_pool.get", "src/buffer_pool.ml", 40)] + TRUNK,
            "words": 2.5e7 * shrunk, "live": 0.3, "peak": 0.4}]
    for i in range(24):
        mod = ["Ast", "Typing", "Emit", "Symtab"][i % 4]
        out.append({"frames": [(f"App__{mod}.node_{i}", f"src/{mod.lower()}.ml", 10 + i),
                               (f"App__{mod}.walk", f"src/{mod.lower()}.ml", 300),
                               ("App__Parser.parse_document", "src/parser.ml", 31)] + TRUNK,
                    "words": 1e6 + 2e5 * i, "live": 0.05, "peak": 0.1})
    return out


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("first-screen")
    spec = {"sites": sites(), "gc": {"minor_words": 9_000_000, "promoted_words": 500_000,
                                     "major_words": 600_000, "top_heap_words": 800_000}}
    project(d, [{"name": "parser", "spec": spec}])
    update(d)
    spec.update(sites=sites(grown=3.0, shrunk=0.84), salt=1)
    write_json(os.path.join(str(d), "parser.spec.json"), spec)
    r = check(d, "--report-dir", "rep")
    assert r.returncode == 1, r.stdout + r.stderr
    b = json.loads((d / "rep" / "report.json").read_text())["benchmarks"]["parser"]
    status = {(x["check"], x["site"]): x["status"] for k in ("alloc", "peak") for x in b[k]}
    assert status[("alloc", SITE)] == "regression", status
    assert status[("alloc", DECREASED)] == status[("peak", DECREASED)] == "improvement"
    return d / "rep" / "report.html"


def test_first_screen_shows_verdict_regressed_sites_and_the_worst_sites_graph(page):
    with opened(page) as br:
        head = rect(br, "#headline")
        assert head and head["bottom"] <= VIEW_H
        assert "FAIL" in br.eval("document.getElementById('headline').textContent")
        table = rect(br, "#regressed")
        assert table and table["bottom"] <= VIEW_H
        assert br.eval("Array.from(document.querySelectorAll('#regressed tbody tr'))"
                       ".map(r => r.cells[1].textContent)") == [SITE]
        graph = rect(br, "svg#focus-svg")
        assert graph and 0 < graph["top"] < graph["bottom"] <= VIEW_H, graph
        assert graph["width"] >= 0.8 * VIEW_W
        own = rect(br, "svg#focus-svg rect.regressed")
        assert own and own["bottom"] <= VIEW_H, own
        # Its heaviest stacks: both callers of the site, the lexer's path first.
        frames = br.eval("Array.from(document.querySelectorAll('svg#focus-svg rect.n'))"
                         ".map(r => r.getAttribute('data-frame'))")
        assert "App__Lexer.tokenize @ src/lexer.ml" in frames
        assert "App__Config.load @ src/config.ml" in frames
        assert DECREASED not in frames
        br.settle()
        assert br.errors == []
        keep(br, "first-screen-1400.png")
        keep(br, "whole-page-1400.png", full=True)


def test_unchanged_rows_are_folded_until_the_toggle_is_opened(page):
    visible = ("Array.from(document.querySelectorAll('#bench-0 tr.site'))"
               ".filter(r => r.checkVisibility() && r.getBoundingClientRect().height > 0)"
               ".map(r => r.getAttribute('data-check') + ' ' + r.cells[7].textContent)")
    with opened(page) as br:
        shown = br.eval(visible)
        assert sorted(shown) == ["alloc REGRESSION", "alloc improvement", "live improvement",
                                 "live moved", "peak improvement"], shown
        same = br.eval("Array.from(document.querySelectorAll('#unchanged-0 tr.site'))"
                       ".map(r => r.getAttribute('data-check'))")
        assert (same.count("alloc"), same.count("live"), same.count("peak")) == (24, 24, 25)
        assert br.eval("document.getElementById('unchanged-0').open") is False
        br.eval("document.querySelector('#unchanged-0 summary').click()")
        assert len(br.eval(visible)) == len(shown) + len(same)
        br.eval("document.querySelector('#unchanged-0 summary').click()")
        assert br.eval(visible) == shown


def test_icicle_labels_fit_their_blocks_have_tooltips_and_zoom(page):
    labels = ("Array.from(document.querySelectorAll('svg#diff-0 text')).map(t => {"
              "var r=t.previousElementSibling;while(r&&!(r.classList.contains('n')))"
              "r=r.previousElementSibling;return {text:t.textContent,full:t.getAttribute("
              "'data-full'),w:t.getComputedTextLength(),rw:+r.getAttribute('width'),"
              "frame:r.getAttribute('data-frame')};})")
    with opened(page) as br:
        tips = br.eval("Array.from(document.querySelectorAll('svg rect.n')).map(r => "
                       "[r.getAttribute('data-frame'), r.querySelector('title').textContent])")
        assert len(tips) > 50
        for frame, tip in tips:
            assert tip.split("\n")[0] == frame and "click to zoom" in tip
        cut = []
        for lab in br.eval(labels):
            assert lab["full"] == lab["frame"]
            assert lab["w"] <= lab["rw"] - 2, lab            # never past its block
            if lab["text"] != lab["full"]:
                cut.append(lab)
        assert cut, "the graph has narrow blocks whose labels are shortened"
        # A shortened label keeps the end of the function's name.
        assert all(c["full"].split(" @ ")[0].endswith(c["text"].lstrip("\u2026"))
                   or c["text"] in c["full"] for c in cut)
        narrow = next(c for c in cut if c["frame"] == "App__Lexer.tokenize @ src/lexer.ml")
        svg_w = rect(br, "svg#diff-0")["width"]
        br.eval("Array.from(document.querySelectorAll('svg#diff-0 rect.n')).find(r => "
                "r.getAttribute('data-frame') === 'App__Lexer.tokenize @ src/lexer.ml')"
                ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        assert br.eval("document.querySelector('svg#diff-0').getAttribute('data-zoomed')") == "1"
        after = {lab["frame"]: lab for lab in br.eval(labels)}
        zoomed = after[narrow["frame"]]
        assert zoomed["rw"] >= svg_w - 4 and zoomed["text"] == narrow["full"]
        assert DECREASED not in after            # outside the zoomed block
        keep(br, "zoomed-diff-1400.png", at="#graphs-0")
        br.eval("document.querySelector('#graphs-0 button.unzoom').click()")
        assert br.eval("document.querySelector('svg#diff-0').getAttribute('data-zoomed')") == "0"
        br.settle()
        assert br.errors == []


def test_difference_graph_says_what_its_colours_mean_and_highlights_the_regressed_path(page):
    with opened(page) as br:
        for box in ("#focus-graph", "#graphs-0"):
            legend = br.eval(f"document.querySelector('{box} .legend').textContent")
            for words in ("regressed site's stacks that grew significantly",
                          "significant decrease", "no significant change", "own frame"):
                assert words in legend, (box, legend)
            assert br.eval(f"document.querySelectorAll('{box} .legend span.sw').length") == 5
        blocks = br.eval("Array.from(document.querySelectorAll('svg#diff-0 rect')).map(r => "
                         "({cls:r.getAttribute('class'),frame:r.getAttribute('data-frame'),"
                         "fill:r.getAttribute('fill'),w:+r.getAttribute('width')}))")
        node = {b["frame"]: b for b in blocks if "n" in b["cls"].split()}
        hot = {b["frame"]: b for b in blocks if b["cls"] == "hot"}
        # The large decrease is pale blue, with nothing strong on it.
        assert node[DECREASED]["fill"] == "#d5dcf3"
        assert DECREASED not in hot and "App__Buffer_pool.get @ src/buffer_pool.ml" not in hot
        # The regressed path through the lexer is strong red down to the site;
        # the config path (unchanged) is not.
        for f in ("App__Lexer.tokenize @ src/lexer.ml", "Re__Core.exec @ re/core.ml", SITE):
            assert hot[f]["fill"] == "#d42a2a", f
        assert "App__Config.load @ src/config.ml" not in hot
        # On the trunk only the regressed site's share is strong: a small part.
        trunk = "Dune__exe__Main.main @ bin/main.ml"
        assert 0 < hot[trunk]["w"] < 0.3 * node[trunk]["w"], (hot[trunk], node[trunk])
        assert node[trunk]["fill"] in ("#f3d2d2", "#c8c8c8")   # pale: not the signal
        keep(br, "difference-graph-1400.png", at="#graphs-0")
