"""What a problem page shows of the problem itself: the prompt the model was given and the task's
own view of the problem (the maze as a grid, the statement and tests of a code problem, the
paragraphs and gold hops of a MuSiQue question, the tools and gold call of a ToolRL dialogue, the
narrative of an EUREQA puzzle), plus, for Maze, the cells each candidate's route visits.

Why here and not in the browser: the problem is rebuilt from the run's recorded task (name, split,
options, data path), so the page shows the problem as the task defines it, and the route overlay
runs the task's own parser and simulator (``vpo_harness.benchmarks.maze_env.simulate``) rather than a second
copy in JavaScript. The page draws the display blocks; each task has one small function below
(:data:`DISPLAYS`), and an unknown task falls back to its problem record as JSON.

A problem that cannot be rebuilt (data missing on this machine, an id the split no longer holds)
gives one ``error`` line for the page, never an HTTP error: the chains are still worth reading.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Callable

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Benchmark, Problem
from vpo_harness.harness.core.config import RunConfig
from vpo_harness.harness.eval.runner import make_prompt
from vpo_harness.reports.pools import run_facts

#: tests of a code problem shown on the page (each cut to :data:`TEST_CHARS`)
SHOWN_TESTS = 5
TEST_CHARS = 600
#: loaded splits kept in memory (a split is a few MB at most; runs of one split share it)
_CACHE_SPLITS = 4

Block = dict[str, Any]


class _Splits:
    """Loaded problem splits by what defines them, least recently used dropped first."""

    def __init__(self, most: int = _CACHE_SPLITS):
        self.most = most
        self._lock = threading.Lock()
        self._by_key: OrderedDict[str, tuple[Benchmark, dict[str, Problem]]] = OrderedDict()

    def get(self, facts: dict[str, Any]) -> tuple[Benchmark, dict[str, Problem]]:
        key = json.dumps([facts.get("task"), facts.get("task_options") or {}, facts.get("split"),
                          facts.get("data_path"), facts.get("limit")], sort_keys=True, default=str)
        with self._lock:
            hit = self._by_key.get(key)
            if hit is not None:
                self._by_key.move_to_end(key)
                return hit
        task = get_task(str(facts.get("task")), **(facts.get("task_options") or {}))
        problems = task.load(str(facts.get("split") or "test"), path=facts.get("data_path"), limit=facts.get("limit"))
        hit = (task, {p.id: p for p in problems})
        with self._lock:
            self._by_key[key] = hit
            while len(self._by_key) > self.most:
                self._by_key.popitem(last=False)
        return hit


SPLITS = _Splits()


def find_problem(config: dict[str, Any], problem_id: str) -> tuple[Benchmark, Problem]:
    """The task and problem a run's config names; ValueError (one line) when it cannot be rebuilt."""
    facts = run_facts(config)
    if not facts.get("task"):
        raise ValueError("the run's config.json names no task")
    try:
        task, by_id = SPLITS.get(facts)
    except Exception as exc:  # missing data, a task option this version refuses: one line
        raise ValueError(f"task {facts['task']!r} split {facts.get('split')!r} cannot be loaded here: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    problem = by_id.get(problem_id)
    if problem is None:
        raise ValueError(f"problem {problem_id!r} is not in task {facts['task']!r} split {facts.get('split')!r} "
                         "as it loads here")
    return task, problem


def prompt_of(config: dict[str, Any], task: Benchmark, problem: Problem) -> list[dict[str, str]]:
    """The messages the runner sends for this problem (``vpo_harness.harness.eval.runner.make_prompt``); an evolve
    run's first prompt is the same (its mutation prompts quote parents and are not shown here)."""
    ident = config.get("identity") if isinstance(config.get("identity"), dict) else {}
    cfg = RunConfig.from_json({"task": ident.get("task") or {}, "model": ident.get("model") or {},
                               "sampling": {k: v for k, v in (ident.get("sampling") or {}).items() if k != "ks"}})
    return make_prompt(task, problem, cfg)


# ---- one display per task --------------------------------------------------------------------------
def _maze(task: Benchmark, p: Problem) -> list[Block]:
    from vpo_harness.benchmarks.maze_env import MazeInstance

    inst = MazeInstance.from_problem(p)
    return [{"kind": "maze", "title": "maze", "rows": inst.symbol_rows(), "budget": inst.budget,
             "start": list(inst.start), "exit": list(inst.exit),
             "counts": {"gold": len(inst.gold), "diamond": len(inst.diamond), "lava": len(inst.lava)}}]


def _code(task: Benchmark, p: Problem) -> list[Block]:
    d = p.data
    tests = d.get("tests") or []
    cut = lambda s: s if len(s) <= TEST_CHARS else s[:TEST_CHARS] + f"… ({len(s)} characters)"  # noqa: E731
    blocks: list[Block] = [{"kind": "text", "title": f"statement: {d.get('title') or p.id}"
                            + (f" ({d.get('platform')}, {d.get('difficulty')})" if d.get("platform") else ""),
                            "text": d.get("content") or ""}]
    if d.get("starter_code"):
        blocks.append({"kind": "code", "title": "starter code", "text": d["starter_code"]})
    blocks.append({"kind": "table", "title": f"tests ({len(tests)}, {d.get('mode')}; first {min(SHOWN_TESTS, len(tests))} shown)",
                   "head": ["#", "input", "expected output"],
                   "rows": [[str(i), cut(str(t.get("input", ""))), cut(str(t.get("output", "")))]
                            for i, t in enumerate(tests[:SHOWN_TESTS])]})
    return blocks


def _musique(task: Benchmark, p: Problem) -> list[Block]:
    d = p.data
    support = list(d.get("support") or [])
    by_idx = {q["idx"]: q for q in d.get("paragraphs") or []}
    hops = [f"hop {h + 1}: [{i}] {by_idx[i]['title']}" for h, i in enumerate(support) if i in by_idx]
    return [{"kind": "text", "title": "question", "text": d.get("question", "")},
            {"kind": "list", "title": f"gold hops ({len(hops)}); answer: {d.get('answer')}"
             + (f" (also: {', '.join(d['aliases'])})" if d.get("aliases") else ""), "items": hops},
            {"kind": "paragraphs", "title": f"paragraphs ({len(by_idx)}; gold hops marked)",
             "items": [{"idx": q["idx"], "title": q["title"], "text": q["text"],
                        "hop": support.index(q["idx"]) + 1 if q["idx"] in support else None}
                       for q in d.get("paragraphs") or []]}]


def _toolrl(task: Benchmark, p: Problem) -> list[Block]:
    d = p.data
    return [{"kind": "text", "title": "tools and instructions (system message)", "text": d.get("system", "")},
            {"kind": "text", "title": "dialogue", "text": d.get("user", "")},
            {"kind": "code", "title": f"gold call{'s' if len(d.get('gold_calls') or []) != 1 else ''}",
             "text": json.dumps(d.get("gold_calls"), indent=2, ensure_ascii=False)}]


def _eureqa(task: Benchmark, p: Problem) -> list[Block]:
    d = p.data
    pairs = [f"{m} = {e}" for m, e in zip(d.get("masks") or [], d.get("entities") or [])]
    return [{"kind": "text", "title": "question", "text": d.get("narrative", "")},
            {"kind": "list", "title": "gold entities", "items": pairs}]


def _generic(task: Benchmark, p: Problem) -> list[Block]:
    return [{"kind": "code", "title": "problem record", "text": json.dumps(p.data, indent=2, ensure_ascii=False,
                                                                           default=str)[:20_000]}]


#: task name -> its display blocks; every other task shows its record as JSON
DISPLAYS: dict[str, Callable[[Benchmark, Problem], list[Block]]] = {
    "maze": _maze, "livecodebench": _code, "musique": _musique, "toolrl": _toolrl, "eureqa": _eureqa,
}


def problem_view(config: dict[str, Any], problem_id: str) -> dict[str, Any]:
    """The problem page's problem section: ``blocks`` (the task's display), ``prompt`` (messages),
    or ``error`` (one line) when the problem cannot be rebuilt on this machine."""
    try:
        task, problem = find_problem(config, problem_id)
    except ValueError as exc:
        return {"task": run_facts(config).get("task"), "error": str(exc), "blocks": [], "prompt": []}
    blocks = DISPLAYS.get(task.name, _generic)(task, problem)
    try:
        prompt = prompt_of(config, task, problem)
    except (ValueError, TypeError, KeyError) as exc:
        prompt, note = [], f"prompt not rebuilt: {exc}"
    else:
        note = None
    return {"task": task.name, "blocks": blocks, "prompt": prompt, "prompt_error": note}


def route_overlay(task: Benchmark, problem: Problem, answer: Any) -> dict[str, Any] | None:
    """The cells a Maze answer visits (start included; a bump into a wall repeats the cell), as the
    task's parser and simulator read it; None for other tasks."""
    if task.name != "maze":
        return None
    _, info = task.simulate(problem, answer if isinstance(answer, str) else None)
    return {"cells": [list(c) for c in info["path"]], "reached_exit": bool(info["reached_exit"]),
            "steps": int(info["steps"]), "bumps": int(info["bumps"]), "ignored": int(info["ignored"])}


def routes_for(config: dict[str, Any], problem_id: str, chains: list[dict[str, Any]]) -> None:
    """Add ``route`` to every candidate of ``chains`` (the problem page's) when the run is a Maze run
    whose problem can be rebuilt; leaves them as they are otherwise."""
    if run_facts(config).get("task") != "maze":
        return
    try:
        task, problem = find_problem(config, problem_id)
    except ValueError:
        return
    for c in chains:
        for k in c.get("candidates") or []:
            k["route"] = route_overlay(task, problem, k.get("answer"))
