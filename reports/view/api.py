"""The JSON pages of `vpo view`, as plain dicts: index, run (problems), problem (chains and
candidates), lineage (evolve runs) and one lineage node with its diff against its parent.

Everything large is paged here, on the server: the browser never receives more than one page of
rows, so the page cost does not grow with the run. Unknown ids raise :class:`NotFound`; nothing a
request names is used as a path (runs are looked up among the folders the scan found).
"""
from __future__ import annotations

import difflib
import math
import os
import time
from pathlib import Path
from typing import Any, Iterable

from vpo_harness.reports.tables import format_estimate
from vpo_harness.reports.view.catalog import Catalog, RunEntry
from vpo_harness.reports.view.problems import problem_view, routes_for
from vpo_harness.reports.view.samples import SampleIndex
from vpo_harness.reports.view.search import PAGE_HITS, QueryError, parse_query, search

#: candidates per page of a problem (chains are whole: a page holds ceil(50 / m) chains)
PAGE_CANDIDATES = 50
#: problems per page of a run
PAGE_PROBLEMS = 100
#: row fields shown in their own place; the rest of a row is shown as "other fields"
_SHOWN = {"problem_id", "chain_index", "seed", "text", "answers", "rewards", "scalars", "passed", "details",
          "error", "finish_reason", "completion_tokens", "prompt_tokens", "latency_s", "attempts", "n_unique",
          "iteration", "island", "parent_id", "program_id", "evolution_mode", "answer_index", "of", "_line",
          "score_s"}
_EVOLVE = ("iteration", "island", "parent_id", "program_id", "evolution_mode", "answer_index", "of")


class NotFound(LookupError):
    """A run, problem or node the request names does not exist (HTTP 404)."""


def _int(v: Any, default: int, lo: int = 0, hi: int = 10**9) -> int:
    try:
        return max(lo, min(hi, int(v)))
    except (TypeError, ValueError):
        return default


