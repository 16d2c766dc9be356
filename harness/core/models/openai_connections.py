"""The openai backend's connections: one JSON client per server, the endpoint pool over them, and the
event loop they live on.

Why it looks the way it does:
- Requests are JSON posts through :class:`~vpo_harness.harness.core.models.transport.JSONClient`
  (httpx, one client per server, keep-alive connections, guarded so that a reply always belongs to its
  request; that module's docstring says why httpx and what it adds). A reply that repeats the
  completion ``id`` of one already read by this backend (a stray reply) is refused with its
  connection, so the ids read are shared by every client here. ``keepalive=false`` gives every
  request a connection of its own, for a server one does not trust (docs/usage.md says what
  keep-alive cannot rule out), and then no ids are kept.
- The synchronous runner gets an asyncio loop on a background thread (:meth:`Connections.loop`); the
  evolve loop sends from its own. httpx's pools belong to the loop that created them, so the pool is
  built on the first loop that asks and a second loop is refused.
- Several comma-separated URLs are spread over by :class:`~vpo_harness.harness.core.models.endpoints.EndpointPool`.
"""
from __future__ import annotations

import asyncio
import threading

from vpo_harness.harness.core.models.endpoints import EndpointPool
from vpo_harness.harness.core.models.openai_settings import HEADERS_SOURCE, OpenAISettings
from vpo_harness.harness.core.models.transport import JSONClient


class Connections:
    """The clients, endpoint pool and background loop of one backend."""

    def __init__(self, settings: OpenAISettings, urls: list[str]) -> None:
        self.settings, self.urls = settings, urls
        #: the ids of the replies read so far, shared by every client of this backend: a stray reply
        #: repeating one is refused (transport.ReplayedReply). Not needed, and not kept, without
        #: keep-alive, where a reply cannot reach another request's connection (and a server that
        #: repeats ids can be used that way)
        self._reply_ids: set[str] | None = set() if settings.keepalive else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.pool: EndpointPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None  # the loop the pool's connections belong to
        self._pool_lock: asyncio.Lock | None = None  # one pool, however many first requests race for it

    def loop(self) -> asyncio.AbstractEventLoop:
        """The background loop the synchronous ``generate`` runs its requests on (started once)."""
        if self._loop is not None:
            return self._loop
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="openai-backend-loop", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        return loop

    def client_for(self, url: str) -> JSONClient:
        """A client for one server with the backend's key, headers and timeout."""
        s = self.settings
        return JSONClient(url, api_key=s.resolved_api_key(), timeout=s.timeout, headers=s.header_map,
                          api_key_source=s.api_key_source(), headers_source=HEADERS_SOURCE,
                          keepalive=s.keepalive, reply_ids=self._reply_ids)

    async def get_pool(self) -> EndpointPool:
        """The endpoint pool, built on the running loop (the background thread's for generate, the
        caller's for generate_one): the async HTTP pools belong to the loop that created them."""
        running = asyncio.get_running_loop()
        if self.pool is not None and self._pool_loop is not running:
            raise RuntimeError("an OpenAIServerBackend serves one event loop: generate and generate_one "
                               "cannot share an instance")
        if self.pool is None:
            # the first requests arrive together; the fleet's health check awaits, so without the lock
            # each of them would build (and keep using) a pool of its own
            if self._pool_lock is None:
                self._pool_lock = asyncio.Lock()
            async with self._pool_lock:
                if self.pool is None:
                    pool = EndpointPool(
                        self.urls,
                        self.client_for,
                        eject_after=self.settings.eject_after, cooldown_s=self.settings.cooldown_s,
                        health_timeout_s=min(self.settings.timeout, 10.0))
                    await pool.start()
                    self.pool, self._pool_loop = pool, running
        return self.pool

    async def aclose(self) -> None:
        """Close the connections opened in the running loop, from that loop."""
        if self.pool is not None:
            await self.pool.aclose()
        self.pool = self._pool_loop = self._pool_lock = None

    def close(self) -> None:
        """Close the pool opened on the background loop, then stop the loop and its thread."""
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if self.pool is not None:
            try:
                asyncio.run_coroutine_threadsafe(self.pool.aclose(), loop).result(timeout=10)
            except Exception:  # closing is best effort: the process may be shutting down
                pass
            self.pool = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None
