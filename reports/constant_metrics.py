"""Metrics a task makes constant by construction, left out of the tables that would print them as a
column of zeros.

A task declares whether one answer can pass at all (``Benchmark.pass_reachable``; Maze cannot: the
generator keeps only mazes where no route collects every reward component). Where it cannot, every
metric that counts passes (pass@k, pass^k, Cover@tau, the authors' pass@k per solution and per chain)
is 0 on every run of that task, so `vpo show`, `vpo compare` and `vpo view` leave them out and print
one note that says which and why; ``--all-metrics`` keeps them. Read from the task's declaration, not
from the numbers: a run whose policies merely never pass keeps its pass columns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

#: how the metrics that count passes are named (display names: pass@4, pass^4, cover@0.5, pass@1[chain])
PASS_PREFIXES = ("pass@", "pass^", "cover@")
#: the flag that keeps them, named in the note
FLAG = "--all-metrics"


@dataclass(frozen=True)
class Constant:
    """What a table leaves out: the metrics counting passes, because of ``tasks`` (``why``: the task's own
    reason)."""

    tasks: tuple[str, ...]
    why: str

    def drops(self, metric: str) -> bool:
        """True for a metric (display name) that this leaves out."""
        return metric.startswith(PASS_PREFIXES)

    def note(self, flag: bool = True) -> str:
        """The one line a table prints about it."""
        return (f"pass@k, pass^k and cover@tau left out: 0 by construction on {', '.join(self.tasks)} "
                f"({self.why})" + (f"; {FLAG} shows them" if flag else ""))


def pass_unreachable(task: str) -> str | None:
    """The reason no answer of ``task`` can pass, as the task declares it; None when one can (or the
    task cannot be found: its pass metrics are then shown, as for any task)."""
    from vpo_harness.benchmarks import task_class

    try:
        cls = task_class(str(task))
    except (KeyError, ImportError, ValueError, OSError):
        return None
    if getattr(cls, "pass_reachable", True):
        return None
    return str(getattr(cls, "pass_unreachable_why", "") or "no answer can pass")


def constant_metrics(tasks: Iterable[str | None]) -> Constant | None:
    """What tables of runs of ``tasks`` leave out: the pass metrics when no task among them can pass
    (a table holding one task where passes happen keeps them for every row); None otherwise."""
    names = list(dict.fromkeys(str(t) for t in tasks if t))
    if not names:
        return None
    why = [pass_unreachable(t) for t in names]
    if any(w is None for w in why):
        return None
    return Constant(tuple(names), "; ".join(dict.fromkeys(w for w in why if w)))