class ViewData:
    """The viewer's state: the catalog of run folders and one sample index per opened run."""

    def __init__(self, roots: Iterable[str | Path], all_metrics: bool = False):
        self.catalog = Catalog(roots, all_metrics)

    # ---- helpers ----------------------------------------------------------------------------------
    def _entry(self, run_id: str) -> RunEntry:
        e = self.catalog.get(run_id)
        if e is None:
            raise NotFound(f"no run {run_id!r} under {', '.join(map(str, self.catalog.roots))}")
        return e

    def index_of(self, e: RunEntry) -> SampleIndex:
        return self.catalog.index_of(e.id, e.path)

    @staticmethod
    def _names(e: RunEntry) -> list[str]:
        ident = e.config.get("identity") if isinstance(e.config.get("identity"), dict) else {}
        names = ident.get("components") or e.config.get("components") or []
        return [str(n) for n in names] if isinstance(names, list) else []

    @staticmethod
    def _problem_order(e: RunEntry, ix: SampleIndex) -> list[str]:
        ids = _dig(e.config, "identity", "problems").get("ids")
        seen = [p for p in ids if isinstance(p, str)] if isinstance(ids, list) else []
        known = set(seen)
        return seen + [p for p in ix.by_problem if p not in known]

    def _ks(self, e: RunEntry) -> list[int]:
        ks = e.row.get("ks") or e.config.get("ks") or [1]
        return sorted({int(k) for k in ks if isinstance(k, (int, float))}) or [1]

    # ---- pages ------------------------------------------------------------------------------------
    def runs(self) -> dict[str, Any]:
        return {"roots": [str(r) for r in self.catalog.roots], "runs": [e.row for e in self.catalog.entries()]}

    def run(self, run_id: str, page: Any = 0, per: Any = PAGE_PROBLEMS, sort: str = "", desc: Any = "",
            q: str = "") -> dict[str, Any]:
        """A run's header (config, metrics) and one page of its problems with per-problem metrics; a
        seed group's header and its seeds (each a run of its own, with its problems)."""
        e = self._entry(run_id)
        if e.kind == "seeds":
            seeds = []
            for s, f in zip(e.row.get("seeds") or [], e.row.get("seed_runs") or []):
                member = self.catalog.find(Path(f))  # the member as the scan lists it (its id opens it)
                seeds.append({"seed": s, "id": member.id if member else f,
                              "name": member.row.get("name", f) if member else f,
                              "model": member.row.get("model") if member else None})
            return {"run": {**e.row, "components_names": self._names(e), "seed_list": seeds, "warnings": [],
                            "damaged_lines": 0}, "total": 0, "page": 0, "per": PAGE_PROBLEMS, "problems": []}
        ix = self.index_of(e)
        ks = self._ks(e)
        stats = ix.problem_stats(ks)
        thresholds = (e.results.raw.get("thresholds") if e.results is not None else None) or {}
        rows = []
        for pid in self._problem_order(e, ix):
            st = dict(stats.get(pid) or {"problem_id": pid, "chains": 0, "candidates": 0, "errors": 0})
            thr = thresholds.get(pid)
            if isinstance(thr, (int, float)) and st.get("best") is not None:
                st["solved"] = st["best"] >= thr - 1e-6
            rows.append(st)
        q = (q or "").strip().lower()
        if q:
            rows = [r for r in rows if q in r["problem_id"].lower()]
        if sort:
            rows = _sorted(rows, sort, desc not in ("", "0", "false", None))
        per_n = _int(per, PAGE_PROBLEMS, 1, 1000)
        page_n = _int(page, 0)
        ident = _dig(e.config, "identity")
        header = {**e.row, "components_names": self._names(e), "ks": ks,
                  "command": e.config.get("command"), "git": e.config.get("git"),
                  "versions": e.config.get("versions"), "sampling": ident.get("sampling"),
                  "resolved_sampling": ident.get("resolved_sampling"), "task_options": _dig(ident, "task").get("options"),
                  "evolve": _evolve_header(e) if e.kind == "evolve" else None,
                  "warnings": ix.warnings, "damaged_lines": ix.n_damaged}
        return {"run": header, "total": len(rows), "page": page_n, "per": per_n,
                "problems": rows[page_n * per_n:(page_n + 1) * per_n]}

    def problem(self, run_id: str, problem_id: str, page: Any = 0, per: Any = PAGE_CANDIDATES, sort: str = "chain",
                show: str = "all") -> dict[str, Any]:
        """One page of a problem's chains, each with every candidate's text, answer, reward vector by
        component, pass, and task details (code verdicts per test, sandbox notes)."""
        e = self._entry(run_id)
        ix = self.index_of(e)
        slots = ix.problem_slots(problem_id)
        if not slots and problem_id not in self._problem_order(e, ix):
            raise NotFound(f"run {run_id!r} has no problem {problem_id!r}")
        metas = ix.rows
        if show == "passed":
            slots = [s for s in slots if any(metas[s].passed)]
        elif show == "failed":
            slots = [s for s in slots if not metas[s].error and not any(metas[s].passed)]
        elif show == "errors":
            slots = [s for s in slots if metas[s].error]
        if sort == "score":
            slots.sort(key=lambda s: (-metas[s].best, metas[s].chain_index))
        elif sort == "iteration":
            slots.sort(key=lambda s: (metas[s].iteration if metas[s].iteration is not None else -1, metas[s].chain_index))
        else:
            slots.sort(key=lambda s: metas[s].chain_index)
        m = _int(_dig(e.config, "identity", "sampling").get("m"), 1, 1, 10**6)
        if e.kind == "evolve":
            m = 1  # one row per child
        per_chains = max(1, _int(per, PAGE_CANDIDATES, 1, 1000) // m)
        page_n = _int(page, 0)
        names = self._names(e)
        chosen = slots[page_n * per_chains:(page_n + 1) * per_chains]
        chains = [_chain(row, names) for row in ix.read(chosen)]
        routes_for(e.config, problem_id, chains)
        stats = ix.problem_stats(self._ks(e)).get(problem_id)
        return {"run": {"id": e.id, "name": e.row.get("name", e.id), "kind": e.kind, "task": e.row.get("task"),
                        "model": e.row.get("model"),
                        "pool": e.row.get("pool")},
                "problem_id": problem_id, "stats": stats, "total_chains": len(slots), "page": page_n,
                "per_chains": per_chains, "chains": chains, "components_names": names}

    def problem_info(self, run_id: str, problem_id: str) -> dict[str, Any]:
        """The problem itself as its task shows it, and the prompt the run sent
        (:mod:`vpo_harness.reports.view.problems`); ``error`` (one line) when it cannot be rebuilt here."""
        e = self._entry(run_id)
        return {"run": e.id, "problem_id": problem_id, **problem_view(e.config, problem_id)}

    def lineage(self, run_id: str, problem_id: str) -> dict[str, Any]:
        """An evolve run's tree for one problem (no texts), its best-so-far curve by iteration, and
        each node's reward vector with whether it lies on the front of the problem's candidates (no
        other candidate at least as good on every component and better on one: what ``--select
        pareto`` keeps), for the page's plane of two chosen components."""
        e = self._entry(run_id)
        ix = self.index_of(e)
        metas = [ix.rows[s] for s in ix.problem_slots(problem_id)]
        metas = [m for m in metas if m.program_id]
        if not metas:
            raise NotFound(f"run {run_id!r} has no lineage for problem {problem_id!r} (not an evolve run?)")
        score = {m.program_id: (m.scalars[0] if m.scalars else None) for m in metas}
        nodes = []
        metas = sorted(metas, key=lambda m: (m.iteration or 0, m.answer_index or 0, m.chain_index))
        front = _front([m.rewards[0] if m.rewards and not m.error else None for m in metas])
        d = max((len(m.rewards[0]) for m in metas if m.rewards), default=0)
        for k, m in enumerate(metas):
            s, ps = score[m.program_id], score.get(m.parent_id) if m.parent_id else None
            nodes.append({"id": m.program_id, "parent": m.parent_id, "island": m.island, "iteration": m.iteration,
                          "chain_index": m.chain_index, "score": s, "passed": bool(m.passed and m.passed[0]),
                          "delta": (s - ps) if s is not None and ps is not None else None,
                          "error": m.error, "reward": list(m.rewards[0]) if m.rewards else None,
                          "front": front[k]})
        best, curve = -math.inf, []
        by_it: dict[int, float] = {}
        for n in nodes:
            if n["score"] is not None and n["iteration"] is not None:
                by_it[n["iteration"]] = max(by_it.get(n["iteration"], -math.inf), n["score"])
        for it in sorted(by_it):
            best = max(best, by_it[it])
            curve.append({"iteration": it, "best": best})
        thr = ((e.results.raw.get("thresholds") if e.results is not None else None) or {}).get(problem_id)
        return {"run": e.id, "problem_id": problem_id, "nodes": nodes, "best_so_far": curve, "threshold": thr,
                "components": component_names(self._names(e), d)}

    def node(self, run_id: str, problem_id: str, program_id: str) -> dict[str, Any]:
        """One lineage node: its row (as a chain), its parent's program and the diff child vs parent."""
        e = self._entry(run_id)
        ix = self.index_of(e)
        slot = ix.by_program.get(program_id)
        if slot is None or ix.rows[slot].problem_id != problem_id:
            raise NotFound(f"run {run_id!r} has no program {program_id!r} for problem {problem_id!r}")
        row = ix.read([slot])[0]
        names = self._names(e)
        parent_row = None
        pid = row.get("parent_id")
        if isinstance(pid, str) and pid in ix.by_program:
            parent_row = ix.read([ix.by_program[pid]])[0]
        node, parent = _chain(row, names), _chain(parent_row, names) if parent_row is not None else None
        routes_for(e.config, problem_id, [c for c in (node, parent) if c is not None])
        child_prog = _program(row)
        parent_prog = _program(parent_row) if parent_row is not None else None
        return {"run": e.id, "problem_id": problem_id, "node": node, "parent": parent,
                "program": child_prog, "parent_program": parent_prog,
                "diff": diff(parent_prog, child_prog) if parent_prog is not None else None}

    def search(self, run_id: str, q: str, page: Any = 0, problem: str = "") -> dict[str, Any]:
        """Chains of a run with a candidate matching the query (:mod:`vpo_harness.reports.view.search`). A query
        that cannot be read answers with ``query_error`` (one line), not an HTTP error: the page
        shows it next to the search box."""
        e = self._entry(run_id)
        ix = self.index_of(e)
        names = self._names(e)
        head = {"run": e.id, "q": q, "problem": problem or None}
        try:
            query = parse_query(q, names)
            if query.empty:
                raise QueryError("search: type words or field:value terms")
        except QueryError as exc:
            return {**head, "query_error": str(exc), "hits": [], "total_chains": 0, "total_candidates": 0}
        return {**head, **search(ix, query, names, _int(page, 0), PAGE_HITS, problem or None)}

    def progress(self, run_id: str) -> dict[str, Any]:
        """How far a run is: rows stored against rows expected, the index version (the page reloads
        its rows when it moves), the status and how long ago samples.jsonl last grew. Cheap: a stat
        and the bytes appended since the last look."""
        e = self._entry(run_id)
        ix = self.index_of(e)
        samp = _dig(e.config, "identity", "sampling")
        n, m = _int(samp.get("n"), 0), _int(samp.get("m"), 1, 1)
        problems = _int(_dig(e.config, "identity", "problems").get("n"), 0) or len(ix.by_problem)
        expected = problems * n * (m if e.kind == "evolve" else 1) or None
        try:
            age = max(0.0, time.time() - os.stat(ix.path).st_mtime)
        except OSError:
            age = None
        return {"run": e.id, "status": e.row.get("status"), "note": e.row.get("note"), "version": ix.version,
                "rows": len(ix.rows), "expected_rows": expected, "candidates": e.row.get("n_candidates"),
                "bytes": ix.scanned_to, "last_write_s": age}

    def curve(self, run_id: str) -> dict[str, Any]:
        """What the overlaid curves of several runs need from one run: for a sampling run best@k
        and pass@k by k and diversity (mean and standard error over problems); for an evolve run
        solved and best score against candidates and iterations, each against candidates with its
        plain-sampling baseline at every budget (``baseline_*``), and no best@k / pass@k (its
        candidates depend on each other, so those estimate nothing); ``partial`` when they are
        over the rows so far."""
        e = self._entry(run_id)
        metrics = e.row.get("metrics") or {}
        series: dict[str, Any] = {}
        for name in ("best", "pass") if e.kind != "evolve" else ():
            pts = sorted((int(k.split("@", 1)[1]), v) for k, v in metrics.items()
                         if k.startswith(f"{name}@") and k.split("@", 1)[1].isdigit() and isinstance(v, dict))
            if pts:
                series[f"{name}@k"] = {"x": [k for k, _ in pts], "mean": [v.get("mean") for _, v in pts],
                                       "stderr": [v.get("stderr") for _, v in pts]}
        ev = ((e.results.raw.get("evolve") if e.results is not None else None) or {}) if e.kind == "evolve" else {}
        for name in ("solved_vs_candidates", "best_vs_candidates", "solved_vs_iteration", "best_vs_iteration"):
            c = ev.get(name)
            if isinstance(c, dict) and isinstance(c.get("x"), list):
                series[name] = {"x": c["x"], "mean": c.get("mean"), "stderr": c.get("stderr")}
        base = ((e.results.raw.get("baseline") if e.results is not None else None) or {}) if e.kind == "evolve" else {}
        for name in ("solved_vs_candidates", "best_vs_candidates"):
            c = base.get(name) if isinstance(base, dict) else None
            if isinstance(c, dict) and isinstance(c.get("x"), list):
                series[f"baseline_{name}"] = {"x": c["x"], "mean": c.get("mean"), "stderr": c.get("stderr")}
        return {"id": e.id, "name": e.row.get("name", e.id), "kind": e.kind, "colour": e.row.get("colour"),
                "dash": e.row.get("dash"), "dropped": e.row.get("dropped"),
                "status": e.row.get("status"), "partial": e.row.get("status") != "complete",
                "diversity": metrics.get("diversity"), "series": series}

    def runs_with_problem(self, problem_id: str) -> dict[str, Any]:
        """Runs that hold ``problem_id`` (by their recorded problem ids): candidates for side by side."""
        out = []
        for e in self.catalog.entries():
            ids = _dig(e.config, "identity", "problems").get("ids")
            if isinstance(ids, list) and problem_id in ids and e.kind != "seeds":
                out.append({"id": e.id, "task": e.row.get("task"), "model": e.row.get("model"), "kind": e.kind})
        return {"problem_id": problem_id, "runs": out}


def _dig(d: Any, *keys: str) -> dict[str, Any]:
    """``d[k1][k2]...`` when every step is an object, else ``{}`` (a hand-edited config must not
    turn a page into an error)."""
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d if isinstance(d, dict) else {}


def _sorted(rows: list[dict[str, Any]], key: str, desc: bool) -> list[dict[str, Any]]:
    """Rows by ``key``; missing values last whichever the direction."""
    have = [r for r in rows if isinstance(r.get(key), (int, float, str)) and r.get(key) == r.get(key)]
    miss = [r for r in rows if r not in have] if len(have) != len(rows) else []
    have.sort(key=lambda r: (isinstance(r[key], str), r[key]), reverse=desc)
    return have + miss


def _evolve_header(e: RunEntry) -> dict[str, Any] | None:
    raw = e.results.raw if e.results is not None else {}
    ev = raw.get("evolve") or {}
    base = raw.get("baseline") if isinstance(raw.get("baseline"), dict) else {}
    return {"best_vs_iteration": ev.get("best_vs_iteration"), "solved_vs_iteration": ev.get("solved_vs_iteration"),
            "solved_vs_candidates": ev.get("solved_vs_candidates"),
            "baseline_solved_vs_candidates": base.get("solved_vs_candidates"),
            "solved": _with_text(ev.get("solved")), "solved_definition": raw.get("solved_definition"),
            "iterations": raw.get("iterations"), "prompt_mode": raw.get("prompt_mode"),
            "baseline": (raw.get("baseline") or {}).get("solved") if isinstance(raw.get("baseline"), dict) else None}


def _with_text(est: Any) -> Any:
    """An estimate of results.json with the cell vpo_harness.reports.tables writes for it (what the page shows)."""
    return {**est, "text": format_estimate(est)} if isinstance(est, dict) else est


def _front(vectors: list[Any]) -> list[bool]:
    """Which of the vectors lie on the front of those given (None: no vector, never on it); vectors
    of another length than the most common one (a damaged row) are left off it."""
    import numpy as np

    from vpo_harness.harness.core.metrics import nondominated

    lens = [len(v) for v in vectors if v is not None]
    if not lens:
        return [False] * len(vectors)
    d = max(set(lens), key=lens.count)
    keep = [k for k, v in enumerate(vectors) if v is not None and len(v) == d]
    mask = nondominated(np.asarray([vectors[k] for k in keep], dtype=float).reshape(len(keep), d))
    out = [False] * len(vectors)
    for k, on in zip(keep, mask):
        out[k] = bool(on)
    return out


def component_names(names: list[str], d: int) -> list[str]:
    """Names for a d-long reward vector: the run's when they fit, else c0..c{d-1}."""
    return names[:d] if len(names) >= d else [f"c{i}" for i in range(d)]


def _chain(row: dict[str, Any], names: list[str]) -> dict[str, Any]:
    answers = row.get("answers") if isinstance(row.get("answers"), list) else []
    rewards = row.get("rewards") if isinstance(row.get("rewards"), list) else []
    scalars = row.get("scalars") if isinstance(row.get("scalars"), list) else []
    passed = row.get("passed") if isinstance(row.get("passed"), list) else []
    details = row.get("details") if isinstance(row.get("details"), list) else []
    cands = []
    for j, ans in enumerate(answers):
        r = rewards[j] if j < len(rewards) and isinstance(rewards[j], list) else []
        cands.append({"index": j, "answer": ans,
                      "reward": [[n, v] for n, v in zip(component_names(names, len(r)), r)],
                      "scalar": scalars[j] if j < len(scalars) else None,
                      "passed": passed[j] if j < len(passed) else None,
                      "details": _details(details[j] if j < len(details) else None)})
    out = {k: row.get(k) for k in ("chain_index", "seed", "text", "error", "finish_reason", "completion_tokens",
                                   "prompt_tokens", "latency_s", "attempts", "n_unique", "score_s")}
    out["line"] = row.get("_line")
    if "program_id" in row:
        out["evolve"] = {k: row.get(k) for k in _EVOLVE}
    out["candidates"] = cands
    out["other"] = {k: v for k, v in row.items() if k not in _SHOWN}
    return out


def _details(d: Any) -> dict[str, Any] | None:
    """A candidate's task details as an object (the page reads fields of it); anything else is kept
    under ``value``."""
    return d if isinstance(d, dict) or d is None else {"value": d}


def _program(row: dict[str, Any]) -> str:
    """What an evolve node is: its (first) parsed answer, the text OpenEvolve evolves."""
    answers = row.get("answers") if isinstance(row.get("answers"), list) else []
    a = answers[0] if answers else None
    return a if isinstance(a, str) else (row.get("text") or "")


def diff(parent: str, child: str, context: int = 3) -> dict[str, Any]:
    """Unified diff child vs parent (difflib). One-line programs (a maze route) are compared move by
    move: a line diff would only say "the line changed"."""
    a, b = parent.splitlines(), child.splitlines()
    unit = "line"
    if len(a) <= 1 and len(b) <= 1:
        a, b, unit = parent.split(), child.split(), "token"
    lines = []
    for ln in difflib.unified_diff(a, b, "parent", "child", lineterm="", n=context):
        if ln.startswith(("---", "+++")):
            continue
        op = ln[:1] if ln[:1] in "+-@" else " "
        lines.append([op, ln[1:] if op != "@" else ln])
    # similarity is quadratic in the worst case: only for programs of a readable size
    ratio = difflib.SequenceMatcher(a=a, b=b, autojunk=False).ratio() if len(a) + len(b) <= 4000 else None
    return {"unit": unit, "lines": lines, "ratio": ratio, "added": sum(op == "+" for op, _ in lines),
            "removed": sum(op == "-" for op, _ in lines)}
