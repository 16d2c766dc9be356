"""A pool of OpenAI-compatible endpoints (a fleet of vLLM servers behind no load balancer).

Why it works the way it does:
- Requests go to the admitted endpoint with the fewest requests in flight (ties in turn), so load
  follows capacity: a slow server holds more requests and gets fewer new ones.
- ``eject_after`` consecutive transport failures (connection refused/reset, timeouts, 5xx, garbage)
  eject an endpoint (outlier ejection as in service meshes: a dead server fails fast, so
  least-in-flight alone would keep feeding it). A failed request is retried by the backend's retry
  loop, which picks again, so its chain lands on a live endpoint. After ``cooldown_s`` it is health-checked (``GET /models``) in the background
  and re-admitted only when the check passes; a failed check restarts the cooldown.
- With several URLs every endpoint is checked once at start: dead ones start ejected, and if none
  answers the run stops with one line naming them. A single URL is never checked nor ejected (its
  failures are the retry loop's business), so one-server runs behave exactly as before.
- Status codes that say "the request" rather than "the server" is at fault (4xx, 429) never count.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Sequence

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

Client = Any  # harness.core.models.transport.JSONClient (get, aclose)


class ServerUnreachable(RuntimeError):
    """No connection could be opened to the server(s) after the quick connect retries, or none has
    answered for the backend's ``give_up_after``: the message names the URL(s), the reason and what
    was tried. Raised out of the openai backend's ``generate``/``generate_one``; every command turns
    it into one line and exit code 3 (here, beside the pool and without httpx, so the CLI can catch
    it without importing a client)."""


async def within(aw: Any, seconds: float | None) -> Any:
    """``aw`` awaited with a time limit (``asyncio.TimeoutError`` past it): ``asyncio.timeout`` where
    there is one (3.11+: a timer on the running task), else ``wait_for`` (which wraps ``aw`` in a task
    of its own, an extra hop through the event loop per request)."""
    if seconds is None:
        return await aw
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:
        return await asyncio.wait_for(aw, seconds)
    async with timeout(seconds):
        return await aw


def split_urls(base_url: str | Sequence[str] | None) -> list[str]:
    """``"u1,u2"`` or ``["u1", "u2"]`` -> ``["u1", "u2"]`` (blanks dropped, order kept, duplicates refused)."""
    if base_url is None:
        return []
    parts = base_url.split(",") if isinstance(base_url, str) else list(base_url)
    urls = [u.strip().rstrip("/") for u in parts if u and u.strip()]
    dup = {u for u in urls if urls.count(u) > 1}
    if dup:
        raise ValueError(f"--base-url lists {', '.join(sorted(dup))} more than once")
    return urls


@dataclass
class Endpoint:
    url: str
    client: Client
    inflight: int = 0
    consecutive_failures: int = 0
    ejected_until: float | None = None  # None: admitted
    probing: bool = False
    stats: dict[str, int] = field(default_factory=lambda: {"requests": 0, "failures": 0, "ejections": 0,
                                                           "readmissions": 0})

    @property
    def admitted(self) -> bool:
        return self.ejected_until is None


def counts_against_endpoint(exc: BaseException) -> bool:
    """Transport-level failures: the server (not the request) is at fault."""
    from vpo_harness.harness.core.models.transport import TRANSPORT_ERRORS

    if isinstance(exc, (*TRANSPORT_ERRORS, asyncio.TimeoutError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status >= 500
    # unreadable 2xx bodies (the backend's GarbageResponse, JSON errors) say the server is broken
    return type(exc).__name__ in ("GarbageResponse", "JSONDecodeError")


def connect_failure(exc: BaseException) -> str | None:
    """Why no connection could be opened (refused, no such host, network unreachable), or None when the
    failure is something else. These fail in milliseconds and the same way on every retry, unlike a
    timeout or a dropped connection, so the backend gives up on them quickly instead of backing off
    for a minute. A connect *timeout* is not one of them: a loaded server may accept the next try."""
    from vpo_harness.harness.core.models.transport import ConnectError

    seen: set[int] = set()
    link: BaseException | None = exc
    connect = False
    root: BaseException | None = None
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        connect = connect or isinstance(link, ConnectError)
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        root = link
        link = link.__cause__ or link.__context__
    if not connect:
        return None
    return str(root) or type(root).__name__


class EndpointPool:
    def __init__(self, urls: Sequence[str], make_client: Callable[[str], Client], *, eject_after: int = 3,
                 cooldown_s: float = 10.0, health_timeout_s: float = 5.0):
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        if eject_after < 1:
            raise ValueError("eject_after must be >= 1")
        self.endpoints = [Endpoint(u, make_client(u)) for u in urls]
        self.eject_after = int(eject_after)
        self.cooldown_s = float(cooldown_s)
        self.health_timeout_s = float(health_timeout_s)
        self._turn = itertools.count()
        self._tasks: set[asyncio.Task] = set()
        self._started = False

    @property
    def managed(self) -> bool:
        """Health checks and ejection apply only when there is somewhere else to send requests."""
        return len(self.endpoints) > 1

    async def healthy(self, ep: Endpoint) -> bool:
        try:
            await asyncio.wait_for(ep.client.get("/models"), timeout=self.health_timeout_s)
            return True
        except Exception:  # noqa: BLE001 - any failure of the probe means "not yet"
            return False

    async def start(self) -> None:
        """Check every endpoint once; dead ones start ejected. Refuse to start when none answers."""
        if self._started or not self.managed:
            self._started = True
            return
        ok = await asyncio.gather(*(self.healthy(ep) for ep in self.endpoints))
        if not any(ok):
            raise ValueError(f"none of the {len(self.endpoints)} endpoints answered GET /models: "
                             + ", ".join(ep.url for ep in self.endpoints))
        for ep, good in zip(self.endpoints, ok):
            if not good:
                self.eject(ep, "failed the health check at start")
        self._started = True

    def pick(self) -> Endpoint:
        self._probe_due()
        live = [ep for ep in self.endpoints if ep.admitted] or self.endpoints  # all out: try anyway
        turn = next(self._turn)
        n = len(self.endpoints)
        return min(live, key=lambda ep: (ep.inflight, (self.endpoints.index(ep) - turn) % n))

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[Endpoint]:
        """One request on the endpoint :meth:`pick` chooses: in-flight and request counts kept, and the
        outcome reported (a failure counts against the endpoint, then propagates)."""
        ep = self.pick()
        ep.inflight += 1
        ep.stats["requests"] += 1
        try:
            yield ep
        except Exception as exc:
            self.failed(ep, exc)
            raise
        finally:
            ep.inflight -= 1
        self.succeeded(ep)

    def succeeded(self, ep: Endpoint) -> None:
        ep.consecutive_failures = 0

    def failed(self, ep: Endpoint, exc: BaseException) -> None:
        if not counts_against_endpoint(exc):
            return
        ep.stats["failures"] += 1
        ep.consecutive_failures += 1
        if self.managed and ep.admitted and ep.consecutive_failures >= self.eject_after:
            self.eject(ep, f"{ep.consecutive_failures} consecutive failures, last {type(exc).__name__}")

    def eject(self, ep: Endpoint, why: str) -> None:
        ep.ejected_until = time.monotonic() + self.cooldown_s
        ep.stats["ejections"] += 1
        _log.warning(f"[vpo] endpoint {ep.url} ejected ({why}); health check again in {self.cooldown_s:g}s")

    def _probe_due(self) -> None:
        now = time.monotonic()
        for ep in self.endpoints:
            if not ep.admitted and not ep.probing and now >= (ep.ejected_until or 0):
                ep.probing = True
                task = asyncio.ensure_future(self._probe(ep))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _probe(self, ep: Endpoint) -> None:
        try:
            if await self.healthy(ep):
                ep.ejected_until, ep.consecutive_failures = None, 0
                ep.stats["readmissions"] += 1
                _log.info(f"[vpo] endpoint {ep.url} passed its health check: re-admitted")
            else:
                ep.ejected_until = time.monotonic() + self.cooldown_s
        finally:
            ep.probing = False

    def describe(self) -> dict[str, Any]:
        return {ep.url: {**ep.stats, "admitted": ep.admitted} for ep in self.endpoints}

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        for ep in self.endpoints:
            try:
                await ep.client.aclose()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
