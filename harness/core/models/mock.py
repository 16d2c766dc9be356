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

A prefilled request (``GenRequest.prefix``) is continued in the same format: the answer the prefix
left open gets more words and its closing tag, then the remaining answers of the set follow.

model_args: ``length`` (words per answer, default 12), ``vocab`` (``|``-separated, overrides the
mode's), ``latency_s`` (sleep per chain, to imitate a server), ``fail_every`` (every k-th chain comes
back as an error, to exercise error paths).
"""
from __future__ import annotations

import random
import re
import time
from typing import Any, Iterator, Sequence

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig

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


def open_answer(prefix: str, stem: str | None) -> int:
    """Which answer a prefix leaves open: i when ``<stem_i>`` (or ``<answer>`` as 1) was opened and not
    closed, 0 when none is open (then the answers after the last closed one follow)."""
    tags = [(m.group(1) == "/", int(m.group(2) or 1)) for m in
            re.finditer(rf"<(/?)(?:{re.escape(stem)}_(\d+)|answer)>" if stem else r"<(/?)answer()>", prefix)]
    if tags and not tags[-1][0]:
        return tags[-1][1]
    return 0


def _closed(prefix: str, stem: str | None) -> int:
    """The highest answer number the prefix closes (0: none)."""
    found = [int(i) for i in re.findall(rf"</{re.escape(stem)}_(\d+)>", prefix)] if stem else []
    return max(found, default=1 if not stem and "</answer>" in prefix else 0)


class MockBackend(Backend):
    name = "mock"
    supports_prefill = True

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

    def text_for(self, messages: list[dict[str, str]], seed: int, prefix: str = "") -> str:
        """The chain's text; with a prefix, prefix + a continuation in the same format: the open
        answer gets more words and its closing tag, then the answers after it follow."""
        if self.mode == "echo":
            return prefix + (messages[-1]["content"] if messages else "")
        rng = random.Random(seed)
        stem, m = answer_format(messages)
        sep = ", " if self.mode == "moves" else " "
        answers = [sep.join(rng.choice(self.vocab) for _ in range(rng.randint(1, self.length))) for _ in range(m)]

        def tag(i: int, a: str) -> str:
            return f"<answer>{a}</answer>" if stem is None else f"<{stem}_{i}>{a}</{stem}_{i}>"

        if not prefix:
            return "\n".join(tag(i, a) for i, a in enumerate(answers, 1))
        i = open_answer(prefix, stem)
        if i:
            head = (sep if prefix.rstrip() and not prefix.rstrip().endswith(">") else "") + answers[i - 1]
            head += "</answer>" if stem is None else f"</{stem}_{i}>"
            rest = range(i + 1, m + 1)
        else:
            head, rest = "", range(_closed(prefix, stem) + 1, m + 1)
        return prefix + head + "".join("\n" + tag(j, answers[j - 1]) for j in rest)

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
                text = self.text_for(req.messages, seed, req.prefix)
                yield Generation(req.problem_id, c, text, prompt_tokens=sum(len(m["content"].split()) for m in req.messages),
                                 completion_tokens=len(text[len(req.prefix):].split()), finish_reason="stop",
                                 latency_s=time.perf_counter() - t0, prefix=req.prefix,
                                 prefix_tokens=len(req.prefix.split()) if req.prefix else None)
