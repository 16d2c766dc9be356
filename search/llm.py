"""The mutation operator's LLM calls: one OpenAI-compatible chat completion per iteration.

The request, its retries, the per-attempt deadline, the endpoints and the fail-fast on a server that
cannot be reached are the openai backend's (:class:`vpo_harness.harness.core.models.openai_server.OpenAIServerBackend`,
awaited through its ``generate_one`` in the evolve loop's own event loop): the loop and the run's
plain-sampling baseline, which goes through the same backend, follow one policy, set by the same
keyword arguments. The request ``seed`` is derived from the run seed, the problem and the iteration
by the caller, so a seed-honouring server (``vpo serve``, vLLM) gives the same child for the same
iteration on a re-run.

``base_url`` may list several servers (``URL1,URL2``: a fleet of vLLM replicas behind no load
balancer): least-in-flight routing, dead servers ejected and re-admitted after a health check, and a
request that fails on one server is retried on another
(:class:`vpo_harness.harness.core.models.endpoints.EndpointPool`).

Where a request fails for good, the search stops (a child the loop never got cannot be replaced by
an empty one without changing the search): :class:`LLMUnreachable` when no connection could be
opened, :class:`LLMError` for anything else, each one line naming the server. The rows so far are
kept, and re-running the command resumes.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from vpo_harness.harness.core.models.base import SamplingConfig, chat_template_args as template_args
from vpo_harness.harness.core.models.endpoints import connect_failure, split_urls, within
from vpo_harness.harness.core.models.transport import PERMANENT, RemoteProtocolError, Timeout
from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend, RequestDeadline, ServerUnreachable

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

#: no connection could be opened to the server(s): the openai backend's own error, under the name the
#: evolve command catches
LLMUnreachable = ServerUnreachable


class LLMError(RuntimeError):
    """The server answered with an error the backend's retries could not get past."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    latency_s: float


class ChatLLM:
    """Chat completions for the evolve loop with fixed sampling settings.

    ``backend_args`` are the openai backend's keyword arguments (``timeout``, ``max_retries``,
    ``deadline``, ``api_key``, ``eject_after``, ``cooldown_s``, ``connect_retries``, ...): pass the
    same ones the baseline's backend gets. Each call is one request for one answer (``n = 1``; the
    ``-m`` answers of an iteration come in that one text)."""

    def __init__(self, base_url: str, model: str, *, temperature: float = 0.7, top_p: float = 1.0,
                 max_tokens: int = 1024, stop: tuple[str, ...] = (),
                 chat_template_args: dict[str, Any] | None = None, **backend_args: Any):
        urls = split_urls(base_url)
        if not urls:
            raise ValueError("evolve needs the LLM server's URL (--base-url)")
        self.base_url, self.model = ",".join(urls), model
        #: the chat template's arguments (Qwen3's enable_thinking) travel in ``sampling``: the backend
        #: sends them as ``chat_template_kwargs``, the field vLLM, SGLang and `vpo serve` read
        self.sampling = SamplingConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                       stop=tuple(stop), chat_template_args=template_args(chat_template_args))
        self.backend = OpenAIServerBackend(model, self.base_url, mode="chat", use_n=False, **backend_args)

    async def check(self) -> list[str]:
        """Model ids the servers list. Raises LLMUnreachable naming the URL(s) when none answers.

        Each ``GET /models`` is bounded by the backend's own ``deadline`` (as every request is), so a
        server that accepts the connection and never answers fails this check within it. A server
        that answers with an error (a proxy without ``/models``) is up: it is reported, not fatal. One
        that answers with something that is not a usable HTTP reply is refused, and said to have
        answered (not "cannot connect")."""
        from vpo_harness.harness.core.printable import printable

        models: list[str] = []
        dead: list[str] = []
        for url in self.backend.base_urls:
            probe = self.backend.client_for(url)
            started = time.monotonic()
            try:
                listed = await within(probe.get("/models"), self.backend.settings.attempt_s)
                data = listed.get("data") if isinstance(listed, dict) else None
                models += [m["id"] for m in data or [] if isinstance(m, dict) and m.get("id") not in models]
            except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeout, 404, garbage
                elapsed = time.monotonic() - started
                if isinstance(exc, asyncio.TimeoutError):
                    exc = RequestDeadline(f"no complete reply after {elapsed:.1f} s "
                                          f"(the deadline is {self.backend.settings.attempt_s:g} s)")
                    exc.method, exc.url = "GET", url + "/models"  # type: ignore[attr-defined]
                why = connect_failure(exc)
                if isinstance(exc, PERMANENT):  # it answered, with bytes no retry will make usable
                    dead.append(f"the server at {url} answered GET /models, but not with a usable HTTP reply "
                                f"({printable(f'{type(exc).__name__}: {exc}')[:300]}); is the URL (--base-url) "
                                "an OpenAI-compatible server?")
                    continue
                if why is None and not isinstance(exc, (Timeout, RemoteProtocolError, RequestDeadline)):
                    _log.warning(f"[vpo] the LLM server at {url} answered GET /models, with an error "
                                 f"({printable(f'{type(exc).__name__}: {exc}')[:300]}); going on")
                    continue
                dead.append(self.backend.unreachable(exc, why or printable(f"{type(exc).__name__}: {exc}")[:300],
                                                     1, elapsed))
            finally:
                await probe.aclose()
        if len(dead) == len(self.backend.base_urls):
            raise LLMUnreachable(dead[0])
        return models

    async def complete(self, messages: list[dict[str, Any]], seed: int, *, prefix: str = "") -> Completion:
        """One answer to ``messages`` (sent as given). ``prefix``: the start of the assistant's answer,
        continued by the model (sent by the openai backend as
        :func:`vpo_harness.harness.core.models.prefill.prefill_fields` says); the text is prefix + continuation."""
        gen = await self.backend.generate_one(messages, seed, self.sampling, prefix=prefix)
        if gen.error is not None:
            raise LLMError(f"LLM server at {gen.extra.get('endpoint', self.base_url)} failed a request after "
                           f"{gen.attempts} attempt{'s' * (gen.attempts != 1)}: {gen.error[:300]}")
        return Completion(text=gen.text, prompt_tokens=gen.prompt_tokens,
                          completion_tokens=gen.completion_tokens, finish_reason=gen.finish_reason,
                          latency_s=float(gen.latency_s or 0.0))

    async def open(self) -> None:
        """Set up the clients before the search starts (in the loop that will send the requests)."""
        await self.backend.aopen()

    def describe(self) -> dict[str, Any]:
        """Per-server request/failure/ejection counts, recorded in the run's results."""
        return self.backend.endpoint_stats()

    async def aclose(self) -> None:
        await self.backend.aclose()
