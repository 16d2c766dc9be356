// vpo view: the views (index, run, problem, side by side, curves across runs, lineage). Every piece
// of run data is written with textContent (through el(), dom.js), never parsed as HTML: a completion
// holding <script> or <img onerror> is shown as text. The page state for tests and screenshots is on
// <body>: data-state (loading | ready | error) and data-view.
"use strict";

(() => {
  const { el, svg, num, colour, dash, api, EXPORT, chart, whiskers, scatter, lineageGraph, problemView } = window.VPO;
  const app = document.getElementById("app");
  const crumbs = document.getElementById("crumbs");
  let renderToken = 0;
  const indexState = { q: "", sort: "created", desc: true, rows: null, picked: new Set() };
  //: how often a run still being written is asked for its progress (a stat on the server)
  const LIVE_MS = 1500;

  const enc = encodeURIComponent;
  function link(route, params, ...kids) {
    const qs = Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => `${enc(k)}=${enc(v)}`).join("&");
    return el("a", { href: `#/${route}${qs ? "?" + qs : ""}` }, ...kids);
  }
  function go(route, params) { location.hash = link(route, params).getAttribute("href"); }
  // the page's state in the address (reload and links keep it) without rendering again
  function remember(route, params) { history.replaceState(null, "", link(route, params).getAttribute("href")); }

  // ---- formatting -------------------------------------------------------------------------------
  // an estimate as the server wrote it with reports/tables.py's format_estimate, the one formatter
  // (the cell `vpo show` prints: mean±se, then s±se between seeds for a seed group)
  function estText(e) { return typeof e.text === "string" ? e.text : num(e.mean); }
  function est(e) { return e ? estText(e) : "–"; }
  // an estimate in a narrow cell: the mean, then "±se" (and "s±se") that may wrap under it
  function estCell(e) {
    if (!e) return "–";
    const [mean, ...errs] = estText(e).split(/(?<!s)(?=±)| (?=s±)/);
    return [el("span", { cls: "mean" }, mean), ...errs.map((x) => el("span", { cls: "se" }, x))];
  }
  function swatch(c, d) {  // the run's colour and line style (reports/colours.py), set through the CSSOM
    const s = el("span", { cls: "swatch", "aria-hidden": "true", data: { dash: dash(d) || "solid" } });
    s.style.backgroundColor = colour(c);
    if (dash(d)) s.style.backgroundImage = "repeating-linear-gradient(90deg, transparent 0 3px, #fff 3px 5px)";
    return s;
  }
  function breakable(text) {  // a line may break after / : , = (a <wbr> element between text nodes)
    return String(text ?? "").split(/(?<=[/:,=])/).flatMap((part, i) => (i ? [el("wbr"), part] : [part]));
  }
  function shortId(id) { return id && id.length > 12 ? id.slice(0, 8) : (id || "–"); }

  // ---- routing ----------------------------------------------------------------------------------
  function parseHash() {
    const h = location.hash.replace(/^#\/?/, "");
    const [route, qs] = h.split("?", 2);
    return { route: route || "", params: new URLSearchParams(qs || "") };
  }
  function setState(state, view) {
    document.body.dataset.state = state;
    if (view) document.body.dataset.view = view;
  }
  function setCrumbs(...parts) {
    crumbs.replaceChildren(...parts.flatMap((p, i) => (i ? [el("span", { cls: "sep" }, "/"), p] : [p])));
  }
  function fail(err, token) {
    if (token !== renderToken) return;
    app.replaceChildren(el("div", { cls: "error", role: "alert" }, String(err && err.message ? err.message : err)));
    setState("error");
  }

  //: draws a candidate's route on the problem's picture (a Maze problem page), else null
  let routeView = null;

  async function render() {
    const token = ++renderToken;
    routeView = null;
    const { route, params } = parseHash();
    setState("loading");
    try {
      if (route === "run") await viewRun(params, token);
      else if (route === "problem") await viewProblem(params, token);
      else if (route === "compare") await viewCompare(params, token);
      else if (route === "curves") await viewCurves(params, token);
      else await viewIndex(params, token);
    } catch (err) { fail(err, token); }
  }

  // ---- index ----------------------------------------------------------------------------------
  const INDEX_COLS = [
    ["pick", ""], ["name", "run"], ["task", "task / split"], ["model", "model"], ["pool", "n×m"],
    ["reward_mode", "reward mode"], ["status", "status"], ["best1", "best@1"], ["bestK", "best@K"],
    ["passK", "pass@K"], ["diversity", "diversity"], ["solved", "solved"], ["created", "date"],
  ];
  const TITLES = { bestK: "best@k at the largest k the run records (K shown in each cell); mean ± s.e. over problems",
                   passK: "pass@k at that same largest k", best1: "best@1: mean ± s.e. over problems",
                   diversity: "mean pairwise L1 distance of a problem's reward vectors, mean ± s.e. over problems",
                   solved: "evolve runs: fraction of problems solved", pick: "choose runs to overlay their curves" };
  function headline(r) {
    const m = r.metrics || {};
    // a search's candidates depend on each other: best@k and pass@k over them estimate nothing
    if (r.kind === "evolve") return { best1: null, bestK: null, K: null, passK: null, diversity: m.diversity, solved: m.solved };
    const ks = Object.keys(m).filter((k) => k.startsWith("best@")).map((k) => +k.slice(5)).sort((a, b) => a - b);
    const K = ks.length ? ks[ks.length - 1] : null;
    return { best1: m["best@1"], bestK: K !== null ? m[`best@${K}`] : null, K,
             passK: K !== null ? m[`pass@${K}`] : null, diversity: m.diversity, solved: m.solved };
  }
  function sortValue(r, key) {
    const h = headline(r);
    if (key in h && key !== "K") return h[key] ? h[key].mean : null;
    if (key === "task") return `${r.task} ${r.split}`;
    return r[key];
  }
  function curvesHref(ids) { return "#/curves?" + ids.map((id) => `id=${enc(id)}`).join("&"); }
  async function viewIndex(params, token) {
    setCrumbs(el("span", null, "runs"));
    if (params.has("q")) indexState.q = params.get("q");
    const data = await api("runs");
    if (token !== renderToken) return;
    indexState.rows = data.runs;
    // a metric every listed run's task makes 0 by construction (Maze: pass@k) gets no column; one note says why
    indexState.noPass = data.runs.length > 0 && data.runs.every((r) => r.dropped);
    const cols = INDEX_COLS.filter(([key]) => key !== "passK" || !indexState.noPass);
    const droppedNotes = [...new Set(data.runs.map((r) => r.dropped).filter(Boolean))];
    const known = new Set(data.runs.map((r) => r.id));
    for (const id of [...indexState.picked]) if (!known.has(id)) indexState.picked.delete(id);
    const input = el("input", { id: "filter", type: "search", placeholder: "filter: words that must all appear (task, model, status, …)",
                                value: indexState.q, "aria-label": "filter runs" });
    const count = el("span", { id: "count", cls: "muted" });
    const overlay = el("button", { type: "button", id: "overlay", title: "best@k, pass@k and diversity (evolve runs: solved and best score " +
                                   "against candidates) of the chosen runs in one figure each" }, "overlay curves");
    const pickedNote = el("span", { id: "picked", cls: "muted" });
    const drawPicked = () => {
      const n = indexState.picked.size;
      overlay.disabled = n === 0;
      pickedNote.textContent = n ? `${n} chosen` : "tick runs to overlay their curves";
    };
    overlay.addEventListener("click", () => { location.hash = curvesHref([...indexState.picked]); });
    const tbody = el("tbody");
    const headRow = el("tr");
    const table = el("table", { id: "runs", cls: "grid" }, el("thead", null, headRow), tbody);
    function drawHead() {
      headRow.replaceChildren(...cols.map(([key, label]) => key === "pick" ? el("th", { title: TITLES.pick }, "") : el("th", {
        cls: "sortable" + (indexState.sort === key ? (indexState.desc ? " desc" : " asc") : ""), data: { key },
        on: { click: () => { indexState.desc = indexState.sort === key ? !indexState.desc : key !== "name";
                             indexState.sort = key; drawHead(); drawBody(); } },
        title: TITLES[key] || null,
      }, label)));
    }
    function drawBody() {
      const words = indexState.q.toLowerCase().split(/\s+/).filter(Boolean);
      let rows = indexState.rows.filter((r) => {
        const hay = [r.name, r.id, r.kind, r.task, r.split, r.model, r.pool, r.reward_mode, r.created, r.status, r.note || "", r.group ? `${r.group.name} ${r.group.label}` : ""]
          .join(" ").toLowerCase();
        return words.every((w) => hay.includes(w));
      });
      const key = indexState.sort;
      rows = rows.slice().sort((a, b) => {
        const x = sortValue(a, key), y = sortValue(b, key);
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return indexState.desc ? -c : c;
      });
      tbody.replaceChildren(...rows.map((r) => indexRow(r, drawPicked)));
      count.textContent = `${rows.length} of ${indexState.rows.length} runs`;
    }
    input.addEventListener("input", () => {
      indexState.q = input.value;
      drawBody();
      remember("", { q: input.value });
    });
    drawHead();
    drawBody();
    drawPicked();
    const empty = data.runs.length ? null : el("p", { cls: "warn" },
      `No run folders (folders with config.json) under ${data.roots.join(", ")} yet. Reload when a run has started.`);
    app.replaceChildren(...[el("h1", null, "Runs"),
                            el("p", { cls: "muted" }, EXPORT ? "exported pages (vpo view --export): search and live updates need vpo view"
                                                             : `under ${data.roots.join(", ")}`),
                            el("div", { cls: "controls" }, input, count, overlay, pickedNote), empty,
                            el("div", { cls: "scroll" }, table),
                            ...droppedNotes.map((n) => el("p", { cls: "muted dropped", id: "dropped-note" }, n))].filter(Boolean));
    setState("ready", "index");
  }
  function indexRow(r, onPick) {
    const h = headline(r);
    const g = r.group;  // a seed of a group: the group's seeds as read, "partial" when one is missing or unfinished
    const status = el("td", { cls: "status" }, el("span", { cls: `badge ${r.status}` }, r.status),
                      r.note ? el("div", { cls: "note one-line", title: r.note }, r.short_note || r.note) : null,
                      g ? el("div", { cls: "note one-line group", title: g.label },
                             g.partial ? el("span", { cls: "badge partial" }, g.refused ? "group refused" : "partial group") : null,
                             " ", g.listed ? link("run", { id: g.id }, g.name) : g.name, `: ${g.label}`) : null);
    const pick = el("input", { type: "checkbox", cls: "pick", "aria-label": `choose ${r.name || r.id}`,
                               checked: indexState.picked.has(r.id) });
    pick.addEventListener("change", () => { if (pick.checked) indexState.picked.add(r.id); else indexState.picked.delete(r.id); onPick(); });
    const cell = (col, ...kids) => el("td", { cls: "num", data: { col } }, ...kids);
    return el("tr", { data: { run: r.id, status: r.status } },
      el("td", { cls: "pick" }, pick),
      el("td", { title: r.path, cls: "name" }, swatch(r.colour, r.dash), link("run", { id: r.id }, r.name || r.id),
         r.kind === "evolve" ? el("span", { cls: "badge kind" }, "evolve") : null,
         r.kind === "seeds" ? el("span", { cls: "badge kind", title: "a seed group: its seeds' metrics combined" }, `${(r.seeds || []).length} ${r.seed_axis === "training" ? "training seeds" : "seeds"}`) : null),
      el("td", { cls: "task" }, r.task, el("span", { cls: "split muted" }, r.split)), el("td", { cls: "model", title: r.model_spec || null }, breakable(r.model)),
      el("td", null, r.pool), el("td", { cls: "mode" }, breakable(r.reward_mode)), status,
      cell("best1", estCell(h.best1)),
      cell("bestK", h.bestK ? [estCell(h.bestK), el("span", { cls: "k" }, `k=${h.K}`)] : "–"),
      indexState.noPass ? null : cell("passK", estCell(h.passK)), cell("diversity", estCell(h.diversity)), cell("solved", estCell(h.solved)),
      el("td", { cls: "date", title: r.created || null }, (r.created || "").slice(0, 10)));
  }

  // ---- curves across runs -----------------------------------------------------------------------
  const EVAL_PANELS = [["best@k", "best@k", "k (candidates drawn)"], ["pass@k", "pass@k", "k (candidates drawn)"]];
  const EVOLVE_PANELS = [["solved_vs_candidates", "solved (fraction of problems)", "candidates evaluated"],
                         ["best_vs_candidates", "best score so far", "candidates evaluated"]];
  function bandOf(s) {
    return s.x.map((x, i) => [x, s.mean[i] - (s.stderr && s.stderr[i] !== null ? s.stderr[i] : 0),
                                 s.mean[i] + (s.stderr && s.stderr[i] !== null ? s.stderr[i] : 0)]);
  }
  async function viewCurves(params, token) {
    const ids = params.getAll("id");
    setCrumbs(link("", {}, "runs"), el("span", null, "curves"));
    if (!ids.length) throw new Error("no runs chosen: tick runs in the index, then “overlay curves”");
    const runs = await Promise.all(ids.map((id) => api("curve", { id })));
    if (token !== renderToken) return;
    const legend = el("ul", { cls: "legend-runs", id: "curves-legend" }, runs.map((r, i) => el("li", { data: { run: r.id } },
      swatch(r.colour, r.dash), ` ${i + 1}. `, link("run", { id: r.id }, r.name), ` (${r.kind}`, r.partial ? el("span", { cls: "badge partial" }, "partial") : null, ")")));
    const figs = [];
    const panel = (key, ylabel, xlabel, logx) => {
      const line = (r, s, extra) => ({ pts: s.x.map((x, i) => [x, s.mean[i]]), band: bandOf(s), colour: r.colour,
                                       dash: r.dash, label: r.name, ...extra });
      // an evolve run's plain-sampling baseline: the same colour, dotted, thinner, its own band
      const lines = runs.flatMap((r) => [r.series[key] ? line(r, r.series[key]) : null,
        r.series[`baseline_${key}`] ? line(r, r.series[`baseline_${key}`], { dash: "2 3", cls: "baseline", label: `${r.name}: plain sampling` }) : null])
        .filter(Boolean);
      if (!lines.length) return;
      const base = lines.some((l) => l.cls === "baseline");
      figs.push(el("figure", { data: { panel: key } }, chart({ lines, xlabel, ylabel, logx, id: `curve-${key.replace(/[^a-z]/gi, "-")}` }),
                   el("figcaption", null, `${ylabel}, mean over problems; band: ± one standard error` +
                      (base ? "; dotted: plain sampling of the same model at the same budget (the run's baseline/)" : ""))));
    };
    for (const [key, y, x] of EVAL_PANELS) panel(key, y, x, true);
    const div = runs.filter((r) => r.diversity && r.kind !== "evolve");
    if (div.length) figs.push(el("figure", { data: { panel: "diversity" } },
      whiskers(div.map((r) => ({ mean: r.diversity.mean, stderr: r.diversity.stderr, colour: r.colour, label: r.name })),
               { xlabel: "run (numbered as in the legend)", ylabel: "diversity", id: "curve-diversity" }),
      el("figcaption", null, "diversity (mean pairwise L1 of reward vectors), mean ± one standard error")));
    for (const [key, y, x] of EVOLVE_PANELS) panel(key, y, x, false);
    app.replaceChildren(...[el("h1", null, `Curves of ${runs.length} run${runs.length === 1 ? "" : "s"}`), legend,
      runs.some((r) => r.partial) ? el("p", { cls: "warn" }, "partial runs: their curves are over the rows stored so far") : null,
      ...[...new Set(runs.map((r) => r.dropped).filter(Boolean))].map((n) => el("p", { cls: "muted dropped", id: "dropped-note" }, n)),
      el("div", { cls: "row figs" }, figs)].filter(Boolean));
    setState("ready", "curves");
  }

  // ---- live runs --------------------------------------------------------------------------------
  // A run still being written (status partial) is asked for its progress every LIVE_MS; when its
  // rows changed, onChange() redraws what the page shows. Stops when the page changes or the run
  // is complete. The bar says how far it is and that its metrics are over the rows so far.
  function live(id, token, box, onChange) {
    if (EXPORT) return;
    let version = null;
    const tick = async () => {
      if (token !== renderToken) return;
      let p;
      try { p = await api("progress", { id }); } catch (err) { box.replaceChildren(el("span", { cls: "error" }, err.message)); return; }
      if (token !== renderToken) return;
      drawProgress(box, p);
      if (version !== null && p.version !== version) { await onChange(p); }
      version = p.version;
      if (p.status === "partial") setTimeout(tick, LIVE_MS);
      else box.dataset.live = "done";
    };
    tick();
  }
  function drawProgress(box, p) {
    const frac = p.expected_rows ? Math.min(1, p.rows / p.expected_rows) : null;
    const ago = p.last_write_s === null || p.last_write_s === undefined ? "" :
      ` · last row ${p.last_write_s < 90 ? `${Math.round(p.last_write_s)} s` : `${Math.round(p.last_write_s / 60)} min`} ago`;
    const was = box.dataset.live;
    box.dataset.rows = p.rows;
    box.dataset.status = p.status;
    box.dataset.live = p.status === "partial" ? "on" : "done";
    if (p.status !== "partial") {  // a run that was live and is now complete says so; a complete one shows nothing
      if (was === "on") box.replaceChildren(el("span", { cls: `badge ${p.status}` }, p.status), " ", el("span", { cls: "muted" }, `${p.rows} rows`));
      return;
    }
    box.replaceChildren(el("span", { cls: "badge partial" }, "live"), " ",
      frac === null ? null : bar(frac), `${p.rows}${p.expected_rows ? ` of ${p.expected_rows}` : ""} rows stored` +
      (frac === null ? "" : ` (${Math.round(100 * frac)}%)`) + ago,
      el("span", { cls: "muted" }, " · metrics are partial: over the rows stored so far; the page follows new rows"));
  }

  // ---- run --------------------------------------------------------------------------------------
  async function viewRun(params, token) {
    const id = params.get("id") || "";
    const page = +(params.get("page") || 0), sort = params.get("sort") || "", desc = params.get("desc") || "";
    const q = params.get("q") || "", sq = params.get("search") || "";
    const data = await api("run", { id, page, per: 100, sort, desc, q });
    if (token !== renderToken) return;
    const run = data.run;
    setCrumbs(link("", {}, "runs"), el("span", null, run.name || id));
    const body = el("div", { id: "run-body" });
    const liveBox = el("div", { id: "live", cls: "live" });
    const searchBox = el("section", { id: "search" });
    const nav = (over) => go("run", { id, page, sort, desc, q, search: sq, ...over });
    const draw = (d) => body.replaceChildren(...runBody(d, { id, page, sort, desc, q, nav }));
    draw(data);
    app.replaceChildren(...[el("h1", null, swatch(run.colour, run.dash), run.name || id), el("p", { cls: "muted path" }, id),
                            run.status === "partial" ? liveBox : null, searchBox, body].filter(Boolean));
    searchPanel(searchBox, id, sq, run, token);
    if (run.status === "partial") {
      live(id, token, liveBox, async () => {
        const d = await api("run", { id, page, per: 100, sort, desc, q });
        if (token === renderToken) { draw(d); body.dataset.version = String(+(body.dataset.version || 0) + 1); }
      });
    }
    setState("ready", "run");
  }

  const COL_TITLES = { candidates: "candidates (chains × m, failed generations left out)", mean: "mean score of the candidates",
                       best: "best score of the candidates", pass_rate: "fraction of candidates that pass" };
  function runBody(data, st) {
    const { id, page, sort, desc, q, nav } = st;
    const run = data.run;
    const partial = run.status !== "complete";
    const meta = el("dl", { cls: "meta" }, ...[
      ["kind", run.kind], ["task", run.task], ["split", run.split], ["model", run.model], ["pool n×m", run.pool],
      ["reward mode", run.reward_mode], ["date", run.created], ["status", run.status + (run.note ? ` (${run.note})` : "")],
      ["problems", run.n_problems], ["candidates", run.n_candidates], ["chain errors", run.n_errors],
      ["sampling", run.resolved_sampling ? Object.entries(run.resolved_sampling).map(([k, v]) => `${k}=${v}`).join(", ") : null],
      ["command", Array.isArray(run.command) ? run.command.join(" ") : run.command], ["git", run.git],
    ].filter(([, v]) => v !== null && v !== undefined && v !== "").map(([k, v]) => [el("dt", null, k), el("dd", null, String(v))]));
    const warns = (run.warnings || []).map((w) => el("p", { cls: "warn" }, w));
    if (run.damaged_lines > (run.warnings || []).length) warns.push(el("p", { cls: "warn" }, `${run.damaged_lines} damaged lines in all`));
    // an evolve run reads as a search (solved and best against candidates), not as best@k / pass@k
    const metrics = Object.entries(run.metrics || {}).filter(([k]) => run.kind !== "evolve" || !/^(best|pass)[@^]/.test(k));
    const mtable = metrics.length ? el("table", { cls: "grid compact", id: "run-metrics", data: { partial: partial ? "1" : "0" } },
      partial ? el("caption", null, el("span", { cls: "badge partial" }, "partial"), " over the rows stored so far") : null,
      el("thead", null, el("tr", null, el("th", null, "metric"), el("th", null, "mean ± s.e. over problems"))),
      el("tbody", null, metrics.map(([k, v]) => el("tr", { data: { metric: k } }, el("td", null, k), el("td", { cls: "num" }, est(v)))))) : null;
    const comps = Object.entries(run.components || {});
    const ctable = comps.length ? el("table", { cls: "grid compact" },
      el("thead", null, el("tr", null, el("th", null, "component"), el("th", null, "mean reward"))),
      el("tbody", null, comps.map(([k, v]) => el("tr", null, el("td", null, k), el("td", { cls: "num" }, num(v)))))) : null;
    let evo = null;
    const sv = run.evolve && run.evolve.solved_vs_candidates, bsv = run.evolve && run.evolve.baseline_solved_vs_candidates;
    if (sv && sv.x) {  // the search against plain sampling of the same model, at every candidate budget
      const pts = (s) => s.x.map((x, i) => [x, s.mean[i]]);
      evo = el("figure", { id: "run-evolve" }, chart({ lines: [{ pts: pts(sv), band: bandOf(sv), colour: run.colour, label: "evolve" },
                                                              bsv && bsv.x ? { pts: pts(bsv), band: bandOf(bsv), colour: run.colour, dash: "2 3",
                                                                               cls: "baseline", label: "plain sampling" } : null].filter(Boolean),
                                                      xlabel: "candidates evaluated", ylabel: "solved (fraction of problems)" }),
               el("figcaption", null, `solved against candidates, mean over problems (band ± one standard error); dotted: plain ` +
                  `sampling of the same model at the same budget (baseline/); solved: ${est(run.evolve.solved)}` +
                  (run.evolve.solved_definition ? ` (${run.evolve.solved_definition})` : "")));
    } else if (run.evolve && run.evolve.best_vs_iteration && run.evolve.best_vs_iteration.x) {
      const b = run.evolve.best_vs_iteration;
      evo = el("figure", null, chart({ lines: [{ pts: b.x.map((x, i) => [x, b.mean[i]]), cls: "line-best" }],
                                       xlabel: "iteration", ylabel: "best score so far (mean over problems)" }),
               el("figcaption", null, `best score so far by iteration, mean over problems; solved: ${est(run.evolve.solved)}` +
                  (run.evolve.solved_definition ? ` (${run.evolve.solved_definition})` : "")));
    }
    // at most five best@k columns (the first, the last, evenly between), so the table fits from
    // 1024 px; an evolve run has none: best@k over a search's dependent candidates estimates nothing
    const allKs = run.ks || [1];
    const ks = allKs.length <= 5 ? allKs : [...new Set([0, 1, 2, 3, 4].map((i) => allKs[Math.round((i * (allKs.length - 1)) / 4)]))];
    const cols = [["problem_id", "problem"], ["chains", "chains"], ["candidates", "cands"], ["errors", "errors"],
                  ["mean", "mean"], ["best", "best"], ...(run.dropped ? [] : [["pass_rate", "pass rate"]])];
    if (run.kind === "evolve") cols.push(["iterations", "iterations"], ["solved", "solved"]);
    else cols.push(...ks.map((k) => [`best@${k}`, `best@${k}`]),  // no pass columns where the task makes them 0 (run.dropped)
                   ...(run.dropped ? [] : [...new Set([ks[0], ks[ks.length - 1]])].map((k) => [`pass@${k}`, `pass@${k}`])));
    cols.push(["diversity", "diversity"]);
    const head = el("tr", null, cols.map(([key, label]) => el("th", EXPORT ? { title: COL_TITLES[key] || null } : {
      title: COL_TITLES[key] || null,
      cls: "sortable" + (sort === key ? (desc ? " desc" : " asc") : ""), data: { key },
      on: { click: () => nav({ sort: key, desc: sort === key ? (desc ? "" : "1") : (key === "problem_id" ? "" : "1"), page: 0 }) },
    }, label)));
    const body = el("tbody", null, data.problems.map((p) => el("tr", { data: { problem: p.problem_id } },
      cols.map(([key]) => key === "problem_id"
        ? el("td", null, link("problem", { run: id, pid: p.problem_id }, p.problem_id))
        : el("td", { cls: "num" }, COUNTS.has(key) ? String(p[key] ?? "–") : num(p[key]))))));
    const filter = EXPORT ? null : el("input", { id: "problem-filter", type: "search", placeholder: "problem id contains…", value: q,
                                                 "aria-label": "filter problems" });
    if (filter) filter.addEventListener("change", () => nav({ q: filter.value, page: 0 }));
    // metrics the task makes 0 by construction are not in the table nor the problem columns: say which and why
    const dropped = run.dropped ? el("p", { cls: "muted dropped", id: "dropped-note" }, run.dropped) : null;
    if (run.kind === "seeds") {  // a seed group: its seeds are the runs that hold the problems
      const noun = run.seed_axis === "training" ? "training seed" : "seed";  // one policy per training seed
      return [meta, el("div", { cls: "row" }, mtable, ctable), dropped,
        el("p", { cls: "muted" }, `mean over ${noun}s; ± the within-run standard error, s± the one between ${noun}s`),
        el("h2", null, `${noun === "seed" ? "Seeds" : "Training seeds"} (${(run.seed_list || []).length})`),
        el("ul", { id: "seed-runs" }, (run.seed_list || []).map((s) => el("li", null, link("run", { id: s.id }, `${noun} ${s.seed}: ${s.name}`),
          run.seed_axis === "training" && s.model ? el("span", { cls: "muted" }, ` (${s.model})`) : null)))];
    }
    return [meta, ...warns, el("div", { cls: "row" }, mtable, ctable, evo), dropped,
      el("h2", null, `Problems (${data.total})`),
      el("div", { cls: "controls" }, filter, pager(data.page, data.per, data.total, (p) => nav({ page: p }))),
      el("div", { cls: "scroll" }, el("table", { id: "problems", cls: "grid" }, el("thead", null, head), body))];
  }

  // ---- search inside a run's completions (server side: reports/view/search.py) -------------------
  const SEARCH_HELP = "words or \"a phrase\" (text, answer, error, details); text: answer: error: verdict: problem:; " +
                      "score>0.5, gold>=1 (a reward component); is:passed is:failed is:error";
  function searchPanel(box, id, initial, run, token) {
    if (EXPORT) {
      box.replaceChildren(el("p", { cls: "muted" }, "search inside completions needs the server: vpo view " + (run.path || "")));
      return;
    }
    const input = el("input", { id: "search-q", type: "search", value: initial, placeholder: "search completions: " + SEARCH_HELP,
                                "aria-label": "search completions", title: SEARCH_HELP });
    const out = el("div", { id: "search-results" });
    const state = { q: initial, page: 0 };
    const runSearch = async () => {
      remember("run", { ...Object.fromEntries(parseHash().params), search: state.q });
      if (!state.q.trim()) { out.replaceChildren(); out.dataset.state = "empty"; return; }
      out.dataset.state = "loading";
      const d = await api("search", { run: id, q: state.q, page: state.page });
      if (token !== renderToken || d.q !== state.q) return;
      out.replaceChildren(...searchResults(d, id, (p) => { state.page = p; runSearch(); }));
      out.dataset.state = d.query_error ? "error" : "ready";
      out.dataset.q = d.q;
    };
    input.addEventListener("change", () => { state.q = input.value; state.page = 0; runSearch().catch((e) => out.replaceChildren(el("div", { cls: "error" }, e.message))); });
    box.replaceChildren(el("h2", null, "Search completions"), el("div", { cls: "controls" }, input), out);
    if (initial) runSearch().catch((e) => out.replaceChildren(el("div", { cls: "error" }, e.message)));
  }
  function snippetEl(sn) {
    if (!sn) return null;
    return el("span", { cls: "snippet" }, el("span", { cls: "muted" }, `${sn.field}: `), sn.before, el("mark", null, sn.match), sn.after);
  }
  function searchResults(d, run, onPage) {
    if (d.query_error) return [el("p", { cls: "error", id: "search-error" }, d.query_error)];
    const head = el("p", { id: "search-count" }, `${d.total_chains} chain${d.total_chains === 1 ? "" : "s"} ` +
                    `(${d.total_candidates} candidate${d.total_candidates === 1 ? "" : "s"}) of ${d.searched_chains} match`);
    const rows = d.hits.map((h) => el("tr", { cls: "hit", data: { problem: h.problem_id, chain: h.chain_index } },
      el("td", null, link("problem", { run, pid: h.problem_id }, h.problem_id)),
      el("td", { cls: "num" }, String(h.chain_index)),
      el("td", null, h.candidates.length ? h.candidates.map((c) => el("div", { cls: "hit-cand" },
        el("span", { cls: "badge " + (c.passed ? "pass" : "fail") }, `#${c.index} ${num(c.scalar)}`), " ", snippetEl(c.snippet)))
        : [h.error ? el("span", { cls: "error" }, h.error) : null, snippetEl(h.snippet)])));
    return [head, d.hits.length ? el("table", { cls: "grid compact hits", id: "search-hits" },
      el("thead", null, el("tr", null, el("th", null, "problem"), el("th", null, "chain"), el("th", null, "matching candidates (score, where)"))),
      el("tbody", null, rows)) : null,
      d.total_chains > d.per ? pager(d.page, d.per, d.total_chains, onPage) : null].filter(Boolean);
  }

  function pager(page, per, total, onPage) {
    const pages = Math.max(1, Math.ceil(total / per));
    return el("span", { cls: "pager" },
      el("button", { type: "button", disabled: page <= 0, cls: "prev", on: { click: () => onPage(page - 1) } }, "‹ prev"),
      el("span", { cls: "muted" }, ` page ${page + 1} of ${pages} `),
      el("button", { type: "button", disabled: page + 1 >= pages, cls: "next", on: { click: () => onPage(page + 1) } }, "next ›"));
  }

  // ---- problem ----------------------------------------------------------------------------------
  async function viewProblem(params, token) {
    const run = params.get("run") || "", pid = params.get("pid") || "";
    setCrumbs(link("", {}, "runs"), link("run", { id: run }, run), el("span", null, pid));
    const others = api("runs-with", { pid }).catch(() => ({ runs: [] }));
    const head = el("div");
    const liveBox = el("div", { id: "live", cls: "live" });
    const lineageBox = el("section", { id: "lineage" });
    const chainsBox = el("section", { id: "chains" });
    const problemBox = el("div", { id: "problem-box" });
    const sideBox = el("aside", { id: "problem-side" });
    const layout = el("div", { id: "problem-layout" }, chainsBox, sideBox);
    app.replaceChildren(el("h1", null, pid), head, liveBox, problemBox, lineageBox, layout);
    try {  // the problem as its task shows it; a problem that cannot be rebuilt here is one line
      const pv = problemView(await api("problem-info", { run, pid }));
      if (token !== renderToken) return;
      problemBox.replaceChildren(pv.top);
      if (pv.side) { sideBox.append(pv.side); layout.classList.add("with-side"); }
      routeView = pv.showRoute;
    } catch (err) { problemBox.replaceChildren(el("p", { cls: "warn" }, `problem not shown: ${err.message}`)); }
    const state = { page: +(params.get("page") || 0), sort: params.get("sort") || "chain", show: params.get("show") || "all" };
    state.onChange = () => remember("problem", { run, pid, page: state.page || "", sort: state.sort === "chain" ? "" : state.sort,
                                                 show: state.show === "all" ? "" : state.show });
    const first = await loadChains(run, pid, state, chainsBox, token, true);
    if (token !== renderToken || !first) return;
    const st = first.stats || {};
    setCrumbs(link("", {}, "runs"), link("run", { id: run }, first.run.name), el("span", null, pid));
    const cmp = el("select", { id: "compare-with", "aria-label": "compare with another run" },
                   el("option", { value: "" }, "side by side with…"));
    cmp.addEventListener("change", () => { if (cmp.value) go("compare", { a: run, b: cmp.value, pid }); });
    head.replaceChildren(
      el("p", { cls: "muted" }, `${first.run.task} · ${first.run.model} · pool ${first.run.pool} · ${st.chains ?? 0} chains, ` +
         `${st.candidates ?? 0} candidates, ${st.errors ?? 0} errors · best ${num(st.best)} · mean ${num(st.mean)} · ` +
         `pass rate ${num(st.pass_rate)} · diversity ${num(st.diversity)}`),
      el("div", { cls: "controls" }, cmp));
    const o = await others;
    if (token !== renderToken) return;
    for (const r of o.runs) if (r.id !== run) cmp.append(el("option", { value: r.id }, `${r.id} (${r.model})`));
    if (first.run.kind === "evolve") {
      try { await loadLineage(run, pid, lineageBox, token); } catch (err) { lineageBox.replaceChildren(el("p", { cls: "warn" }, String(err.message))); }
    }
    if (token !== renderToken) return;
    setState("ready", "problem");
    // a run still being written: new chains of this problem appear as they land
    live(run, token, liveBox, async () => {
      await loadChains(run, pid, state, chainsBox, token, true);
      if (token === renderToken) chainsBox.dataset.version = String(+(chainsBox.dataset.version || 0) + 1);
    });
  }

  async function loadChains(run, pid, state, box, token, withControls) {
    const data = await api("problem", { run, pid, page: state.page, per: 50, sort: state.sort, show: state.show });
    if (token !== renderToken) return null;
    const redo = async () => {
      if (state.onChange) state.onChange();
      box.dataset.state = "loading";
      try { await loadChains(run, pid, state, box, token, withControls); } catch (err) { box.replaceChildren(el("div", { cls: "error" }, err.message)); }
    };
    const controls = [];
    if (withControls) {
      // an export holds every chain in chain order and best score first (the orders it wrote)
      const show = EXPORT ? null : el("select", { cls: "show", "aria-label": "which chains" },
        ...["all", "passed", "failed", "errors"].map((v) => el("option", { value: v, selected: v === state.show }, v)));
      if (show) show.addEventListener("change", () => { state.show = show.value; state.page = 0; redo(); });
      const sort = el("select", { cls: "sort", "aria-label": "order" },
        ...[["chain", "by chain"], ["score", "best score first"], ["iteration", "by iteration"]]
          .filter(([v]) => v !== "iteration" || (data.run.kind === "evolve" && !EXPORT))
          .map(([v, t]) => el("option", { value: v, selected: v === state.sort }, t)));
      sort.addEventListener("change", () => { state.sort = sort.value; state.page = 0; redo(); });
      controls.push(show, sort);
    }
    const perChains = data.per_chains;
    box.replaceChildren(
      el("h2", null, `Chains (${data.total_chains})`),
      el("div", { cls: "controls" }, ...controls,
         pager(data.page, perChains, data.total_chains, (p) => { state.page = p; redo(); })),
      ...data.chains.map((c) => chainCard(c)));
    box.dataset.state = "ready";
    return data;
  }

  function chainCard(c) {
    const ev = c.evolve;
    const bits = [`chain ${c.chain_index}`];
    if (ev) bits.push(`iteration ${ev.iteration}`, `island ${ev.island}`, `program ${shortId(ev.program_id)}`,
                      `parent ${ev.parent_id ? shortId(ev.parent_id) : "none (seed)"}`);
    if (c.seed !== null && c.seed !== undefined) bits.push(`seed ${c.seed}`);
    if (c.completion_tokens !== null && c.completion_tokens !== undefined) bits.push(`${c.completion_tokens} tokens`);
    if (c.finish_reason) bits.push(`finish ${c.finish_reason}`);
    if (c.latency_s !== null && c.latency_s !== undefined) bits.push(`${num(c.latency_s, 2)} s`);
    if (c.n_unique) bits.push(`${c.n_unique} distinct answers`);
    if (c.line) bits.push(`samples.jsonl line ${c.line}`);
    const text = c.text === null || c.text === undefined || c.text === ""
      ? el("p", { cls: "muted" }, ev && c.text !== "" ? "raw text: stored once, on the row of answer 0 of this LLM call" : "no raw text stored")
      : el("details", { cls: "raw" }, el("summary", null, `raw text (${c.text.length} characters)`), el("pre", { cls: "text" }, c.text));
    const other = Object.keys(c.other || {}).length
      ? el("details", { cls: "other" }, el("summary", null, "other fields"), el("pre", null, JSON.stringify(c.other, null, 2))) : null;
    return el("article", { cls: "chain" + (c.error ? " failed" : ""), data: { chain: c.chain_index } },
      el("header", null, bits.join(" · ")),
      c.error ? el("p", { cls: "error" }, `generation failed: ${c.error}`) : null,
      text, c.candidates.length ? candidatesTable(c.candidates, c.chain_index) : null, other);
  }

  function routeButton(k, chain) {  // a Maze candidate: draw its route on the grid of the page
    if (!routeView || !k.route) return null;
    const label = `chain ${chain} · answer ${k.index}`;
    return el("button", { type: "button", cls: "show-route", title: "draw this route on the maze",
                          data: { chain, answer: k.index },
                          on: { click: () => {
                            for (const b of document.querySelectorAll("button.show-route.on")) b.classList.remove("on");
                            routeView(k.route, label);
                            document.querySelector(`button.show-route[data-chain="${chain}"][data-answer="${k.index}"]`)?.classList.add("on");
                          } } }, "route");
  }

  function candidatesTable(cands, chain) {
    // column widths are in app.css (c-* classes), so a narrow column (side by side) can change them
    return el("table", { cls: "grid cands" }, el("colgroup", null,
      ["idx", "answer", "reward", "scalar", "pass", "details"].map((c) => el("col", { cls: `c-${c}` }))),
      el("thead", null, el("tr", null, ...["#", "parsed answer", "reward vector", "scalar", "pass", "details"].map((h) => el("th", null, h)))),
      el("tbody", null, cands.map((k) => el("tr", { cls: "cand", data: { answer: k.index } },
        el("td", null, String(k.index), routeButton(k, chain)),
        el("td", null, k.answer === null || k.answer === undefined ? el("span", { cls: "muted" }, "(no answer parsed)")
                                                                    : el("pre", { cls: "answer" }, k.answer)),
        el("td", null, el("ul", { cls: "reward" }, k.reward.map(([n, v]) => el("li", { data: { component: n } },
          bar(v), el("span", { cls: "comp" }, n), " ", el("span", { cls: "val" }, num(v)))))),
        el("td", { cls: "num scalar" }, num(k.scalar)),
        el("td", null, el("span", { cls: "badge " + (k.passed ? "pass" : "fail") }, k.passed ? "pass" : "fail")),
        el("td", null, details(k.details))))));
  }

  function bar(v) {  // the value's share of [0, 1], drawn through the CSSOM (no inline style attribute)
    const fill = el("span", { cls: "fill" });
    fill.style.width = `${Math.round(100 * Math.max(0, Math.min(1, Number(v) || 0)))}%`;
    return el("span", { cls: "bar", "aria-hidden": "true" }, fill);
  }

  function details(d) {
    if (!d) return el("span", { cls: "muted" }, "–");
    const parts = [];
    if (Array.isArray(d.verdicts)) {
      parts.push(el("div", { cls: "verdicts" }, d.verdicts.map((v, i) => el("span", {
        cls: "verdict " + (v === "pass" ? "pass" : "fail"),
        title: `test ${i}` + (d.times && d.times[i] !== undefined ? `: ${num(d.times[i], 3)} s` : ""),
      }, `${i}:${v}`))));
    }
    if (d.reason) parts.push(el("div", { cls: "note" }, d.reason));
    if (d.notes && d.notes.length) parts.push(el("div", { cls: "note" }, "sandbox notes: ", d.notes.join("; ")));
    if (d.errors && d.errors.length) parts.push(el("details", null, el("summary", null, `errors (${d.errors.length})`),
                                                    el("pre", { cls: "text" }, d.errors.join("\n---\n"))));
    const rest = Object.fromEntries(Object.entries(d).filter(([k]) => !["verdicts", "reason", "notes", "errors"].includes(k)));
    if (Object.keys(rest).length) parts.push(el("details", null, el("summary", null, "run record"),
                                                  el("pre", null, JSON.stringify(rest, null, 2))));
    return el("div", { cls: "details" }, parts);
  }

  // ---- lineage (evolve runs) --------------------------------------------------------------------
  const ISLANDS = 8;
  const COUNTS = new Set(["chains", "candidates", "errors", "iterations"]);
  async function loadLineage(run, pid, box, token) {
    const data = await api("lineage", { run, pid });
    if (token !== renderToken) return;
    const nodes = data.nodes, byId = new Map(nodes.map((n) => [n.id, n]));
    const kids = new Map();
    const roots = [];
    for (const n of nodes) {
      if (n.parent && byId.has(n.parent)) { if (!kids.has(n.parent)) kids.set(n.parent, []); kids.get(n.parent).push(n); }
      else roots.push(n);
    }
    const panel = el("div", { id: "node-panel", cls: "panel" }, el("p", { cls: "muted" }, "click a node to see its diff against its parent"));
    const curve = chart({
      lines: [{ pts: data.best_so_far.map((p) => [p.iteration, p.best]), cls: "line-best" }],
      dots: thin(nodes.filter((n) => n.score !== null), 2000).map((n) => ({ x: n.iteration, y: n.score, cls: `island-${(n.island ?? 0) % ISLANDS}`,
                                                                 title: `${shortId(n.id)} island ${n.island} score ${num(n.score)}` })),
      hline: data.threshold, xlabel: "iteration", ylabel: "score",
    });
    const tree = el("ul", { cls: "tree", id: "tree" });
    const liOf = new Map();
    function nodeItem(n) {
      const ch = kids.get(n.id) || [];
      const sub = el("ul", { hidden: true });
      const tog = el("button", { type: "button", cls: "toggle", disabled: !ch.length, "aria-label": "children" },
                     ch.length ? `▸ ${ch.length}` : "·");
      let drawn = false;
      const open = (yes) => {
        if (yes && !drawn) { sub.append(...ch.map(nodeItem)); drawn = true; }
        sub.hidden = !yes;
        tog.textContent = ch.length ? `${yes ? "▾" : "▸"} ${ch.length}` : "·";
      };
      tog.addEventListener("click", () => open(sub.hidden));
      const delta = n.delta === null || n.delta === undefined ? "" : ` (${n.delta >= 0 ? "+" : ""}${num(n.delta)})`;
      const label = el("a", { href: "#", cls: `node island-${(n.island ?? 0) % ISLANDS}` + (n.passed ? " passed" : ""),
                              data: { node: n.id },
                              on: { click: (e) => { e.preventDefault(); selectNode(n); } } },
        `it ${n.iteration} · island ${n.island} · score ${num(n.score)}${delta} · ${shortId(n.id)}`);
      const li = el("li", null, tog, " ", label, sub);
      li.openTo = open;
      liOf.set(n.id, li);
      return li;
    }
    const graph = lineageGraph(nodes, (n) => selectNode(n));
    const front = frontView(data, byId, (n) => { graph.showPath(ancestry(n, byId).map((a) => a.id)); selectNode(n); });
    async function selectNode(n) {
      graph.select(n.id);
      front.select(n);
      for (const a of tree.querySelectorAll("a.node.selected")) a.classList.remove("selected");
      const a = liOf.get(n.id) && liOf.get(n.id).querySelector(":scope > a.node");
      if (a) a.classList.add("selected");
      panel.dataset.state = "loading";
      try {
        const d = await api("node", { run, pid, id: n.id });
        panel.replaceChildren(nodePanel(d, n));
        panel.dataset.state = "ready";
        panel.dataset.node = n.id;
      } catch (err) { panel.replaceChildren(el("div", { cls: "error" }, err.message)); panel.dataset.state = "error"; }
    }
    function revealBest() {
      const scored = nodes.filter((n) => n.score !== null);
      if (!scored.length) return;
      const best = scored.reduce((a, b) => (b.score > a.score ? b : a));
      const path = [];
      for (let n = best; n; n = n.parent ? byId.get(n.parent) : null) path.unshift(n);
      for (const n of path.slice(0, -1)) liOf.get(n.id).openTo(true);
      graph.showPath(path.map((n) => n.id));
      selectNode(best);
    }
    tree.append(...roots.map(nodeItem));
    box.replaceChildren(
      el("h2", null, `Lineage (${nodes.length} programs, ${roots.length} seeds)`),
      graph.root,
      front.root,
      el("div", { cls: "row" }, el("figure", null, curve, el("figcaption", null,
        "best score so far by iteration (line), every program's score (dots, colour = island)" +
        (data.threshold !== null && data.threshold !== undefined ? `; dashed: solved at ${num(data.threshold)}` : ""))),
        panel),
      el("div", { cls: "controls" }, el("button", { type: "button", id: "reveal-best", on: { click: revealBest } }, "path to the best program")),
      el("details", { cls: "tree-details", open: true }, el("summary", null, "the same lineage as a tree"),
         el("div", { cls: "scroll tree-box" }, tree)));
  }

  function ancestry(n, byId) {  // the node and its ancestors, the seed first
    const path = [];
    for (let a = n; a && !path.includes(a); a = a.parent ? byId.get(a.parent) : null) path.unshift(a);
    return path;
  }

  // the front of an evolve run's problem: every candidate in the plane of two chosen reward
  // components, the candidates no other beats on every component drawn large (the front), and the
  // picked candidate's lineage joined in the plane; a click on a dot picks it (onPick).
  function frontView(data, byId, onPick) {
    const names = data.components || [];
    const nodes = data.nodes.filter((n) => Array.isArray(n.reward) && n.reward.length === names.length);
    const root = el("section", { id: "front" });
    if (names.length < 2 || !nodes.length) return { root, select() {} };
    const spread = names.map((_, j) => {  // default axes: the two components that vary most
      const v = nodes.map((n) => n.reward[j]), m = v.reduce((a, b) => a + b, 0) / v.length;
      return v.reduce((a, b) => a + (b - m) ** 2, 0);
    });
    const order = names.map((_, j) => j).sort((a, b) => spread[b] - spread[a] || a - b);
    let ax = order[0], ay = order[1], picked = null;
    const pick = (id, j) => el("select", { id, on: { change: (e) => { if (id === "front-x") ax = +e.target.value; else ay = +e.target.value; draw(); } } },
      ...names.map((nm, k) => el("option", { value: String(k), selected: k === j }, nm)));
    const box = el("figure", { id: "front-plot" });
    const onFront = nodes.filter((n) => n.front).length;
    function draw() {
      const shown = thin(nodes, 2000);
      for (const n of nodes) if (n.front && !shown.includes(n)) shown.push(n);
      const path = picked ? ancestry(picked, byId).filter((a) => Array.isArray(a.reward)) : [];
      const onPath = new Set(path.map((a) => a.id));
      const g = scatter({
        id: "front-chart", width: 560, height: 300, xlabel: names[ax], ylabel: names[ay], onPick: (p) => onPick(p.n),
        points: shown.map((n) => ({ x: n.reward[ax], y: n.reward[ay], node: n.id, n,
                                    cls: (n.front ? "front" : "behind") + (onPath.has(n.id) ? " on-path" : "") + (picked && picked.id === n.id ? " picked" : ""),
                                    title: `${shortId(n.id)} it ${n.iteration}: ` + names.map((nm, k) => `${nm} ${num(n.reward[k])}`).join(", ") + (n.front ? " (on the front)" : "") })),
        path: path.map((a) => [a.reward[ax], a.reward[ay]]),
      });
      box.replaceChildren(g, el("figcaption", null,
        `${nodes.length} candidates, ${onFront} on the front (large dots: no other candidate is at least as good on every component and better on one); ` +
        "click a dot for its lineage (joined in this plane) and its diff against its parent"));
    }
    draw();
    root.append(el("h2", null, "Front of the reward components"),
                el("div", { cls: "controls" }, el("label", null, "x ", pick("front-x", ax)), " ", el("label", null, "y ", pick("front-y", ay))), box);
    return { root, select(n) { picked = n; draw(); } };
  }

  function thin(items, most) {  // at most `most` dots (evenly spaced, the best kept): an SVG of 100k circles would stall
    if (items.length <= most) return items;
    const step = items.length / most, out = [];
    for (let i = 0; i < most; i++) out.push(items[Math.floor(i * step)]);
    const best = items.reduce((a, b) => (b.score > a.score ? b : a));
    if (!out.includes(best)) out.push(best);
    return out;
  }

  function nodePanel(d, n) {
    const parts = [el("h3", null, `program ${shortId(n.id)} · iteration ${n.iteration} · island ${n.island}`),
      el("p", null, `score ${num(n.score)}` + (d.parent ? ` · parent ${shortId(d.parent.evolve && d.parent.evolve.program_id)} scored ` +
        `${num(d.parent.candidates[0] && d.parent.candidates[0].scalar)} · change ${n.delta === null ? "–" : num(n.delta)}` : " · a seed (no parent)"))];
    if (d.diff) {
      parts.push(el("p", { cls: "muted" }, `diff against the parent, ${d.diff.unit === "token" ? "move by move (one-line program)" : "line by line"}: ` +
        `+${d.diff.added} −${d.diff.removed}` + (d.diff.ratio !== null ? `, similarity ${num(d.diff.ratio)}` : "")));
      parts.push(el("pre", { cls: `diff ${d.diff.unit}`, id: "diff" }, d.diff.lines.length
        ? d.diff.lines.map(([op, t]) => el("span", { cls: { "+": "add", "-": "del", "@": "hunk" }[op] || "ctx" },
                                         (op === "@" ? t : `${op}${t}`) + (d.diff.unit === "token" && op !== "@" ? " " : "\n")))
        : el("span", { cls: "muted" }, "(same program as the parent)")));
    } else {
      parts.push(el("pre", { cls: "text" }, d.program));
    }
    parts.push(chainCard(d.node));
    return el("div", null, parts);
  }

  // ---- side by side -----------------------------------------------------------------------------
  async function viewCompare(params, token) {
    const a = params.get("a") || "", b = params.get("b") || "", pid = params.get("pid") || "";
    setCrumbs(link("", {}, "runs"), link("problem", { run: a, pid }, pid), el("span", null, "side by side"));
    const cols = [a, b].map((id) => el("section", { cls: "col" }, el("h2", null, link("run", { id }, id))));
    app.replaceChildren(el("h1", null, `${pid}: side by side`), el("div", { cls: "cols", id: "compare" }, cols));
    await Promise.all([a, b].map(async (id, i) => {
      const box = el("div");
      cols[i].append(box);
      const first = await loadChains(id, pid, { page: 0, sort: "score", show: "all" }, box, token, true);
      if (first && token === renderToken) {
        const st = first.stats || {};
        cols[i].querySelector("h2 a").textContent = first.run.name;
        cols[i].insertBefore(el("p", { cls: "muted" }, `${first.run.model} · pool ${first.run.pool} · best ${num(st.best)} · ` +
          `mean ${num(st.mean)} · pass rate ${num(st.pass_rate)} · diversity ${num(st.diversity)}`), box);
      }
    }));
    if (token === renderToken) setState("ready", "compare");
  }

  window.addEventListener("hashchange", render);
  render();
})();
