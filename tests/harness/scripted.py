"""A scripted in-process backend for runner tests: deterministic text from the chain seed."""
from __future__ import annotations

import random
from typing import Iterator, Sequence

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig

MOVES = ["UP", "DOWN", "LEFT", "RIGHT"]


class ScriptedBackend(Backend):
    """Random Maze routes seeded by the chain seed; fails chains listed in ``fail`` (by index)."""

    name = "scripted"

    def __init__(self, m: int = 1, fail: Sequence[int] = (), length: int = 30):
        self.m, self.fail, self.length = m, set(fail), length
        self.calls: list[tuple[str, int]] = []

    def text_for(self, seed: int) -> str:
        rng = random.Random(seed)
        routes = [", ".join(rng.choice(MOVES) for _ in range(self.length)) for _ in range(self.m)]
        if self.m == 1:
            return f"<answer>{routes[0]}</answer>"
        return "\n".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(routes, 1))

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            for c, s in zip(req.chain_indices, req.seeds):
                self.calls.append((req.problem_id, c))
                if c in self.fail:
                    yield Generation(req.problem_id, c, "", error="scripted failure", attempts=3)
                else:
                    yield Generation(req.problem_id, c, self.text_for(s), completion_tokens=self.length)
