"""The OpenAI wire format of `vpo serve`: request bodies checked field by field, replies and stream chunks.

Pure functions, no I/O, so every rule is testable without a socket. A request either becomes a
:class:`Job` or raises :class:`BadRequest` naming the offending field (``param`` in OpenAI's error
object), because a silently ignored or clamped field is a wrong experiment nobody notices: a client
that asks for ``top_p=7`` or ``logprobs`` must hear that it did not get it.

Fields that change sampling in a way the local backends cannot honour (penalties, logit bias, tools,
log-probabilities, ``best_of``...) are accepted only at their neutral value. Keys this server does not
know at all are ignored, as vLLM does, so newer clients that send extra metadata keep working.
"""
from __future__ import annotations

import math
import secrets
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from vpo_harness.harness.core.models.base import SamplingConfig
from vpo_harness.harness.core.seeding import derive_seed

#: completion budget when a request names none (capped at the model's context)
DEFAULT_MAX_TOKENS = 512
MAX_N = 128
#: the largest budget accepted when the backend reports no context length (no model has 2**20 tokens)
MAX_TOKENS_CAP = 1 << 20
MAX_STOP = 16
ROLES = ("system", "developer", "user", "assistant", "tool")

#: field -> the values that mean "off"; anything else is refused with a 400 naming the field
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "presence_penalty": (None, 0, 0.0),
    "frequency_penalty": (None, 0, 0.0),
    "repetition_penalty": (None, 1, 1.0),
    "logit_bias": (None, {}),
    "tools": (None, []),
    "functions": (None, []),
    "tool_choice": (None, "none", "auto"),
    "echo": (None, False),
    "suffix": (None, ""),
    "top_k": (None, 0, -1),
    "min_p": (None, 0, 0.0),
}


class BadRequest(ValueError):
    """A 400 (or ``status``) reply: ``param`` is the field OpenAI's error object names."""

    def __init__(self, param: str | None, message: str, status: int = 400, code: str | None = None):
        super().__init__(f"field {param!r}: {message}" if param else message)
        self.param, self.status, self.code = param, status, code


@dataclass
class Job:
    kind: str                         # "chat" | "completion"
    payload: Any                      # messages list or prompt string
    seeds: list[int]
    sampling: SamplingConfig
    stream: bool = False
    include_usage: bool = False
    future: Future = field(default_factory=Future)
    #: assistant prefill (``continue_final_message``): the final assistant message's text, taken out
    #: of ``payload``; the model continues it and the reply holds the continuation only, as vLLM's
    prefix: str = ""


#: a request's ``seed`` is a signed 64-bit integer that is not negative: torch's generators take at most
#: 64 bits, and vLLM reads -1 as "no seed", which would make a seeded-looking request unrepeatable
SEED_RANGE = (0, 2**63 - 1)


def choice_seeds(seed: Any, n: int) -> list[int]:
    """Choice 0 of a request with seed s samples with s, choice i with a seed derived from (s, i).

    The backends' generators are seeded with 31 bits; a seed of 2**31 or more is hashed down to 31 bits
    rather than masked, so that 2**31 and 0 are not the same request."""
    if seed is None:
        base = secrets.randbelow(2**31)
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise BadRequest("seed", f"expected an integer, got {seed!r}")
    elif not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise BadRequest("seed", f"expected an integer in 0..2**63-1, got {seed!r}")
    else:
        base = seed if seed < 2**31 else derive_seed(seed, "seed", 0)
    return [base if i == 0 else derive_seed(base, "choice", i) for i in range(n)]


