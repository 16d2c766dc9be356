"""The openai backend's retry policy: which failures are tried again, how long to wait, and when a
server that keeps failing is given up on as a whole.

Why it looks the way it does:
- Long evals hit flaky servers: 429s, 5xx, timeouts, dropped sockets, half-written JSON. Those are
  retried here (exponential backoff with full jitter, so many workers don't retry in lock-step; a
  server's ``Retry-After`` wins), and nowhere else, so attempts are counted in one place.
- What a retry cannot change (a reply over the size caps, bytes that are not HTTP:
  ``transport.PERMANENT``) is not retried, nor is a 4xx other than 408/409/429.
- A server that stops answering is given up on as a whole, not chain by chain: once requests have
  been failing (timeouts, dropped connections, 5xx, garbage) for ``give_up_after`` seconds with no
  reply succeeding since, :class:`ServerUnreachable` stops the run. Without it, each chain would spend
  its own ``max_retries`` timeouts (about 70 minutes at the defaults) before the next chain started
  doing the same.
- Every retry logs one line (server, attempt, reason, next wait) under the ``vpo_harness`` logger,
  progress bars or not, so a run that looks stuck says why; the CLI shows it on stderr.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from typing import Sequence

from vpo_harness.harness.core.models import transport
from vpo_harness.harness.core.models.endpoints import ServerUnreachable, counts_against_endpoint
from vpo_harness.harness.core.models.openai_reply import GarbageResponse
from vpo_harness.harness.core.models.openai_settings import OpenAISettings
from vpo_harness.harness.core.printable import printable

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)


class RequestDeadline(Exception):
    """An attempt ran past its wall-clock deadline (a slow or trickling server). Retried."""


def retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` hint in seconds, when the error carries one."""
    headers = getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an error reply, else None."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retryable(exc: BaseException) -> bool:
    """Whether another attempt may succeed where this one failed."""
    if isinstance(exc, (GarbageResponse, json.JSONDecodeError)):
        return True
    if isinstance(exc, transport.PERMANENT):  # the same bytes would come back: fail the chain now
        return False
    if isinstance(exc, (*transport.TRANSPORT_ERRORS, asyncio.TimeoutError, RequestDeadline)):
        return True
    status = status_of(exc)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return False


class RetryPolicy:
    """One backend's policy (shared by all its requests): the backoff, and the clock of how long its
    servers have been failing with no reply succeeding (``give_up_after``)."""

    def __init__(self, settings: OpenAISettings, urls: Sequence[str]) -> None:
        self.max_retries = settings.max_retries
        self.backoff_base, self.backoff_max = settings.backoff_base, settings.backoff_max
        self.give_up_after = settings.give_up_after
        self.urls = list(urls)
        self.rng = random.Random()
        self._last_ok: float | None = None  # when a reply last succeeded
        self._failing_since: float | None = None  # the start of the failures since then

    retryable = staticmethod(retryable)

    def delay(self, attempt: int, exc: BaseException) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2^attempt)]; a server's Retry-After wins."""
        delay = self.rng.uniform(0.0, min(self.backoff_max, self.backoff_base * (2**attempt)))
        hint = retry_after(exc)
        if hint is not None:
            delay = max(delay, min(hint, self.backoff_max))
        return delay

    def succeeded(self) -> None:
        """A reply came back: the servers are answering again."""
        self._last_ok, self._failing_since = time.monotonic(), None

    def give_up_if_silent(self, exc: BaseException, started: float) -> None:
        """Raise :class:`ServerUnreachable` once requests have failed for ``give_up_after`` seconds with
        no reply succeeding since (the failures counted are the server's: transport, 5xx, garbage).
        ``started``: when the failed attempt began (``time.monotonic()``)."""
        if not (counts_against_endpoint(exc) or isinstance(exc, RequestDeadline)):
            return
        since = max(started, self._last_ok) if self._last_ok is not None else started
        if self._failing_since is None or since < self._failing_since:
            self._failing_since = since
        silent = time.monotonic() - self._failing_since
        if silent >= self.give_up_after:
            urls = ", ".join(self.urls)
            raise ServerUnreachable(
                f"no reply from {'the server at ' if len(self.urls) == 1 else 'any of the servers '}{urls} "
                f"succeeded for {silent:.0f} s (last: {printable(f'{type(exc).__name__}: {exc}')[:200]}); "
                f"giving up (model_args give_up_after={self.give_up_after:g}); is the server overloaded or hung?")

    @staticmethod
    def say_retry(server: str, attempt: int, exc: BaseException, delay: float) -> None:
        """One line per retry, so a run that looks stuck says why."""
        reason = printable(f"{type(exc).__name__}: {exc}")[:300]
        _log.warning(f"[vpo] {server}: attempt {attempt} failed ({reason}); next try in {delay:.1f} s")
