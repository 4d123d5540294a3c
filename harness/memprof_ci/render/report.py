"""Rendering results: the terminal table and Markdown (PR comment, job summary).

Both are rendered from one decided report dictionary (report_doc.py; the
content of report.json), so `merge` can re-render shard results exactly;
each render reads it once as report_types.Report, from which the headline,
the preamble, the status table and the retaining paths are worded (the
site tables read the rows of the dictionary).
Invariants: nothing is decided here: the exit code, errors and accepted
checks come from the verdict (verdict.decide) and each row's status from
its own "status"; regressions are listed worst first (fmt.worst_first);
a change that is not significant prints as "~" (benchstat style); every
external string (names, messages, notes) reaches the Markdown and the
terminal only through mdsafe.
The terminal follows benchstat: the headline and the status table always,
a benchmark's site table only when one of its sites changed significantly
(every benchmark's with verbose=True).  A site that moves.pair_renames
folded into its new name (`renamed_to`) is never listed on its own; the
merged row reads "new (renamed or moved from old)".  The terminal's tables
fit 120 columns (terminal_table.py): a site's notes (fmt.site_notes: its
callers, a rename) go on indented lines under its row.  The retaining paths of
failing live and peak sites (retention.py) follow the regressions, worded
by report_retention.py.  report_html.py renders the same dictionary as HTML.
"""

from __future__ import annotations

from ..text import mdsafe, wrap
from . import report_budgets, report_retention
from ..text.fmt import (fmt_bytes, fmt_delta, fmt_lines, fmt_mde, fmt_p, fmt_pct, overhead_brief,
                        overhead_text, site_name, site_notes, worst_first)
from .terminal_table import table
from ..decide.report_doc import CHECKS
from ..decide.report_types import ABSENT, Benchmark, GcRow, Report

STATUS_CHECKS = CHECKS[:4]   # the per-benchmark status columns besides overhead
MD_SITES_PER_BENCH = 25


def gc_spread_note(g: GcRow) -> str:
    """` (+5.8% from the schedule mean, spread 9.7%, p(Holm) 0.001)` for a GC
    row judged against the schedule's spread, else nothing."""
    if g.p_raw is ABSENT or g.effect is None or g.effect is ABSENT:
        return ""
    spread = g.spread / g.reference if g.reference else 0.0
    return (f" ({g.effect * 100:+.2f}% from the schedule mean, spread {spread:.1%}, "
            f"p(Holm) {fmt_p(g.p_adj if g.p_adj is not ABSENT else None)})")


def all_site_rows(report: dict, status: str | None = None) -> list:
    rows = []
    for b in report["benchmarks"].values():
        for key in ("alloc", "live", "peak"):
            rows.extend(r for r in b.get(key) or [] if not r.get("renamed_to")
                        and (status is None or r.get("status") == status))
    return rows


def renamed_rows(report: dict) -> list:
    """Merged rename rows (moves.pair_renames), by benchmark, check and site."""
    return sorted((r for r in all_site_rows(report) if r.get("renamed_from")),
                  key=lambda r: (r["benchmark"], r["check"], r["site"]))


def moves(report: Report) -> list:
    """Allocation that moved between sites (moves.apply_moves):
    [benchmark, check, from, to, bytes per run], largest first; a moved row
    whose sources are no single significant site reads "(other sites)"."""
    out = []
    for r in (r for b in report.benchmarks.values() for r in b.site_rows()
              if not r.renamed_to):
        if r.status != "moved" and not r.moved_from:
            continue
        srcs = r.moved_from or []
        if not srcs and r.current_samples > r.baseline_samples:
            srcs = [{"site": "(other sites)",
                     "words": (r.current_bytes - r.baseline_bytes) / 8}]
        out += [[r.benchmark, r.check, m["site"], r.site, m["words"] * 8] for m in srcs]
    return sorted(out, key=lambda x: (-x[4], x[0], x[1], x[2], x[3]))


