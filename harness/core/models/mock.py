"""``mock:`` backend: seeded random completions in the task's answer format, no model at all.

For benchmarks of the harness itself, examples and a first run on a machine without weights:

    vpo run --task maze --model mock:moves --limit 5 -n 4 -m 3

It reads the answer format off the prompt: an m-answer prompt names its numbered tags
(``<route_1>...</route_m>``), so the mock writes m answers in them; a single-answer prompt gets one
``<answer>...</answer>``. Each answer is ``length`` words drawn from ``vocab`` with an RNG seeded by the
chain seed, so chains differ, reruns are identical and seeds visibly matter. Modes:

- ``mock:moves``: vocabulary ``UP|DOWN|LEFT|RIGHT``: well-formed Maze routes, but random walks that
  almost never reach the exit, so they score ~0 (it exercises the harness; it is not a policy);
- ``mock:words``: a small word list (text tasks: well-formed but wrong answers);
- ``mock:echo``: the prompt's last message, verbatim (prompt plumbing checks).

model_args: ``length`` (words per answer, default 12), ``vocab`` (``|``-separated, overrides the
mode's), ``latency_s`` (sleep per chain, to imitate a server), ``fail_every`` (every k-th chain comes
back as an error, to exercise error paths).
"""
from __future__ import annotations

import random
import re
import time
from typing import Any, Iterator, Sequence

from harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig

VOCABS = {"moves": ("UP", "DOWN", "LEFT", "RIGHT"),
          "words": ("alpha", "bravo", "paris", "1912", "yes", "no", "river", "blue", "seven", "42")}
MODES = (*VOCABS, "echo")
_NUMBERED = re.compile(r"<([A-Za-z]\w*?)_(\d+)>")


def answer_format(messages: list[dict[str, str]]) -> tuple[str | None, int]:
    """(tag stem, m) of the numbered tags a prompt asks for; (None, 1) for a single-answer prompt."""
    found = _NUMBERED.findall(messages[-1]["content"]) if messages else []
    if not found:
        return None, 1
    stem = found[-1][0]
    return stem, max(int(i) for s, i in found if s == stem)


class MockBackend(Backend):
    name = "mock"

    def __init__(self, mode: str = "moves", *, length: int = 12, vocab: str | None = None,
                 latency_s: float = 0.0, fail_every: int = 0):
        if mode not in MODES:
            raise ValueError(f"unknown mock mode {mode!r}; known: {', '.join(MODES)} (e.g. mock:moves)")
        if length < 1:
            raise ValueError(f"mock length must be >= 1, got {length}")
        self.mode, self.length, self.latency_s, self.fail_every = mode, int(length), float(latency_s), int(fail_every)
        self.vocab = tuple(v for v in vocab.split("|") if v) if vocab else VOCABS.get(mode, ())
        self._served = 0

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "mode": self.mode, "length": self.length, "vocab": list(self.vocab),
                "latency_s": self.latency_s, "fail_every": self.fail_every}

    def text_for(self, messages: list[dict[str, str]], seed: int) -> str:
        if self.mode == "echo":
            return messages[-1]["content"] if messages else ""
        rng = random.Random(seed)
        stem, m = answer_format(messages)
        sep = ", " if self.mode == "moves" else " "
        answers = [sep.join(rng.choice(self.vocab) for _ in range(rng.randint(1, self.length))) for _ in range(m)]
        if stem is None:
            return f"<answer>{answers[0]}</answer>"
        return "\n".join(f"<{stem}_{i}>{a}</{stem}_{i}>" for i, a in enumerate(answers, 1))

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            for c, seed in zip(req.chain_indices, req.seeds):
                t0 = time.perf_counter()
                if self.latency_s:
                    time.sleep(self.latency_s)
                self._served += 1
                if self.fail_every and self._served % self.fail_every == 0:
                    yield Generation(req.problem_id, c, "", error="mock failure (fail_every)",
                                     latency_s=time.perf_counter() - t0)
                    continue
                text = self.text_for(req.messages, seed)
                yield Generation(req.problem_id, c, text, prompt_tokens=sum(len(m["content"].split()) for m in req.messages),
                                 completion_tokens=len(text.split()), finish_reason="stop",
                                 latency_s=time.perf_counter() - t0)
