"""Any OpenAI-compatible server (vLLM / SGLang servers, hosted APIs) as a Backend.

Why it looks the way it does:
- Long evals hit flaky servers: 429s, 5xx, timeouts, dropped sockets, half-written JSON. We retry
  those ourselves (exponential backoff with full jitter, so many workers don't retry in lock-step)
  and the client's own retries are off (``max_retries=0``) so attempts are counted in one place.
- A failure that survives every retry becomes a ``Generation`` with ``error`` set; nothing escapes
  and kills a multi-hour run. The runner decides later whether to re-run errored chains.
- The exception: no connection can be opened at all (connection refused, no such host). That fails
  in milliseconds and the same way every time, so it gets ``connect_retries`` quick retries (default
  one, ``connect_backoff`` seconds apart, per URL) and then :class:`ServerUnreachable` stops the
  whole ``generate`` with one line naming the URL and what was tried; the chains already finished
  are kept by the caller. A wrong port costs a fraction of a second, not a minute of backoff and a
  table of failed chains. Timeouts and dropped connections keep the backoff above.
- ``generate`` serves the synchronous runner; :meth:`OpenAIServerBackend.generate_one` sends one
  request from the caller's own event loop (the evolve loop) through the same request, retry and
  endpoint code, so one run has one policy.
- Requests are JSON posts through :class:`vpo_harness.harness.core.models.transport.JSONClient` (httpx, one
  client per server, keep-alive connections, guarded so that a reply always belongs to its request;
  that module's docstring says why httpx and what it adds). Its error classes say which failure it
  was, and the retry policy below is decided by them. Every retry prints one line to stderr (server,
  attempt, reason, next wait), progress bars or not. What a retry cannot change (a reply over the
  size caps, bytes that are not HTTP: ``transport.PERMANENT``) is not retried; a reply that repeats
  the completion ``id`` of one already read in this run (a stray reply) is dropped with its
  connection and the request sent again. ``keepalive=false`` gives every request a connection of
  its own, for a server one does not trust (docs/usage.md says what keep-alive cannot rule out).
- A server that stops answering is given up on as a whole, not chain by chain: once requests have
  been failing (timeouts, dropped connections, 5xx, garbage) for ``give_up_after`` seconds (default
  300) with no reply succeeding since, :class:`ServerUnreachable` stops the run, as for a refused
  connection. Without it, each chain would spend its own ``max_retries`` timeouts (about 70 minutes
  at the defaults) before the next chain started doing the same.
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
import json
import os
import queue
import random
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig, template_kwargs
from vpo_harness.harness.core.models import served_defaults, token_counts, transport
from vpo_harness.harness.core.models.endpoints import (EndpointPool, ServerUnreachable, connect_failure, counts_against_endpoint,
                                           split_urls, within)
from vpo_harness.harness.core.models.transport import JSONClient, check_header
from vpo_harness.harness.core.printable import printable
from vpo_harness.harness.core.models.prefill import join, prefill_fields
from vpo_harness.harness.core.models.prompting import render_messages

_DONE = object()
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # no --base-url and no OPENAI_BASE_URL: OpenAI's API


class GarbageResponse(Exception):
    """A 2xx reply we cannot read (bad JSON, no choices). Retried like a 5xx: usually transient."""


class RequestDeadline(Exception):
    """An attempt ran past its wall-clock deadline (a slow or trickling server). Retried."""


class _TooFewChoices(Exception):
    """The server ignored ``n``; the request is redone per chain."""


@dataclass
class _Unit:
    """One request to send: a whole group (n > 1) or a single chain."""

    req: GenRequest
    chain_indices: tuple[int, ...]
    seeds: tuple[int, ...]


_UNSET = object()


def _headers_arg(value: dict[str, str] | str | None) -> dict[str, str]:
    """``headers=``: a dict from Python, or ``Name:value;Name2:value2`` from ``--model-args`` (whose
    entries are split at commas, so the headers are split at semicolons)."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return {str(k).strip(): str(v) for k, v in value.items()}
    if not isinstance(value, str):
        raise ValueError(f"--model-args headers: expected Name:value;Name2:value2, got {type(value).__name__}")
    out: dict[str, str] = {}
    for part in value.split(";"):
        if not part.strip():
            continue
        name, sep, text = part.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--model-args headers: bad entry {printable(part)!r}: expected Name:value "
                             "(several separated by ';')")
        out[name.strip()] = text.strip()
    return out