def improvements(report: dict) -> list:
    """Improved sites, largest decrease first."""
    return worst_first(all_site_rows(report, "improvement"))[::-1]


SIGNIFICANT = ("regression", "improvement", "moved")


def p_of(r: dict):
    """The adjusted p-value of the direction the site changed in."""
    dec = r["current_samples"] < r["baseline_samples"]
    return r.get("p_adj_decrease") if dec else r.get("p_adj")


def changed(b: Benchmark) -> bool:
    """Whether a benchmark has a site whose change is significant."""
    return any(r.status in SIGNIFICANT for r in b.site_rows() if not r.renamed_to)


def _rename_word(r) -> str:
    return {"regression": "regression", "improvement": "improvement"}.get(
        r.get("status"), "passes")


def peak_lines(report: Report) -> list:
    """The peak check's own line (verdict.peak_line) of each benchmark whose
    peak check failed or was accepted: `name: peak: +4.4 M words; held by ...`."""
    out = []
    for name, b in sorted(report.benchmarks.items()):
        c = b.checks.get("peak")
        if c is not None and c.outcome in ("failed", "accepted"):
            for line in c.text.split("\n"):
                if ": peak: " in line:
                    out.append(f"{name}: {line.split(': ', 1)[1]}")
    return out


ABSENT_WORD = {"missing": ("MISSING", "❌ missing"), "removed": ("removed", "removed")}


def _check_cell(b: Benchmark, check: str, md: bool) -> str:
    """A status cell: the check's decided outcome; a benchmark that was not
    run (its status "missing" or "removed", decided by its presence check)
    reads so in its first column."""
    if b.status in ABSENT_WORD:
        return ABSENT_WORD[b.status][md] if check == STATUS_CHECKS[0] else "-"
    c = b.checks.get(check)
    if c is None:
        return "-"
    if c.outcome == "skipped" and c.text.startswith("not measured"):
        return "not measured"
    sym = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "skipped": "skip",
           "not run": "-", "accepted": "accepted"}[c.outcome]
    if md:
        sym = {"ok": "✅", "FAIL": "❌", "ERROR": "⚠️ error", "skip": "⏭️", "-": "-",
               "accepted": "☑️ accepted"}[sym]
    return sym


def power_cell(b: Benchmark) -> str:
    """The alloc check's power (verdict.power): the smallest increase found
    with 80% probability at the largest site, then at every site holding
    >= 1%; "exact" when counted."""
    p = b.power
    if not p:
        return "-"
    if p["exact"]:
        return "exact"
    return f"{fmt_mde(p['largest_mde'])}..{fmt_mde(p['worst_mde'])}"


def _overhead_cell(b: Benchmark, md: bool = False, full: bool = False) -> str:
    """overhead_brief (overhead_text when `full`) of the overhead record's
    JSON form, marked when the overhead check failed."""
    if not b.overhead:
        return "-"
    o = b.overhead.to_json()
    s = overhead_text(o) if full else overhead_brief(o)
    outcome = getattr(b.checks.get("overhead"), "outcome", None)
    if outcome in ("failed", "accepted"):
        mark = {"failed": ("❌ " if md else "FAIL "), "accepted": ("☑️ " if md else "accepted ")}
        s = mark[outcome] + s
    return s


def _first_names(names: list, room: int) -> str:
    """Up to three of `names`, as many as fit in `room` columns with the
    ", …" that stands for the rest."""
    shown: list = []
    for n in names[:3]:
        more = ", …" if len(shown) + 1 < len(names) else ""
        if len(", ".join(shown + [n]) + more) > room:
            break
        shown.append(n)
    if not shown:
        return "…"
    return ", ".join(shown) + (", …" if len(shown) < len(names) else "")


