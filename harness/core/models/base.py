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
    #: keyword arguments of the model's chat template (``(("enable_thinking", False),)``), sorted by key:
    #: a tuple keeps the config frozen and hashable. Every backend's generate honours them (hf/vllm pass
    #: them to the template, openai sends them as ``chat_template_kwargs``); see :func:`template_kwargs`.
    chat_template_args: tuple[tuple[str, Any], ...] = ()


def chat_template_args(args: "dict[str, Any] | Sequence[tuple[str, Any]] | None") -> tuple[tuple[str, Any], ...]:
    """``{"enable_thinking": False}`` (or pairs) -> the sorted pairs :class:`SamplingConfig` holds."""
    if not args:
        return ()
    items = args.items() if isinstance(args, dict) else args
    out = sorted((str(k), v) for k, v in items)
    keys = [k for k, _ in out]
    if len(set(keys)) != len(keys):
        raise ValueError(f"chat template argument named twice in {args!r}")
    return tuple(out)


def template_kwargs(sampling: SamplingConfig) -> dict[str, Any]:
    """The template arguments as keyword arguments (empty when none are set)."""
    return dict(sampling.chat_template_args)


@dataclass(frozen=True)
class GenRequest:
    """k chains of one prompt. ``seeds[i]`` is the seed of chain ``chain_indices[i]``.

    ``prefix``: the start of the assistant's answer (prefill). The model continues it as its own
    turn (no new generation prompt after it) and the Generation's ``text`` is prefix + continuation,
    so a task parses and scores the whole answer. Empty: an ordinary request."""

    problem_id: str
    messages: list[dict[str, str]]
    chain_indices: tuple[int, ...]
    seeds: tuple[int, ...]
    prefix: str = ""


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
    #: the request's prefix (``text`` starts with it) and its length in tokens where the backend can
    #: count them; ``completion_tokens`` counts the continuation only
    prefix: str = ""
    prefix_tokens: int | None = None


class Backend(ABC):
    """A model that samples completions for chat prompts."""

    name: str = "base"
    #: whether generate honours ``GenRequest.prefix``; a backend that does not is refused by
    #: :func:`check_prefill` before any request goes out (a prefix silently dropped is a wrong run)
    supports_prefill: bool = False

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


def check_args(kind: str, args: dict[str, Any], valid: list[str]) -> None:
    """Unknown ``--model-args`` names are one line listing the valid ones (not a TypeError traceback)."""
    unknown = sorted(set(args) - set(valid))
    if unknown:
        raise ValueError(f"unknown --model-args {', '.join(unknown)} for the {kind} backend; "
                         f"valid: {', '.join(sorted(valid))}")


def check_prefill(backend: Backend, requests: Sequence[GenRequest]) -> None:
    """Refuse, in one line, prefilled requests to a backend that cannot continue a message."""
    if not getattr(backend, "supports_prefill", False) and any(r.prefix for r in requests):
        raise ValueError(f"the {backend.name} backend cannot continue an assistant prefix (prefill); "
                         "use hf, vllm, openai (a vLLM or vpo serve server) or mock")
