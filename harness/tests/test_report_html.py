"""report.html: self-contained, escaped, bounded, and right in a real browser.

A comparison of two profile sets (one site allocating 50% more through one
caller, one hostile name) is written with `compare --report-dir` and opened
in Debian's headless Chromium over the DevTools protocol (chromium_cdp.py):
no console error, the regressed site marked in the table and outlined in the
differential graph, and clicking it lists the caller that drives the
increase.  The static tests read the HTML without a browser: no URL that
would be fetched, no way out of the JSON data block, escaping of hostile
names, source links only from well-formed GitHub variables, old baselines
without stacks, and the size bound of the README.
"""

import json
import os
import re
from html.parser import HTMLParser

import pytest

from harness_testlib import cli, make_profile, project, run_cli, update, write_json
from memprof_ci.render import report_html
from memprof_ci.render.report_html import render_html, source_base, source_url
from memprof_ci.render.stackgraph import STACK_BUDGET

HOSTILE_FN = 'Main.h</script><!--<img src=x onerror="window.__pwned=1">'
HOSTILE_FILE = "</script><script>window.__pwned=2</script>.ml"


def stacks(mult, hostile=True):
    out = [([("Stdlib__List.init", "list.ml", 60), ("Main.build", "main.ml", 10),
             ("Main.run", "main.ml", 50), ("Main.main", "main.ml", 99)], int(4000 * mult), 5),
           ([("Stdlib__List.init", "list.ml", 60), ("Main.build", "main.ml", 10),
             ("Main.other", "main.ml", 70), ("Main.main", "main.ml", 99)], 4000, 5),
           ([("Main.g", "main.ml", 30), ("Main.main", "main.ml", 98)], 3000, 0)]
    if hostile:
        out.append(([(HOSTILE_FN, HOSTILE_FILE, 30), ("Main.main", "main.ml", 98)], 500, 0))
    return out


def write_side(d, mult, **kw):
    for seed in (1, 2):
        write_json(os.path.join(d, f"bench.{seed}.json"), make_profile(stacks(mult, **kw),
                                                                       seed=seed))
    return str(d)


@pytest.fixture(scope="module")
def regressed(tmp_path_factory):
    t = tmp_path_factory.mktemp("html")
    a, b = write_side(t / "A", 1.0), write_side(t / "B", 1.5)
    r = run_cli(["compare", a, b, "--report-dir", str(t / "r")])
    assert r.returncode == 1, r.stdout + r.stderr
    return t / "r" / "report.html"


class Tags(HTMLParser):
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.data, self.scripts = [], [], []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.data).append(data)


def test_report_is_self_contained_and_hostile_names_stay_text(regressed):
    text = regressed.read_text()
    page = Tags(text)
    names = [t for t, _ in page.tags]
    # Exactly the two scripts the renderer writes; nothing loaded from anywhere.
    assert names.count("script") == 2 and "img" not in names and "link" not in names
    assert "iframe" not in names and "object" not in names
    for tag, attrs in page.tags:
        for k, v in attrs.items():
            assert not k.startswith("on"), (tag, k)
            if k in ("src", "href"):
                assert v.startswith("#"), (tag, k, v)  # no source links outside Actions
    assert "default-src 'none'" in text
    data = text.split('<script type="application/json" id="memprof-data">')[1].split("</script>")[0]
    assert "</" not in data and "<!--" not in data and "<" not in data
    parsed = json.loads(data)
    assert any(HOSTILE_FN in f for b in parsed["benches"] for f in b["graph"]["frames"])
    # The hostile name is visible as text in the site table.
    assert any(HOSTILE_FN in d for d in page.data)


def test_regressed_site_is_marked_and_drawn_in_chromium(regressed, tmp_path):
    from chromium_cdp import Browser, check_screenshot
    with Browser() as br:
        br.open(str(regressed))
        assert br.eval("document.body.getAttribute('data-ready')") == "1"
        row = br.eval("Array.from(document.querySelectorAll('#sites-0 tr.regression'))"
                      ".map(r => r.getAttribute('data-frame'))")
        assert row == ["Main.build @ main.ml"]
        marked = br.eval("Array.from(document.querySelectorAll('svg#diff-0 rect.regressed'))"
                         ".map(r => r.getAttribute('data-frame'))")
        assert marked and set(marked) == {"Main.build @ main.ml"}
        # The path through Main.run grew significantly (pale red, with the
        # regressed site's share strong red); Main.other did not (grey, no share).
        fills = br.eval("Object.fromEntries(Array.from(document.querySelectorAll("
                        "'svg#diff-0 rect.n')).map(r => [r.getAttribute('data-frame') + '|' "
                        "+ r.getAttribute('y'), r.getAttribute('fill')]))")
        assert fills["Main.other @ main.ml|17"] == "#c8c8c8"
        assert fills["Main.run @ main.ml|17"] == "#f3d2d2"
        hot = br.eval("Array.from(document.querySelectorAll('svg#diff-0 rect.hot'))"
                      ".map(r => r.getAttribute('data-frame') + '|' + (r.getAttribute('y') - 1))")
        assert "Main.run @ main.ml|17" in hot and "Main.other @ main.ml|17" not in hot
        for kind in ("base", "cur"):
            assert br.eval(f"document.querySelectorAll('svg#{kind}-0 rect.n').length") >= 4
        br.eval("document.querySelector('#sites-0 tr.regression').click()")
        panel = br.eval("document.getElementById('panel-0').textContent")
        assert "Heaviest stacks in the current run" in panel
        first = panel.split("Heaviest stacks in the current run")[1]
        assert first.index("Main.run @ main.ml") < first.index("Main.other @ main.ml")
        assert "L10" in panel
        # Sorting by a column works and keeps every row, in both tables.
        n = br.eval("document.querySelectorAll('#bench-0 table.sites tbody tr').length")
        for t in ("#sites-0", "#sites-0-same"):
            br.eval(f"document.querySelector('{t} th:nth-child(5)').click()")
            br.eval(f"document.querySelector('{t} th:nth-child(5)').click()")
        assert br.eval("document.querySelectorAll('#bench-0 table.sites tbody tr').length"
                       ) == n == 4
        assert br.eval("document.querySelectorAll('#sites-0 tbody tr').length") == 1
        assert br.eval("document.querySelector('#sites-0-same tbody tr').getAttribute("
                       "'data-frame')") == "Main.g @ main.ml"  # descending delta
        assert br.eval("window.__pwned === undefined")
        shot = br.screenshot(str(tmp_path / "report.png"))
        br.settle()
        assert br.errors == []
    check_screenshot(shot, "report-regression.png")


