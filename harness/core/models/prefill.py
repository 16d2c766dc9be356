"""Assistant prefill: the request fields that make a chat model continue the start of its own answer.

One definition for every client that talks to an OpenAI-compatible chat server (the ``openai``
backend of ``vpo run``, the evolve loop's :class:`vpo_harness.search.llm.ChatLLM`) and for the local renderers:
the prefix travels as a final assistant message, and the body asks the server to continue that
message instead of opening a new one (``continue_final_message: true, add_generation_prompt: false``:
the fields vLLM's chat endpoint and ``vpo serve`` read; both true is a 400 there). The server returns
only the continuation, so the caller keeps the prefix and the recorded completion is
``prefix + continuation`` (:func:`join`).
"""
from __future__ import annotations

from typing import Any, Sequence

#: the chat request body fields that continue the last (assistant) message
CONTINUE_FIELDS: dict[str, bool] = {"continue_final_message": True, "add_generation_prompt": False}


def prefill_messages(messages: Sequence[dict[str, str]], prefix: str) -> list[dict[str, str]]:
    """The conversation with the prefix as an open final assistant turn (unchanged when no prefix)."""
    out = [dict(m) for m in messages]
    if prefix:
        out.append({"role": "assistant", "content": prefix})
    return out


def prefill_fields(messages: Sequence[dict[str, str]], prefix: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """``(messages, extra_body)`` of a chat request continuing ``prefix``; ``extra_body`` is empty
    without a prefix, so requests without one are byte-for-byte what they were."""
    return prefill_messages(messages, prefix), (dict(CONTINUE_FIELDS) if prefix else {})


def join(prefix: str, continuation: str) -> str:
    """The completion recorded for a prefilled request: what was given, then what was generated."""
    return prefix + continuation


def continuation(text: str, prefix: str) -> str:
    """What a backend generated after ``prefix`` (its :class:`Generation` text starts with it)."""
    if prefix and not text.startswith(prefix):
        raise ValueError(f"completion does not start with its prefix {prefix[:40]!r}")
    return text[len(prefix):]
