"""`vpo view --export DIR`: the pages of chosen runs as static files that open from disk or any server.

Why data files loaded as scripts and not JSON fetched: a page opened from disk (``file://``) may not
``fetch`` files next to it, but it may load scripts from there. So every JSON answer the app would
ask the server for is written ahead of time as ``data/<hash>.js``, one call
``window.VPO_PAGE(key, {...})``; the app, seeing ``<html data-export="1">``, turns each request into
its key (the route and its parameters, sorted and URI-encoded: :func:`page_key`), hashes it
(FNV-1a, 64 bit: :func:`key_hash`, the same function as ``dom.js``) and adds that script. The JSON is
the server's (ASCII, lone surrogates escaped), so a hostile completion is as inert here as there;
the page carries the viewer's CSP in a ``<meta>`` element (no inline script, scripts from its own
folder only).

What is exported: the index (the chosen runs), each run's problem pages, each problem's chains in
chain order and best score first (the side-by-side view), the runs that share each problem, each
run's curves, and for evolve runs each problem's lineage and every node with its diff. What needs the
server is left out and the page says so: search, live updates, re-sorting and filters on the server.
"""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import quote

from vpo_harness.harness.core.suggest import did_you_mean
from vpo_harness.reports.view.api import PAGE_CANDIDATES, PAGE_PROBLEMS, NotFound, ViewData
from vpo_harness.reports.view.catalog import RunEntry, to_json_text
from vpo_harness.reports.view.server import FILES, META_CSP, STATIC

_URI_SAFE = "-_.!~*'()"  # what encodeURIComponent leaves as it is
_FNV_OFFSET, _FNV_PRIME, _MASK = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1


class ExportError(ValueError):
    """The export cannot be written as asked (no such run, a folder that is not empty): one line."""


@dataclass
class ExportStats:
    runs: int
    pages: int
    files: int
    bytes: int


def page_key(route: str, params: dict[str, Any]) -> str:
    """``route?k1=v1&k2=v2`` with the parameters sorted by name and URI-encoded: what ``dom.js``
    computes for the same request."""
    qs = "&".join(f"{quote(str(k), safe=_URI_SAFE)}={quote(str(v), safe=_URI_SAFE)}"
                  for k, v in sorted(params.items()))
    return f"{route}?{qs}"


def key_hash(key: str) -> str:
    """FNV-1a 64 of the key's bytes as 16 hex digits (the file name of its page)."""
    h = _FNV_OFFSET
    for b in key.encode("utf-8"):
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return f"{h:016x}"


def choose(data: ViewData, names: Iterable[str]) -> list[RunEntry]:
    """The runs named (by the name the index shows, or the folder path); every run when none is."""
    entries = data.catalog.entries()
    names = list(names)
    if not names:
        return entries
    out = []
    for n in names:
        hit = next((e for e in entries if n in (e.row.get("name"), e.id, str(e.path))), None)
        if hit is None:
            close = did_you_mean(n, [str(e.row.get("name")) for e in entries])
            hint = f" ({close})" if close else f" (runs: {', '.join(str(e.row.get('name')) for e in entries[:8])})"
            raise ExportError(f"--run {n}: no such run under {', '.join(map(str, data.catalog.roots))}{hint}")
        if hit not in out:
            out.append(hit)
    return out


class _Writer:
    def __init__(self, out: Path):
        self.out, self.seen, self.files, self.bytes = out, {}, 0, 0

    def page(self, route: str, params: dict[str, Any], make: Callable[[], Any]) -> Any:
        key = page_key(route, params)
        h = key_hash(key)
        if h in self.seen:
            if self.seen[h] != key:  # two keys, one hash: 1 in 2^64 per pair, but never a wrong page
                raise ExportError(f"export: page keys {self.seen[h]!r} and {key!r} share hash {h}")
            return None
        body = make()
        text = f"window.VPO_PAGE({to_json_text(key)},{to_json_text(body)});\n"
        (self.out / "data" / f"{h}.js").write_text(text, encoding="ascii")
        self.seen[h] = key
        self.files += 1
        self.bytes += len(text)
        return body

    def copy(self, name: str, text: str | None = None) -> None:
        dest = self.out / name
        if text is None:
            shutil.copyfile(STATIC / name, dest)
        else:
            dest.write_text(text, encoding="utf-8")
        self.files += 1
        self.bytes += dest.stat().st_size