def _count(value: Any) -> int | None:
    """A token count from a reply: a non-negative integer, else unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


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


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


class OpenAIServerBackend(Backend):
    """Chat or completions endpoint of an OpenAI-compatible server."""

    name = "openai"
    supports_prefill = True

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        mode: str = "chat",
        concurrency: int = 32,
        max_retries: int = 6,
        timeout: float = 600.0,
        deadline: float | None = None,
        use_n: bool | str = "auto",
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        api_key: str | None = None,
        tokenizer: str | None = None,
        extra_body: dict[str, Any] | None = None,
        send_seed: bool = True,
        eject_after: int = 3,
        cooldown_s: float = 10.0,
        connect_retries: int = 1,
        connect_backoff: float = 0.25,
        give_up_after: float = 300.0,
        headers: dict[str, str] | str | None = None,
        keepalive: bool = True,
    ) -> None:
        if mode not in ("chat", "completions"):
            raise ValueError(f"mode must be 'chat' or 'completions', got {mode!r}")
        if use_n not in ("auto", True, False):
            raise ValueError(f"use_n must be 'auto', true or false, got {use_n!r}")
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if connect_retries < 0 or connect_backoff < 0:
            raise ValueError("connect_retries and connect_backoff must be >= 0")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        # several comma-separated URLs: requests are spread over them (harness/core/models/endpoints.py)
        self.base_urls = split_urls(self.base_url) or [DEFAULT_BASE_URL]
        self.eject_after, self.cooldown_s = int(eject_after), float(cooldown_s)
        self.mode = mode
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.connect_retries, self.connect_backoff = int(connect_retries), float(connect_backoff)
        self.timeout = float(timeout)
        # the client's timeout bounds each step of a request (connect, head, body) on its own, so an
        # attempt could take a few timeouts in all: every attempt also gets a wall-clock deadline
        # (default: the timeout) and is retried past it
        self.deadline = float(deadline) if deadline is not None else self.timeout
        if self.deadline <= 0:
            raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
        self.use_n = use_n
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.extra_body = dict(extra_body or {})
        self.send_seed = bool(send_seed)
        if give_up_after <= 0:
            raise ValueError(f"give_up_after must be > 0 seconds, got {give_up_after}")
        self.give_up_after = float(give_up_after)
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        # refused here, before any request, naming where the value came from (never echoing it)
        self._api_key_source = ("--model-args api_key (or an evolve --config's llm.api_key)" if api_key else
                                "the OPENAI_API_KEY environment variable" if os.environ.get("OPENAI_API_KEY")
                                else "api_key")
        check_header("Authorization", self._api_key, self._api_key_source)
        self.headers = _headers_arg(headers)
        for name, value in self.headers.items():
            check_header(name, value, "--model-args headers")
        if keepalive not in (True, False):
            raise ValueError(f"keepalive must be true or false, got {keepalive!r}")
        self.keepalive = keepalive
        #: the ids of the replies read so far, shared by every client of this backend: a stray reply
        #: repeating one is refused (transport.ReplayedReply). Not needed, and not kept, without
        #: keep-alive, where a reply cannot reach another request's connection (and a server that
        #: repeats ids can be used that way)
        self._reply_ids: set[str] | None = set() if keepalive else None
        self._last_ok: float | None = None  # when a reply last succeeded (give_up_after)
        self._failing_since: float | None = None  # the start of the failures since then
        self._tokenizer_path = tokenizer
        self._tokenizer: Any = None
        if tokenizer is not None:
            from transformers import AutoTokenizer  # lazy: only completions mode with a local template

            from vpo_harness.harness.core.models import zoo

            self._tokenizer = AutoTokenizer.from_pretrained(zoo.resolve_local(tokenizer))
        self._counting: Any = _UNSET  # the tokenizer found for counting (counting_tokenizer), once looked up
        # Learned once per backend: flips to False when the server refuses n > 1.
        self._n_ok: bool = use_n is not False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pool: EndpointPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None  # the loop the pool's connections belong to
        self._pool_lock: asyncio.Lock | None = None  # one pool, however many first requests race for it
        self._sem: asyncio.Semaphore | None = None  # generate_one's cap on requests in flight
        self._rng = random.Random()
        self.stats = {"requests": 0, "retries": 0, "errors": 0}
        self._served: Any = _UNSET  # served_defaults.ServedModel of the first server, once asked

    # ---- the loop thread -------------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is not None:
            return self._loop
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="openai-backend-loop", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        return loop

    async def _get_pool(self) -> EndpointPool:
        # Built on the running loop (the backend's own thread for generate, the caller's for
        # generate_one): the async HTTP pools belong to the loop that created them.
        running = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is not running:
            raise RuntimeError("an OpenAIServerBackend serves one event loop: generate and generate_one "
                               "cannot share an instance")
        if self._pool is None:
            # the first requests arrive together; the fleet's health check awaits, so without the lock
            # each of them would build (and keep using) a pool of its own
            if self._pool_lock is None:
                self._pool_lock = asyncio.Lock()
            async with self._pool_lock:
                if self._pool is None:
                    pool = EndpointPool(
                        self.base_urls,
                        self.client_for,
                        eject_after=self.eject_after, cooldown_s=self.cooldown_s,
                        health_timeout_s=min(self.timeout, 10.0))
                    await pool.start()
                    self._pool, self._pool_loop = pool, running
        return self._pool

    def client_for(self, url: str) -> JSONClient:
        """A client for one server with this backend's key, headers and timeout."""
        return JSONClient(url, api_key=self._api_key, timeout=self.timeout, headers=self.headers,
                          api_key_source=self._api_key_source, headers_source="--model-args headers",
                          keepalive=self.keepalive, reply_ids=self._reply_ids)

    async def aopen(self) -> None:
        """Build the clients and the endpoint pool in the running loop now (for :meth:`generate_one`),
        so that the first requests of a search, sent together, share one pool. httpx opens a
        connection only for a request: the first requests open theirs together."""
        await self._get_pool()

    async def aclose(self) -> None:
        """Close the connections :meth:`generate_one` opened, from the loop that opened them."""
        if self._pool is not None:
            await self._pool.aclose()
        self._pool = self._pool_loop = self._sem = self._pool_lock = None

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if self._pool is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._pool.aclose(), loop).result(timeout=10)
            except Exception:  # closing is best effort: the process may be shutting down
                pass
            self._pool = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None

    # ---- public API ------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": self.model,
            "base_url": self.base_url,
            "args": {
                "mode": self.mode,
                "concurrency": self.concurrency,
                "max_retries": self.max_retries,
                "timeout": self.timeout,
                "deadline": self.deadline,
                "use_n": self.use_n,
                "tokenizer": self._tokenizer_path,
                "extra_body": self.extra_body,
                "send_seed": self.send_seed,
                "eject_after": self.eject_after,
                "cooldown_s": self.cooldown_s,
                "connect_retries": self.connect_retries,
                "connect_backoff": self.connect_backoff,
                "give_up_after": self.give_up_after,
                "headers": sorted(self.headers),  # the names only: a header may carry a secret
                "keepalive": self.keepalive,
            },
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
        loop = self._ensure_loop()
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
                    return await within(client.get("/models"), min(self.deadline, 10.0))
                finally:
                    await client.aclose()

            try:
                reply = asyncio.run_coroutine_threadsafe(listing(), self._ensure_loop()).result()
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
        await self._get_pool()
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        unit = _Unit(GenRequest("", messages, (0,), (int(seed),), prefix=prefix), (0,), (int(seed),))
        return (await self._attempts(unit, sampling, self._sem, extra_body))[0]

    # ---- async core ------------------------------------------------------------------------------

    async def _run_all(self, requests: list[GenRequest], sampling: SamplingConfig, out: queue.Queue) -> None:
        try:
            await self._get_pool()
            sem = asyncio.Semaphore(self.concurrency)
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
            except _TooFewChoices:
                self._n_ok = False

        async def single(c: int, s: int) -> None:
            for gen in await self._attempts(_Unit(unit.req, (c,), (s,)), sampling, sem):
                out.put(gen)

        await asyncio.gather(*(single(c, s) for c, s in zip(unit.chain_indices, unit.seeds)))

    def _backoff(self, attempt: int, exc: BaseException) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2^attempt)]; a server's Retry-After wins."""
        delay = self._rng.uniform(0.0, min(self.backoff_max, self.backoff_base * (2**attempt)))
        hint = _retry_after(exc)
        if hint is not None:
            delay = max(delay, min(hint, self.backoff_max))
        return delay

    def _retryable(self, exc: BaseException) -> bool:
        if isinstance(exc, (GarbageResponse, json.JSONDecodeError)):
            return True
        if isinstance(exc, transport.PERMANENT):  # the same bytes would come back: fail the chain now
            return False
        if isinstance(exc, (*transport.TRANSPORT_ERRORS, asyncio.TimeoutError, RequestDeadline)):
            return True
        status = _status(exc)
        if status is not None:
            return status in (408, 409, 429) or status >= 500
        return False

    def _rejects_n(self, exc: BaseException, n: int) -> bool:
        """A 400/422 to a request with n > 1 under use_n=auto: the server does not do n."""
        return self.use_n == "auto" and n > 1 and _status(exc) in (400, 422)

    async def _attempts(self, unit: _Unit, sampling: SamplingConfig, sem: asyncio.Semaphore,
                        extra_body: dict[str, Any] | None = None) -> list[Generation]:
        n = len(unit.chain_indices)
        t0 = time.perf_counter()
        last: BaseException | None = None
        attempts = retries = refused = 0
        # quick connect retries per URL, so that with a fleet every server is tried before giving up
        refuse_budget = (self.connect_retries + 1) * len(self.base_urls)
        while True:
            attempts += 1
            where: list[str] = []  # the server the attempt went to, once picked
            started = time.monotonic()
            try:
                async with sem:
                    self.stats["requests"] += 1
                    try:
                        gens = await within(self._once(unit, sampling, extra_body, where), self.deadline)
                    except asyncio.TimeoutError:
                        raise RequestDeadline(f"no complete reply after {time.monotonic() - started:.1f} s "
                                              f"(the deadline is {self.deadline:g} s: model_args deadline=...)"
                                              ) from None
                elapsed = time.perf_counter() - t0
                self._last_ok, self._failing_since = time.monotonic(), None
                for g in gens:
                    g.attempts = attempts
                    g.latency_s = elapsed
                return gens
            except _TooFewChoices:
                raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; unknown ones become errors
                last = exc
                if self._rejects_n(exc, n):
                    raise _TooFewChoices() from exc
                server = where[0] if where else self.base_urls[0]
                why = connect_failure(exc)
                if why is not None:
                    refused += 1
                    if refused >= refuse_budget:
                        raise ServerUnreachable(self.unreachable(exc, why, attempts, time.perf_counter() - t0)) from None
                    self._say_retry(server, attempts, exc, self.connect_backoff)
                    await asyncio.sleep(self.connect_backoff)
                    continue
                if not self._retryable(exc) or retries >= self.max_retries:
                    break
                self._give_up_if_silent(exc, started)
                delay = self._backoff(retries, exc)
                self.stats["retries"] += 1
                self._say_retry(server, attempts, exc, delay)
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

    def _say_retry(self, server: str, attempt: int, exc: BaseException, delay: float) -> None:
        """One line per retry on stderr, so a run that looks stuck says why."""
        reason = printable(f"{type(exc).__name__}: {exc}")[:300]
        print(f"[vpo] {server}: attempt {attempt} failed ({reason}); next try in {delay:.1f} s",
              file=sys.stderr, flush=True)

    def _give_up_if_silent(self, exc: BaseException, started: float) -> None:
        """Raise :class:`ServerUnreachable` once requests have failed for ``give_up_after`` seconds with
        no reply succeeding since (the failures counted are the server's: transport, 5xx, garbage)."""
        if not (counts_against_endpoint(exc) or isinstance(exc, RequestDeadline)):
            return
        since = max(started, self._last_ok) if self._last_ok is not None else started
        if self._failing_since is None or since < self._failing_since:
            self._failing_since = since
        silent = time.monotonic() - self._failing_since
        if silent >= self.give_up_after:
            urls = ", ".join(self.base_urls)
            raise ServerUnreachable(
                f"no reply from {'the server at ' if len(self.base_urls) == 1 else 'any of the servers '}{urls} "
                f"succeeded for {silent:.0f} s (last: {printable(f'{type(exc).__name__}: {exc}')[:200]}); "
                f"giving up (model_args give_up_after={self.give_up_after:g}); is the server overloaded or hung?")

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
        body = {**self.extra_body, **(prefill or {})}
        tmpl = template_kwargs(sampling)
        if tmpl and self.mode == "chat":
            given = body.get("chat_template_kwargs")
            body["chat_template_kwargs"] = {**(given if isinstance(given, dict) else {}), **tmpl}
        return body

    async def _once(self, unit: _Unit, sampling: SamplingConfig, extra_body: dict[str, Any] | None = None,
                    where: list[str] | None = None) -> list[Generation]:
        pool = await self._get_pool()
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
        return self._pool.describe() if self._pool is not None else {}

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
        if self.send_seed:
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
        choices = resp.get("choices") if isinstance(resp, dict) else None
        if not isinstance(choices, list) or not choices:
            raise GarbageResponse(f"no choices in response: {str(resp)[:200]!r}")
        try:
            ordered = sorted(choices, key=lambda ch: ch.get("index") if isinstance(ch.get("index"), int) else 0)
            texts = []
            for ch in ordered:
                reasoning = None
                finish = ch.get("finish_reason")
                if self.mode == "chat":
                    message = ch.get("message") or {}
                    text = message.get("content")
                    # vLLM/SGLang reasoning parsers split thinking out of content; keep it for audits
                    reasoning = message.get("reasoning_content") or message.get("reasoning")
                else:
                    text = ch.get("text")
                if text is None:
                    # a 200 without text is not an empty answer: scoring it would be a silent zero
                    raise GarbageResponse(f"choice {ch.get('index', '?')} has null "
                                          f"{'message.content' if self.mode == 'chat' else 'text'} "
                                          f"(finish_reason {finish!r})")
                if not isinstance(text, str):
                    raise GarbageResponse(f"choice text is {type(text).__name__}")
                texts.append((text, finish, reasoning if isinstance(reasoning, str) else None))
        except (AttributeError, TypeError) as exc:  # a choice or message that is not an object
            raise GarbageResponse(f"malformed choices: {exc}") from exc
        if len(texts) < n:
            if self.use_n == "auto" and n > 1:
                raise _TooFewChoices()
            raise GarbageResponse(f"asked for n={n}, got {len(texts)} choices")
        usage = resp.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt_tokens, completion_tokens = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        texts = texts[:n]
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
