"""report.html: one self-contained page per report, for reviewers.

Rendered from the same decided report dictionary as report.md and
report.json (report_doc.py), plus the per-benchmark "stacks" entry of
stackgraph.py.  Per benchmark: the status
row and overhead (fmt.overhead_text: the counted estimate, and time
with its spread), a sortable site table, icicle graphs of
sampled bytes by call stack for the baseline and the current run, a
differential icicle coloured by relative change where a node's change is
significant (exact two-sided test, Holm over the benchmark's nodes; grey
otherwise) with regressed sites outlined, and, on clicking a site, its
heaviest stacks and its lines with their samples.

Invariants:
1. Self-contained: inline CSS and JS, SVG drawn by that JS; no URL is ever
   fetched (the Content-Security-Policy forbids it: default-src 'none').
   Links to source lines go to the measured commit only when
   GITHUB_SERVER_URL, GITHUB_REPOSITORY and a head sha are well formed.
2. Every string from profiles, baselines, manifests or shard reports reaches
   the page either through html.escape() (clipped to NAME_LIMIT characters,
   non-printables shown escaped, as in mdsafe) or inside the JSON data block,
   which escapes <, > and & as \\u003c, \\u003e, \\u0026 (so neither "</" nor
   "<!--" can occur in it); the script only ever sets textContent and
   attributes, never HTML.
3. Bounded size: at most MAX_SITE_ROWS site rows per benchmark, and a
   benchmark's stack data (stacks and tree) is cut, lightest stacks first,
   to STACK_BUDGET bytes of JSON; so report.html is at most about
   PAGE_OVERHEAD + (MAX_SITE_ROWS x ROW_BOUND + STACK_BUDGET) per benchmark
   (README, "HTML report").
4. Nothing is decided here: the exit code and errors come from
   report["verdict"], statuses from verdict.py; the node colouring of the
   differential view is display only (stackgraph.py).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import urllib.parse

from . import mdsafe
from .fmt import fmt_bytes, fmt_delta, fmt_mde, fmt_p, overhead_text
from .report import STATUS_CHECKS, headline, peak_lines, power_cell, preamble
from .sites import frame_label
from .stackgraph import NODE_ALPHA, graph_data

MAX_SITE_ROWS = 200
PAGE_OVERHEAD = 40_000      # CSS, JS and the page frame
ROW_BOUND = 1_500           # bytes of one site row (names are clipped)
STACKS_PER_SITE = 8         # heaviest stacks shown for a clicked site


# ------------------------------------------------------------ source links

_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}")
_SHA_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SERVER_RE = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]{1,5})?")
_FILE_RE = re.compile(r"[A-Za-z0-9_./+-]{1,300}")


def source_base(env=None) -> str | None:
    """`<server>/<owner>/<repo>/blob/<sha>/` on GitHub Actions, else None.
    The sha is MEMPROF_CI_HEAD_SHA (the measured commit, set by the gate)
    or GITHUB_SHA."""
    env = os.environ if env is None else env
    server = env.get("GITHUB_SERVER_URL", "")
    repo = env.get("GITHUB_REPOSITORY", "")
    sha = env.get("MEMPROF_CI_HEAD_SHA") or env.get("GITHUB_SHA", "")
    if not (_SERVER_RE.fullmatch(server) and _REPO_RE.fullmatch(repo)
            and _SHA_RE.fullmatch(sha)) or repo.endswith(("/.", "/..")):
        return None
    return f"{server}/{repo}/blob/{sha}/"


def source_url(base: str | None, file, line=None) -> str | None:
    """A link to file#Lline under `base`, for relative, plain file names only."""
    if not base or not isinstance(file, str) or not _FILE_RE.fullmatch(file) \
            or file.startswith("/") or ".." in file.split("/"):
        return None
    url = base + urllib.parse.quote(file)
    if isinstance(line, int) and line > 0:
        url += f"#L{line}"
    return url


# ------------------------------------------------------------ rendering

def esc(s, limit: int = mdsafe.NAME_LIMIT) -> str:
    return html.escape(mdsafe.shown(s, limit), quote=True)


def _attr_json(obj) -> str:
    return html.escape(json.dumps(obj, ensure_ascii=True, separators=(",", ":")), quote=True)


