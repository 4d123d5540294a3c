"""overhead.md: the overhead study's report as GitHub-flavoured markdown.

render_markdown builds the report from a run's meta data, per-benchmark
results, callgrind counts and summary rows; write_markdown writes it.
Invariants: the text is a pure function of its arguments (the same stored
overhead.json always renders to the same report, which is what
`--reanalyse` relies on); no benchmark's absolute time is quoted, only
medians' ratios and differences per sample; a benchmark that failed appears
as "error" in the per-rate wall-time tables and in the Errors section,
never silently dropped; each section is one function returning its lines.
"""

from __future__ import annotations

import statistics

from memprof_ci.inputs.atomicio import write_atomic

from .common import CALLGRIND_RATE, CI_METHOD, COST_RATE, SEED, fmt_ci, pct, rate_key


def _header(meta: dict, callgrind: dict | None) -> list[str]:
    L = ["# memprof-ci overhead study\n",
         f"Generated {meta['finished']} by `{meta['command_line']}` in "
         f"{meta['duration_s']:.0f} s on {meta['nproc']} CPU(s) (shared machine: "
         f"medians and ratios from this one run only; no absolute times quoted).\n"]
    if meta.get("reanalysed"):
        L.append(f"Analysis and verdicts recomputed on {meta['reanalysed']} from that run's raw "
                 f"times and counts (`--reanalyse`); nothing was run again.\n")
    L.append(f"- Wall time: {meta['hyperfine']}, `-N`, {meta['runs']} interleaved rounds "
             f"(each variant once per round, rotated order; {meta['warmup']} warmup run per "
             f"variant in round 1). Overhead = median over rounds of on / off − 1.")
    L.append(f"- Interval: {CI_METHOD}.")
    L.append(f"- C tracker: `OCAMLMEMPROF=rate=R,seed={SEED},frames=F,out=<tmp>` vs the same "
             f"binary with it unset. OCaml tracker: `ocamltracker/<name>.exe` with "
             f"`OCAMLMEMPROF_OCAML_RATE=R` and `OCAMLMEMPROF_OCAML_OUT=<tmp>` (it writes its "
             f"per-stack profile, and settles live blocks with two major cycles at exit, the "
             f"only way an OCaml tracker can; the built-in tracker walks what is reachable "
             f"instead) vs the same binary with them unset.")
    if callgrind is not None:
        L.append(f"- Instructions: {meta['valgrind']} `--tool=callgrind`, size argument × "
                 f"{meta['callgrind_scale']}; concurrent benchmarks (marked †) repeated "
                 f"{meta['callgrind_repeats']}× and reported as median [min–max ratio].")
    L.append(f"- Patch id: `{meta['patch_id']}`.\n")
    return L


def _summary(summary: list[dict]) -> list[str]:
    L = ["## Summary\n", "| metric | measured | target | verdict |", "| --- | --- | --- | --- |"]
    for row in summary:
        L.append(f"| {row['metric']} | {row['shown']} | {row['target']} | **{row['verdict']}** |")
    L.append("")
    return L


