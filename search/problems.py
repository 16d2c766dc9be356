"""``--problems``: which problems an evolve run works on.

``all`` (the split, after ``--limit``), ``ID,ID,...``, or ``hardest:N@RUN[,RUN2...]``: the N problems
with the lowest best@k in existing run folders (k = the largest pool every problem there has; with
several runs, the mean over them), ties broken by id.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from vpo_harness.benchmarks import Problem


def hardest(runs: Sequence[str | Path], n: int, task_name: str) -> list[str]:
    """Ids of the ``n`` problems with the lowest best@k (mean over ``runs``), ties by id."""
    from vpo_harness.harness.core.metrics import best_at_k
    from vpo_harness.harness.core.store import RunStore, latest_rows

    totals: dict[str, list[float]] = {}
    for run in runs:
        folder = Path(run)
        cfg_path = folder / "config.json"
        if not cfg_path.is_file():
            raise FileNotFoundError(f"{folder}: not a run folder (no config.json) in --problems hardest:N@RUN")
        cfg = RunStore(folder).read_config()  # a wrong-typed field is one line naming it
        ident = cfg.get("identity")
        run_task = (ident.get("task") or {}).get("name") if isinstance(ident, dict) else cfg.get("task")
        if run_task != task_name:
            raise ValueError(f"{folder}: is a {run_task!r} run, not {task_name!r} (--problems hardest:N@RUN)")
        pools: dict[str, list[float]] = {}
        for row in latest_rows(folder):
            if not row.get("error"):
                pools.setdefault(row["problem_id"], []).extend(float(s) for s in row.get("scalars") or [])
        if not pools:
            raise ValueError(f"{folder}: has no scored rows to rank problems by")
        ids = sorted(pools)
        k = min(len(pools[i]) for i in ids)
        if k < 1:
            raise ValueError(f"{folder}: a problem has an empty pool; cannot rank by best@k")
        vals = best_at_k([np.asarray(pools[i]) for i in ids], k)
        for i, v in zip(ids, vals):
            totals.setdefault(i, []).append(float(v))
    common = [i for i, v in totals.items() if len(v) == len(runs)]
    ranked = sorted(common, key=lambda i: (float(np.mean(totals[i])), i))
    if n > len(ranked):
        raise ValueError(f"--problems hardest:{n}: the run(s) hold only {len(ranked)} problems")
    return ranked[:n]


def select(spec: str, problems: Sequence[Problem], task_name: str) -> list[Problem]:
    """Apply a ``--problems`` spec to the loaded split (order: as ranked / as given / split order)."""
    by_id = {p.id: p for p in problems}
    spec = (spec or "all").strip()
    if spec == "all":
        return list(problems)
    if spec.startswith("hardest:"):
        body = spec[len("hardest:"):]
        if "@" not in body:
            raise ValueError(f"--problems {spec!r}: expected hardest:N@RUN_FOLDER")
        count, runs = body.split("@", 1)
        try:
            n = int(count)
        except ValueError:
            raise ValueError(f"--problems {spec!r}: N must be an integer") from None
        if n < 1:
            raise ValueError(f"--problems {spec!r}: N must be >= 1")
        ids = hardest([r for r in runs.split(",") if r], n, task_name)
    else:
        ids = [x.strip() for x in spec.split(",") if x.strip()]
    missing = [i for i in ids if i not in by_id]
    if missing:
        known = ", ".join(list(by_id)[:3])
        raise ValueError(f"--problems: {len(missing)} id(s) not in the loaded split, e.g. {missing[0]!r} "
                         f"(known ids look like {known}; check --split/--limit)")
    return [by_id[i] for i in ids]
