// vpo view: DOM helpers, formatting and the data source shared by charts.js, graph.js and app.js
// (window.VPO). Every piece of run data is written with textContent (through el() and svg()), never
// parsed as HTML: a completion holding <script> or <img onerror> is shown as text.
//
// The data source: served by `vpo view`, a request is fetch("/api/<route>?..."). In an export
// (<html data-export="1">, written by `vpo view --export`), every answer was written ahead of time as
// data/<hash>.js calling window.VPO_PAGE(key, body); a request adds that script (a page opened from
// disk may load scripts next to it but not fetch them). The key and hash rules are those of
// reports/view/export.py (page_key, key_hash).
"use strict";

(() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const EXPORT = document.documentElement.dataset.export === "1";

  function setAttrs(n, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "on") { for (const [ev, fn] of Object.entries(v)) n.addEventListener(ev, fn); }
      else if (k === "cls") n.setAttribute("class", v);
      else if (k === "data") { for (const [dk, dv] of Object.entries(v)) n.dataset[dk] = String(dv); }
      else n.setAttribute(k, v === true ? "" : String(v));
    }
  }
  function build(n, attrs, kids) {
    setAttrs(n, attrs);
    for (const c of kids.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      n.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return n;
  }
  const el = (tag, attrs, ...kids) => build(document.createElement(tag), attrs, kids);
  const svg = (tag, attrs, ...kids) => build(document.createElementNS(SVG_NS, tag), attrs, kids);

  function num(x, digits = 3) {
    if (x === null || x === undefined || Number.isNaN(x)) return "–";
    if (typeof x === "boolean") return x ? "yes" : "no";
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x) && Math.abs(x) >= 10) return String(x);
    return x.toFixed(digits);
  }
  // a colour the server sent, used only when it is a plain #rrggbb (it goes into SVG attributes)
  function colour(c, fallback = "#2b5797") { return typeof c === "string" && /^#[0-9a-f]{6}$/i.test(c) ? c : fallback; }
  // a line style the server sent (an SVG stroke-dasharray of numbers), or null for a solid line
  function dash(d) { return typeof d === "string" && /^[0-9 .]+$/.test(d) ? d : null; }

  // ---- the data source --------------------------------------------------------------------------
  const enc = encodeURIComponent;
  function pageKey(route, params) {
    const qs = Object.keys(params || {}).sort().map((k) => `${enc(k)}=${enc(String(params[k]))}`).join("&");
    return `${route}?${qs}`;
  }
  function keyHash(key) {  // FNV-1a 64 over the key's bytes (ASCII: the key is URI-encoded)
    let h = 0xcbf29ce484222325n;
    for (let i = 0; i < key.length; i++) { h ^= BigInt(key.charCodeAt(i) & 0xff); h = (h * 0x100000001b3n) & 0xffffffffffffffffn; }
    return h.toString(16).padStart(16, "0");
  }
  const waiting = new Map();  // key -> [resolve, reject]
  window.VPO_PAGE = (key, body) => {
    const w = waiting.get(key);
    if (w) { waiting.delete(key); w[0](body); }
  };
  function exported(route, params) {
    const key = pageKey(route, params);
    return new Promise((resolve, reject) => {
      waiting.set(key, [resolve, reject]);
      const s = document.createElement("script");
      s.src = `data/${keyHash(key)}.js`;
      s.addEventListener("load", () => {
        s.remove();
        if (waiting.has(key)) { waiting.delete(key); reject(new Error(`not in this export: ${key}`)); }
      });
      s.addEventListener("error", () => { s.remove(); waiting.delete(key); reject(new Error(`not in this export: ${key}`)); });
      document.head.append(s);
    });
  }
  async function api(route, params) {
    if (EXPORT) return exported(route, params || {});
    const qs = new URLSearchParams(params || {}).toString();
    const res = await fetch(`/api/${route}${qs ? "?" + qs : ""}`, { headers: { Accept: "application/json" } });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) throw new Error((body && body.error) || `${res.status} ${res.statusText}`);
    return body;
  }

  window.VPO = { el, svg, num, colour, dash, api, EXPORT, pageKey, keyHash };
})();
