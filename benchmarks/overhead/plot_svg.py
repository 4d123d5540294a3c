"""overhead.svg: the overhead study's plot of overhead against sampling rate.

For each tracker, the median over benchmarks of the time ratio on/off at
each rate, with min-max bars; x is the rate and y the ratio, both on a log
scale, y labelled as overhead so that negative (noise) and very large
overheads both fit.  Drawn by hand as SVG text, no plotting library.
Invariants: the output is a pure function of the results and rates (a
reanalysed overhead.json draws the same plot); the only text taken from the
data is numbers (rate keys, percentages, a count), and the point and y-tick
labels pass through _esc as well; benchmarks that failed, and ratios that
are not positive, are left out of the medians rather than drawn off the
scale.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from memprof_ci.inputs.atomicio import write_atomic

from .common import pct, rate_key

W, H = 820, 500
ML, MR, MT, MB = 80, 30, 58, 60         # margins: left, right, top, bottom
PW, PH = W - ML - MR, H - MT - MB       # the plot area
STYLE = {"c": ("#1f5fbf", "C tracker (built-in)", -5),
         "ocaml": ("#d2551e", "OCaml-level Gc.Memprof tracker", 5)}
# y ticks, most important first; one too close to an accepted one is skipped.
TICK_CANDIDATES = [1, 1.01, 1.1, 2, 10, 100, 1000, 0.9, 0.5, 1.02, 1.05, 1.2, 1.5, 3, 5,
                   20, 50, 200, 500, 0.95, 0.98, 0.99, 0.8]


@dataclass
class _Frame:
    """The log-log mapping from (rate, ratio) to SVG coordinates."""
    xlo: float
    xhi: float
    ylo: float
    yhi: float

    def X(self, r):
        return ML + (math.log10(r) - self.xlo) / (self.xhi - self.xlo) * PW

    def Y(self, v):
        return MT + (self.yhi - math.log10(v)) / (self.yhi - self.ylo) * PH


def _esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _series(results: dict, rates: list[float]) -> dict:
    """Per tracker, (rate, median, min, max) of the positive ratios on/off."""
    series = {}
    for tracker in ("c", "ocaml"):
        pts = []
        for r in rates:
            k = rate_key(r)
            v = [1 + res["analysis"][tracker][k]["overhead"] for res in results.values()
                 if "analysis" in res]
            v = [x for x in v if x > 0]
            if v:
                pts.append((r, statistics.median(v), min(v), max(v)))
        series[tracker] = pts
    return series


def _frame(series: dict, rates: list[float]) -> _Frame:
    allv = [y for pts in series.values() for p in pts for y in p[1:]] + [0.99, 1.12]
    ylo, yhi = math.log10(min(allv)), math.log10(max(allv))
    pad = (yhi - ylo) * 0.06
    return _Frame(xlo=math.log10(min(rates)) - 0.35, xhi=math.log10(max(rates)) + 0.35,
                  ylo=ylo - pad, yhi=yhi + pad)


def _grid(f: _Frame, rates: list[float]) -> list[str]:
    """Tick lines and labels of both axes, the target lines, the frame and
    the axis titles."""
    o = []
    acc = []
    for t in TICK_CANDIDATES:
        if f.ylo <= math.log10(t) <= f.yhi and all(abs(f.Y(t) - f.Y(a)) >= 16 for a in acc):
            acc.append(t)
    for t in sorted(acc):
        y = f.Y(t)
        lab = "0%" if t == 1 else f"{(t - 1) * 100:+.0f}%" if abs(t - 1) >= 0.1 \
            else f"{(t - 1) * 100:+g}%"
        o.append(f'<line x1="{ML}" y1="{y:.1f}" x2="{ML + PW}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        o.append(f'<text x="{ML - 6}" y="{y + 4:.1f}" text-anchor="end">{_esc(lab)}</text>')
    for r in rates:
        x = f.X(r)
        o.append(f'<line x1="{x:.1f}" y1="{MT}" x2="{x:.1f}" y2="{MT + PH}" stroke="#eeeeee"/>')
        o.append(f'<text x="{x:.1f}" y="{MT + PH + 18}" text-anchor="middle">'
                 f'{rate_key(r)}</text>')
    # Targets at 1e-4.
    for t, lab, dy in ((1.01, "+1%: median target at 1e-4", 13),
                       (1.10, "+10%: max target at 1e-4", -4)):
        if f.ylo <= math.log10(t) <= f.yhi:
            o.append(f'<line x1="{ML}" y1="{f.Y(t):.1f}" x2="{ML + PW}" y2="{f.Y(t):.1f}" '
                     f'stroke="#999" stroke-dasharray="5,4"/>')
            o.append(f'<text x="{ML + PW - 4}" y="{f.Y(t) + dy:.1f}" text-anchor="end" '
                     f'font-size="11" fill="#777" stroke="white" stroke-width="3" '
                     f'paint-order="stroke">{lab}</text>')
    o.append(f'<line x1="{ML}" y1="{f.Y(1):.1f}" x2="{ML + PW}" y2="{f.Y(1):.1f}" '
             f'stroke="#444" stroke-width="1"/>' if f.ylo <= 0 <= f.yhi else "")
    o.append(f'<rect x="{ML}" y="{MT}" width="{PW}" height="{PH}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{ML + PW / 2}" y="{H - 16}" text-anchor="middle">'
             f'sampling rate (samples per word, log scale)</text>')
    o.append(f'<text transform="translate(20,{MT + PH / 2}) rotate(-90)" '
             f'text-anchor="middle">overhead (on/off − 1)</text>')
    return o


def _points(f: _Frame, series: dict) -> list[str]:
    """Each tracker's medians joined by a line, with min-max bars and labels."""
    o = []
    for tracker, pts in series.items():
        col, _, dx = STYLE[tracker]
        if len(pts) > 1:
            o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
                col, " ".join(f"{f.X(r) + dx:.1f},{f.Y(m):.1f}" for r, m, _, _ in pts)))
        for r, m, lo, hi in pts:
            x = f.X(r) + dx
            o.append(f'<line x1="{x:.1f}" y1="{f.Y(lo):.1f}" x2="{x:.1f}" y2="{f.Y(hi):.1f}" '
                     f'stroke="{col}" stroke-width="1.5"/>')
            for v in (lo, hi):
                o.append(f'<line x1="{x - 4:.1f}" y1="{f.Y(v):.1f}" x2="{x + 4:.1f}" '
                         f'y2="{f.Y(v):.1f}" stroke="{col}" stroke-width="1.5"/>')
            o.append(f'<circle cx="{x:.1f}" cy="{f.Y(m):.1f}" r="4" fill="{col}"/>')
            o.append(f'<text x="{x + (8 if dx > 0 else -8):.1f}" y="{f.Y(m) + 4:.1f}" '
                     f'text-anchor="{"start" if dx > 0 else "end"}" font-size="11" '
                     f'font-weight="bold" fill="{col}" stroke="white" stroke-width="3" '
                     f'paint-order="stroke">{_esc(pct(m - 1))}</text>')
    return o


