"""The runtime patch series (runtime-patch/series.py): every supported
release's series applies to that release's pristine source under the
series' rules (no fuzz anywhere; on the default release no hunk moves),
the files keep to their cut (a backport alone, no file over 700 lines),
and the report of a port names the hunks that fail. Nothing is built:
the pinned sources are fetched (fetch-source.sh, cached in _build) and
unpacked."""

import pathlib
import subprocess
import sys

import pytest

from runtime_testlib import ROOT

sys.path.insert(0, str(ROOT / "runtime-patch"))
import series  # noqa: E402

SCRIPT = ROOT / "runtime-patch" / "series.py"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """release -> an unpacked pristine tree of it (read-only use)."""
    trees = {}
    for v in series.versions():
        r = subprocess.run([str(ROOT / "runtime-patch" / "fetch-source.sh"), v], cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        tree = tmp_path_factory.mktemp(f"ocaml-{v}")
        subprocess.run(["tar", "xf", r.stdout.strip(), "-C", str(tree), "--strip-components=1"],
                       check=True)
        trees[v] = tree
    return trees


def test_supported_releases():
    assert series.versions() == ["5.3.0", "5.4.1"]
    assert series.default_version() == "5.4.1"


@pytest.mark.parametrize("version", ["5.4.1", "5.3.0"])
def test_series_applies_to_its_release(pristine, version):
    assert series.check(version, pristine[version]) == []


def test_check_refuses_a_moved_hunk_on_the_default_release(pristine, tmp_path):
    """One added line at the top of an upstream file moves every hunk below
    it: on the default release that is a broken rule."""
    tree = tmp_path / "t"
    subprocess.run(["cp", "-a", str(pristine["5.4.1"]), str(tree)], check=True)
    sysc = tree / "runtime" / "sys.c"
    sysc.write_text("/* moved */\n" + sysc.read_text())
    problems = series.check("5.4.1", tree)
    assert problems and all("runtime/sys.c" in p and "lands +1 lines" in p for p in problems), problems


def test_report_names_the_failing_hunks(pristine, tmp_path):
    """A tree whose caml_do_exit lost the line a hunk hangs on: the report
    names the patch, the file and the hunk, and exits 1."""
    tree = tmp_path / "t"
    subprocess.run(["cp", "-a", str(pristine["5.4.1"]), str(tree)], check=True)
    sysc = tree / "runtime" / "sys.c"
    text = sysc.read_text()
    assert text.count("  struct gc_stats s;\n") == 1
    sysc.write_text(text.replace("  struct gc_stats s;\n", "  struct gc_stats stats;\n"))
    r = subprocess.run([sys.executable, str(SCRIPT), "report", str(tree)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("5.4.1/11-tracker-lifecycle.patch: 1 of") for ln in lines), r.stdout
    assert any("runtime/sys.c: hunk #" in ln for ln in lines), r.stdout
    assert lines[-1].startswith("1 of "), lines[-1]
    # the pristine tree reports clean
    r = subprocess.run([sys.executable, str(SCRIPT), "report", str(pristine["5.4.1"])],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[-1].startswith("0 of "), r.stdout


def test_report_refuses_a_tree_that_is_not_ocaml(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "report", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"series.py: {tmp_path} is not an OCaml source tree (no runtime/memprof.c)"


def test_each_file_keeps_to_its_cut():
    """Every file of every series is at most 700 lines; a backport (or fix of
    an upstream bug) holds that alone (its opening paragraph names the
    upstream PR or issue, and no design comment of ours is added by it), a
    feature file opens with "memprof-ci:"."""
    seen = set()
    for v in series.versions():
        for p in series.series(v):
            seen.add(p)
    assert seen == set(series.PATCHES.rglob("*.patch")), "a patch file no series lists"
    for p in seen:
        text = p.read_text()
        assert len(text.splitlines()) <= 700, (p, len(text.splitlines()))
        intro = text.split("\n--- ", 1)[0]
        if "backport" in p.name or "fix-" in p.name:
            assert intro.startswith(("Backport of ocaml/ocaml#", "Fix of ocaml/ocaml#")), p
            added = [ln for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
            assert not any("design 8" in ln or "memprof_tracker" in ln for ln in added), p
        else:
            assert intro.startswith("memprof-ci:"), p


def test_backports_only_where_the_release_lacks_them():
    """5.4.1 has ocaml/ocaml#14057 and #14287 upstream; 5.3.0 gets them from
    the series. #14304 is in neither release, so both carry it. 5.4.1 alone
    carries a fix of #15092 (5.3.0 does not have that bug)."""
    names = {v: [p.name for p in series.series(v)] for v in series.versions()}
    for v, want in (("5.3.0", {"01-backport-14057.patch", "02-backport-14287.patch",
                               "03-backport-14304.patch"}),
                    ("5.4.1", {"03-backport-14304.patch"})):
        assert {n for n in names[v] if "backport" in n} == want, names[v]
    assert [n for n in names["5.4.1"] if "fix-" in n] == ["00-fix-15092.patch"]
    assert not [n for n in names["5.3.0"] if "fix-" in n]