def _number(body: dict[str, Any], name: str, default: float, lo: float, hi: float, lo_open: bool = False) -> float:
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadRequest(name, f"expected a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
        bounds = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
        raise BadRequest(name, f"expected a number in {bounds}, got {v!r}")
    return v


def _integer(body: dict[str, Any], name: str) -> int | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(name, f"expected an integer, got {v!r}")
    return v


def encodable(text: str, where: str) -> str:
    """``text``, or :class:`BadRequest` naming ``where`` when it holds a lone surrogate (``"\\ud800"``
    in the JSON): no UTF-8 string holds one, so no tokenizer can encode it, and found only inside a
    batch it used to fail the whole request with a 500."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(where, f"holds a lone surrogate {ascii(text[exc.start])} at character {exc.start + 1}, "
                                "which UTF-8 (and so the tokenizer) cannot encode") from None
    return text


def _text_content(c: Any, where: str) -> str:
    if isinstance(c, str):
        return encodable(c, where)
    if isinstance(c, list):  # content parts: text only (no image/audio backends here)
        out = []
        for j, p in enumerate(c):
            if not (isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str)):
                raise BadRequest(f"{where}[{j}]", "only {\"type\": \"text\", \"text\": str} content parts are supported")
            out.append(encodable(p["text"], f"{where}[{j}].text"))
        return "".join(out)
    raise BadRequest(where, f"expected a string or a list of text parts, got {type(c).__name__}")


def _messages(body: dict[str, Any]) -> list[dict[str, str]]:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise BadRequest("messages", "expected a non-empty list of {role, content} objects")
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise BadRequest(f"messages[{i}]", f"expected an object, got {type(m).__name__}")
        role = m.get("role")
        if role not in ROLES:
            raise BadRequest(f"messages[{i}].role", f"expected one of {', '.join(ROLES)}, got {role!r}")
        content = m.get("content")
        if content is None and role == "assistant":  # an assistant turn that only called tools
            content = ""
        out.append({"role": role, "content": _text_content(content, f"messages[{i}].content")})
    return out


def _prompt(body: dict[str, Any]) -> str:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise BadRequest("prompt", "expected a string (or a list holding one string)")
    return encodable(prompt, "prompt")


def _stop(body: dict[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("stop", "expected a string or a list of strings")
    if len(stop) > MAX_STOP:
        raise BadRequest("stop", f"at most {MAX_STOP} stop strings, got {len(stop)}")
    return tuple(encodable(s, f"stop[{i}]") for i, s in enumerate(stop) if s)


def _template_args(body: dict[str, Any], default: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The server's ``--chat-template-args`` with the request's ``chat_template_kwargs`` over them."""
    extra = body.get("chat_template_kwargs")
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise BadRequest("chat_template_kwargs", f"expected an object, got {type(extra).__name__}")
    for k, v in extra.items():
        # scalars only: SamplingConfig is frozen and hashable, and batches group requests by it
        if not (v is None or isinstance(v, (str, int, float, bool))):
            raise BadRequest(f"chat_template_kwargs.{k}", f"expected a string, number, boolean or null, got {type(v).__name__}")
        if isinstance(v, str):
            encodable(v, f"chat_template_kwargs.{k}")
    return tuple(sorted({**default, **extra}.items()))


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    v = body.get(name)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise BadRequest(name, f"expected a boolean, got {v!r}")
    return v


def _prefill(body: dict[str, Any], messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], str]:
    """``(messages, prefix)``: with ``continue_final_message`` the last (assistant) message becomes
    the prefix the model continues. vLLM's rules: it excludes ``add_generation_prompt``, and it needs
    an assistant message last; a prompt rendered with no generation prompt and nothing to continue is
    not something the backends here can do, so that is refused too."""
    cont = _flag(body, "continue_final_message", False)
    gen_prompt = _flag(body, "add_generation_prompt", True)
    if cont and gen_prompt:
        raise BadRequest("continue_final_message", "continue_final_message and add_generation_prompt cannot both "
                         "be true (send add_generation_prompt: false to continue the last message)")
    if not cont:
        if not gen_prompt:
            raise BadRequest("add_generation_prompt", "add_generation_prompt: false is supported only with "
                             "continue_final_message: true (continuing the last assistant message)")
        return messages, ""
    if messages[-1]["role"] != "assistant":
        raise BadRequest("messages", f"continue_final_message needs the last message to be an assistant one, "
                         f"got role {messages[-1]['role']!r}")
    if len(messages) < 2:
        raise BadRequest("messages", "continue_final_message needs a prompt before the assistant message")
    return messages[:-1], messages[-1]["content"]


def _neutral(body: dict[str, Any], name: str) -> None:
    v = body.get(name)
    if v is None or any(type(v) is type(ok) and v == ok for ok in NEUTRAL[name]):
        return
    what = "log-probabilities are" if "logprobs" in name else "this option is"
    raise BadRequest(name, f"{what} not supported by vpo serve (got {v!r}); omit it")