def headline(report: Report) -> str:
    """The verdict in one line (the terminal's first line, the comment's title)."""
    v = report.verdict
    n_b = len(report.benchmarks)
    if v.exit_code == 2:
        return f"memprof-ci: {len(v.errors)} error(s); no verdict can be trusted"
    if v.exit_code == 1:
        regs = [r for b in report.benchmarks.values() for r in b.site_rows()
                if not r.renamed_to and r.status == "regression"]
        sites = f" ({len(regs)} site(s))" if regs else ""
        head = (f"memprof-ci: regression in {len(v.regressions)} check(s){sites} "
                f"over {n_b} benchmark(s): ")
        return head + _first_names(v.regressions, wrap.WIDTH - len(head))
    acc = v.accepted
    if acc:
        return (f"memprof-ci: no unaccepted regression in {n_b} benchmark(s); "
                f"{len(acc)} check(s) accepted by label")
    return f"memprof-ci: no regression in {n_b} benchmark(s)"


def preamble(report: Report) -> list:
    """What the reader must know before the tables, as plain-text lines:
    settings a pull request changed (judged with the base values), changes
    accepted by label, benchmarks removed or missing, and baselines recorded
    with another runtime patch."""
    out = []
    sc = report.settings_changes or []
    if sc:
        out.append("Changed by this pull request, judged with the base values:")
        for c in sc:
            out.append(f"  {c['benchmark']}: {c['setting']} = {c['pull_request']!r} "
                       f"(base: {c['base']!r})")
    acc = report.accepted or []
    if acc:
        out.append("Accepted by label (the proposed baselines match the measured code):")
        for a in acc:
            first = (a.get("message") or "").split("\n")[0]
            out.append(f"  {a['benchmark']}::{a['check']}" + (f": {first}" if first else ""))
    for name, b in sorted(report.benchmarks.items()):
        st = b.status
        if st == "removed":
            out.append(f"Removed: {name} (not in the manifest; its baseline is deleted by "
                       f"this change)")
        elif st == "missing":
            out.append(f"Missing: {name} has a trusted baseline but was not run")
    for p in report.patch_notes or []:
        out.append(p)
    return out


def _proposed_lines(pb: dict) -> list:
    out = []
    for name, d in sorted(pb.get("benchmarks", {}).items()):
        if d["status"] == "unchanged":
            continue
        out.append(f"{name}: baseline {d['status']}" + (
            f" ({len(d['sites'])} site(s) differ)" if d.get("sites") else ""))
        for s in d.get("sites", [])[:10]:
            out.append(f"    {s['site']}: {fmt_bytes(s['trusted_bytes'])} -> "
                       f"{fmt_bytes(s['proposed_bytes'])} ({fmt_pct(s['ratio'])})")
        for g in d.get("gc", []):
            out.append(f"    gc.{g['counter']}: {g['trusted']:.0f} -> {g['proposed']:.0f}")
        if d.get("sections"):
            out.append(f"    also changes its {', '.join(d['sections'])} section(s)")
    return out


# ---------------------------------------------------------------- terminal

def _site_cells(r) -> tuple:
    """A row's site as the terminal shows it: its name in the table, its
    notes (site_notes) on the wrapped line below."""
    return r["site"], "; ".join(site_notes(r))


def _changed_sites(title: str, rows: list) -> list:
    """A terminal table of changed sites, each with the p of its direction."""
    if not rows:
        return []
    cells = [_site_cells(r) for r in rows]
    return ["", title, table(
        ["benchmark", "check", "site", "baseline", "current", "delta [95% CI]", "p(adj)"],
        [[r["benchmark"], r["check"], name, fmt_bytes(r["baseline_bytes"]),
          fmt_bytes(r["current_bytes"]), fmt_delta(r), fmt_p(p_of(r))]
         for r, (name, _) in zip(rows, cells)],
        details=[d for _, d in cells], flex=(2, 0))]


