// The VIZ page: HTML, style and script, around the recorded data (viz/html.hpp puts the JSON
// between page_head and page_tail). Self-contained: no server, no network, nothing fetched.
//
// The data: `nodes`, each [op, dtype, arg, [source ids]] (one entry per distinct UOp: hash-consing
// makes a node shared by many graphs one entry); `groups`, each {name, rewrites, kernels}; a
// rewrite is {name, input, output, steps}, a step {rule, before, after, graph}, where graph is the
// whole graph after the step (-1 past the steps the writer draws); a kernel is
// {name, device, opts, ast, source}. The script lists groups on the left; a rewrite shows its graph
// at the step chosen (the nodes the step made outlined), the rule, and the listing's diff from the
// step before; a kernel shows its AST and its source. The URL's hash (#g=2&r=1&s=4, #kernel=NAME, #kernel=NAME&rewrite=TEXT&s=4)
// picks what is shown; the body's data-viz-ready says the first drawing finished.
#pragma once

#include <string_view>

namespace tinyt::inline v0::viz::detail {

inline constexpr std::string_view page_head = R"tinyt_viz(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tinyt VIZ</title>
<style>
body { margin: 0; display: flex; height: 100vh; font: 13px/1.35 system-ui, sans-serif; color: #222; }
#side { width: 330px; overflow: auto; border-right: 1px solid #ccc; background: #f7f7f5; flex: none; }
#side h1 { font-size: 15px; margin: 10px 12px 4px; }
#side .counts { margin: 0 12px 6px; color: #666; }
#filter { margin: 0 12px 8px; width: calc(100% - 30px); }
.group > .gname { font-weight: 600; padding: 4px 12px; cursor: pointer; background: #ecece8; border-top: 1px solid #ddd; }
.item { padding: 2px 12px 2px 24px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.item.kernel::before { content: "\25A0  "; color: #3a7; }
.item.none { color: #999; }
.item:hover { background: #e4ecf7; } .item.sel { background: #c9dbf5; }
#main { flex: 1; display: flex; flex-direction: column; min-width: 0; }
#title { padding: 8px 12px 2px; font-weight: 600; font-size: 14px; }
#rule { padding: 0 12px 4px; color: #555; font-family: ui-monospace, monospace; white-space: pre-wrap; }
#steps { padding: 2px 12px 6px; border-bottom: 1px solid #ccc; }
#steps input { width: 50%; vertical-align: middle; }
#panes { flex: 1; display: flex; min-height: 0; }
#graph { flex: 3; overflow: hidden; position: relative; background: #fff; cursor: grab; }
#text { flex: 2; overflow: auto; border-left: 1px solid #ccc; background: #fbfbfb; }
pre { margin: 0; padding: 8px 10px; font: 12px/1.35 ui-monospace, monospace; }
.add { background: #dcf5dc; } .del { background: #f8dcdc; }
svg text { font: 11px ui-monospace, monospace; pointer-events: none; }
svg rect.node { stroke: #555; stroke-width: 1; rx: 4; }
svg rect.node.new { stroke: #d22; stroke-width: 3; }
svg path.edge { fill: none; stroke: #999; stroke-width: 1.2; }
</style></head>
<body>
<div id="side"><h1>tinyt VIZ</h1><div class="counts" id="counts"></div>
<input id="filter" placeholder="filter by name"><div id="list"></div></div>
<div id="main"><div id="title"></div><div id="rule"></div><div id="steps"></div>
<div id="panes"><div id="graph"><svg id="svg" width="100%" height="100%"></svg></div>
<div id="text"><pre id="listing"></pre></div></div></div>
<script id="viz-data" type="application/json">)tinyt_viz";

inline constexpr std::string_view page_tail = R"tinyt_viz(</script>
<script>
"use strict";
window.addEventListener("error", e => { document.body.dataset.vizError = String(e.message); });
const data = JSON.parse(document.getElementById("viz-data").textContent);
const N = data.nodes;
const $ = id => document.getElementById(id);
const SVGNS = "http://www.w3.org/2000/svg";

// the ids a root reaches, sources before their users
function topo(root) {
  if (root < 0) return [];
  const seen = new Set([root]), order = [], stack = [[root, 0]];
  while (stack.length) {
    const top = stack[stack.length - 1], srcs = N[top[0]][3];
    if (top[1] < srcs.length) {
      const s = srcs[top[1]++];
      if (!seen.has(s)) { seen.add(s); stack.push([s, 0]); }
    } else { order.push(top[0]); stack.pop(); }
  }
  return order;
}
// a node's line: its id (the same in every graph it is part of), op, dtype, sources, arg
function line(id) {
  const [op, dtype, arg, srcs] = N[id];
  return `${String(id).padStart(5)} ${op.padEnd(14)} ${dtype.padEnd(12)} [${srcs.join(", ")}] ${arg}`;
}
// a line diff of two listings (longest common subsequence; big ones as sets)
function diff(a, b) {
  const out = [];
  if (a.length * b.length > 4e6) {
    const sa = new Set(a), sb = new Set(b);
    for (const x of a) if (!sb.has(x)) out.push(["del", x]);
    for (const x of b) out.push([sa.has(x) ? "" : "add", x]);
    return out;
  }
  const L = Array.from({length: a.length + 1}, () => new Int32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { out.push(["", a[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["del", a[i++]]);
    else out.push(["add", b[j++]]);
  }
  while (i < a.length) out.push(["del", a[i++]]);
  while (j < b.length) out.push(["add", b[j++]]);
  return out;
}
function showLines(rows) {
  const pre = $("listing");
  pre.textContent = "";
  for (const [cls, text] of rows) {
    const span = document.createElement("span");
    if (cls) span.className = cls;
    span.textContent = (cls === "add" ? "+ " : cls === "del" ? "- " : "  ") + text + "\n";
    pre.appendChild(span);
  }
}

const COLORS = [[/^(BUFFER|DEFINE_GLOBAL|DEFINE_LOCAL|DEFINE_REG|DEFINE_VAR)/, "#c8dcf0"], [/^(LOAD|STORE|INDEX)/, "#d7e9f7"],
  [/^(RANGE|REDUCE|END|BARRIER|SPECIAL)/, "#f6dcb8"], [/^(CONST|VCONST)/, "#e6e6e6"], [/^SINK/, "#f0d0e6"],
  [/^(RESHAPE|PERMUTE|EXPAND|PAD|SHRINK|FLIP|VIEW|COPY)/, "#e0f0d0"], [/./, "#fff7d6"]];
const color = op => COLORS.find(([re]) => re.test(op))[1];
const W = 170, H = 46, GX = 18, GY = 34;

// a layered drawing: a node one layer below its deepest source, layers ordered by the average
// position of their neighbours (down and up, four times), the graph's root at the bottom
function draw(root, fresh) {
  const svg = $("svg");
  svg.textContent = "";
  const ids = topo(root);
  const rank = new Map(), users = new Map(ids.map(i => [i, []]));
  for (const id of ids) {
    let r = 0;
    for (const s of N[id][3]) { r = Math.max(r, rank.get(s) + 1); users.get(s).push(id); }
    rank.set(id, r);
  }
  const layers = [];
  for (const id of ids) (layers[rank.get(id)] = layers[rank.get(id)] || []).push(id);
  const pos = new Map();
  layers.forEach(l => l.forEach((id, i) => pos.set(id, i)));
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    for (const layer of down ? layers : [...layers].reverse()) {
      const at = id => {
        const near = down ? N[id][3] : users.get(id);
        return near.length ? near.reduce((a, n) => a + pos.get(n), 0) / near.length : pos.get(id);
      };
      const key = new Map(layer.map(id => [id, at(id)]));
      layer.sort((a, b) => key.get(a) - key.get(b));
      layer.forEach((id, i) => pos.set(id, i));
    }
  }
  const widest = Math.max(1, ...layers.map(l => l.length));
  const xy = new Map();
  layers.forEach((l, r) => l.forEach((id, i) => xy.set(id, [(i + (widest - l.length) / 2) * (W + GX), r * (H + GY)])));
  const g = document.createElementNS(SVGNS, "g");
  svg.appendChild(g);
  for (const id of ids)
    for (const s of N[id][3]) {
      const [x1, y1] = xy.get(s), [x2, y2] = xy.get(id), p = document.createElementNS(SVGNS, "path");
      p.setAttribute("class", "edge");
      p.setAttribute("d", `M${x1 + W / 2},${y1 + H} C${x1 + W / 2},${y1 + H + GY / 2} ${x2 + W / 2},${y2 - GY / 2} ${x2 + W / 2},${y2}`);
      g.appendChild(p);
    }
  for (const id of ids) {
    const [x, y] = xy.get(id), [op, dtype, arg] = N[id];
    const rect = document.createElementNS(SVGNS, "rect");
    rect.setAttribute("class", fresh && fresh.has(id) ? "node new" : "node");
    rect.setAttribute("x", x); rect.setAttribute("y", y); rect.setAttribute("width", W); rect.setAttribute("height", H);
    rect.setAttribute("fill", color(op));
    const title = document.createElementNS(SVGNS, "title");
    title.textContent = line(id);
    rect.appendChild(title);
    g.appendChild(rect);
    [`${op}  #${id}`, dtype, arg.length > 26 ? arg.slice(0, 25) + "\u2026" : arg].forEach((t, k) => {
      const text = document.createElementNS(SVGNS, "text");
      text.setAttribute("x", x + 6); text.setAttribute("y", y + 14 + 13 * k);
      text.textContent = t;
      g.appendChild(text);
    });
  }
  // the whole graph where it fits at a readable size, else life size around the node in focus
  // (the first node the step made, or the root)
  const width = widest * (W + GX), height = layers.length * (H + GY);
  const box = $("graph").getBoundingClientRect();
  const bw = box.width || 900, bh = box.height || 600;
  const fit = Math.min(bw / (width + 2 * GX), bh / (height + 2 * GY));
  if (fit >= 0.6) {
    const k = Math.min(fit, 1.2);
    view = {x: width / 2 - bw / k / 2, y: height / 2 - bh / k / 2, w: bw / k, h: bh / k};
  } else {
    const focus = ids.find(id => fresh && fresh.has(id)) ?? root, [fx, fy] = xy.get(focus) || [0, 0];
    view = {x: fx + W / 2 - bw / 2, y: fy + H / 2 - bh / 2, w: bw, h: bh};
  }
  setView();
  return ids;
}
let view = {x: 0, y: 0, w: 100, h: 100};
const setView = () => $("svg").setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
$("graph").addEventListener("wheel", e => {
  e.preventDefault();
  const box = $("graph").getBoundingClientRect(), k = e.deltaY > 0 ? 1.15 : 1 / 1.15;
  const fx = (e.clientX - box.left) / box.width, fy = (e.clientY - box.top) / box.height;
  view = {x: view.x + fx * view.w * (1 - k), y: view.y + fy * view.h * (1 - k), w: view.w * k, h: view.h * k};
  setView();
}, {passive: false});
let drag = null;
$("graph").addEventListener("mousedown", e => { drag = [e.clientX, e.clientY, view.x, view.y]; });
window.addEventListener("mouseup", () => { drag = null; });
window.addEventListener("mousemove", e => {
  if (!drag) return;
  const box = $("graph").getBoundingClientRect();
  view.x = drag[2] - (e.clientX - drag[0]) * view.w / box.width;
  view.y = drag[3] - (e.clientY - drag[1]) * view.h / box.height;
  setView();
});

// a rewrite at step s: 0 is its input, k the graph after the k-th rule fired
function showRewrite(gi, ri, s) {
  const rw = data.groups[gi].rewrites[ri], n = rw.steps.length;
  s = Math.max(0, Math.min(s, n));
  const graphAt = k => k === 0 ? rw.input : (rw.steps[k - 1].graph >= 0 ? rw.steps[k - 1].graph : (k === n ? rw.output : -1));
  $("title").textContent = `${data.groups[gi].name} \u203a ${rw.name}` + (n ? "" : "  (no rule fired)");
  const steps = $("steps");
  steps.textContent = "";
  if (n) {
    const slider = document.createElement("input");
    Object.assign(slider, {type: "range", min: 0, max: n, value: s});
    slider.oninput = () => select({g: gi, r: ri, s: +slider.value});
    steps.append(slider, ` step ${s} of ${n}`);
  } else steps.textContent = rw.input === rw.output ? "the graph is unchanged" : "a lowering step: its input and output";
  const step = s > 0 ? rw.steps[s - 1] : null;
  $("rule").textContent = step ? `rule ${step.rule}\nmatched #${step.before} \u2192 gave #${step.after}` : "";
  let root = graphAt(s), fresh = null;
  if (!n && s === 0 && rw.output !== rw.input) root = rw.output;
  if (root < 0 && step) root = step.after;  // past the steps drawn whole: the rule's result alone
  const before = s > 0 ? topo(graphAt(s - 1) >= 0 ? graphAt(s - 1) : step.before) : (!n && rw.output !== rw.input ? topo(rw.input) : []);
  if (s > 0 || (!n && rw.output !== rw.input)) { const old = new Set(before); fresh = new Set(topo(root).filter(i => !old.has(i))); }
  const ids = draw(root, fresh);
  showLines(s > 0 || (!n && rw.output !== rw.input) ? diff(before.map(line), ids.map(line)) : ids.map(l => ["", line(l)]));
}
function showKernel(gi, ki) {
  const k = data.groups[gi].kernels[ki];
  $("title").textContent = `kernel ${k.name} on ${k.device}`;
  $("rule").textContent = `opts: ${k.opts}`;
  $("steps").textContent = "its AST, and the source it compiled";
  draw(k.ast, null);
  showLines(k.source.split("\n").map(l => ["", l]));
}

let items = [];
function select(sel) {
  for (const it of items) {
    const on = it.g === sel.g && (sel.k !== undefined ? it.k === sel.k : it.r === sel.r);
    if (on && !it.el.classList.contains("sel")) it.el.scrollIntoView({block: "center"});
    it.el.classList.toggle("sel", on);
  }
  if (sel.k !== undefined) { showKernel(sel.g, sel.k); history.replaceState(null, "", `#kernel=${encodeURIComponent(data.groups[sel.g].kernels[sel.k].name)}`); }
  else { showRewrite(sel.g, sel.r, sel.s || 0); history.replaceState(null, "", `#g=${sel.g}&r=${sel.r}&s=${sel.s || 0}`); }
}
function buildList() {
  const list = $("list");
  let rewrites = 0, kernels = 0;
  data.groups.forEach((grp, g) => {
    const box = document.createElement("div"), head = document.createElement("div"), body = document.createElement("div");
    box.className = "group"; head.className = "gname"; head.textContent = grp.name;
    head.onclick = () => { body.hidden = !body.hidden; };
    box.append(head, body);
    grp.kernels.forEach((k, i) => {
      const el = document.createElement("div");
      el.className = "item kernel"; el.textContent = `${k.name}  (${k.device})`;
      el.onclick = () => select({g, k: i});
      body.appendChild(el); items.push({el, g, k: i, text: `${grp.name} ${k.name}`}); kernels++;
    });
    grp.rewrites.forEach((rw, i) => {
      const el = document.createElement("div");
      el.className = "item" + (rw.steps.length || rw.input !== rw.output ? "" : " none");
      el.textContent = `${rw.name}  (${rw.steps.length})`;
      el.title = `${rw.steps.length} rule(s) fired`;
      el.onclick = () => select({g, r: i});
      body.appendChild(el); items.push({el, g, r: i, text: `${grp.name} ${rw.name}`}); rewrites++;
    });
    list.appendChild(box);
  });
  $("counts").textContent = `${data.groups.length} groups, ${rewrites} rewrites, ${kernels} kernels, ${N.length} nodes`;
  $("filter").oninput = () => {
    const q = $("filter").value.toLowerCase();
    for (const it of items) it.el.hidden = q !== "" && !it.text.toLowerCase().includes(q);
  };
}
function fromHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has("kernel")) {  // with &rewrite=TEXT&s=S: the kernel's first rewrite whose name holds TEXT
    for (let g = 0; g < data.groups.length; g++) {
      const k = data.groups[g].kernels.findIndex(x => x.name === h.get("kernel"));
      if (k < 0) continue;
      const r = h.has("rewrite") ? data.groups[g].rewrites.findIndex(x => x.name.includes(h.get("rewrite"))) : -1;
      return r >= 0 ? {g, r, s: +h.get("s") || 0} : {g, k};
    }
  }
  if (h.has("g") && data.groups[+h.get("g")] && data.groups[+h.get("g")].rewrites[+h.get("r")]) return {g: +h.get("g"), r: +h.get("r"), s: +h.get("s") || 0};
  for (let g = 0; g < data.groups.length; g++) if (data.groups[g].kernels.length) return {g, k: 0};
  for (let g = 0; g < data.groups.length; g++) if (data.groups[g].rewrites.length) return {g, r: 0};
  return null;
}
buildList();
const first = fromHash();
if (first) select(first); else $("title").textContent = "nothing was recorded (run with VIZ=1)";
document.body.dataset.vizReady = "1";
</script>
</body></html>
)tinyt_viz";

}  // namespace tinyt::inline v0::viz::detail