def _index_html() -> str:
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    html = html.replace('<html lang="en">', '<html lang="en" data-export="1">', 1)
    meta = f'<meta http-equiv="Content-Security-Policy" content="{META_CSP}">'
    return html.replace('<meta charset="utf-8">', f'<meta charset="utf-8">\n{meta}', 1)


def _runs_with(data: ViewData, pid: str, ids: set[str]) -> dict[str, Any]:
    """The runs-with page of ``pid`` among the exported runs only."""
    page = data.runs_with_problem(pid)
    return {**page, "runs": [r for r in page["runs"] if r["id"] in ids]}


def _exported_row(row: dict[str, Any], ids: set[str]) -> dict[str, Any]:
    """An index row as exported: its group linked only when the group's pages are exported too."""
    g = row.get("group")
    return {**row, "group": {**g, "listed": g["id"] in ids}} if isinstance(g, dict) else row


def with_members(data: ViewData, entries: list[RunEntry]) -> list[RunEntry]:
    """``entries`` and, after each seed group, its members (each listed once): a group's page links
    to its seeds, and an exported link must open a page that was written."""
    out: list[RunEntry] = []
    for e in entries:
        found = [data.catalog.find(Path(f)) for f in e.row.get("seed_runs") or []] if e.kind == "seeds" else []
        for x in [e, *(m for m in found if m is not None)]:
            if all(x.id != y.id for y in out):
                out.append(x)
    return out


def export_site(data: ViewData, entries: list[RunEntry], out: str | Path) -> ExportStats:
    """Write the pages of ``entries`` under ``out`` (a new or empty folder)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out}: exists and is not an empty folder (give a new folder for the export)")
    (out / "data").mkdir(parents=True, exist_ok=True)
    entries = with_members(data, entries)
    w = _Writer(out)
    w.copy("index.html", _index_html())
    for name in sorted({f for f, _ in FILES.values()} - {"index.html"}):
        w.copy(name)
    ids = {e.id for e in entries}
    w.page("runs", {}, lambda: {"roots": [str(r) for r in data.catalog.roots], "runs": [_exported_row(e.row, ids) for e in entries],
                                "exported": True})
    for e in entries:
        w.page("curve", {"id": e.id}, lambda e=e: data.curve(e.id))
        first = data.run(e.id, 0, PAGE_PROBLEMS)
        for page in range(max(1, math.ceil(first["total"] / PAGE_PROBLEMS))):
            w.page("run", {"id": e.id, "page": page, "per": PAGE_PROBLEMS, "sort": "", "desc": "", "q": ""},
                   lambda page=page: first if page == 0 else data.run(e.id, page, PAGE_PROBLEMS))
        for p in data.run(e.id, 0, 10**9)["problems"]:
            pid = p["problem_id"]
            for sort in ("chain", "score"):
                head = data.problem(e.id, pid, 0, PAGE_CANDIDATES, sort)
                pages = max(1, math.ceil(head["total_chains"] / head["per_chains"]))
                for page in range(pages):
                    w.page("problem", {"run": e.id, "pid": pid, "page": page, "per": PAGE_CANDIDATES, "sort": sort,
                                       "show": "all"},
                           lambda page=page, sort=sort, head=head: head if page == 0 else
                           data.problem(e.id, pid, page, PAGE_CANDIDATES, sort))
            w.page("problem-info", {"run": e.id, "pid": pid}, lambda pid=pid: data.problem_info(e.id, pid))
            w.page("runs-with", {"pid": pid}, lambda pid=pid: _runs_with(data, pid, ids))
            if e.kind == "evolve":
                try:
                    lin = w.page("lineage", {"run": e.id, "pid": pid}, lambda pid=pid: data.lineage(e.id, pid))
                except NotFound:  # a problem with no evaluated program yet
                    continue
                for n in (lin or {}).get("nodes", []):
                    w.page("node", {"run": e.id, "pid": pid, "id": n["id"]},
                           lambda pid=pid, n=n: data.node(e.id, pid, n["id"]))
    return ExportStats(len(entries), len(w.seen), w.files, w.bytes)