def _site_table(rows: list) -> str:
    """One benchmark's sites: sizes, change, p, MDE and its heaviest lines."""
    cells = [_site_cells(r) for r in rows]
    return table(["site", "baseline", "current", "delta [95% CI]", "p(adj)", "MDE", "lines"],
                 [[name, fmt_bytes(r["baseline_bytes"]), fmt_bytes(r["current_bytes"]),
                   fmt_delta(r), fmt_p(p_of(r)), fmt_mde(r.get("mde")),
                   fmt_lines(r.get("lines"))] for r, (name, _) in zip(rows, cells)],
                 details=[d for _, d in cells], flex=(0, 6))


def render_terminal(report: dict, max_sites: int = 15, verbose: bool = False) -> str:
    typed = Report.from_json(report)
    out = [headline(typed)]
    out.extend(mdsafe.printable(x) for x in preamble(typed))
    pb = report.get("proposed_baselines")
    if pb:
        lines = _proposed_lines(pb)
        out.append("Proposed baselines differ from trusted ones:" if lines
                   else "Proposed baselines: identical to trusted ones.")
        out.extend("  " + mdsafe.printable(x) for x in lines)
    out += _changed_sites("Regressions (worst first):",
                          worst_first(all_site_rows(report, "regression")))
    out += report_retention.terminal(typed)
    out += report_budgets.terminal(typed)
    rows = []
    for name, b in sorted(typed.benchmarks.items()):
        rows.append([name] + [_check_cell(b, c, False) for c in STATUS_CHECKS]
                    + [power_cell(b), _overhead_cell(b, full=verbose)])
    peaks = peak_lines(typed)
    if peaks:
        out.append("")
        out.append("Peak memory:")
        out.extend("  " + mdsafe.printable(x) for x in peaks)
    if rows:
        out.append("")
        out.append(table(["benchmark", "alloc_sites", "gc_totals", "live", "peak", "detects",
                          "overhead"], rows, flex=(0,)))
    out += _changed_sites("Improvements (largest first; never a failure):",
                          improvements(report))
    mv = moves(typed)
    if mv:
        out.append("")
        out.append("Moved between sites (the same allocation attributed elsewhere; never a "
                   "failure):")
        out.append(table(["benchmark", "check", "from", "to", "per run"],
                         [[a, c, f, t, fmt_bytes(x)] for a, c, f, t, x in mv],
                         flex=(2, 3, 0)))
    ren = renamed_rows(report)
    if ren:
        out.append("")
        out.append("Renamed or moved (one site, counts compared across the rename):")
        out.append(table(["benchmark", "check", "site", "baseline", "current",
                          "delta [95% CI]", "verdict"],
                         [[r["benchmark"], r["check"], r["site"],
                           fmt_bytes(r["baseline_bytes"]), fmt_bytes(r["current_bytes"]),
                           fmt_delta(r), _rename_word(r)] for r in ren],
                         details=["; ".join(site_notes(r) + (
                             [f"paired by {r['renamed_because']}"] if r.get("renamed_because")
                             else [])) for r in ren], flex=(2, 0)))
    for name, b in sorted(report["benchmarks"].items()):
        alloc = [r for r in b.get("alloc") or [] if not r.get("renamed_to")]
        if not alloc or not (verbose or changed(typed.benchmarks[name])):
            continue
        order = sorted(alloc, key=lambda r: (-r["current_bytes"], r["site"]))
        top = order if verbose else (order[:max_sites] + [
            r for r in order[max_sites:] if r.get("status") in SIGNIFICANT])
        out.append("")
        out.append(f"{mdsafe.printable(name)}: " + ("sites by current allocation" if verbose
                                                    else "top sites by current allocation"))
        out.append(_site_table(top))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- markdown

