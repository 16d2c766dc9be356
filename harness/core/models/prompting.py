"""Turning chat messages into the text a completion-only model sees."""
from __future__ import annotations

import logging
from typing import Any


def render_messages(messages: list[dict[str, str]], tokenizer: Any | None = None,
                    template_args: dict[str, Any] | None = None, prefix: str = "") -> str:
    """The model's own chat template when it has one (instruct models, our tiny checkpoints), else a
    plain concatenation: raw LMs then see exactly the prompt text, nothing invented.

    ``prefix`` (assistant prefill): the template renders it as an open final assistant turn
    (``continue_final_message=True, add_generation_prompt=False``), so generation continues it; the
    plain concatenation ends with it. A template that cannot render an open assistant turn is a
    one-line ValueError naming the problem, not transformers' traceback.

    ``template_args`` go to the Jinja template as variables (Qwen3's ``enable_thinking``); a template
    that does not use a variable ignores it, as transformers and vLLM do. Without a template they have
    nothing to act on: that is said once on stderr, so a protocol that did not apply is not silent."""
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        if not prefix:
            return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                 **(template_args or {}))
        from vpo_harness.harness.core.models.prefill import prefill_messages

        try:
            return tokenizer.apply_chat_template(prefill_messages(messages, prefix), tokenize=False,
                                                 add_generation_prompt=False, continue_final_message=True,
                                                 **(template_args or {}))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"this model's chat template cannot continue an assistant prefix "
                             f"({str(exc).splitlines()[0][:200]})") from None
    if template_args:
        _warn_once(f"[vpo] chat template arguments {_fmt(template_args)} have no effect: the model has no chat "
                   "template (it sees the plain prompt text)")
    return "\n\n".join(m["content"] for m in messages) + "\n\n" + prefix


def rendered(messages: list[dict[str, str]], tokenizer: Any | None, template_args: dict[str, Any] | None = None,
             prefix: str = "") -> tuple[str, bool]:
    """:func:`render_messages` and whether the tokenizer should add special tokens when encoding it
    (not when a chat template already wrote them): the one rule by which a prompt's tokens are counted,
    for generation (hf) and for the context check of a served model (served_defaults)."""
    templated = bool(getattr(tokenizer, "chat_template", None))
    return render_messages(messages, tokenizer, template_args, prefix=prefix), not templated


def prompt_tokens(messages: list[dict[str, str]], tokenizer: Any, template_args: dict[str, Any] | None = None,
                  prefix: str = "") -> int:
    """The length in tokens of the prompt ``tokenizer``'s model sees for ``messages``."""
    text, special = rendered(messages, tokenizer, template_args, prefix)
    return len(tokenizer(text, add_special_tokens=special)["input_ids"])


_WARNED: set[str] = set()
_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)


def _warn_once(msg: str) -> None:
    if msg not in _WARNED:
        _WARNED.add(msg)
        _log.warning(msg)


def _fmt(args: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(args.items()))