def _script_json(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# Words, not emoji: a machine without an emoji font shows those as boxes.
_OUTCOME = {"passed": ("ok", "ok"), "failed": ("fail", "FAIL"),
            "error": ("error", "ERROR"), "skipped": ("skip", "skipped"),
            "not run": ("skip", "not run"), "accepted": ("accepted", "accepted")}


def _check_td(b, check) -> str:
    c = (b.get("checks") or {}).get(check)
    if not isinstance(c, dict):
        return '<td class="skip">-</td>'
    cls, word = _OUTCOME.get(c.get("outcome"), ("skip", "?"))
    title = esc(c.get("message") or "", mdsafe.MESSAGE_LIMIT)
    return f'<td class="{cls}" title="{title}">{word}</td>'


def _overhead_text(b) -> str:
    o = b.get("overhead")
    return overhead_text(o) if isinstance(o, dict) else "-"


def _num(x):
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.6g}"


def _site_rows(b) -> list:
    rows = [r for key in ("alloc", "live", "peak") for r in (b.get(key) or [])
            if isinstance(r, dict) and not r.get("renamed_to")]
    sig = {"regression": 0, "improvement": 1}
    rows.sort(key=lambda r: (sig.get(r.get("status"), 2), -(r.get("current_bytes") or 0),
                             str(r.get("site"))))
    return rows


def _delta_text(r) -> str:
    try:
        return fmt_delta(r)
    except (KeyError, TypeError):
        return "?"


MAX_LINES = 50   # lines of a site shown when it is clicked


def _top_lines(lines) -> dict:
    if not isinstance(lines, dict):
        return {}
    ok = [(k, v) for k, v in lines.items() if isinstance(k, str) and len(k) <= 12
          and isinstance(v, int)]
    return dict(sorted(ok, key=lambda kv: (-kv[1], kv[0]))[:MAX_LINES])


def _site_table(b, bi, src) -> str:
    rows = _site_rows(b)
    shown = rows[:MAX_SITE_ROWS]
    out = [f'<table class="sites sortable" id="sites-{bi}"><thead><tr>'
           '<th data-t="s">site</th><th data-t="s">check</th><th data-t="n">baseline</th>'
           '<th data-t="n">current</th><th data-t="n">delta [95% CI]</th>'
           '<th data-t="n">p (Holm)</th><th data-t="n">MDE (80%)</th><th data-t="s">status</th>'
           '</tr></thead><tbody>']
    for ri, r in enumerate(shown):
        status = str(r.get("status") or "~")
        cls = {"regression": "regression", "improvement": "improvement"}.get(status, "")
        if r.get("renamed_from"):
            cls += " renamed"
        label = frame_label(r.get("function"), r.get("file")) if r.get("function") or \
            r.get("file") else str(r.get("site"))
        name = esc(r.get("site"))
        extra = ""
        if r.get("via"):
            extra += f' <span class="via">via {esc(r["via"])}</span>'
        if r.get("renamed_from"):
            extra += f' <span class="note">renamed or moved from {esc(r["renamed_from"])}</span>'
        word = {"regression": "REGRESSION", "improvement": "improvement",
                "moved": "moved", "~": "~"}.get(status, esc(status))
        if r.get("renamed_from") and status == "~":
            word = "renamed or moved"
        ratio = r.get("ratio")
        delta_v = _num(ratio) if ratio is not None else ("1e300" if r.get("baseline_samples") == 0
                                                         else "")
        lines_top = _top_lines(r.get("lines"))
        lines_attr = _attr_json({"cur": lines_top,
                                 "base": _top_lines(r.get("baseline_lines")),
                                 "file": r.get("file") if isinstance(r.get("file"), str)
                                 and len(r["file"]) <= 300 else None})
        line = r.get("line")
        if line is None and lines_top:
            k = next(iter(lines_top))  # the site's heaviest line
            line = int(k) if k.isdigit() else None
        url = source_url(src, r.get("file"), line)
        link = f' <a class="src" href="{esc(url, 2000)}">source</a>' if url else ""
        out.append(
            f'<tr class="site {cls.strip()}" data-frame="{esc(label)}" data-check="{esc(r.get("check"))}"'
            f' data-lines="{lines_attr}" tabindex="0">'
            f'<td data-v="{name}"><code>{name}</code>{extra}{link}</td>'
            f'<td data-v="{esc(r.get("check"))}">{esc(r.get("check"))}</td>'
            f'<td data-v="{_num(r.get("baseline_bytes"))}">{fmt_bytes(r.get("baseline_bytes"))}</td>'
            f'<td data-v="{_num(r.get("current_bytes"))}">{fmt_bytes(r.get("current_bytes"))}</td>'
            f'<td data-v="{delta_v}">{esc(_delta_text(r))}</td>'
            f'<td data-v="{_num(r.get("p_adj"))}">{fmt_p(r.get("p_adj"))}</td>'
            f'<td data-v="{_num(r.get("mde"))}">{fmt_mde(r.get("mde"))}</td>'
            f'<td data-v="{esc(status)}" class="st">{word}</td></tr>')
    out.append("</tbody></table>")
    if len(rows) > len(shown):
        out.append(f'<p class="note">{len(rows) - len(shown)} more site(s) with the smallest '
                   f'allocation are in report.json.</p>')
    return "".join(out)


