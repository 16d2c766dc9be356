"""`vpo ls`: the registered tasks with their reward dimensions, components, splits and sizes; with
``--models``, the trained tiny Maze policies of the zoo (method, training seed, whether bundled)."""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from vpo_harness.harness.app.commands._args import task_ref

if TYPE_CHECKING:
    from vpo_harness.benchmarks.base import Benchmark

EXAMPLES = """\
vpo ls
vpo ls --json | python3 -m json.tool
vpo ls --models
vpo ls --task ./coins.py:Coins    # a task of your own next to the built-in ones
"""


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("ls", help="list tasks with reward dimensions, components, splits and sizes")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--task", dest="tasks", action="append", default=[], type=task_ref, metavar="TASK",
                   help="also list a task of your own (module:Class or path/to/file.py[:Class]; repeatable); "
                        "installed packages' tasks (entry points vpo_harness.tasks) are listed anyway")
    p.add_argument("--models", action="store_true",
                   help="list the trained tiny Maze policies (zoo names, method, training seed, present or how to train)")
    return p


def list_models(as_json: bool) -> int:
    from vpo_harness.harness.core.models.zoo import trained_policies

    rows = trained_policies()
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'zoo name':<26}{'method':<12}{'seed':<6}status")
    for r in rows:
        status = (f"present ({r['note']})" if r.get("note") else "present") if r["present"] else f"missing ({r['how']})"
        print(f"{r['name']:<26}{r['method']:<12}{r['seed']:<6}{status}")
    return 0


def _local_size(task: Benchmark, split: str) -> int | None:
    """What a run here would get: a broken local copy reads as none, it must not hide the list."""
    try:
        return task.local_size(split)
    except Exception:
        return None


def _sizes(release: int | None, here: int | None) -> str:
    if here is None:
        return f"{release if release is not None else '?'}; hub only"
    if release == here:
        return str(here)
    return f"{release if release is not None else '?'}; here {here}"


def run(args: argparse.Namespace) -> int:
    from vpo_harness.benchmarks import get_task, task_names

    if getattr(args, "models", False):
        return list_models(args.json)
    rows = []
    asked = getattr(args, "tasks", [])
    for name in [*task_names(), *asked]:
        if name in asked:  # a task named on the command line: a broken one is the command's error
            get_task(name)
        try:
            t = get_task(name)
            comps = list(t.component_names)
            if t.variable_d:  # the reward length is the problem's, up to max_d: say so, not a fixed number
                comps = [f"{comps[0]}..{comps[t.max_d - 1]} (one per test)"] if comps else comps
            rows.append({"task": name, "d": t.d_label() if t.variable_d else t.d, "max_d": t.max_d,
                         "components": comps, "splits": dict(t.splits),
                         "here": {s: _local_size(t, s) for s in t.splits}})
        except Exception as exc:  # an unavailable task must not hide the others
            rows.append({"task": name, "error": f"{type(exc).__name__}: {exc}"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    w = max(15, *(len(r["task"]) + 2 for r in rows))
    print(f"{'task':<{w}}{'d':<20}{'components':<58}splits (size in the release; size here, offline)")
    for r in rows:
        if "error" in r:
            print(f"{r['task']:<{w}}unavailable: {r['error']}")
            continue
        comps = ", ".join(r["components"])
        if len(comps) > 55:
            comps = comps[:52] + "..."
        splits = ", ".join(f"{k} ({_sizes(v, r['here'][k])})" for k, v in r["splits"].items())
        print(f"{r['task']:<{w}}{str(r['d']):<20}{comps:<58}{splits}")
    return 0
