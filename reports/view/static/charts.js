// vpo view: small SVG charts drawn here (no library): lines with standard-error bands, dots, a
// threshold line, and a dot-and-whisker chart for one number per run. Colours come from the server
// (one per run: reports/colours.py) and go into SVG attributes, never into markup.
"use strict";

(() => {
  const { svg, num, colour, dash } = window.VPO;

  function ticks(x0, x1, logx) {
    if (logx) {
      const out = [];
      for (let p = Math.floor(Math.log2(x0)); p <= Math.ceil(Math.log2(x1)); p++) out.push(2 ** p);
      const keep = out.filter((x) => x >= x0 - 1e-9 && x <= x1 + 1e-9);
      return keep.length > 8 ? keep.filter((_, i) => i % 2 === 0) : keep;
    }
    if (x1 - x0 <= 10 && Number.isInteger(x0)) return Array.from({ length: Math.floor(x1 - x0) + 1 }, (_, i) => x0 + i);
    return [0, 1, 2, 3, 4].map((i) => Math.round(x0 + ((x1 - x0) * i) / 4));
  }

  // the plot area of both charts: the size from spec (460 x 240 by default) and the margins (left,
  // right, top, bottom) that hold the ticks and axis labels
  function box(spec) {
    return { W: spec.width || 460, H: spec.height || 240, L: 48, R: 12, T: 12, B: 36 };
  }

  // an empty chart for values from lo to hi: the svg, both axes and five y grid lines with their
  // ticks. Returns it and the y scale (value to pixel) the caller draws with. An all-equal range
  // (an all-zero panel) gets a 0..1-high axis, not a sliver; the top gets 5% headroom.
  function frame(spec, lo, hi) {
    const { W, H, L, R, T, B } = box(spec);
    let y0 = lo, y1 = hi;
    if (y1 - y0 < 1e-9) y1 = y0 + 1;
    y1 += (y1 - y0) * 0.05;
    const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
    const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, cls: "chart", role: "img", id: spec.id || null });
    g.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, cls: "axis" }), svg("line", { x1: L, y1: T, x2: L, y2: H - B, cls: "axis" }));
    for (let i = 0; i <= 4; i++) {
      const y = y0 + ((y1 - y0) * i) / 4;
      g.append(svg("line", { x1: L, x2: W - R, y1: sy(y), y2: sy(y), cls: "grid" }),
               svg("text", { x: L - 6, y: sy(y) + 4, "text-anchor": "end", cls: "tick" }, num(y, 2)));
    }
    return { g, sy };
  }

  // spec.xlabel under the x axis and spec.ylabel turned along the y axis
  function axisLabels(g, spec) {
    const { W, H, L, R, T, B } = box(spec);
    g.append(svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", cls: "label" }, spec.xlabel || ""),
             svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", cls: "label",
                           transform: `rotate(-90 12 ${(T + H - B) / 2})` }, spec.ylabel || ""));
  }

  // spec: { lines: [{ pts: [[x, y]], band: [[x, lo, hi]], colour, dash, cls, label }], dots: [{ x, y, cls, title }],
  //         hline, xlabel, ylabel, logx, width, height, id }
  function chart(spec) {
    const { W, H, L, R, B } = box(spec);
    const xs = [], ys = [];
    for (const l of spec.lines || []) {
      for (const [x, y] of l.pts) { if (y !== null && y !== undefined) { xs.push(x); ys.push(y); } }
      for (const [x, lo, hi] of l.band || []) { xs.push(x); ys.push(lo, hi); }
    }
    for (const d of spec.dots || []) { xs.push(d.x); ys.push(d.y); }
    if (spec.hline !== null && spec.hline !== undefined) ys.push(spec.hline);
    const logx = !!spec.logx && xs.length > 0 && Math.min(...xs) > 0;
    const fx = logx ? Math.log2 : (x) => x;
    let [x0, x1] = xs.length ? [Math.min(...xs), Math.max(...xs)] : [0, 1];
    if (x1 === x0) x1 = logx ? x0 * 2 : x0 + 1;
    const sx = (x) => L + ((fx(x) - fx(x0)) / (fx(x1) - fx(x0))) * (W - L - R);
    const { g, sy } = frame(spec, ys.length ? Math.min(0, ...ys) : 0, ys.length ? Math.max(...ys) : 1);
    for (const x of ticks(x0, x1, logx)) g.append(svg("text", { x: sx(x), y: H - B + 16, "text-anchor": "middle", cls: "tick" }, String(x)));
    axisLabels(g, spec);
    if (spec.hline !== null && spec.hline !== undefined)
      g.append(svg("line", { x1: L, x2: W - R, y1: sy(spec.hline), y2: sy(spec.hline), cls: "threshold" }));
    for (const l of spec.lines || []) {
      const c = l.colour ? colour(l.colour) : null;
      const band = (l.band || []).filter(([, lo, hi]) => Number.isFinite(lo) && Number.isFinite(hi));
      if (band.length > 1) {
        const up = band.map(([x, , hi]) => `${sx(x)},${sy(hi)}`), down = band.slice().reverse().map(([x, lo]) => `${sx(x)},${sy(lo)}`);
        g.append(svg("polygon", { points: up.concat(down).join(" "), cls: "band", fill: c, data: { run: l.label || "" } }));
      }
      const pts = l.pts.filter(([, y]) => y !== null && y !== undefined);
      if (pts.length) {
        g.append(svg("polyline", { points: pts.map(([x, y]) => `${sx(x)},${sy(y)}`).join(" "), cls: `line ${l.cls || ""}`,
                                   stroke: c, "stroke-dasharray": dash(l.dash), data: { run: l.label || "" } },
                     l.label ? svg("title", null, l.label) : null));
        if (pts.length === 1) g.append(svg("circle", { cx: sx(pts[0][0]), cy: sy(pts[0][1]), r: 3, fill: c || "#2b5797" }));
      }
    }
    for (const d of spec.dots || []) g.append(svg("circle", { cx: sx(d.x), cy: sy(d.y), r: 3.5, cls: `dot ${d.cls || ""}` },
                                                  svg("title", null, d.title || "")));
    return g;
  }

  // one number per run (diversity): a dot with a +-1 s.e. whisker per run, runs along x
  function whiskers(items, spec) {
    const { W, H, L, R, B } = box(spec);
    const vals = items.flatMap((it) => [it.mean, it.mean - (it.stderr || 0), it.mean + (it.stderr || 0)]).filter(Number.isFinite);
    const { g, sy } = frame(spec, Math.min(0, ...vals), vals.length ? Math.max(...vals) : 1);
    const step = (W - L - R) / Math.max(1, items.length);
    items.forEach((it, i) => {
      const x = L + step * (i + 0.5), c = colour(it.colour), se = it.stderr || 0;
      g.append(svg("line", { x1: x, x2: x, y1: sy(it.mean - se), y2: sy(it.mean + se), stroke: c, cls: "whisker" }),
               svg("circle", { cx: x, cy: sy(it.mean), r: 5, fill: c, data: { run: it.label } }, svg("title", null, `${it.label}: ${num(it.mean)} ± ${num(se)}`)),
               svg("text", { x, y: H - B + 16, "text-anchor": "middle", cls: "tick" }, String(i + 1)));
    });
    axisLabels(g, spec);
    return g;
  }

  // candidates in the plane of two reward components (the front of an evolve run): both axes from
  // the points' range (0 included), a dot per point with its classes and data-node, the points of
  // `path` joined by a line in their order (a lineage), and onPick(point) on a click of a dot.
  // spec: { points: [{ x, y, cls, title, node }], path: [[x, y]], xlabel, ylabel, width, height, id, onPick }
  function scatter(spec) {
    const { W, H, L, R, B } = box(spec);
    const xs = spec.points.map((p) => p.x), ys = spec.points.map((p) => p.y);
    const x0 = Math.min(0, ...xs);
    let x1 = xs.length ? Math.max(...xs) : 1;
    if (x1 - x0 < 1e-9) x1 = x0 + 1;
    x1 += (x1 - x0) * 0.05;
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const { g, sy } = frame(spec, ys.length ? Math.min(0, ...ys) : 0, ys.length ? Math.max(...ys) : 1);
    for (let i = 0; i <= 4; i++) {
      const x = x0 + ((x1 - x0) * i) / 4;
      g.append(svg("text", { x: sx(x), y: H - B + 16, "text-anchor": "middle", cls: "tick" }, num(x, 2)));
    }
    axisLabels(g, spec);
    if ((spec.path || []).length > 1)
      g.append(svg("polyline", { points: spec.path.map(([x, y]) => `${sx(x)},${sy(y)}`).join(" "), cls: "lineage-path" }));
    for (const p of spec.points) {
      const c = svg("circle", { cx: sx(p.x), cy: sy(p.y), r: p.cls && p.cls.includes("front") ? 5 : 3.5,
                                cls: `dot ${p.cls || ""}`, data: { node: p.node } }, svg("title", null, p.title || ""));
      if (spec.onPick) c.addEventListener("click", () => spec.onPick(p));
      g.append(c);
    }
    return g;
  }

  Object.assign(window.VPO, { chart, whiskers, scatter });
})();
