"""Turning chat messages into the text a completion-only model sees."""
from __future__ import annotations

from typing import Any


def render_messages(messages: list[dict[str, str]], tokenizer: Any | None = None) -> str:
    """The model's own chat template when it has one (instruct models, our tiny checkpoints), else a
    plain concatenation: raw LMs then see exactly the prompt text, nothing invented."""
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in messages) + "\n\n"
