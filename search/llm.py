"""The mutation operator's LLM calls: one OpenAI-compatible chat completion per iteration.

The same ``openai.AsyncOpenAI`` client OpenEvolve uses (``openevolve/llm/openai.py``), with the
request ``seed`` derived from the run seed, the problem and the iteration, so a seed-honouring server
(``vpo serve``, vLLM) gives the same child for the same iteration on a re-run.

``base_url`` may list several servers (``URL1,URL2``: a fleet of vLLM replicas behind no load
balancer). Requests then go through the same :class:`harness.core.models.endpoints.EndpointPool` as
``vpo run``: least-in-flight routing, dead servers ejected and re-admitted after a health check, and
a request that fails on one server is sent to another before the run gives up.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


class LLMUnreachable(RuntimeError):
    """The server did not answer: one clear error instead of a hang or a retry storm."""


class LLMError(RuntimeError):
    """The server answered with an error the client's retries could not get past."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    latency_s: float


class ChatLLM:
    def __init__(self, base_url: str, model: str, *, api_key: str = "EMPTY", timeout_s: float = 120.0,
                 retries: int = 2, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 1024,
                 stop: tuple[str, ...] = (), eject_after: int = 3, cooldown_s: float = 10.0,
                 chat_template_args: dict[str, Any] | None = None):
        import openai

        from harness.core.models.endpoints import EndpointPool, split_urls

        urls = split_urls(base_url)
        if not urls:
            raise ValueError("evolve needs the LLM server's URL (--base-url)")
        self.base_url, self.model, self.api_key = ",".join(urls), model, api_key
        self.temperature, self.top_p, self.max_tokens, self.stop = temperature, top_p, max_tokens, stop
        #: the chat template's arguments (Qwen3's enable_thinking), sent as ``chat_template_kwargs`` in
        #: the request body: the field vLLM, SGLang and `vpo serve` read
        self.chat_template_args = dict(chat_template_args or {})
        self.pool = EndpointPool(urls, lambda u: openai.AsyncOpenAI(api_key=api_key, base_url=u, timeout=timeout_s,
                                                                    max_retries=retries),
                                 eject_after=eject_after, cooldown_s=cooldown_s)

    @property
    def client(self) -> object:
        """The first server's client (the only one when a single URL is given)."""
        return self.pool.endpoints[0].client

    def check(self, timeout_s: float = 10.0) -> list[str]:
        """Model ids the servers list. Raises LLMUnreachable naming the URL(s) when none answers;
        with several servers, those that do not answer start ejected (the pool re-checks them)."""
        import openai

        models: list[str] = []
        dead: list[tuple[object, str]] = []
        for ep in self.pool.endpoints:
            probe = openai.OpenAI(api_key=self.api_key, base_url=ep.url, timeout=timeout_s, max_retries=0)
            try:
                models += [m.id for m in probe.models.list().data if m.id not in models]
            except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeout, 404, garbage
                dead.append((ep, f"{type(exc).__name__}: {str(exc)[:200]}"))
            finally:
                probe.close()
        if len(dead) == len(self.pool.endpoints):
            where = "server at " + self.base_url if len(dead) == 1 else "servers " + self.base_url
            raise LLMUnreachable(f"cannot reach the LLM {where} ({dead[0][1]})")
        for ep, why in dead:
            self.pool.eject(ep, f"failed the health check at start ({why})")
        return models

    async def complete(self, messages: list[dict[str, str]], seed: int, prefix: str = "") -> Completion:
        """One chat completion. ``prefix``: the start of the assistant's answer, continued by the model
        (the prefill fields of :func:`harness.core.models.prefill.prefill_fields`); the returned text is
        prefix + continuation."""
        import openai

        from harness.core.models.prefill import join, prefill_fields

        t0 = time.perf_counter()
        messages, prefill = prefill_fields(messages, prefix)
        kw: dict[str, Any] = dict(model=self.model, messages=messages, n=1, seed=int(seed),
                                  temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)
        if self.stop:
            kw["stop"] = list(self.stop)
        extra = {**({"chat_template_kwargs": dict(self.chat_template_args)} if self.chat_template_args else {}),
                 **prefill}
        if extra:
            kw["extra_body"] = extra
        # one try per server (the client retries within each); a single server is tried once, as before
        for attempt in range(len(self.pool.endpoints)):
            last = attempt + 1 == len(self.pool.endpoints)
            try:
                async with self.pool.use() as ep:
                    resp = await ep.client.chat.completions.create(**kw)
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                if not last:
                    continue
                raise LLMUnreachable(f"LLM server at {ep.url} stopped answering ({type(exc).__name__})") from None
            except openai.APIError as exc:  # 4xx/5xx after the client's retries: stop with one clear line
                if not last and getattr(exc, "status_code", 500) >= 500:
                    continue
                raise LLMError(f"LLM server at {ep.url} refused a request after retries "
                               f"({type(exc).__name__}: {str(exc)[:200]})") from None
            break
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content if choice is not None and choice.message is not None else None) or ""
        usage = resp.usage
        return Completion(text=join(prefix, text), prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None),
                          finish_reason=getattr(choice, "finish_reason", None),
                          latency_s=time.perf_counter() - t0)

    def describe(self) -> dict[str, Any]:
        """Per-server request/failure/ejection counts, recorded in the run's results."""
        return self.pool.describe()

    async def aclose(self) -> None:
        await self.pool.aclose()
