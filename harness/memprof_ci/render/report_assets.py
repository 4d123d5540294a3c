"""The inline CSS and script of report.html (report_html.py writes them).

The script reads the page's JSON data block (id "memprof-data") and draws,
as SVG built with createElementNS, the icicle graphs: the worst regressed
site's graph at the top of the page and each benchmark's baseline, current
and differential graphs.  Every icicle block has a <title> with its full
frame name and bytes; a label is the first that fits the block of the
full name, the name without its file, the function without its library
prefix, that without its leading modules one by one, or the function's
tail with a leading ellipsis (none under four characters); a click zooms
the graph to the block (its callers stay above, full width) and a button
restores it.

The differential graph's colours: where the benchmark has regressed sites,
the share of a block that is their stacks is drawn strong red when that
share grew significantly (the regressed paths), and every other significant
change is pale (red: increase, blue: decrease), so a large unrelated
decrease cannot outweigh the regressed paths; without regressed sites the
colour's depth follows the relative change.  Grey is no significant change;
a black outline marks a regressed site's own frame.  LEGEND_* say this on
the page.

A benchmark entry with "single" set (one run, `memprof-ci view`) gets only
the current run's icicle, its blocks' tooltips giving that run's bytes.

Invariants: the script only sets textContent and attributes, never HTML;
it fetches nothing; it sets body[data-ready] once every graph is drawn.
"""