def render_markdown(report: dict) -> str:
    typed = Report.from_json(report)
    out = (_md_head(report, typed) + _md_verdict_tables(report, typed)
           + report_budgets.markdown(typed) + _md_details(report, typed))
    notes = list(report.get("notes", []))
    for name, b in sorted(report["benchmarks"].items()):
        notes.extend(f"{name}: {n}" for n in b.get("notes", []))
    if notes:
        out.append("Notes:")
        out.extend(f"- {mdsafe.text(n, limit=mdsafe.MESSAGE_LIMIT)}" for n in notes)
        out.append("")
    out.append("<sub>Sites are tested with an exact conditional binomial test, Holm-adjusted "
               "over all sites of the run; `~` means no significant change. See "
               "harness/STATISTICS.md.</sub>")
    return "\n".join(out) + "\n"


def _md_head(report: dict, typed: Report) -> list:
    """Title, preamble, proposed baselines, shard note and errors."""
    v = typed.verdict
    icon = {0: "✅", 1: "❌", 2: "⚠️"}[v.exit_code]
    out = [f"## {icon} {headline(typed)}", ""]
    pre = preamble(typed)
    if pre:
        out.extend(mdsafe.code_block(pre))
        out.append("")
    pb = report.get("proposed_baselines")
    if pb:
        lines = _proposed_lines(pb)
        if lines:
            out.append("**This change updates baselines.** Proposed vs trusted:")
            out.append("")
            out.extend(mdsafe.code_block(lines))
        else:
            out.append("Proposed baselines are identical to the trusted ones.")
        out.append("")
    if report.get("shard"):
        out.append(f"_Shard {report['shard']['index']}/{report['shard']['count']}; run "
                   f"`memprof-ci merge` for the overall verdict._")
        out.append("")
    if v.errors:
        out.append("### Errors")
        out.extend(f"- {mdsafe.code(e, limit=mdsafe.MESSAGE_LIMIT, cell=False)}" for e in v.errors)
        out.append("")
    return out


def _md_verdict_tables(report: dict, typed: Report) -> list:
    """Regressions, peak memory, GC totals and the status of every benchmark."""
    out = []
    regs = worst_first(all_site_rows(report, "regression"))
    if regs:
        out.append("### Regressions (worst first)")
        out.append("")
        out.append("| benchmark | check | site | baseline | current | delta [95% CI] | p (Holm) |")
        out.append("|---|---|---|--:|--:|--:|--:|")
        for r in regs:
            out.append(f"| {mdsafe.text(r['benchmark'])} | {mdsafe.text(r['check'])} | {mdsafe.code(site_name(r))} "
                       f"| {fmt_bytes(r['baseline_bytes'])} | {fmt_bytes(r['current_bytes'])} "
                       f"| {fmt_delta(r)} | {fmt_p(r['p_adj'])} |")
        out.append("")
    out += report_retention.markdown(typed)
    peaks = peak_lines(typed)
    if peaks:
        out.append("### Peak memory")
        out.append("")
        out.extend(f"- {mdsafe.text(x, limit=mdsafe.MESSAGE_LIMIT)}" for x in peaks)
        out.append("")
    gcf = [(n, g) for n, b in sorted(typed.benchmarks.items())
           for g in b.gc or [] if g.status == "regression"]
    if gcf:
        out.append("### GC totals over tolerance")
        out.append("")
        out.append("| benchmark | counter | baseline | current | change |")
        out.append("|---|---|--:|--:|--:|")
        for n, g in gcf:
            head = (f"| {mdsafe.text(n)} | {mdsafe.text(g.counter)} | {g.baseline:.0f} "
                    f"| {g.current:.0f} | ")
            out.append(head + (f"{g.change * 100:+.2f}%{gc_spread_note(g)} |"
                               if g.change is not None else "new |"))
        out.append("")
    if report["benchmarks"]:
        out.append("### Benchmarks")
        out.append("")
        out.append("| benchmark | alloc sites | GC totals | live at exit | live at peak "
                   "| detects (80% power) | overhead (est. cycles) |")
        out.append("|---|:-:|:-:|:-:|:-:|--:|--:|")
        for name, b in sorted(typed.benchmarks.items()):
            cells = [_check_cell(b, c, True) for c in STATUS_CHECKS]
            out.append(f"| {mdsafe.text(name)} | " + " | ".join(cells)
                       + f" | {power_cell(b)} | {_overhead_cell(b, True)} |")
        out.append("")
    return out