def _legend() -> list[str]:
    lx, ly = ML + 12, MT + 16
    o = [f'<rect x="{lx - 6}" y="{ly - 13}" width="262" height="44" fill="white" '
         f'fill-opacity="0.9" stroke="#ccc"/>']
    for i, tracker in enumerate(("c", "ocaml")):
        col, lab, _ = STYLE[tracker]
        y = ly + i * 20
        o.append(f'<line x1="{lx}" y1="{y - 4}" x2="{lx + 22}" y2="{y - 4}" stroke="{col}" '
                 f'stroke-width="2"/><circle cx="{lx + 11}" cy="{y - 4}" r="4" fill="{col}"/>')
        o.append(f'<text x="{lx + 30}" y="{y}">{_esc(lab)}</text>')
    return o


def render_svg(results: dict, rates: list[float]) -> str:
    series = _series(results, rates)
    f = _frame(series, rates)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">'
         f'memprof-ci profiling overhead vs sampling rate</text>',
         f'<text x="{W / 2}" y="42" text-anchor="middle" font-size="12" fill="#555">'
         f'median over {sum(1 for r in results.values() if "analysis" in r)} benchmarks; '
         f'bars: min–max; y: time ratio on/off (log scale)</text>']
    o += _grid(f, rates) + _points(f, series) + _legend()
    o.append("</svg>")
    return "\n".join(x for x in o if x) + "\n"


def write_svg(path: str, results: dict, rates: list[float]) -> None:
    write_atomic(path, render_svg(results, rates))
