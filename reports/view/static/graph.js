// vpo view: an evolve problem's lineage as a graph one can pan (drag), zoom (wheel, buttons) and
// click (a node opens its program and its diff against its parent). Nodes are coloured by score.
//
// Layout, chosen to stay readable and cheap at 200 iterations x m children: x is the iteration; a
// node takes its parent's lane when that lane is free in its column, else the nearest free one, so
// lines of descent run horizontally and the height is a few lanes, not one row per program. All
// edges are one <path>; one <circle> per node; nothing is recomputed while panning (one transform).
"use strict";

(() => {
  const { el, svg, num } = window.VPO;
  const DX = 26, DY = 16, PAD = 20;
  // viridis at 5 stops: dark = low score, yellow = high
  const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function scoreColour(t) {
    if (!Number.isFinite(t)) return "#b0b0b0";
    const x = Math.max(0, Math.min(1, t)) * (STOPS.length - 1), i = Math.min(STOPS.length - 2, Math.floor(x)), f = x - i;
    const c = STOPS[i].map((v, k) => Math.round(v + (STOPS[i + 1][k] - v) * f));
    return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
  }

  function layout(nodes) {
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const order = nodes.slice().sort((a, b) => (a.iteration ?? 0) - (b.iteration ?? 0));
    const used = new Map();  // column -> Set of lanes
    const pos = new Map();
    let lanes = 1;
    for (const n of order) {
      const col = n.iteration ?? 0;
      if (!used.has(col)) used.set(col, new Set());
      const taken = used.get(col);
      const p = n.parent && pos.get(n.parent);
      const want = p ? p.lane : 0;
      let lane = want;
      for (let d = 1; taken.has(lane); d++) {  // the nearest free lane, below first
        if (!taken.has(want + d)) lane = want + d;
        else if (want - d >= 0 && !taken.has(want - d)) lane = want - d;
      }
      taken.add(lane);
      lanes = Math.max(lanes, lane + 1);
      pos.set(n.id, { x: PAD + col * DX, y: PAD + lane * DY, lane });
    }
    return { pos, lanes, byId, cols: Math.max(1, ...nodes.map((n) => (n.iteration ?? 0) + 1)) };
  }

  // draws into a new element; onSelect(node) is called on a click; returns { root, select(id), showPath(ids) }
  function lineageGraph(nodes, onSelect) {
    const { pos, lanes, byId, cols } = layout(nodes);
    const scored = nodes.map((n) => n.score).filter(Number.isFinite);
    const lo = scored.length ? Math.min(...scored) : 0, hi = scored.length ? Math.max(...scored) : 1;
    const norm = (s) => (hi - lo > 1e-12 ? (s - lo) / (hi - lo) : 1);
    const W = PAD * 2 + cols * DX, H = PAD * 2 + lanes * DY;
    const VW = 900, VH = Math.min(420, Math.max(200, H + 20));
    const edges = [];
    for (const n of nodes) {
      const a = n.parent && pos.get(n.parent), b = pos.get(n.id);
      if (!a) continue;
      const mx = (a.x + b.x) / 2;
      edges.push(`M${a.x},${a.y}C${mx},${a.y} ${mx},${b.y} ${b.x},${b.y}`);
    }
    const view = svg("g", { cls: "view" });
    const pathLayer = svg("g", { cls: "path-layer" });
    view.append(svg("path", { d: edges.join(""), cls: "edges" }), pathLayer);
    const circles = new Map();
    for (const n of nodes) {
      const p = pos.get(n.id);
      const c = svg("circle", { cx: p.x, cy: p.y, r: 5.5, fill: scoreColour(n.score === null ? NaN : norm(n.score)),
                                cls: `gnode island-stroke-${(n.island ?? 0) % 8}` + (n.passed ? " passed" : "") + (n.error ? " errored" : ""),
                                data: { node: n.id } },
                    svg("title", null, `iteration ${n.iteration} · island ${n.island} · score ${num(n.score)}`));
      circles.set(n.id, c);
      view.append(c);
    }
    for (let it = 0; it < cols; it += cols > 40 ? 10 : cols > 10 ? 5 : 1)
      view.append(svg("text", { x: PAD + it * DX, y: PAD - 8, "text-anchor": "middle", cls: "tick" }, String(it)));
    const box = svg("svg", { viewBox: `0 0 ${VW} ${VH}`, cls: "graph", id: "lineage-graph", role: "img",
                             "aria-label": "lineage graph: drag to pan, wheel to zoom, click a node" }, view);
    let k = 1, tx = 0, ty = 0;
    const apply = () => { view.setAttribute("transform", `translate(${tx.toFixed(1)},${ty.toFixed(1)}) scale(${k.toFixed(4)})`);
                          box.dataset.zoom = k.toFixed(3); };
    const fit = () => { k = Math.min(2, (VW - 10) / W, (VH - 10) / H); tx = (VW - W * k) / 2; ty = (VH - H * k) / 2; apply(); };
    // first view: all of it when nodes stay visible, else the start at a readable scale (pan or "fit" for more)
    const start = () => { fit(); if (k < 0.45) { k = Math.min(0.45, (VH - 10) / H) || 0.45; tx = 6; ty = (VH - H * k) / 2; apply(); } };
    const zoomAt = (f, mx, my) => {
      const k2 = Math.max(0.02, Math.min(12, k * f));
      tx = mx - ((mx - tx) * k2) / k; ty = my - ((my - ty) * k2) / k; k = k2; apply();
    };
    const toView = (e) => {  // client px -> viewBox units
      const r = box.getBoundingClientRect();
      return [((e.clientX - r.left) / r.width) * VW, ((e.clientY - r.top) / r.height) * VH];
    };
    box.addEventListener("wheel", (e) => { e.preventDefault(); const [mx, my] = toView(e); zoomAt(Math.exp(-e.deltaY * 0.0015), mx, my); },
                         { passive: false });
    let drag = null;
    box.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, y: e.clientY, tx, ty, moved: false }; box.setPointerCapture(e.pointerId); });
    box.addEventListener("pointermove", (e) => {
      if (!drag) return;
      const r = box.getBoundingClientRect(), s = VW / r.width;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      tx = drag.tx + dx * s; ty = drag.ty + dy * s; apply();
    });
    box.addEventListener("pointerup", (e) => {
      const d = drag;
      drag = null;
      if (d && !d.moved) {
        const hit = document.elementFromPoint(e.clientX, e.clientY);
        const id = hit && hit.dataset ? hit.dataset.node : null;
        if (id && byId.has(id)) onSelect(byId.get(id));
      }
    });
    // a keyboard or script click on a node (pointer events above handle the mouse)
    box.addEventListener("click", (e) => {
      if (e.detail !== 0) return;
      const id = e.target && e.target.dataset ? e.target.dataset.node : null;
      if (id && byId.has(id)) onSelect(byId.get(id));
    });
    function select(id) {
      for (const c of view.querySelectorAll("circle.selected")) c.classList.remove("selected");
      const c = circles.get(id);
      if (c) c.classList.add("selected");
    }
    function showPath(ids) {
      const segs = [];
      for (let i = 1; i < ids.length; i++) {
        const a = pos.get(ids[i - 1]), b = pos.get(ids[i]);
        if (a && b) { const mx = (a.x + b.x) / 2; segs.push(`M${a.x},${a.y}C${mx},${a.y} ${mx},${b.y} ${b.x},${b.y}`); }
      }
      pathLayer.replaceChildren(svg("path", { d: segs.join(""), cls: "best-path" }));
    }
    const legendId = "score-gradient";
    const legend = svg("svg", { viewBox: "0 0 220 28", width: 220, height: 28, cls: "legend" },
      svg("defs", null, svg("linearGradient", { id: legendId }, STOPS.map((c, i) =>
        svg("stop", { offset: `${(100 * i) / (STOPS.length - 1)}%`, "stop-color": `rgb(${c.join(",")})` })))),
      svg("rect", { x: 40, y: 4, width: 140, height: 10, fill: `url(#${legendId})` }),
      svg("text", { x: 36, y: 13, "text-anchor": "end", cls: "tick" }, num(lo, 2)),
      svg("text", { x: 184, y: 13, cls: "tick" }, num(hi, 2)),
      svg("text", { x: 110, y: 26, "text-anchor": "middle", cls: "tick" }, "score"));
    const btn = (label, id, fn) => el("button", { type: "button", id, on: { click: fn } }, label);
    const root = el("div", { cls: "graph-box" },
      el("div", { cls: "controls" }, btn("+", "graph-zoom-in", () => zoomAt(1.4, VW / 2, VH / 2)),
         btn("−", "graph-zoom-out", () => zoomAt(1 / 1.4, VW / 2, VH / 2)), btn("fit", "graph-fit", fit), legend,
         el("span", { cls: "muted" }, `${nodes.length} programs, ${cols} iterations · drag to pan, wheel to zoom, click a node`)),
      box);
    start();
    return { root, select, showPath, zoomAt };
  }

  Object.assign(window.VPO, { lineageGraph, scoreColour });
})();
