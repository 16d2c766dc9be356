"""Reading an OpenAI-compatible server's reply: its choices, in order, and its token usage.

Why a module of its own: what counts as a reply we can score is one rule, and a reply outside it
(no choices, a choice without text, a choice that is not an object) must become
:class:`GarbageResponse`, which the retry policy retries like a 5xx, never an empty answer scored as
a silent zero.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class GarbageResponse(Exception):
    """A 2xx reply we cannot read (bad JSON, no choices). Retried like a 5xx: usually transient."""


class TooFewChoices(Exception):
    """The server ignored ``n`` (under ``use_n=auto``): the request is redone per chain."""


class Choice(NamedTuple):
    """One choice of a reply: its text, the server's finish reason, and any reasoning split out."""

    text: str
    finish: Any
    reasoning: str | None


def count(value: Any) -> int | None:
    """A token count from a reply: a non-negative integer, else unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_choices(resp: Any, mode: str, n: int, use_n: bool | str) -> list[Choice]:
    """The first ``n`` choices of ``resp`` in index order. ``mode``: ``chat`` reads
    ``message.content`` (and the reasoning a vLLM/SGLang reasoning parser split out), ``completions``
    reads ``text``. Fewer than ``n`` choices raise :class:`TooFewChoices` under ``use_n="auto"`` (the
    server does not do ``n``), else :class:`GarbageResponse`."""
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list) or not choices:
        raise GarbageResponse(f"no choices in response: {str(resp)[:200]!r}")
    try:
        ordered = sorted(choices, key=lambda ch: ch.get("index") if isinstance(ch.get("index"), int) else 0)
        out = []
        for ch in ordered:
            reasoning = None
            finish = ch.get("finish_reason")
            if mode == "chat":
                message = ch.get("message") or {}
                text = message.get("content")
                # vLLM/SGLang reasoning parsers split thinking out of content; keep it for audits
                reasoning = message.get("reasoning_content") or message.get("reasoning")
            else:
                text = ch.get("text")
            if text is None:
                # a 200 without text is not an empty answer: scoring it would be a silent zero
                raise GarbageResponse(f"choice {ch.get('index', '?')} has null "
                                      f"{'message.content' if mode == 'chat' else 'text'} "
                                      f"(finish_reason {finish!r})")
            if not isinstance(text, str):
                raise GarbageResponse(f"choice text is {type(text).__name__}")
            out.append(Choice(text, finish, reasoning if isinstance(reasoning, str) else None))
    except (AttributeError, TypeError) as exc:  # a choice or message that is not an object
        raise GarbageResponse(f"malformed choices: {exc}") from exc
    if len(out) < n:
        if use_n == "auto" and n > 1:
            raise TooFewChoices()
        raise GarbageResponse(f"asked for n={n}, got {len(out)} choices")
    return out[:n]


def usage(resp: dict[str, Any]) -> tuple[int | None, int | None]:
    """(prompt tokens, completion tokens) as the reply's ``usage`` gives them; None where it does not."""
    got = resp.get("usage")
    got = got if isinstance(got, dict) else {}
    return count(got.get("prompt_tokens")), count(got.get("completion_tokens"))