def _wall_tables(results: dict, ks: list[str]) -> list[str]:
    """The C tracker at 1e-4 in one row, then per tracker a benchmark x rate table."""
    L = []
    ok = [n for n, r in results.items() if "analysis" in r]
    k4 = rate_key(1e-4)
    if k4 in ks and ok:
        L.append("### C tracker at 1e-4, per benchmark (wall time)\n")
        L.append("| " + " | ".join(ok) + " |")
        L.append("|" + " --- |" * len(ok))
        L.append("| " + " | ".join(pct(results[n]["analysis"]["c"][k4]["overhead"])
                                   for n in ok) + " |")
        L.append("")
    for tracker, title in (("c", "C tracker (built-in)"), ("ocaml", "OCaml-level tracker")):
        L.append(f"## Wall-time overhead: {title}\n")
        L.append("median [interval] per benchmark and rate.\n")
        L.append("| benchmark | " + " | ".join(ks) + " |")
        L.append("| --- |" + " --- |" * len(ks))
        for n, r in results.items():
            if "analysis" not in r:
                L.append(f"| {n} | " + " | ".join("error" for _ in ks) + " |")
                continue
            L.append(f"| {n} | " + " | ".join(fmt_ci(r["analysis"][tracker].get(k))
                                             for k in ks) + " |")
        vals = {k: [r["analysis"][tracker][k]["overhead"] for r in results.values()
                    if "analysis" in r] for k in ks}
        L.append("| **median** | " + " | ".join(
            pct(statistics.median(vals[k])) if vals[k] else "n/a" for k in ks) + " |")
        L.append("| **max** | " + " | ".join(
            pct(max(vals[k])) if vals[k] else "n/a" for k in ks) + " |")
        L.append("")
    return L


