"""Who changed a shared allocation point, end to end with the real patched
runtime (marker: needs_runtime; issue 57).

data/cause/ is one program of four files: Stdlib__Hashtbl.add's bucket
cells come from Path.Check.check_path (the largest caller) and
Traverse.Dfs.iter_component; NEW_CALLER=1 adds a third caller,
Util.Memo.memo, which grows the point by about 6% while the two others
allocate exactly as before, and moves a few samples' worth of Obj.dup
copies (allocation by a runtime primitive) from traverse.ml to util.ml.

The regressed row of the point must name the new caller first, with its
estimated contribution, in the terminal, report.md, report.html and
report.json, not the largest callers; and nothing may be shown as renamed
or moved between the two files.
"""

import glob
import json
import os
import shutil
import subprocess

import pytest
from harness_testlib import HERE, REPO, run_cli, write_manifest

OCAMLOPT = os.path.join(REPO, "_build", "runtime", "bin", "ocamlopt")
SOURCES = ("path.ml", "traverse.ml", "util.ml", "main.ml")
POINT = "Stdlib__Hashtbl.add @ hashtbl.ml"
NEW = "Util.Memo.memo @ util.ml"


def build(work):
    if not os.path.exists(OCAMLOPT):
        pytest.fail(f"{OCAMLOPT} not found: run `make runtime` first")
    for f in SOURCES:
        shutil.copy(os.path.join(HERE, "data", "cause", f), work)
    r = subprocess.run([OCAMLOPT, "-g", "-o", "cause.exe", *SOURCES], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ocamlopt failed: {r.stderr}"


def manifest(work, new_caller):
    bench = {"name": "cause", "command": ["./cause.exe"], "timeout": 120,
             "env": {"NEW_CALLER": "1" if new_caller else "0"}}
    write_manifest(work, [bench], defaults={"mode": "sampled", "rate": 1e-4,
                                            "seeds": [1, 2, 3]})


@pytest.mark.needs_runtime
def test_a_new_caller_of_a_standard_library_point_is_named_first(tmp_path):
    work = str(tmp_path)
    build(work)
    manifest(work, new_caller=False)
    r = run_cli(["update-baselines", "--manifest", "benchmarks.toml", "--no-overhead"],
                cwd=work, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    manifest(work, new_caller=True)
    r = run_cli(["check", "--manifest", "benchmarks.toml", "--no-overhead", "-m",
                 "alloc_sites", "--report-dir", "rep"], cwd=work, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr

    rep = json.load(open(tmp_path / "rep" / "report.json"))
    rows = {x["site"]: x for x in rep["benchmarks"]["cause"]["alloc"]}
    row = rows[POINT]
    assert row["status"] == "regression" and row["exact"], row
    # Its largest callers overall are the unchanged ones...
    assert row["split"][0]["site"] == "Path.Check.check_path @ path.ml", row["split"]
    # ...but the change is the new caller's: 4 x 15,000 cells of 4 words,
    # estimated from about 60 samples, its interval clear of zero.
    first = row["cause"][0]
    assert first["site"] == NEW and first["new"], row["cause"]
    assert 0 < first["change_low"] < first["change_words"] < first["change_high"], first
    assert 120_000 < first["change_words"] < 480_000, first
    assert row["stacks_site"] == NEW

    # Every renderer names it first, right after the site, with its bytes:
    # in the terminal (pytest's failure section, the regressions table) on
    # the line under the site's, in report.md in the site's cell.
    head = f"{POINT} (+"
    named = f"from {NEW} (new caller) ["
    out = r.stdout.splitlines()
    under = [out[i + 1] for i, x in enumerate(out[:-1])
             if POINT in x and not x.startswith("    ")]
    assert len(under) >= 2 and all(u.startswith("    +") and named in u.split(";")[0]
                                   for u in under), under
    md = [x for x in (tmp_path / "rep" / "report.md").read_text().splitlines() if head in x]
    html = (tmp_path / "rep" / "report.html").read_text()
    assert md and all(x.index(named) < x.find("Path.Check") or "Path.Check" not in x
                      for x in md), md
    assert named in md[0].split(head, 1)[1].split(";")[0], md
    note = html.split(f"<code>{POINT}</code>", 1)[1].split("</span>", 1)[0]
    assert note.startswith(' <span class="note">+') and named in note.split(";")[0], note

    # No rename between the two files: the Obj.dup copies moved from
    # traverse.ml to util.ml, a few samples each (below the noise floor).
    renamed = [(x["site"], x.get("renamed_from")) for k in ("alloc", "live", "peak")
               for x in rep["benchmarks"]["cause"].get(k) or [] if x.get("renamed_from")]
    assert renamed == [], renamed
    prim = [x for x in rows.values() if x["site"].endswith("(via runtime primitives, sampled)")]
    assert {x["file"] for x in prim} >= {"traverse.ml", "util.ml"}, prim
    assert "Renamed or moved" not in r.stdout
    assert not glob.glob(str(tmp_path / "rep" / "*.tmp"))