def _md_details(report: dict, typed: Report) -> list:
    """Moves, renames, improvements and each benchmark's top sites."""
    out = []
    mv = moves(typed)
    if mv:
        out.append("### Moved between sites")
        out.append("")
        out.append("The same allocation, attributed to other sites (an inlined helper, say): "
                   "never a failure.")
        out.append("")
        out.append("| benchmark | check | from | to | per run |")
        out.append("|---|---|---|---|--:|")
        for a, c, f, t, x in mv[:50]:
            out.append(f"| {mdsafe.text(a)} | {mdsafe.text(c)} | {mdsafe.code(f)} "
                       f"| {mdsafe.code(t)} | {fmt_bytes(x)} |")
        out.append("")
    ren = renamed_rows(report)
    if ren:
        out.append("### Renamed or moved")
        out.append("")
        out.append("One site each: a vanished and a new site whose counts the test cannot "
                   "tell apart, with matching lines or callers; the counts are compared "
                   "across the rename.")
        out.append("")
        out.append("| benchmark | check | from | to | baseline | current | delta [95% CI] "
                   "| verdict | paired by |")
        out.append("|---|---|---|---|--:|--:|--:|---|---|")
        for r in ren:
            out.append(f"| {mdsafe.text(r['benchmark'])} | {mdsafe.text(r['check'])} "
                       f"| {mdsafe.code(r['renamed_from'])} | {mdsafe.code(r['site'])} "
                       f"| {fmt_bytes(r['baseline_bytes'])} | {fmt_bytes(r['current_bytes'])} "
                       f"| {fmt_delta(r)} | {_rename_word(r)} "
                       f"| {mdsafe.text(r.get('renamed_because') or '')} |")
        out.append("")
    imps = improvements(report)
    if imps:
        out.append(f"<details><summary>Improvements ({len(imps)})</summary>")
        out.append("")
        out.append("| benchmark | check | site | baseline | current | delta [95% CI] |")
        out.append("|---|---|---|--:|--:|--:|")
        for r in imps[:50]:
            out.append(f"| {mdsafe.text(r['benchmark'])} | {mdsafe.text(r['check'])} | {mdsafe.code(site_name(r))} "
                       f"| {fmt_bytes(r['baseline_bytes'])} | {fmt_bytes(r['current_bytes'])} | {fmt_delta(r)} |")
        out.append("")
        out.append("</details>")
        out.append("")
    for name, b in sorted(report["benchmarks"].items()):
        alloc = [r for r in b.get("alloc") or [] if not r.get("renamed_to")]
        if not alloc:
            continue
        top = sorted(alloc, key=lambda r: (-r["current_bytes"], r["site"]))[:MD_SITES_PER_BENCH]
        out.append(f"<details><summary>{mdsafe.text(name)}: top {len(top)} of {len(alloc)} sites</summary>")
        out.append("")
        out.append("| site | baseline | current | delta [95% CI] | p (Holm) | MDE (80%) | lines (samples) |")
        out.append("|---|--:|--:|--:|--:|--:|---|")
        for r in top:
            out.append(f"| {mdsafe.code(site_name(r))} | {fmt_bytes(r['baseline_bytes'])} | "
                       f"{fmt_bytes(r['current_bytes'])} | {fmt_delta(r)} | {fmt_p(r.get('p_adj'))} | "
                       f"{fmt_mde(r.get('mde'))} | {mdsafe.text(fmt_lines(r.get('lines')))} |")
        out.append("")
        out.append("</details>")
        out.append("")
    return out
