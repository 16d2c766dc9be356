"""Backend factory: lm-eval style specs (``hf:PATH``, ``vllm:ID``, ``openai:NAME``, ``mock:MODE``) -> a Backend.

Heavy libraries (torch, transformers, vllm, openai) are imported only by the backend module that is
actually asked for, so ``vpo --help`` and the CPU-only test suite never pay for (or need) them.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig, check_args

if TYPE_CHECKING:
    import argparse

__all__ = [
    "Backend",
    "GenRequest",
    "Generation",
    "SamplingConfig",
    "KNOWN_BACKENDS",
    "EXECUTION_ARGS",
    "identity_args",
    "generation_runtime",
    "deterministic",
    "accepted_args",
    "check_args",
    "load_backend",
    "model_defaults",
    "parse_model_args",
    "kv_arg",
    "parse_spec",
    "register_backend",
]

Factory = Callable[[str, "str | None", dict[str, Any]], Backend]

#: --model-args that change how requests are made, never what a chain's text is: they may differ when a
#: run is resumed, and they are not written into the run's identity (``api_key`` is never written at all)
EXECUTION_ARGS: dict[str, frozenset[str]] = {
    "openai": frozenset({"concurrency", "max_retries", "timeout", "deadline", "backoff_base", "backoff_max",
                         "api_key", "eject_after", "cooldown_s", "connect_retries",
                         "connect_backoff", "give_up_after", "headers", "keepalive"}),
    "hf": frozenset({"batch_size"}),  # each chain has its own seeded sampler: text independent of the batch
    "mock": frozenset({"latency_s"}),
}


#: backends whose chain text is a function of (weights, rendered prompt, sampling, chain seed) alone, so
#: the generation cache is on by default for them (``vpo run --cache/--no-cache`` overrides either way):
#: hf draws each chain from its own seeded ``torch.Generator``, vllm sends one ``SamplingParams(seed=)``
#: per chain, the mock is a seeded RNG unless ``fail_every`` makes a chain's fate depend on the order it
#: was served in. ``openai`` is absent: whether a server honours ``seed`` is the server's business
#: (hosted APIs call it best effort) and with ``use_n`` one seed covers a group of chains.
SEEDED: dict[str, Callable[[dict[str, Any]], bool]] = {
    "hf": lambda args: True,
    "vllm": lambda args: True,
    "mock": lambda args: not args.get("fail_every"),
}


def deterministic(spec: str, args: dict[str, Any] | None = None) -> bool:
    """Whether ``spec`` built with ``args`` samples a chain as a function of its cache key (see :data:`SEEDED`)."""
    rule = SEEDED.get(spec.split(":", 1)[0].strip().lower())
    return bool(rule and rule(dict(args or {})))


def _hf_runtime(args: dict[str, Any]) -> dict[str, Any]:
    from vpo_harness.harness.core.models.hf import runtime_key

    return runtime_key(args)


def _vllm_runtime(args: dict[str, Any]) -> dict[str, Any]:
    from vpo_harness.harness.core.models.vllm_offline import runtime_key

    return runtime_key(args)


#: backend -> what of the machine it runs on changes a chain's text (resolved device class and
#: dtype, library versions): part of the generation cache key, never of a run's identity (a run
#: may resume on another machine). Backends not listed have none (mock, servers).
RUNTIME: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"hf": _hf_runtime, "vllm": _vllm_runtime}


def generation_runtime(spec: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """:data:`RUNTIME` of ``spec``'s backend built with ``args``; {} for backends without one."""
    rule = RUNTIME.get(spec.split(":", 1)[0].strip().lower())
    return rule(dict(args or {})) if rule else {}


def identity_args(spec: str, args: dict[str, Any]) -> dict[str, Any]:
    """The model args that identify a run (``args`` less the backend's :data:`EXECUTION_ARGS`)."""
    skip = EXECUTION_ARGS.get(spec.split(":", 1)[0], frozenset())
    return {k: v for k, v in (args or {}).items() if k not in skip}


def _coerce(value: str) -> Any:
    """``"8"`` -> 8, ``"0.9"`` -> 0.9, ``"true"`` -> True, ``"none"`` -> None, else the string.

    Same spirit as lm-eval's ``--model_args``: users type one flat string on the command line."""
    low = value.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value.strip()


