// vpo view: the problem itself on a problem page, drawn from the blocks the server sends
// (reports/view/problems.py: one small function per task). A maze is an SVG grid; a candidate's
// route (its cells, from the task's own simulator) is overlaid when its "route" button is clicked.
// Texts go in with textContent (el/svg, dom.js), never as markup.
"use strict";

(() => {
  const { el, svg } = window.VPO;
  const CELL = 34;
  const SYMBOLS = { "#": "wall", ".": "free", S: "start", E: "exit", G: "gold", D: "diamond", L: "lava", B: "bonus" };

  // a maze block as an SVG grid; returns the figure and a function that overlays a route on it
  function mazeFigure(b) {
    const n = b.rows.length, W = n * CELL;
    const g = svg("svg", { id: "maze-grid", cls: "maze", viewBox: `0 0 ${W} ${W}`, width: W, height: W, role: "img",
                           "aria-label": `${n}x${n} maze, budget ${b.budget} steps` });
    b.rows.forEach((row, r) => [...row].forEach((ch, c) => {
      const kind = SYMBOLS[ch] || "free";
      g.append(svg("rect", { x: c * CELL, y: r * CELL, width: CELL, height: CELL, cls: `cell ${kind}`, data: { r, c, sym: ch } }));
      if (ch !== "#" && ch !== ".") g.append(svg("text", { x: c * CELL + CELL / 2, y: r * CELL + CELL / 2 + 5, "text-anchor": "middle", cls: `sym ${kind}` }, ch));
    }));
    const layer = svg("g", { cls: "route-layer" });
    g.append(layer);
    const caption = el("figcaption", { id: "maze-caption" },
      `S start, E exit, G gold, D diamond, L lava, B bonus, # wall; ${b.counts.gold} gold, ${b.counts.diamond} diamonds, ` +
      `${b.counts.lava} lava, ${b.budget} steps. Click “route” on a candidate to draw it here.`);
    const centre = ([r, c]) => `${c * CELL + CELL / 2},${r * CELL + CELL / 2}`;
    function show(route, label) {
      layer.replaceChildren();
      g.dataset.route = label || "";
      if (!route) { caption.textContent = `${label}: no route`; return; }
      const cells = route.cells || [];
      const cls = "route" + (route.reached_exit ? "" : " unfinished");
      layer.append(svg("polyline", { points: cells.map(centre).join(" "), cls, data: { cells: cells.length } }));
      if (cells.length) {
        const [x, y] = centre(cells[cells.length - 1]).split(",").map(Number);
        layer.append(svg("circle", { cx: x, cy: y, r: 6, cls: "route-end" + (route.reached_exit ? "" : " unfinished") }));
      }
      const box = g.getBoundingClientRect();  // a route clicked where the grid is out of sight (a lineage node)
      if (box.bottom < 0 || box.top > window.innerHeight) g.scrollIntoView({ block: "nearest" });
      caption.textContent = `${label}: ${route.steps} steps (budget ${b.budget}), ${route.bumps} into walls` +
        (route.ignored ? `, ${route.ignored} moves after E or past the budget ignored` : "") +
        (route.reached_exit ? ", reaches E" : ", does not reach E (reward 0)");
    }
    return { root: el("figure", { cls: "maze-fig" }, g, caption), show };
  }

  // a block that holds a lot (a statement, the paragraphs, a table) takes the whole row
  const wide = (b) => ["paragraphs", "table"].includes(b.kind) || String(b.text || "").length > 600;
  function block(b) {
    const sec = block1(b);
    if (wide(b)) sec.classList.add("wide");
    return sec;
  }
  function block1(b) {
    const title = el("h3", null, b.title || b.kind);
    if (b.kind === "text") return el("section", { cls: "pblock text" }, title, el("div", { cls: "statement" }, b.text));
    if (b.kind === "code") return el("section", { cls: "pblock code" }, title, el("pre", { cls: "text" }, b.text));
    if (b.kind === "list") return el("section", { cls: "pblock list" }, title, el("ul", null, (b.items || []).map((t) => el("li", null, t))));
    if (b.kind === "table") {
      return el("section", { cls: "pblock table" }, title, el("table", { cls: "grid compact ptable" },
        el("thead", null, el("tr", null, b.head.map((h) => el("th", null, h)))),
        el("tbody", null, b.rows.map((row) => el("tr", null, row.map((c) => el("td", null, el("pre", null, c))))))));
    }
    if (b.kind === "paragraphs") {
      return el("section", { cls: "pblock paragraphs" }, title, el("ol", { cls: "paras" }, (b.items || []).map((p) =>
        el("li", { cls: p.hop ? "gold-hop" : null, data: { idx: p.idx } },
           el("strong", null, `[${p.idx}] ${p.title}`), p.hop ? el("span", { cls: "badge pass" }, `hop ${p.hop}`) : null,
           el("div", null, p.text)))));
    }
    return el("section", { cls: "pblock" }, title, el("pre", null, JSON.stringify(b, null, 2)));
  }

  // info: the problem-info page. Returns { top, side, showRoute }: `top` goes above the chains,
  // `side` (a maze) beside them, sticky, so a route clicked far down the page is seen drawn.
  function problemView(info) {
    if (info.error) return { top: el("p", { cls: "warn", id: "problem-error" }, `problem not shown: ${info.error}`), side: null, showRoute: null };
    let maze = null;
    const blocks = [];
    for (const b of info.blocks || []) {
      if (b.kind === "maze" && !maze) maze = mazeFigure(b);
      else blocks.push(block(b));
    }
    const prompt = (info.prompt || []).length ? el("details", { cls: "prompt", id: "prompt" },
      el("summary", null, `prompt (${info.prompt.length} message${info.prompt.length === 1 ? "" : "s"})`),
      info.prompt.map((m) => el("div", { cls: "msg" }, el("span", { cls: "badge" }, m.role), el("pre", { cls: "text" }, m.content)))) : null;
    const note = info.prompt_error ? el("p", { cls: "muted" }, info.prompt_error) : null;
    const top = el("section", { id: "problem-view", data: { task: info.task || "" } },
      blocks.length ? el("div", { cls: "pblocks" }, blocks) : null, prompt, note);
    return { top, side: maze ? maze.root : null, showRoute: maze ? maze.show : null };
  }

  Object.assign(window.VPO, { problemView });
})();
