"""`vpo show`: a table of one or more runs' metrics (mean ± standard error)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("show", help="table of a run's metrics")
    p.add_argument("runs", nargs="+")
    p.add_argument("--json", action="store_true", help="print results.json")
    return p


def format_table(runs: Sequence[Any]) -> str:
    """best@k / pass@k / diversity of runs side by side (mean ± standard error)."""
    if not runs:
        return "(no runs)"
    ks = sorted({int(key.split("@")[1]) for r in runs for key in (r.results or {}).get("metrics", {})
                 if key.startswith("best@")})
    head = ["run", "task", "pool"] + [f"best@{k}" for k in ks] + [f"pass@{k}" for k in ks[:1] + ks[-1:]] + ["diversity", "errors"]
    lines = []
    for r in runs:
        res = r.results or {}
        mt = res.get("metrics", {})

        def cell(key: str) -> str:
            v = mt.get(key)
            if not v or v.get("mean") is None or v["mean"] != v["mean"]:
                return "-"
            return f"{v['mean']:.3f}±{v['stderr']:.3f}"

        pass_keys = [f"pass@{k}" for k in ks[:1] + ks[-1:]]
        lines.append([r.path.name, res.get("task", r.config.get("task", "?")),
                      f"{res.get('n', '?')}x{res.get('m', '?')}"]
                     + [cell(f"best@{k}") for k in ks] + [cell(k) for k in pass_keys]
                     + [cell("diversity"), str(res.get("n_errors", "-"))])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*ln) for ln in lines])


def run(args: argparse.Namespace) -> int:
    from harness.store import load_run

    loaded = [load_run(r) for r in args.runs]
    for r in loaded:
        if r.results is None:
            print(f"{r.path}: no results.json yet (interrupted run? re-run the same command to resume)",
                  file=sys.stderr)
    if args.json:
        print(json.dumps([r.results for r in loaded], indent=2))
    else:
        print(format_table(loaded))
    return 0