def test_console_errors_are_seen(tmp_path):
    """The browser check can fail: a page whose script throws is caught."""
    from chromium_cdp import Browser
    p = tmp_path / "bad.html"
    p.write_text("<!DOCTYPE html><script>null.x</script><script>console.error('boom')</script>")
    with Browser() as br:
        br.open(str(p))
        br.settle()
        assert len(br.errors) == 2, br.errors


def test_source_links_only_from_well_formed_github_variables():
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_SHA": "a" * 40}
    base = source_base(env)
    assert base == "https://github.com/o/r/blob/" + "a" * 40 + "/"
    assert source_url(base, "benchmarks/lists.ml", 12) == base + "benchmarks/lists.ml#L12"
    assert source_base(dict(env, MEMPROF_CI_HEAD_SHA="b" * 40)).endswith("b" * 40 + "/")
    for bad in ({"GITHUB_SHA": "HEAD"}, {"GITHUB_REPOSITORY": "o/r\"><x"},
                {"GITHUB_SERVER_URL": "javascript:alert(1)//"}, {"GITHUB_REPOSITORY": "o/.."}):
        assert source_base(dict(env, **bad)) is None, bad
    assert source_base({}) is None
    for f in ("/abs/x.ml", "../x.ml", "a/../../x.ml", 'x".ml', None, "x.ml?q"):
        assert source_url(base, f, 1) is None, f


def test_source_links_in_the_page_on_actions(regressed, tmp_path):
    rep = json.loads((regressed.parent / "report.json").read_text())
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_SHA": "c" * 40}
    text = render_html(rep, env)
    hrefs = [a.get("href") for t, a in Tags(text).tags if t == "a"]
    assert "https://github.com/o/r/blob/" + "c" * 40 + "/main.ml#L10" in hrefs
    assert not any(h and "script" in h for h in hrefs)


def test_old_baseline_without_stacks_shows_only_current_side(tmp_path):
    proj = project(tmp_path)
    update(tmp_path)
    bdir = tmp_path / "baselines"
    doc = json.loads((bdir / "alpha.json").read_text())
    assert doc["stacks"]["list"], "update-baselines records stacks"
    del doc["stacks"]
    (bdir / "alpha.json").write_text(json.dumps(doc))
    r = cli(tmp_path, "check", "--manifest", proj, "--no-overhead", "--report-dir", "rep")
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["benchmarks"]["alpha"]["stacks"]["baseline"] is None
    assert rep["benchmarks"]["beta"]["stacks"]["baseline"]
    text = (tmp_path / "rep" / "report.html").read_text()
    data = json.loads(text.split('id="memprof-data">')[1].split("</script>")[0])
    alpha, beta = data["benches"]
    assert "recorded without call stacks" in alpha["graph"]["missing"]["baseline"]
    assert alpha["graph"]["current"] and beta["graph"]["baseline"]


def test_size_is_bounded_for_a_huge_comparison(tmp_path):
    """Many sites, deep stacks and long names, and a regressed site with many
    heavy stacks at the top: the page stays within the bound."""
    def side(mult):
        st = []
        for i in range(1500):
            fr = [(f"M{'x' * 300}.f{i}", f"d/f{i % 40}.ml", i)] + \
                 [(f"M.caller{(i * 7 + k) % 97}_{'y' * 150}", f"d/c{k}.ml", k) for k in range(30)]
            st.append((fr, int(50 * mult) + i % 13, 1))
        for j in range(12):      # one site, called 12 ways, regressed when mult > 1
            fr = [(f"M{'x' * 300}.hot", "d/hot.ml", 5)] + \
                 [(f"M.caller{j}_{k}_{'y' * 150}", f"d/c{k}.ml", k) for k in range(30)]
            st.append((fr, int(2000 * mult ** 3), 1))
        return st
    a, b = tmp_path / "A", tmp_path / "B"
    write_json(str(a / "big.1.json"), make_profile(side(1), frames=32))
    write_json(str(b / "big.1.json"), make_profile(side(1.3), frames=32))
    r = run_cli(["compare", str(a), str(b), "--report-dir", str(tmp_path / "r")])
    assert r.returncode in (0, 1), r.stderr
    size = os.path.getsize(tmp_path / "r" / "report.html")
    bound = (report_html.PAGE_BOUND_FIXED + report_html.MAX_SITE_ROWS * report_html.ROW_BOUND
             + STACK_BUDGET)
    assert 'id="focus-graph"' in (tmp_path / "r" / "report.html").read_text()
    assert size <= bound, (size, bound)
    text = (tmp_path / "r" / "report.html").read_text()
    assert "more site(s) with the smallest allocation" in text
    assert re.search(r'"cut":\d+', text)


def test_script_json_cannot_end_the_script():
    s = report_html.script_json({"x": "</script><!-- & \u2028"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == {"x": "</script><!-- & \u2028"}
