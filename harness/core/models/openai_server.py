"""Any OpenAI-compatible server (vLLM / SGLang servers, hosted APIs) as a Backend.

Four modules, one job each: this one is the backend (requests in, Generations out);
:mod:`~vpo_harness.harness.core.models.openai_settings` holds the settings ``--model-args`` parse
into, :mod:`~vpo_harness.harness.core.models.openai_retry` the retry policy (what is retried, the
backoff, giving up on a silent server), :mod:`~vpo_harness.harness.core.models.openai_connections`
the clients, endpoint pool and event loop, and :mod:`~vpo_harness.harness.core.models.openai_reply`
what a readable reply is.

Why it looks the way it does:
- A failure that survives every retry becomes a ``Generation`` with ``error`` set; nothing escapes
  and kills a multi-hour run. The runner decides later whether to re-run errored chains.
- The exception: no connection can be opened at all (connection refused, no such host). That fails
  in milliseconds and the same way every time, so it gets ``connect_retries`` quick retries (default
  one, ``connect_backoff`` seconds apart, per URL) and then :class:`ServerUnreachable` stops the
  whole ``generate`` with one line naming the URL and what was tried; the chains already finished
  are kept by the caller. A wrong port costs a fraction of a second, not a minute of backoff and a
  table of failed chains. Timeouts and dropped connections keep the backoff of the retry policy,
  which also gives up on a server that stops answering as a whole (``give_up_after``).
- ``generate`` serves the synchronous runner; :meth:`OpenAIServerBackend.generate_one` sends one
  request from the caller's own event loop (the evolve loop) through the same request, retry and
  endpoint code, so one run has one policy.
- The runner is synchronous but wants each chain as soon as it finishes (crash-resume appends to
  disk), so an asyncio loop runs on a background thread and finished chains cross over a queue.
- Concurrency is bounded by a semaphore (servers queue or 429 beyond their batch size anyway).

``use_n``: with ``n > 1`` a server samples all k chains of a prompt in one request, sharing the
prompt's prefill. One seed then covers the whole group (``seeds[0]``), so a chain's text depends on
which chains were requested together; with ``use_n=False`` each chain is its own request with its
own seed and is reproducible on its own (what resume of a partial group needs). ``"auto"`` uses
``n`` and falls back to per-chain requests once a server rejects ``n`` or returns too few choices, and
sends per-chain requests from the start to a server whose model entry says ``seeded``
(harness/core/models/served_defaults.py, which also checks the served context before sampling).

Chat-template arguments (``SamplingConfig.chat_template_args``, e.g. Qwen3's ``enable_thinking``) go
in the chat request body as ``chat_template_kwargs``, the field vLLM and SGLang servers read (merged
over any ``chat_template_kwargs`` in ``extra_body``); in completions mode they go to the local
tokenizer's template instead.

Prefill (``GenRequest.prefix``): in chat mode the prefix is sent as the final assistant message with
``continue_final_message: true, add_generation_prompt: false`` in the body (``prefill_fields``, the
fields vLLM's server and `vpo serve` read); in completions mode the local template renders it open.
The server returns the continuation only; the Generation's text is prefix + continuation. A server
that ignores the fields (a hosted API) answers a fresh turn instead: use vLLM or `vpo serve`.

Only SamplingConfig's fields are sent; a vLLM server may still add the checkpoint's own sampling
defaults (its ``--generation-config``), which the local hf/vllm backends deliberately do not.
"""
from __future__ import annotations

import asyncio
import os
import queue
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from vpo_harness.harness.core.models import served_defaults, token_counts, transport
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig, template_kwargs
from vpo_harness.harness.core.models.endpoints import ServerUnreachable, connect_failure, split_urls, within
from vpo_harness.harness.core.models.openai_connections import Connections
from vpo_harness.harness.core.models.openai_reply import GarbageResponse, TooFewChoices, read_choices, usage
from vpo_harness.harness.core.models.openai_retry import RequestDeadline, RetryPolicy, status_of
from vpo_harness.harness.core.models.openai_settings import OpenAISettings
from vpo_harness.harness.core.models.prefill import join, prefill_fields
from vpo_harness.harness.core.models.prompting import render_messages
from vpo_harness.harness.core.models.transport import JSONClient
from vpo_harness.harness.core.printable import printable

#: the names callers import from here (the backend's errors live with the rule that raises them)
__all__ = ["DEFAULT_BASE_URL", "GarbageResponse", "OpenAIServerBackend", "OpenAISettings", "RequestDeadline",
           "ServerUnreachable"]

