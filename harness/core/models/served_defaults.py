"""A served model's generation defaults, carried in its ``/v1/models`` entry.

Why: a local checkpoint brings the prompt style and token budgets it was trained with (its
``vpo_training.json``, read by :func:`vpo_harness.harness.core.models.zoo.generation_defaults`), and a local run
uses them. The same checkpoint behind `vpo serve` used to be sampled with the fallbacks (the full
prompt, 1024 tokens) and overflowed its 512-token context on every chain. `vpo serve` now writes the
values of that one rule into its model entry (:func:`publish`), and the openai backend reads them back
(:func:`read`), together with ``max_model_len``, which vLLM's server publishes in the same place.

``seeded``: `vpo serve` answers a one-choice request with seed s exactly as the local backend samples
a chain with seed s (the hf backend gives every row its own generator). A request with ``n > 1``
cannot reproduce the local chains (choice i gets a seed derived from the request's, not the chain's
own), so against a server that publishes ``seeded`` the backend's ``use_n=auto`` sends one request per
chain: the served run's rows are then the local run's. The server batches those requests together, so
the prefill that ``n`` would share is the only cost.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig, template_kwargs
from vpo_harness.harness.core.models.prompting import prompt_tokens
from vpo_harness.harness.core.models.zoo import GenerationDefaults

#: the extra fields of a model object in ``/v1/models`` (``max_model_len`` is vLLM's own name)
PROMPT_STYLE = "prompt_style"
MAX_TOKENS_SINGLE = "max_tokens_single"
MAX_TOKENS_MULTI = "max_tokens_multi"
DEFAULTS_FROM = "defaults_from"
CONTEXT = "max_model_len"
SEEDED = "seeded"


@dataclass(frozen=True)
class ServedModel:
    """What a server says about one of its models: trained defaults (None when it publishes none),
    context length in tokens (None: unknown), whether a one-choice reply is a function of the request
    and its seed, and where the defaults came from (for the line `vpo run` prints)."""

    defaults: GenerationDefaults | None
    context_len: int | None
    seeded: bool
    source: str


def publish(defaults: GenerationDefaults | None, source: str | None, *, context_len: int | None,
            seeded: bool) -> dict[str, Any]:
    """The fields `vpo serve` adds to its model object."""
    out: dict[str, Any] = {CONTEXT: context_len, SEEDED: bool(seeded)}
    if defaults is not None:
        out.update({PROMPT_STYLE: defaults.prompt_style, MAX_TOKENS_SINGLE: defaults.max_tokens_single,
                    MAX_TOKENS_MULTI: defaults.max_tokens_multi, DEFAULTS_FROM: source})
    return out


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read(listing: Any, model: str, where: str) -> ServedModel | None:
    """The entry for ``model`` in a ``/v1/models`` reply, or None when the reply does not list it.

    Fields of the wrong type count as absent: a server that publishes none of them (a hosted API)
    leaves the task's defaults in charge, as before."""
    data = listing.get("data") if isinstance(listing, dict) else None
    entry = next((e for e in data if isinstance(e, dict) and e.get("id") == model), None) \
        if isinstance(data, list) else None
    if entry is None:
        return None
    style = entry.get(PROMPT_STYLE)
    single, multi = _positive_int(entry.get(MAX_TOKENS_SINGLE)), _positive_int(entry.get(MAX_TOKENS_MULTI))
    defaults = GenerationDefaults(style, single, multi) if isinstance(style, str) and single and multi else None
    origin = entry.get(DEFAULTS_FROM)
    source = f"the /v1/models entry of {model} at {where}" + (f", from {origin}" if isinstance(origin, str) else "")
    return ServedModel(defaults, _positive_int(entry.get(CONTEXT)), entry.get(SEEDED) is True, source)


class ContextOverflow(ValueError):
    """A request that cannot fit the served model's context: raised before any request is sent."""


def check_fit(lengths: Sequence[tuple[str, int | None]], max_tokens: int, context_len: int, model: str) -> None:
    """Refuse the run when a prompt plus the completion budget exceeds the context.

    ``lengths``: (problem id, prompt tokens or None where no tokenizer counted them). The longest
    prompt is named, with both numbers and the flags that change them; without a count, a budget
    that alone fills the context is still refused. Why before sampling: the server refuses each such
    request, and a run of them became one error row per chain."""
    known = [(pid, n) for pid, n in lengths if n is not None]
    if known:
        pid, prompt = max(known, key=lambda x: x[1])
        if prompt + max_tokens > context_len:
            room = context_len - prompt
            fix = (f"lower --max-tokens to {room} or less" if room > 0 else
                   "the prompt alone fills it: use a shorter --prompt-style (compact) or a longer-context model")
            raise ContextOverflow(
                f"{model}: the prompt of {pid} ({prompt} tokens) plus --max-tokens {max_tokens} is "
                f"{prompt + max_tokens} tokens, more than the served context of {context_len}; {fix}")
    elif max_tokens >= context_len:
        raise ContextOverflow(f"{model}: --max-tokens {max_tokens} leaves no room for a prompt in the served "
                              f"context of {context_len} tokens; lower --max-tokens")


def check_requests(requests: Sequence[GenRequest], sampling: SamplingConfig, context_len: int, tokenizer: Any,
                   model: str) -> None:
    """:func:`check_fit` for the requests about to be sent, their prompts counted as the served model
    sees them (its chat template with the sampling's template arguments) when ``tokenizer`` is given."""
    tmpl = template_kwargs(sampling)
    check_fit([(r.problem_id, prompt_tokens(r.messages, tokenizer, tmpl, r.prefix) if tokenizer is not None else None)
               for r in requests], sampling.max_tokens, context_len, model)