def parse_model_args(args: dict[str, Any] | str | None, what: str = "model_args") -> dict[str, Any]:
    """``"k=v,k2=v2"`` -> ``{"k": v, "k2": v2}`` with int/float/bool/None coercion.

    A dict is passed through (copied) so callers can hand in either form."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return dict(args)
    if not isinstance(args, str):
        raise TypeError(f"model_args must be a dict or a 'k=v,k2=v2' string, got {type(args).__name__}")
    out: dict[str, Any] = {}
    for part in args.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"bad {what} entry {part!r}: expected key=value (in {args!r})".replace("  ", " "))
        key, value = part.split("=", 1)
        key = key.strip()
        if not key:
            raise ValueError(f"bad {what} entry {part!r}: empty key (in {args!r})".replace("  ", " "))
        out[key] = _coerce(value)
    return out


def kv_arg(text: str) -> dict[str, Any]:
    """:func:`parse_model_args` as an argparse ``type=``: the one ``k=v,...`` parser behind every
    ``--model-args``, ``--task-args``, ``--chat-template-args`` (and ``--trl-args``, ``--lora``) of
    every command, `vpo serve` included; a bad entry is one usage line, not a traceback."""
    import argparse

    try:  # argparse names the flag ("argument --task-args: bad entry ..."): no backend's word for it
        return parse_model_args(text, what="")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_chat_template_args(p: "argparse.ArgumentParser", more: str = "") -> None:
    """``--chat-template-args k=v,...`` on every command that prompts a chat model (run, evolve,
    train, serve): one flag, one parser, one default (unset: None), whichever command registers it;
    ``more`` says what the command does with it beyond the shared help."""
    p.add_argument("--chat-template-args", type=kv_arg, default=None, metavar="K=V,...",
                   help="keyword arguments of the model's chat template, coerced like --model-args; e.g. "
                        "enable_thinking=false renders Qwen3 prompts without thinking, as the paper ran them "
                        "(hf/vllm: passed to the template; openai: sent as chat_template_kwargs)" + more)


def accepted_args(cls: type, exclude: tuple[str, ...] = ("self", "model", "model_args")) -> list[str]:
    """The keyword arguments a backend class takes: its ``__init__`` signature is the one list."""
    import inspect

    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.name not in exclude and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _make_hf(model: str, base_url: str | None, args: dict[str, Any]) -> Backend:
    from vpo_harness.harness.core.models.hf import HFBackend

    check_args("hf", args, accepted_args(HFBackend))
    return HFBackend(model, **args)


def _make_vllm(model: str, base_url: str | None, args: dict[str, Any]) -> Backend:
    from vpo_harness.harness.core.models.vllm_offline import VLLMOfflineBackend

    return VLLMOfflineBackend(model, model_args=args)


def _make_openai(model: str, base_url: str | None, args: dict[str, Any]) -> Backend:
    from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend
    from vpo_harness.harness.core.models.openai_settings import OpenAISettings

    url = base_url or args.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL")
    if not url:
        raise ValueError(
            f"openai:{model} needs a server URL: pass --base-url (e.g. --base-url http://127.0.0.1:8000/v1; "
            "base_url= from Python) or set OPENAI_BASE_URL"
        )
    return OpenAIServerBackend(model, base_url=url, settings=OpenAISettings.from_args(args))


def _make_mock(model: str, base_url: str | None, args: dict[str, Any]) -> Backend:
    from vpo_harness.harness.core.models.mock import MockBackend

    check_args("mock", args, accepted_args(MockBackend, ("self", "mode")))
    return MockBackend(model, **args)


_FACTORIES: dict[str, Factory] = {"hf": _make_hf, "vllm": _make_vllm, "openai": _make_openai, "mock": _make_mock}
KNOWN_BACKENDS: tuple[str, ...] = tuple(_FACTORIES)


def register_backend(prefix: str, factory: Factory) -> None:
    """Plug in another backend kind (test doubles, experimental engines) without editing this file."""
    global KNOWN_BACKENDS
    _FACTORIES[prefix] = factory
    KNOWN_BACKENDS = tuple(_FACTORIES)


def parse_spec(spec: str) -> tuple[str, str]:
    """``"hf:smollm2-135m"`` -> ``("hf", "smollm2-135m")``; errors name the known backends."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(
            f"bad model spec {spec!r}: expected BACKEND:MODEL with BACKEND one of {', '.join(_FACTORIES)} "
            "(e.g. hf:smollm2-135m, vllm:Qwen/Qwen3-1.7B, openai:gpt-4o-mini)"
        )
    kind, model = spec.split(":", 1)
    kind = kind.strip().lower()
    model = model.strip()
    if kind not in _FACTORIES:
        raise ValueError(f"unknown backend {kind!r} in spec {spec!r}; known backends: {', '.join(_FACTORIES)}")
    if not model:
        raise ValueError(f"model spec {spec!r} names no model after '{kind}:'")
    return kind, model


def load_backend(spec: str, *, base_url: str | None = None, model_args: dict[str, Any] | str | None = None) -> Backend:
    """Build the backend a spec names. Zoo names (``smollm2-135m``...) are resolved by hf/vllm."""
    kind, model = parse_spec(spec)
    return _FACTORIES[kind](model, base_url, parse_model_args(model_args))


#: the openai model args that say how to reach a server, the only ones :func:`model_defaults` passes on
LISTING_ARGS = ("base_url", "api_key", "headers", "timeout", "deadline")


def model_defaults(spec: str, *, base_url: str | None = None,
                   model_args: dict[str, Any] | str | None = None) -> "tuple[Any, str] | None":
    """(the model's trained prompt style and token budgets, where they came from) or None, for any
    spec: a local checkpoint's from its training record (:func:`zoo.generation_defaults`), a served
    model's from its server's ``/v1/models`` entry, which `vpo serve` fills from that same record
    (:mod:`vpo_harness.harness.core.models.served_defaults`). A server that cannot be asked publishes nothing:
    the run then fails on its first request with the backend's own message."""
    from vpo_harness.harness.core.models import zoo

    if spec.partition(":")[0].strip().lower() != "openai":
        return zoo.generation_defaults(spec)  # a bad spec is the backend factory's error, later
    # only what reaching the server takes: the listing needs no tokenizer, and `vpo evolve` passes
    # request-only arguments the backend does not take
    reach = {k: v for k, v in parse_model_args(model_args).items() if k in LISTING_ARGS}
    backend = load_backend(spec, base_url=base_url, model_args=reach)
    try:
        served = backend.served()  # type: ignore[attr-defined]
    finally:
        backend.close()
    return (served.defaults, served.source) if served is not None and served.defaults is not None else None