# The Content-Security-Policy of every page memprof-ci writes: nothing is
# fetched; inline style and script only.
CSP_META = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">")

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.4em;margin:.3em 0}h2{font-size:1.2em;margin-top:1.2em;border-bottom:1px solid #ccc}
pre.preamble{white-space:pre-wrap;margin:.3em 0}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top}th{background:#f3f3f3}
table.sortable th{cursor:pointer}table.sortable th.asc:after{content:" \\25B2"}
table.sortable th.desc:after{content:" \\25BC"}
td.ok{color:#176117}td.fail,td.error{color:#a00;font-weight:bold}
tr.regression{background:#fde2e2}tr.regression td.st{color:#a00;font-weight:bold}
tr.improvement{background:#e2f0fd}tr.renamed td.st{color:#555;font-style:italic}
tr.site{cursor:pointer}tr.site.selected{outline:2px solid #333}
code{font-size:12px;word-break:break-all}.via,.note{color:#666;font-size:12px}
details.unchanged{margin:.3em 0 .8em}details.unchanged summary{cursor:pointer;color:#335}
#focus h3{margin:.6em 0 .2em}
.graphs svg{display:block;border:1px solid #eee;margin:.2em 0 .6em}
.graphs h3,.panel h3{font-size:1em;margin:.6em 0 .2em}
rect.n{stroke:#fff;stroke-width:.5;cursor:zoom-in}rect.regressed{stroke:#000;stroke-width:2.5}
rect.hot,rect.own{pointer-events:none}rect.own{stroke:#000;stroke-width:2.5}rect.anc{opacity:.75}
rect.sel{stroke:#f0f;stroke-width:2.5}text{font:11px monospace;pointer-events:none}
button.unzoom{font-size:12px;margin:0 0 .2em}
.legend{font-size:12px;margin:.2em 0}.legend span.sw{display:inline-block;width:1.4em;
height:.9em;vertical-align:middle;margin:0 .3em 0 .8em;border:1px solid #bbb}
.sw.hot{background:#d42a2a}.sw.inc{background:#f3d2d2}.sw.dec{background:#d5dcf3}
.sw.inc2{background:rgb(255,30,30)}.sw.dec2{background:rgb(30,30,255)}
.sw.noise{background:#c8c8c8}.sw.own{background:#fff;border:2.5px solid #000}
.panel{background:#fafafa;border:1px solid #eee;padding:.3em .8em}
.stack{margin:.3em 0 .6em;font:12px monospace}.stack div{white-space:pre}
#errors{color:#a00;margin:0}.badge{color:#fff;padding:0 .4em;border-radius:3px}
.badge.pass{background:#176117}.badge.fail{background:#a00}.badge.error{background:#a60}
"""

# [class of the swatch, what it means]; the first list when the benchmark
# has regressed sites, the second otherwise.
LEGEND_REGRESSED = [
    ["hot", "a regressed site's stacks that grew significantly (their share of the block)"],
    ["inc", "other significant increase"], ["dec", "significant decrease"],
    ["noise", "no significant change"], ["own", "a regressed site's own frame"]]
LEGEND_PLAIN = [
    ["inc2", "significant increase (deeper: larger)"],
    ["dec2", "significant decrease (deeper: larger)"], ["noise", "no significant change"]]

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
var WORD=8,CH=6.7,H=17,HOT='#d42a2a';
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
function colour(kind,nd,name,calm){
 if(kind!=='diff'){var h=0;for(var i=0;i<name.length;i++)h=(h*31+name.charCodeAt(i))|0;
  return 'hsl('+(10+Math.abs(h)%40)+',75%,'+(60+Math.abs(h>>8)%15)+'%)';}
 var s=nd[3];if(s==null)return '#c8c8c8';
 if(calm)return s>0?'#f3d2d2':'#d5dcf3';
 var a=Math.min(1,Math.abs(s)/2);
 return s>0?'rgb(255,'+Math.round(200-170*a)+','+Math.round(200-170*a)+')'
           :'rgb('+Math.round(200-170*a)+','+Math.round(200-170*a)+',255)';}
// The longest readable form of a frame name within n characters.
function label(name,n){
 if(n<4)return '';if(name.length<=n)return name;
 var fn=name.split(' @ ')[0];if(fn.length<=n)return fn;
 var parts=fn.split('.'),lib=parts[0].lastIndexOf('__');
 if(lib>=0){parts[0]=parts[0].slice(lib+2);if(parts.join('.').length<=n)return parts.join('.');}
 fn=parts.join('.');
 while(parts.length>1&&/^[A-Z]/.test(parts[0])){parts.shift();if(parts.join('.').length<=n)return parts.join('.');}
 return '\u2026'+fn.slice(fn.length-(n-1));}
function pathTo(root,target){
 var out=null;(function go(nd,acc){if(out)return;acc.push(nd);if(nd===target){out=acc.slice();}
  else nd[4].forEach(function(k){go(k,acc);});acc.pop();})(root,[]);return out||[root];}
function tip(g,kind,nd,name){
 if(g.be==null&&kind==='cur')return name+'\n'+fb(nd[2]/g.ce*WORD)+' ('+nd[2]+' samples)\nclick to zoom';
 var be=g.be,ce=g.ce,ratio=nd[1]&&nd[2]?((nd[2]/ce)/(nd[1]/be)*100-100).toFixed(1)+'%':nd[1]?'gone':'new';
 var t=name+'\nbaseline '+fb(nd[1]/be*WORD)+', current '+fb(nd[2]/ce*WORD);
 if(kind==='diff'){t+='\nchange '+ratio+(nd[3]==null?' (not significant)':' (significant)');
  if(nd.length>5)t+='\nregressed sites\' stacks: baseline '+fb(nd[5]/be*WORD)+', current '+
   fb(nd[6]/ce*WORD)+(nd[7]>0?' (grew significantly)':'');}
 return t+'\nclick to zoom';}
// Draws graph g into wrap (emptied first), zoomed to node `zoom` if given.
function draw(wrap,g,kind,marked,id,calm,zoom){
 while(wrap.firstChild)wrap.removeChild(wrap.firstChild);
 var W=Math.max(600,Math.floor(wrap.clientWidth||1200)),be=g.be,ce=g.ce;
 function w(nd){return kind==='base'?nd[1]/be:kind==='cur'?nd[2]/ce:nd[1]/be+nd[2]/ce;}
 function hw(nd){return kind==='diff'&&nd.length>5&&nd[7]>0?nd[5]/be+nd[6]/ce:0;}
 var path=pathTo(g.tree,zoom||g.tree),top=path[path.length-1],tot=w(top);
 if(!(tot>0)){wrap.appendChild(el('p',{'class':'note'},'no samples'));return;}
 var depth=0,items=[],d0=0;
 path.slice(0,-1).forEach(function(nd){if(nd[0]>=0){items.push([nd,0,d0,W,1]);d0++;}});
 (function walk(nd,x,d){var ww=w(nd)/tot*W;if(ww<0.3)return;
  if(nd[0]>=0){items.push([nd,x,d,ww,0]);if(d>depth)depth=d;}
  var cx=x;nd[4].forEach(function(k){walk(k,cx,nd[0]>=0?d+1:d);cx+=w(k)/tot*W;});})(top,0,d0);
 depth=Math.max(depth,d0-1);
 if(zoom){var b=el('button',{'class':'unzoom',type:'button'},'Reset zoom');
  b.addEventListener('click',function(){draw(wrap,g,kind,marked,id,calm,null);});wrap.appendChild(b);}
 var ht=(depth+1)*H+2;
 var svg=sv('svg',{viewBox:'0 0 '+W+' '+ht,width:W,height:ht,'class':'flame '+kind,
  'data-kind':kind,id:id,'data-zoomed':zoom?'1':'0'});
 items.forEach(function(it){var nd=it[0],name=g.frames[nd[0]]||'?',x=it[1].toFixed(2),y=it[2]*H;
  var r=sv('rect',{x:x,y:y,width:Math.max(it[3]-0.2,0.1).toFixed(2),height:H-1,
   fill:colour(kind,nd,name,calm),'class':'n'+(it[4]?' anc':''),'data-frame':name});
  if(marked[name])r.classList.add('regressed');
  var t=sv('title',{});t.textContent=tip(g,kind,nd,name);r.appendChild(t);
  r.addEventListener('click',function(){draw(wrap,g,kind,marked,id,calm,nd===top&&zoom?null:nd);});
  svg.appendChild(r);
  var hot=it[4]?0:hw(nd)/tot*W;
  if(hot>0.3)svg.appendChild(sv('rect',{x:x,y:y+1,width:Math.max(Math.min(hot,it[3])-0.2,0.1).toFixed(2),
   height:H-3,fill:HOT,'class':'hot','data-frame':name}));
  if(marked[name])svg.appendChild(sv('rect',{x:x,y:y,width:Math.max(it[3]-0.2,0.1).toFixed(2),
   height:H-1,fill:'none','class':'own'}));
  var txt=label(name,Math.floor((it[3]-6)/CH));
  if(txt){var tx=sv('text',{x:(it[1]+3).toFixed(2),y:y+12,'data-full':name});tx.textContent=txt;
   if(hot>it[3]/2)tx.setAttribute('fill','#fff');svg.appendChild(tx);}});
 wrap.appendChild(svg);}
function legend(box,calm){var p=el('div',{'class':'legend'});
 (calm?D.legend_regressed:D.legend_plain).forEach(function(x){
  p.appendChild(el('span',{'class':'sw '+x[0]}));p.appendChild(document.createTextNode(x[1]));});
 p.appendChild(document.createTextNode('. Width: sampled bytes of both runs; hover a block for its '+
  'full name and bytes, click it to zoom.'));box.appendChild(p);}
function icicle(box,g,kind,marked,id,calm){var wrap=el('div',{'class':'icicle'});box.appendChild(wrap);
 draw(wrap,g,kind,marked,id,calm,null);}
function graphs(bi){
 var g=D.benches[bi].graph,box=document.getElementById('graphs-'+bi);if(!box)return;
 if(!g){box.appendChild(el('p',{'class':'note'},'No call stacks recorded for this benchmark.'));return;}
 var marked={};D.benches[bi].regressed.forEach(function(f){marked[f]=1;});
 var calm=D.benches[bi].regressed.length>0,miss=g.missing||{};
 if(g.cut)box.appendChild(el('p',{'class':'note'},'Only the '+g.cut+' heaviest stacks per side are drawn (size bound).'));
 if(D.benches[bi].single){box.appendChild(el('p',{'class':'legend'},'Width: estimated bytes allocated '+
  'by each call stack (callers above callees); hover a block for its full name and bytes, click it to zoom.'));
  icicle(box,g,'cur',marked,'cur-'+bi,false);return;}
 box.appendChild(el('h3',null,'Difference between the baseline and the current run'));
 if(g.baseline==null||g.current==null){box.appendChild(el('p',{'class':'note missing'},
  'Not shown: '+(miss.baseline||miss.current)+'.'));}
 else{legend(box,calm);icicle(box,g,'diff',marked,'diff-'+bi,calm);}
 [['base','Baseline: sampled bytes by call stack',g.baseline,miss.baseline],
  ['cur','Current run: sampled bytes by call stack',g.current,miss.current]].forEach(function(v){
  box.appendChild(el('h3',null,v[1]));
  if(v[2]==null){box.appendChild(el('p',{'class':'note missing'},'Not shown: '+(v[3]||'no stacks')+'.'));return;}
  icicle(box,g,v[0],marked,v[0]+'-'+bi,false);});}
function focus(){var f=D.focus,box=document.getElementById('focus-graph');if(!f||!box)return;
 var marked={};D.benches[f.bench].regressed.forEach(function(x){marked[x]=1;});
 legend(box,true);icicle(box,f.graph,'diff',marked,'focus-svg',true);}
function stacksOf(g,side,frame){
 var st=(g[side]||[]).filter(function(s){return s[1]!=null&&g.frames[s[4][s[1]]]===frame;});
 st.sort(function(a,b){return b[2]-a[2];});return st;}
function showSite(bi,tr){
 var g=D.benches[bi].graph,panel=document.getElementById('panel-'+bi),frame=tr.getAttribute('data-frame');
 Array.prototype.forEach.call(document.querySelectorAll('#bench-'+bi+' tr.site'),function(r){r.classList.remove('selected');});
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
try{focus();}catch(e){document.getElementById('errors').textContent+='focus graph: '+e+'\n';throw e;}
D.benches.forEach(function(b,bi){
 try{graphs(bi);}catch(e){var p=document.getElementById('errors');p.textContent+='graph '+bi+': '+e+'\n';throw e;}
 Array.prototype.forEach.call(document.querySelectorAll('#bench-'+bi+' table.sites tbody tr'),function(tr){
  tr.addEventListener('click',function(){showSite(bi,tr);});
  tr.addEventListener('keydown',function(e){if(e.key==='Enter')showSite(bi,tr);});});});
document.body.setAttribute('data-ready','1');
})();
"""