def parse_body(body: Any, kind: str, *, model_name: str, context_len: int | None = None,
               template_args: dict[str, Any] | None = None) -> Job:
    """Validate an OpenAI request body into a Job (every error names its field)."""
    if not isinstance(body, dict):
        raise BadRequest(None, "request body must be a JSON object")
    model = body.get("model")
    if model is None:   # OpenAI's API requires it; a client that leaves it out has not said what it tests
        raise BadRequest("model", f"required; this server serves {model_name!r}")
    if not isinstance(model, str):
        raise BadRequest("model", f"expected a string, got {model!r}")
    if model != model_name:
        raise BadRequest("model", f"the model {model!r} does not exist; this server serves {model_name!r}",
                         status=404, code="model_not_found")
    payload: Any = _messages(body) if kind == "chat" else _prompt(body)
    prefix = ""
    if kind == "chat":
        payload, prefix = _prefill(body, payload)
    n = _integer(body, "n")
    n = 1 if n is None else n
    if not 1 <= n <= MAX_N:
        raise BadRequest("n", f"expected an integer in 1..{MAX_N}, got {n!r}")
    best_of = _integer(body, "best_of")
    if best_of is not None and best_of != n:
        raise BadRequest("best_of", "best_of other than n is not supported by vpo serve; omit it")
    temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
    top_p = _number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True)
    name = "max_completion_tokens" if body.get("max_tokens") is None and body.get("max_completion_tokens") is not None \
        else "max_tokens"
    max_tokens = _integer(body, name)
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS if context_len is None else min(DEFAULT_MAX_TOKENS, context_len)
    elif max_tokens < 1:
        raise BadRequest(name, f"expected a positive integer, got {max_tokens}")
    elif context_len is not None and max_tokens > context_len:
        raise BadRequest(name, f"{max_tokens} is more than the model's context of {context_len} tokens")
    elif max_tokens > MAX_TOKENS_CAP:
        raise BadRequest(name, f"{max_tokens} is more than {MAX_TOKENS_CAP} tokens")
    for neutral in NEUTRAL:
        _neutral(body, neutral)
    fmt = body.get("response_format")
    if fmt is not None and fmt != {"type": "text"}:
        raise BadRequest("response_format", "only {\"type\": \"text\"} is supported by vpo serve")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("stream", f"expected a boolean, got {stream!r}")
    opts = body.get("stream_options")
    if opts is not None and not (isinstance(opts, dict) and isinstance(opts.get("include_usage", False), bool)):
        raise BadRequest("stream_options", "expected {\"include_usage\": bool}")
    sampling = SamplingConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens, stop=_stop(body),
                              chat_template_args=_template_args(body, template_args or {}))
    return Job(kind, payload, choice_seeds(body.get("seed"), n), sampling, stream=bool(stream),
               include_usage=bool(opts and opts.get("include_usage")), prefix=prefix)


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    typ = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": typ, "param": param, "code": code}}


def _usage(results: list[dict[str, Any]]) -> dict[str, int]:
    pt = int(results[0]["prompt_tokens"] or 0) if results else 0
    ct = sum(int(r["completion_tokens"] or 0) for r in results)
    return {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}


def new_id(kind: str) -> str:
    return f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{secrets.token_hex(8)}"


def response(kind: str, model: str, results: list[dict[str, Any]], rid: str | None = None) -> dict[str, Any]:
    chat = kind == "chat"
    choices = []
    for i, r in enumerate(results):
        c: dict[str, Any] = {"index": i, "finish_reason": r["finish_reason"] or "stop", "logprobs": None}
        if chat:
            c["message"] = {"role": "assistant", "content": r["text"]}
        else:
            c["text"] = r["text"]
        choices.append(c)
    return {"id": rid or new_id(kind), "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()), "model": model, "choices": choices, "usage": _usage(results)}


def _chunk(kind: str, rid: str, model: str, created: int, choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": rid, "object": "chat.completion.chunk" if kind == "chat" else "text_completion",
            "created": created, "model": model, "choices": choices}


def opening_chunks(kind: str, rid: str, model: str, created: int, n: int) -> list[dict[str, Any]]:
    """The role announcement of every choice, sent before generation ends (chat only, as OpenAI does)."""
    if kind != "chat":
        return []
    return [_chunk(kind, rid, model, created, [{"index": i, "delta": {"role": "assistant", "content": ""},
                                                "logprobs": None, "finish_reason": None}]) for i in range(n)]


def result_chunks(kind: str, rid: str, model: str, created: int, results: list[dict[str, Any]],
                  include_usage: bool) -> list[dict[str, Any]]:
    """Each choice's text as one delta, then its finish reason; the usage chunk when asked for."""
    out = []
    for i, r in enumerate(results):
        fin = r["finish_reason"] or "stop"
        if kind == "chat":
            out.append(_chunk(kind, rid, model, created, [{"index": i, "delta": {"content": r["text"]},
                                                           "logprobs": None, "finish_reason": None}]))
            out.append(_chunk(kind, rid, model, created, [{"index": i, "delta": {}, "logprobs": None,
                                                           "finish_reason": fin}]))
        else:
            out.append(_chunk(kind, rid, model, created, [{"index": i, "text": r["text"], "logprobs": None,
                                                           "finish_reason": fin}]))
    if include_usage:
        last = _chunk(kind, rid, model, created, [])
        last["usage"] = _usage(results)
        out.append(last)
    return out