def _cost_table(results: dict, ks: list[str]) -> list[str]:
    kc = rate_key(COST_RATE)
    if kc not in ks:
        return []
    L = [f"## Cost per sample at {kc}\n",
         "(median_on − median_off) / samples; samples from the C profile's "
         "`totals.samples` (last timed run) and from the OCaml tracker's stderr "
         "summary line (one separate run).\n",
         "| benchmark | C samples | C ns/sample | OCaml samples | OCaml ns/sample | "
         "ratio C/OCaml | interval |",
         "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]

    def f(x):
        return "n/a" if x is None else f"{x:.0f}"
    for n, r in results.items():
        cps = r.get("analysis", {}).get("cost_per_sample")
        if not cps:
            continue
        rt, ci = cps["ratio_c_over_ocaml"], cps.get("ratio_ci")
        L.append(f"| {n} | {cps['c']['samples']} | {f(cps['c']['ns_per_sample'])} | "
                 f"{cps['ocaml']['samples']} | {f(cps['ocaml']['ns_per_sample'])} | "
                 f"{'n/a' if rt is None else f'{rt:.3f}'} | "
                 f"{'unresolved' if ci is None else f'[{ci[0]:.3f}, {ci[1]:.3f}]'} |")
    L.append("")
    return L


def _ir(x: dict) -> str:
    return "error" if x["median"] is None else f"{x['median']:,.0f}"


def _ratio(v: float | None, rng: list | None) -> str:
    if v is None:
        return "error"
    s = f"{v:.4f}"
    if rng:
        s += f" [{rng[0]:.4f}–{rng[1]:.4f}]"
    return s


def _callgrind_tables(callgrind: dict) -> list[str]:
    """Instruction counts at CALLGRIND_RATE, the per-sample instruction cost
    at COST_RATE (when measured) and the callgrind errors."""
    L = ["## Instruction counts (callgrind)\n",
         f"C tracker at {rate_key(CALLGRIND_RATE)} against off (same patched binary), "
         "and the patched-built binary with OCAMLMEMPROF unset against the "
         "stock-built one. † = several domains/systhreads: valgrind serialises them "
         "and counts vary between runs.\n",
         "| benchmark | size | off Ir | C@1e-4 Ir | C/off | stock Ir | patched/stock |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n, e in callgrind.items():
        c = e["configs"]
        mark = " †" if e["concurrent"] else ""
        L.append(f"| {n}{mark} | {e['size']} | {_ir(c['off'])} | {_ir(c['c_1e-4'])} | "
                 f"{_ratio(e['ratio_c_over_off'], e.get('range_c_over_off'))} | "
                 f"{_ir(c['stock'])} | "
                 f"{_ratio(e['ratio_patched_over_stock'], e.get('range_patched_over_stock'))} |")
    L.append("")
    if any("cost_per_sample" in e for e in callgrind.values()):
        L.append(f"### Per-sample cost at {rate_key(COST_RATE)} in instructions\n")
        L.append("(Ir_on − Ir_off) / samples for each tracker against its own binary "
                 "with profiling off, size argument × "
                 f"{next(iter(callgrind.values()))['cost_scale']}.\n")
        L.append("| benchmark | size | C samples | C Ir/sample | OCaml samples | "
                 "OCaml Ir/sample | ratio C/OCaml |")
        L.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")

        def f(x):
            return "n/a" if x is None else f"{x:,.0f}"
        for n, e in callgrind.items():
            cp = e.get("cost_per_sample")
            if not cp:
                continue
            rt = cp["ratio_c_over_ocaml"]
            mark = " †" if e["concurrent"] else ""
            L.append(f"| {n}{mark} | {e['configs']['cost_c_off']['size']} | "
                     f"{f(cp['c']['samples'])} | {f(cp['c']['ir_per_sample'])} | "
                     f"{f(cp['ocaml']['samples'])} | {f(cp['ocaml']['ir_per_sample'])} | "
                     f"{'n/a' if rt is None else f'{rt:.4f}'} |")
        L.append("")
    errs = [(n, x) for n, e in callgrind.items() for x in e["errors"]]
    if errs:
        L.append("Callgrind errors:\n")
        L += [f"- {n}: {x}" for n, x in errs]
        L.append("")
    return L


def _per_rate_table(results: dict, callgrind: dict | None, ks: list[str]) -> list[str]:
    """The C tracker's wall time per sample at every rate, beside its
    instructions per sample at CALLGRIND_RATE and COST_RATE (callgrind), so
    that a gap between time and instructions shows."""
    kcg, kc = rate_key(CALLGRIND_RATE), rate_key(COST_RATE)
    L = ["## C tracker: time and instructions per sample\n",
         "Wall ns/sample = (median_on − median_off) / samples at each rate; "
         "Ir/sample from callgrind (at 1e-4 at the callgrind size, at "
         f"{kc} at the cost size).\n",
         "| benchmark | " + " | ".join(f"ns/sample {k}" for k in ks)
         + f" | Ir/sample {kcg} | Ir/sample {kc} |",
         "| --- |" + " ---: |" * (len(ks) + 2)]

    def f(x):
        return "n/a" if x is None else f"{x:,.0f}"
    for n, r in results.items():
        if "error" in r:
            continue
        c = r["analysis"]["c"]
        e = (callgrind or {}).get(n) or {}
        cfg = e.get("configs", {})
        on, off = cfg.get(f"c_{kcg}", {}), cfg.get("off", {})
        smp = on.get("samples")
        ir_lo = ((on["median"] - off["median"]) / statistics.median(smp)
                 if smp and on.get("median") and off.get("median") else None)
        ir_hi = ((e.get("cost_per_sample") or {}).get("c") or {}).get("ir_per_sample")
        L.append(f"| {n} | " + " | ".join(f(c.get(k, {}).get("ns_per_sample")) for k in ks)
                 + f" | {f(ir_lo)} | {f(ir_hi)} |")
    L.append("")
    return L


def render_markdown(meta: dict, results: dict, rates: list[float],
                    callgrind: dict | None, summary: list[dict]) -> str:
    ks = [rate_key(r) for r in rates]
    L = _header(meta, callgrind) + _summary(summary) + _wall_tables(results, ks)
    L += _cost_table(results, ks) + _per_rate_table(results, callgrind, ks)
    if callgrind is not None:
        L += _callgrind_tables(callgrind)
    errs = [(n, r["error"]) for n, r in results.items() if "error" in r]
    if errs:
        L.append("## Errors\n")
        L += [f"- {n}: {x}" for n, x in errs]
        L.append("")
    L.append("Plot: `overhead.svg`. Raw numbers: `overhead.json`.\n")
    return "\n".join(L)


def write_markdown(path: str, meta: dict, results: dict, rates: list[float],
                   callgrind: dict | None, summary: list[dict]) -> None:
    write_atomic(path, render_markdown(meta, results, rates, callgrind, summary))
