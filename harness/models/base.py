"""The backend protocol: chat prompts in, completions out, streamed as they finish.

The runner writes each finished chain to disk as soon as the backend yields it, so a backend must
yield incrementally (not collect everything and return at the end) for crash-resume to lose little.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 1024
    stop: tuple[str, ...] = ()
    chat_template_args: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class GenRequest:
    """k chains of one prompt. ``seeds[i]`` is the seed of chain ``chain_indices[i]``."""

    problem_id: str
    messages: list[dict[str, str]]
    chain_indices: tuple[int, ...]
    seeds: tuple[int, ...]


@dataclass
class Generation:
    """One finished chain (or its failure: ``error`` set and ``text`` empty)."""

    problem_id: str
    chain_index: int
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    latency_s: float | None = None
    error: str | None = None
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    """A model that samples completions for chat prompts."""

    name: str = "base"

    @abstractmethod
    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        """Yield one Generation per (request, chain index), in completion order."""

    def describe(self) -> dict[str, Any]:
        """What goes into the run's config.json to reproduce the model side."""
        return {"backend": self.name}

    def close(self) -> None:
        """Release servers, engines and threads."""

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
