"""`vpo import LOG --out RUN`: another tool's repeated samples as a run folder, scored by that tool.

Source: an Inspect eval log (``.eval`` or ``.json``, epochs = repeated samples): each sample a
problem, each epoch a chain, each named score a reward component. Then `vpo show / compare / plot /
report / view RUN` work on it as on our own runs.
"""
from __future__ import annotations

import argparse

EXAMPLES = """\\
vpo import logs/2026-01-01T00-00-00_arith.eval --out runs/arith-inspect
vpo show runs/arith-inspect --metrics      # best@k / pass@k / diversity from Inspect's own scores
"""


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("import", help="another tool's samples (an Inspect eval log) as a run folder")
    p.add_argument("log", metavar="LOG", help="an Inspect eval log (.eval or .json)")
    p.add_argument("--out", required=True, help="the run folder to write (new or empty)")
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.app.import_inspect import import_inspect
    from vpo_harness.reports.pools import load_pools

    folder = import_inspect(args.log, args.out)
    pools = load_pools(folder)
    partial = (pools.results or {}).get("partial_reason")
    print(f"wrote {folder}: {len(pools.problem_ids)} problems, {sum(s.size for s in pools.scalars)} scored samples, "
          f"components {', '.join(pools.component_names() or [])}" + (f" (partial: {partial})" if partial else ""))
    return 0