def _bench_section(name, b, bi, src) -> str:
    status_cells = "".join(_check_td(b, c) for c in STATUS_CHECKS)
    out = [f'<section class="bench" id="bench-{bi}" data-name="{esc(name)}">',
           f'<h2>{esc(name)}</h2>',
           '<table class="status"><thead><tr><th>alloc sites</th><th>GC totals</th>'
           '<th>live at exit</th><th>live at peak</th><th>overhead (est. cycles; time)</th></tr></thead>'
           f'<tbody><tr>{status_cells}<td>{esc(_overhead_text(b))}</td></tr></tbody></table>']
    renames = [r for r in _site_rows(b) if r.get("renamed_from")]
    for r in renames:
        out.append(f'<p class="rename">Renamed or moved: <code>{esc(r["renamed_from"])}</code> → '
                   f'<code>{esc(r.get("site"))}</code> ({esc(r.get("check"))}, '
                   f'{esc(_delta_text(r))})</p>')
    for r in [r for r in _site_rows(b) if r.get("status") == "moved"]:
        srcs = ", ".join(f'{esc(m["site"])} ({esc(fmt_bytes(m["words"] * 8))})'
                         for m in r.get("moved_from") or []) or "other sites"
        out.append(f'<p class="moved">Moved, not a regression: <code>{esc(r.get("site"))}</code> '
                   f'({esc(r.get("check"))}) gained what left {srcs}</p>')
    for n in b.get("notes") or []:
        out.append(f'<p class="note">{esc(n, mdsafe.MESSAGE_LIMIT)}</p>')
    if b.get("alloc") or b.get("live") or b.get("peak"):
        out.append(_site_table(b, bi, src))
        out.append(f'<div class="graphs" id="graphs-{bi}" data-bench="{bi}"></div>'
                   f'<div class="panel" id="panel-{bi}"><p class="hint">Click a site to see its '
                   f'heaviest stacks and lines.</p></div>')
    out.append("</section>")
    return "".join(out)


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top}th{background:#f3f3f3}
table.sortable th{cursor:pointer}table.sortable th.asc:after{content:" \\25B2"}
table.sortable th.desc:after{content:" \\25BC"}
td.ok{color:#176117}td.fail,td.error{color:#a00;font-weight:bold}
tr.regression{background:#fde2e2}tr.regression td.st{color:#a00;font-weight:bold}
tr.improvement{background:#e2f0fd}tr.renamed td.st{color:#555;font-style:italic}
tr.site{cursor:pointer}tr.site.selected{outline:2px solid #333}
code{font-size:12px;word-break:break-all}.via,.note{color:#666;font-size:12px}
.graphs svg{display:block;width:100%;border:1px solid #eee;margin:.2em 0 1em}
.graphs h3,.panel h3{font-size:1em;margin:.6em 0 .2em}
rect.n{stroke:#fff;stroke-width:.5}rect.regressed{stroke:#000;stroke-width:2.5}
rect.sel{stroke:#f0f;stroke-width:2.5}text{font:11px monospace;pointer-events:none}
.legend span{display:inline-block;padding:0 6px;margin-right:4px}
.panel{background:#fafafa;border:1px solid #eee;padding:.3em .8em}
.stack{margin:.3em 0 .6em;font:12px monospace}.stack div{white-space:pre}
#errors{color:#a00}.badge{color:#fff;padding:0 .4em;border-radius:3px}
.badge.pass{background:#176117}.badge.fail{background:#a00}.badge.error{background:#a60}
"""

JS = r"""
(function(){
'use strict';
var D=JSON.parse(document.getElementById('memprof-data').textContent);
function el(t,a,txt){var e=document.createElement(t);if(a)for(var k in a)e.setAttribute(k,a[k]);
 if(txt!=null)e.textContent=txt;return e;}
function sv(t,a){var e=document.createElementNS('http://www.w3.org/2000/svg',t);
 for(var k in a)e.setAttribute(k,a[k]);return e;}
function fb(x){if(x==null)return'-';var u=['B','KiB','MiB','GiB','TiB'];for(var i=0;i<u.length;i++){
 if(Math.abs(x)<1024||i==u.length-1)return i?x.toFixed(1)+' '+u[i]:x.toFixed(0)+' B';x/=1024;}}
var WORD=8;
// sortable tables
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(t){
 var ths=t.tHead.rows[0].cells;
 Array.prototype.forEach.call(ths,function(th,i){th.addEventListener('click',function(){
  var asc=!th.classList.contains('asc');
  Array.prototype.forEach.call(ths,function(h){h.classList.remove('asc','desc');});
  th.classList.add(asc?'asc':'desc');
  var num=th.getAttribute('data-t')==='n',b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
  rows.sort(function(x,y){var a=x.cells[i].getAttribute('data-v'),c=y.cells[i].getAttribute('data-v');
   var r;if(num){a=a===''?-Infinity:+a;c=c===''?-Infinity:+c;r=a-c;}else r=a<c?-1:a>c?1:0;
   return asc?r:-r;});
  rows.forEach(function(r){b.appendChild(r);});});});});
function colour(kind,nd,name){
 if(kind!=='diff'){var h=0;for(var i=0;i<name.length;i++)h=(h*31+name.charCodeAt(i))|0;
  return 'hsl('+(10+Math.abs(h)%40)+',75%,'+(60+Math.abs(h>>8)%15)+'%)';}
 var s=nd[3];if(s==null)return '#c8c8c8';
 var a=Math.min(1,Math.abs(s)/2);
 return s>0?'rgb(255,'+Math.round(200-170*a)+','+Math.round(200-170*a)+')'
           :'rgb('+Math.round(200-170*a)+','+Math.round(200-170*a)+',255)';}
function draw(box,g,kind,marked,bi){
 var W=1200,H=17,be=g.be,ce=g.ce;
 function w(nd){return kind==='base'?nd[1]/be:kind==='cur'?nd[2]/ce:nd[1]/be+nd[2]/ce;}
 var tot=w(g.tree);if(!(tot>0)){box.appendChild(el('p',{'class':'note'},'no samples'));return;}
 var depth=0,items=[];
 (function walk(nd,x,d){var ww=w(nd)/tot*W;if(ww<0.3)return;
  if(nd[0]>=0){items.push([nd,x,d,ww]);if(d>depth)depth=d;}
  var cx=x;nd[4].forEach(function(k){walk(k,cx,nd[0]>=0?d+1:d);cx+=w(k)/tot*W;});})(g.tree,0,0);
 var svg=sv('svg',{viewBox:'0 0 '+W+' '+((depth+1)*H+2),'class':'flame '+kind,
  'data-kind':kind,id:kind+'-'+bi,preserveAspectRatio:'none'});
 svg.style.height=((depth+1)*H+2)+'px';
 items.forEach(function(it){var nd=it[0],name=g.frames[nd[0]]||'?';
  var r=sv('rect',{x:it[1].toFixed(2),y:it[2]*H,width:Math.max(it[3]-0.2,0.1).toFixed(2),height:H-1,
   fill:colour(kind,nd,name),'class':'n','data-frame':name});
  if(marked[name])r.classList.add('regressed');
  var t=sv('title',{});var ratio=nd[1]&&nd[2]?((nd[2]/ce)/(nd[1]/be)*100-100).toFixed(1)+'%':nd[1]?'gone':'new';
  t.textContent=name+'\nbaseline '+fb(nd[1]/be*WORD)+', current '+fb(nd[2]/ce*WORD)+
   (kind==='diff'?'\nchange '+ratio+(nd[3]==null?' (not significant)':' (significant)'):'');
  r.appendChild(t);svg.appendChild(r);
  if(it[3]>40){var tx=sv('text',{x:(it[1]+3).toFixed(2),y:it[2]*H+12});
   var n=Math.floor((it[3]-6)/6.7);tx.textContent=name.length>n?name.slice(0,Math.max(n-1,0))+'\u2026':name;
   svg.appendChild(tx);}});
 box.appendChild(svg);}
function graphs(bi){
 var g=D.benches[bi].graph,box=document.getElementById('graphs-'+bi);if(!box)return;
 if(!g){box.appendChild(el('p',{'class':'note'},'No call stacks recorded for this benchmark.'));return;}
 var marked={};D.benches[bi].regressed.forEach(function(f){marked[f]=1;});
 var miss=g.missing||{};
 if(g.cut)box.appendChild(el('p',{'class':'note'},'Only the '+g.cut+' heaviest stacks per side are drawn (size bound).'));
 [['base','Baseline: sampled bytes by call stack',g.baseline,miss.baseline],
  ['cur','Current run: sampled bytes by call stack',g.current,miss.current]].forEach(function(v){
  box.appendChild(el('h3',null,v[1]));
  if(v[2]==null){box.appendChild(el('p',{'class':'note missing'},'Not shown: '+(v[3]||'no stacks')+'.'));return;}
  draw(box,g,v[0],marked,bi);});
 box.appendChild(el('h3',null,'Difference (width: both runs; red: significant increase, blue: significant decrease, grey: noise; outlined: regressed site)'));
 if(g.baseline==null||g.current==null){box.appendChild(el('p',{'class':'note missing'},
  'Not shown: '+(miss.baseline||miss.current)+'.'));return;}
 draw(box,g,'diff',marked,bi);}
function stacksOf(g,side,frame){
 var st=(g[side]||[]).filter(function(s){return s[1]!=null&&g.frames[s[4][s[1]]]===frame;});
 st.sort(function(a,b){return b[2]-a[2];});return st;}
function showSite(bi,tr){
 var g=D.benches[bi].graph,panel=document.getElementById('panel-'+bi),frame=tr.getAttribute('data-frame');
 Array.prototype.forEach.call(tr.parentNode.rows,function(r){r.classList.remove('selected');});
 tr.classList.add('selected');
 while(panel.firstChild)panel.removeChild(panel.firstChild);
 panel.appendChild(el('h3',null,'Site '+frame));
 var L=JSON.parse(tr.getAttribute('data-lines')||'{}'),ls={};
 [['base',L.base||{}],['cur',L.cur||{}]].forEach(function(v){for(var k in v[1]){ls[k]=ls[k]||{base:0,cur:0};ls[k][v[0]]=v[1][k];}});
 var keys=Object.keys(ls).sort(function(a,b){return (+a)-(+b);});
 var hasBase=Object.keys(L.base||{}).length>0;
 if(keys.length){var t=el('table',{'class':'lines'});var h=el('tr');
  (hasBase?['line','samples (baseline)','samples (current)']:['line','samples (current)']).forEach(function(x){h.appendChild(el('th',null,x));});t.appendChild(h);
  keys.forEach(function(k){var r=el('tr');var c=el('td');
   if(D.src&&L.file&&/^[A-Za-z0-9_.\/+-]+$/.test(L.file)&&L.file.split('/').indexOf('..')<0&&L.file[0]!=='/'&&/^[0-9]+$/.test(k)){
    c.appendChild(el('a',{href:D.src+encodeURI(L.file)+'#L'+k},'L'+k));}else c.textContent='L'+k;
   r.appendChild(c);if(hasBase)r.appendChild(el('td',null,String(ls[k].base||0)));r.appendChild(el('td',null,String(ls[k].cur||0)));t.appendChild(r);});
  panel.appendChild(t);}
 if(!g){panel.appendChild(el('p',{'class':'note'},'No call stacks recorded.'));return;}
 [['current','Heaviest stacks in the current run',g.ce],['baseline','Heaviest stacks in the baseline',g.be]].forEach(function(v){
  panel.appendChild(el('h3',null,v[1]));
  if(g[v[0]]==null){panel.appendChild(el('p',{'class':'note'},'not recorded'));return;}
  var st=stacksOf(g,v[0],frame).slice(0,D.per_site);
  if(!st.length){panel.appendChild(el('p',{'class':'note'},'none'));return;}
  st.forEach(function(s){var d=el('div',{'class':'stack'});
   d.appendChild(el('div',null,fb(s[2]/v[2]*WORD)+' ('+s[2]+' samples)'));
   s[4].forEach(function(f,i){d.appendChild(el('div',null,(i===s[1]?'\u25B6 ':'  ')+Array(Math.min(i,12)+1).join(' ')+g.frames[f]));});
   panel.appendChild(d);});});
 Array.prototype.forEach.call(document.querySelectorAll('#bench-'+bi+' rect.n'),function(r){
  r.classList.toggle('sel',r.getAttribute('data-frame')===frame);});}
D.benches.forEach(function(b,bi){
 try{graphs(bi);}catch(e){var p=document.getElementById('errors');p.textContent+='graph '+bi+': '+e+'\n';throw e;}
 var t=document.getElementById('sites-'+bi);if(!t)return;
 Array.prototype.forEach.call(t.tBodies[0].rows,function(tr){
  tr.addEventListener('click',function(){showSite(bi,tr);});
  tr.addEventListener('keydown',function(e){if(e.key==='Enter')showSite(bi,tr);});});});
document.body.setAttribute('data-ready','1');
})();
"""


def render_html(report: dict, env=None) -> str:
    v = report["verdict"]
    src = source_base(env)
    names = sorted(report["benchmarks"])
    badge = {0: ("pass", "PASS"), 1: ("fail", "FAIL"), 2: ("error", "ERROR")}[v["exit_code"]]
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
           "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
           '<meta name="viewport" content="width=device-width">',
           f"<title>memprof-ci report</title><style>{CSS}</style></head><body>",
           f'<h1 id="headline" data-exit="{v["exit_code"]}"><span class="badge {badge[0]}">'
           f'{badge[1]}</span> {esc(headline(report), 1000)}</h1>',
           '<pre id="errors"></pre>']
    pre = preamble(report)
    if pre:
        out.append("<pre class=\"preamble\">" + "\n".join(esc(x, mdsafe.MESSAGE_LIMIT) for x in pre)
                   + "</pre>")
    if v["errors"]:
        out.append("<h2>Errors</h2><ul>" + "".join(
            f"<li><code>{esc(e, mdsafe.MESSAGE_LIMIT)}</code></li>" for e in v["errors"]) + "</ul>")
    # Status of every benchmark.
    out.append('<h2>Benchmarks</h2><table class="status sortable" id="status"><thead><tr>'
               '<th data-t="s">benchmark</th><th data-t="s">alloc sites</th>'
               '<th data-t="s">GC totals</th><th data-t="s">live at exit</th>'
               '<th data-t="s">live at peak</th><th data-t="s">detects (80% power)</th>'
               '<th data-t="s">overhead (est. cycles; time)</th></tr></thead><tbody>')
    for bi, name in enumerate(names):
        b = report["benchmarks"][name]
        cells = "".join(_check_td(b, c) for c in STATUS_CHECKS).replace("<td ", "<td data-v=\"\" ")
        out.append(f'<tr><td data-v="{esc(name)}"><a href="#bench-{bi}">{esc(name)}</a></td>'
                   f'{cells}<td data-v="">{esc(power_cell(b))}</td>'
                   f'<td data-v="">{esc(_overhead_text(b))}</td></tr>')
    out.append("</tbody></table>")
    peaks = peak_lines(report)
    if peaks:
        out.append('<h2>Peak memory</h2><ul class="peak">' + "".join(
            f"<li>{esc(p, mdsafe.MESSAGE_LIMIT)}</li>" for p in peaks) + "</ul>")
    data = {"benches": [], "src": src, "per_site": STACKS_PER_SITE}
    for bi, name in enumerate(names):
        b = report["benchmarks"][name]
        out.append(_bench_section(name, b, bi, src))
        regressed = sorted({mdsafe.shown(frame_label(r.get("function"), r.get("file")))
                            for key in ("alloc", "live", "peak") for r in (b.get(key) or [])
                            if isinstance(r, dict) and r.get("status") == "regression"
                            and (r.get("function") or r.get("file"))})
        data["benches"].append({"graph": graph_data(b.get("stacks")), "regressed": regressed})
    notes = list(report.get("notes") or [])
    if notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n, mdsafe.MESSAGE_LIMIT)}</li>"
                                                  for n in notes) + "</ul>")
    out.append('<p class="note">Sites are tested with an exact conditional binomial test, '
               'Holm-adjusted over all sites of the run; "~" means no significant change. '
               'The differential graph colours a call-stack node when its own change is '
               f'significant (two-sided exact test, Holm over the benchmark\'s nodes, level '
               f'{NODE_ALPHA}). See harness/STATISTICS.md.</p>')
    out.append(f'<script type="application/json" id="memprof-data">{_script_json(data)}</script>')
    out.append(f"<script>{JS}</script></body></html>\n")
    return "".join(out)
