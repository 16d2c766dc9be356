"""`vpo evolve --select pareto`: parents kept and drawn on the Pareto front of the reward components.

Why: scalar selection (OpenEvolve's, ``--select scalar``) collapses each candidate's reward vector to
one number before the search uses it, so a candidate that opens a new trade-off (more diamonds,
fewer gold) is kept only if its scalar is high. VPO's premise is that good candidates trade the
components off; this archive keeps every candidate that no other candidate beats on every component
(:func:`~vpo_harness.harness.core.metrics.nondominated`, ties kept), and each draw covers the front
the way VPO's objective weighs it: a fresh Dirichlet(1) weighting of the components, and the member
best under it (ties drawn uniformly). Inspirations are other members, drawn uniformly.

Determinism: every draw takes its randomness from the stream it is handed (the problem database's
own ``random.Random``, so the engine's fixed schedule of draws and admissions fixes every pick), and
members are kept in admission order, which the schedule fixes too. The archive's state is a list of
plain dicts, saved with each checkpoint and loaded on resume.
"""
from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.core.metrics import nondominated

#: how `vpo evolve` picks parents: OpenEvolve's scalar-score selection, or this module's front
SELECTIONS = ("scalar", "pareto")


@dataclass(frozen=True)
class Member:
    """A candidate on the front: what a draw needs without the database (which may evict it)."""

    id: str
    code: str
    reward: tuple[float, ...]
    generation: int
    metrics: dict[str, float] = field(default_factory=dict)


class ParetoArchive:
    """The non-dominated candidates of one problem's search, in admission order."""

    def __init__(self, members: Sequence[Member] = ()):
        self.members: list[Member] = list(members)

    def __len__(self) -> int:
        return len(self.members)

    def add(self, m: Member) -> bool:
        """Admit ``m`` unless another member dominates it or holds the same answer; drop the members it
        dominates. Returns whether it joined."""
        if any(x.code == m.code for x in self.members):
            return False
        rewards = np.array([x.reward for x in self.members] + [m.reward], dtype=float)
        keep = nondominated(rewards)
        if not keep[-1]:
            return False
        self.members = [x for x, k in zip(self.members, keep[:-1]) if k] + [m]
        return True

    def draw(self, rng: random.Random, n_inspirations: int) -> tuple[Member, list[Member]]:
        """A parent best under a Dirichlet(1) weighting of the components (drawn from ``rng`` as
        normalised exponentials), ties drawn uniformly, and up to ``n_inspirations`` other members
        drawn uniformly without replacement."""
        if not self.members:
            raise ValueError("the Pareto archive is empty: nothing to draw a parent from")
        d = len(self.members[0].reward)
        w = np.array([-math.log(1.0 - rng.random()) for _ in range(d)])
        w /= w.sum()
        values = np.array([x.reward for x in self.members], dtype=float) @ w
        best = [i for i, v in enumerate(values) if v >= values.max() - 1e-12]
        parent = self.members[best[0] if len(best) == 1 else rng.choice(best)]
        others = [x for x in self.members if x.id != parent.id]
        inspirations = rng.sample(others, min(max(0, int(n_inspirations)), len(others)))
        return parent, inspirations

    def state(self) -> list[dict[str, Any]]:
        """The members as plain dicts (a checkpoint's ``front``)."""
        return [{**asdict(m), "reward": list(m.reward)} for m in self.members]

    @classmethod
    def from_state(cls, state: Sequence[dict[str, Any]]) -> "ParetoArchive":
        return cls([Member(id=d["id"], code=d["code"], reward=tuple(float(x) for x in d["reward"]),
                           generation=int(d["generation"]), metrics=dict(d.get("metrics") or {})) for d in state])