_DONE = object()
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # no --base-url and no OPENAI_BASE_URL: OpenAI's API


@dataclass
class _Unit:
    """One request to send: a whole group (n > 1) or a single chain."""

    req: GenRequest
    chain_indices: tuple[int, ...]
    seeds: tuple[int, ...]


_UNSET = object()


def _local_tokenizer(name: str) -> Any:
    """The tokenizer of a model known on this machine by ``name``, or None (never downloads, never
    converts: a served name is often just a label, e.g. ``policy``)."""
    from pathlib import Path

    from vpo_harness.harness.core.models import zoo

    where = zoo.weights_location(name)
    local_dir = where is not None and Path(where).is_dir()
    if not local_dir and not (where is None and zoo.looks_like_hub_id(name)):
        return None  # a label: nothing to look up, and transformers is not imported for it
    try:
        from transformers import AutoTokenizer

        if local_dir:
            return AutoTokenizer.from_pretrained(str(where))
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:  # noqa: BLE001 - not in the cache, no tokenizer files, transformers missing
        return None


class OpenAIServerBackend(Backend):
    """Chat or completions endpoint of an OpenAI-compatible server.

    Built from a model name, the server URL(s) and :class:`OpenAISettings` (or the settings' fields as
    keyword arguments, parsed by :meth:`OpenAISettings.from_args`: an unknown name is one line)."""

    name = "openai"
    supports_prefill = True

    def __init__(self, model: str, base_url: str | None = None, settings: OpenAISettings | None = None,
                 **args: Any) -> None:
        if settings is not None and args:
            raise TypeError("pass either settings or their fields as keyword arguments, not both")
        self.settings = s = settings if settings is not None else OpenAISettings.from_args(args)
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        # several comma-separated URLs: requests are spread over them (harness/core/models/endpoints.py)
        self.base_urls = split_urls(self.base_url) or [DEFAULT_BASE_URL]
        self.mode, self.use_n = s.mode, s.use_n
        self.retry = RetryPolicy(s, self.base_urls)
        self.connections = Connections(s, self.base_urls)
        self._tokenizer: Any = None
        if s.tokenizer is not None:
            from transformers import AutoTokenizer  # lazy: only completions mode with a local template

            from vpo_harness.harness.core.models import zoo

            self._tokenizer = AutoTokenizer.from_pretrained(zoo.resolve_local(s.tokenizer))
        self._counting: Any = _UNSET  # the tokenizer found for counting (counting_tokenizer), once looked up
        # Learned once per backend: flips to False when the server refuses n > 1.
        self._n_ok: bool = s.use_n is not False
        self._sem: asyncio.Semaphore | None = None  # generate_one's cap on requests in flight
        self.stats = {"requests": 0, "retries": 0, "errors": 0}
        self._served: Any = _UNSET  # served_defaults.ServedModel of the first server, once asked

    # ---- connections -----------------------------------------------------------------------------

    def client_for(self, url: str) -> JSONClient:
        """A client for one server with this backend's key, headers and timeout."""
        return self.connections.client_for(url)

    async def aopen(self) -> None:
        """Build the clients and the endpoint pool in the running loop now (for :meth:`generate_one`),
        so that the first requests of a search, sent together, share one pool. httpx opens a
        connection only for a request: the first requests open theirs together."""
        await self.connections.get_pool()

    async def aclose(self) -> None:
        """Close the connections :meth:`generate_one` opened, from the loop that opened them."""
        await self.connections.aclose()
        self._sem = None

    def close(self) -> None:
        self.connections.close()

    # ---- public API ------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": self.model,
            "base_url": self.base_url,
            "args": self.settings.describe(),
            "library": {"client": "httpx", "version": transport.httpx.__version__},
        }

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        requests = list(requests)
        if not requests:
            return
        if self._counting is _UNSET and self.use_n is not False and any(len(r.chain_indices) > 1 for r in requests):
            # replies with n > 1 carry one token total: look the tokenizer up now, here, rather than
            # inside a request's deadline on the event loop
            self._counter()
        self._check_served(requests, sampling)
        loop = self.connections.loop()
        out: queue.Queue = queue.Queue()
        future = asyncio.run_coroutine_threadsafe(self._run_all(requests, sampling, out), loop)
        try:
            while True:
                item = out.get()
                if item is _DONE:
                    break
                yield item
            future.result()  # surfaces bugs in this module instead of silently dropping chains
        finally:
            if not future.done():  # consumer stopped early: stop sending requests
                future.cancel()

    def served(self) -> "served_defaults.ServedModel | None":
        """What the first server's ``GET /models`` says about this model (trained defaults, context,
        seeding), asked once; None when it does not list the model or cannot be asked."""
        if self._served is _UNSET:
            async def listing() -> Any:
                client = self.client_for(self.base_urls[0])  # the run's key and headers; the listing's own deadline
                try:
                    return await within(client.get("/models"), min(self.settings.attempt_s, 10.0))
                finally:
                    await client.aclose()

            try:
                reply = asyncio.run_coroutine_threadsafe(listing(), self.connections.loop()).result()
            except Exception:  # noqa: BLE001 - no listing: the flags and task defaults decide, as before
                reply = None
            self._served = served_defaults.read(reply, self.model, self.base_urls[0])
        return self._served

    def _check_served(self, requests: list[GenRequest], sampling: SamplingConfig) -> None:
        """Before any request: refuse prompts that cannot fit the served context, and sample chain by
        chain from a server that reproduces a local chain per seed (served_defaults)."""
        served = self.served()
        if served is None:
            return
        if served.seeded and self.use_n == "auto":
            self._n_ok = False
        if served.context_len is not None:
            tok = self._tokenizer if self._tokenizer is not None else self._counter()
            served_defaults.check_requests(requests, sampling, served.context_len, tok, f"openai:{self.model}")

    def _counter(self) -> Any:
        if self._counting is _UNSET:
            self._counting = _local_tokenizer(self.model)
        return self._counting

    async def generate_one(self, messages: list[dict[str, Any]], seed: int, sampling: SamplingConfig, *,
                           prefix: str = "", extra_body: dict[str, Any] | None = None) -> Generation:
        """One chain, awaited in the caller's event loop (the evolve loop), with the retries, deadline,
        endpoints and fail-fast of :meth:`generate`. ``messages`` are sent as given, ``prefix`` is an
        assistant prefill as in :class:`GenRequest` (the text returned is prefix + continuation), and
        ``extra_body`` is merged over the backend's own body fields. A failure
        that survives the retries comes back as a ``Generation`` with ``error`` set;
        :class:`ServerUnreachable` is raised."""
        await self.connections.get_pool()
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.settings.concurrency)
        unit = _Unit(GenRequest("", messages, (0,), (int(seed),), prefix=prefix), (0,), (int(seed),))
        return (await self._attempts(unit, sampling, self._sem, extra_body))[0]

    # ---- async core ------------------------------------------------------------------------------

    async def _run_all(self, requests: list[GenRequest], sampling: SamplingConfig, out: queue.Queue) -> None:
        try:
            await self.connections.get_pool()
            sem = asyncio.Semaphore(self.settings.concurrency)
            for req in requests:  # validate everything before the first request goes out
                if len(req.chain_indices) != len(req.seeds):
                    raise ValueError(f"{req.problem_id}: {len(req.chain_indices)} chain indices but {len(req.seeds)} seeds")
            tasks = []
            for req in requests:
                if not req.chain_indices:
                    continue
                if self._n_ok and len(req.chain_indices) > 1:
                    units = [_Unit(req, req.chain_indices, req.seeds)]
                else:
                    units = [_Unit(req, (c,), (s,)) for c, s in zip(req.chain_indices, req.seeds)]
                for unit in units:
                    tasks.append(asyncio.ensure_future(self._run_unit(unit, sampling, sem, out)))
            try:
                await asyncio.gather(*tasks)
            finally:
                for t in tasks:
                    t.cancel()
        finally:
            out.put(_DONE)

    async def _run_unit(self, unit: _Unit, sampling: SamplingConfig, sem: asyncio.Semaphore, out: queue.Queue) -> None:
        if len(unit.chain_indices) > 1 and self._n_ok:
            try:
                for gen in await self._attempts(unit, sampling, sem):
                    out.put(gen)
                return
            except TooFewChoices:
                self._n_ok = False

        async def single(c: int, s: int) -> None:
            for gen in await self._attempts(_Unit(unit.req, (c,), (s,)), sampling, sem):
                out.put(gen)

        await asyncio.gather(*(single(c, s) for c, s in zip(unit.chain_indices, unit.seeds)))

    def _rejects_n(self, exc: BaseException, n: int) -> bool:
        """A 400/422 to a request with n > 1 under use_n=auto: the server does not do n."""
        return self.use_n == "auto" and n > 1 and status_of(exc) in (400, 422)

    async def _attempts(self, unit: _Unit, sampling: SamplingConfig, sem: asyncio.Semaphore,
                        extra_body: dict[str, Any] | None = None) -> list[Generation]:
        n = len(unit.chain_indices)
        t0 = time.perf_counter()
        last: BaseException | None = None
        attempts = retries = refused = 0
        # quick connect retries per URL, so that with a fleet every server is tried before giving up
        cfg, retry = self.settings, self.retry
        refuse_budget = (cfg.connect_retries + 1) * len(self.base_urls)
        while True:
            attempts += 1
            where: list[str] = []  # the server the attempt went to, once picked
            started = time.monotonic()
            try:
                async with sem:
                    self.stats["requests"] += 1
                    try:
                        gens = await within(self._once(unit, sampling, extra_body, where), cfg.attempt_s)
                    except asyncio.TimeoutError:
                        raise RequestDeadline(f"no complete reply after {time.monotonic() - started:.1f} s "
                                              f"(the deadline is {cfg.attempt_s:g} s: model_args deadline=...)"
                                              ) from None
                elapsed = time.perf_counter() - t0
                retry.succeeded()
                for g in gens:
                    g.attempts = attempts
                    g.latency_s = elapsed
                return gens
            except TooFewChoices:
                raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; unknown ones become errors
                last = exc
                if self._rejects_n(exc, n):
                    raise TooFewChoices() from exc
                server = where[0] if where else self.base_urls[0]
                why = connect_failure(exc)
                if why is not None:
                    refused += 1
                    if refused >= refuse_budget:
                        raise ServerUnreachable(self.unreachable(exc, why, attempts, time.perf_counter() - t0)) from None
                    retry.say_retry(server, attempts, exc, cfg.connect_backoff)
                    await asyncio.sleep(cfg.connect_backoff)
                    continue
                if not retry.retryable(exc) or retries >= cfg.max_retries:
                    break
                retry.give_up_if_silent(exc, started)
                delay = retry.delay(retries, exc)
                self.stats["retries"] += 1
                retry.say_retry(server, attempts, exc, delay)
                await asyncio.sleep(delay)
                retries += 1
        self.stats["errors"] += n
        msg = printable(f"{type(last).__name__}: {last}")[:500] if last is not None else "unknown error"
        elapsed = time.perf_counter() - t0
        return [
            Generation(
                problem_id=unit.req.problem_id,
                chain_index=c,
                text="",
                error=msg,
                attempts=attempts,
                latency_s=elapsed,
                extra={"seed": s},
                prefix=unit.req.prefix,
            )
            for c, s in zip(unit.chain_indices, unit.seeds)
        ]

    def unreachable(self, exc: BaseException, why: str, attempts: int, elapsed: float) -> str:
        """One line: the URL(s), the reason, and what was tried (the shape of every "the server is not
        there" message: `vpo run`, `vpo evolve`'s start-up check and its loop)."""
        tried = f"{exc.method} {exc.url}" if getattr(exc, "url", "") else "a request"
        urls = [u for u in self.base_urls if u]
        where = (f"the server at {urls[0]}" if len(urls) == 1 else
                 f"any of the servers {', '.join(urls)}" if urls else "the server (no URL given)")
        return (f"cannot connect to {where}: {why} ({tried}, {attempts} attempt{'s' * (attempts != 1)} "
                f"in {elapsed:.1f} s); is the server running, and is the URL (--base-url) right?")

    def _prompt_text(self, req: GenRequest, sampling: SamplingConfig | None = None) -> str:
        return render_messages(req.messages, self._tokenizer, template_kwargs(sampling) if sampling else None,
                               prefix=req.prefix)

    def _extra_body(self, sampling: SamplingConfig, prefill: dict[str, Any] | None = None) -> dict[str, Any]:
        """``extra_body`` plus, in chat mode, the template arguments as ``chat_template_kwargs`` and
        the prefill fields of a prefixed request (:func:`prefill_fields`)."""
        body = {**self.settings.extra_body, **(prefill or {})}
        tmpl = template_kwargs(sampling)
        if tmpl and self.mode == "chat":
            given = body.get("chat_template_kwargs")
            body["chat_template_kwargs"] = {**(given if isinstance(given, dict) else {}), **tmpl}
        return body

    async def _once(self, unit: _Unit, sampling: SamplingConfig, extra_body: dict[str, Any] | None = None,
                    where: list[str] | None = None) -> list[Generation]:
        pool = await self.connections.get_pool()
        async with pool.use() as ep:
            if where is not None:
                where.append(ep.url)
            gens = await self._send(ep.client, unit, sampling, extra_body)
        if pool.managed:
            for g in gens:
                g.extra["endpoint"] = ep.url
        return gens

    def endpoint_stats(self) -> dict[str, Any]:
        """Per endpoint: requests, failures, ejections, re-admissions, admitted now."""
        pool = self.connections.pool
        return pool.describe() if pool is not None else {}

    async def _send(self, client: Any, unit: _Unit, sampling: SamplingConfig,
                    extra_body: dict[str, Any] | None = None) -> list[Generation]:
        n = len(unit.chain_indices)
        messages, prefill = prefill_fields(unit.req.messages, unit.req.prefix)
        if self.mode == "chat":
            path, body = "/chat/completions", {"messages": messages}
        else:
            path, body = "/completions", {"prompt": self._prompt_text(unit.req, sampling)}
        body.update(model=self.model, temperature=sampling.temperature, top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens)
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if n > 1:
            body["n"] = n
        if self.settings.send_seed:
            body["seed"] = int(unit.seeds[0])
        # extra fields win over the standard ones, as in the SDK; the prefill fields only in chat mode
        # (in completions mode the prefix is rendered into the prompt text)
        body.update(self._extra_body(sampling, prefill if self.mode == "chat" else None))
        if extra_body:
            body.update(extra_body)
        resp = await client.post(path, body)
        return self._to_generations(unit, resp, sampling)

    def _prefix_tokens(self, prefix: str) -> int | None:
        """The prefix's length in tokens, counted with the local tokenizer when one is given (the
        server's usage counts it inside the prompt and does not say how much of it was the prefix)."""
        if not prefix or self._tokenizer is None:
            return None
        return len(self._tokenizer(prefix, add_special_tokens=False)["input_ids"])

    def _to_generations(self, unit: _Unit, resp: Any, sampling: SamplingConfig) -> list[Generation]:
        n = len(unit.chain_indices)
        texts = read_choices(resp, self.mode, n, self.use_n)
        prompt_tokens, completion_tokens = usage(resp)
        if prompt_tokens is None and self.counting_tokenizer() is not None:  # the server did not say
            prompt_tokens = self._token_len(self._prompt_text(unit.req, sampling), special=True)
        if n == 1 and completion_tokens is not None:
            counts, source = [completion_tokens], token_counts.FROM_SERVER
        else:
            # vLLM's server (and OpenAI's API) report one total for all n choices: split it by the
            # rule in token_counts (exact where the reply determines it)
            tok = [self._token_len(t) for t, _, _ in texts] if self.counting_tokenizer() is not None else None
            counts, source = token_counts.split_completion_tokens(
                completion_tokens, [f for _, f, _ in texts], sampling.max_tokens, tok, [len(t) for t, _, _ in texts])
        gens = []
        for i, (c, s) in enumerate(zip(unit.chain_indices, unit.seeds)):
            text, finish, reasoning = texts[i]
            extra: dict[str, Any] = {"seed": int(unit.seeds[0]) if n > 1 else int(s)}
            if reasoning:
                extra["reasoning"] = reasoning
            if counts[i] is not None:
                extra["completion_tokens_from"] = source
            if n > 1:  # the server's own numbers, for the whole request
                extra["group_n"] = n
                extra["group_usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            gens.append(
                Generation(
                    problem_id=unit.req.problem_id,
                    chain_index=c,
                    text=join(unit.req.prefix, text),  # the server returns the continuation only
                    prompt_tokens=prompt_tokens,
                    completion_tokens=counts[i],
                    finish_reason=finish if isinstance(finish, str) else None,
                    extra=extra,
                    prefix=unit.req.prefix,
                    prefix_tokens=self._prefix_tokens(unit.req.prefix),
                )
            )
        return gens

    def counting_tokenizer(self) -> Any:
        """The model's tokenizer for counting tokens the server does not report, or None.

        The ``tokenizer`` model arg when given; else the served name when it is known locally without a
        download or a conversion: a local folder, a zoo model's existing folder, or a hub id already in
        the local cache. Looked up once, by the first ``generate`` that may send ``n > 1``."""
        if self._tokenizer is not None:
            return self._tokenizer
        return None if self._counting is _UNSET else self._counting

    def _token_len(self, text: str, special: bool = False) -> int:
        return len(self.counting_tokenizer()(text, add_special_tokens=special)["input_ids"])
