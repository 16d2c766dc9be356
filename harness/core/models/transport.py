"""The openai backend's transport: JSON requests over an ``httpx.AsyncClient``, plus the guards no
HTTP library gives a harness that stores what it is told.

Why httpx, called directly: it is the openai SDK's own transport (so proxies, CAs and compression
behave as researchers expect from inspect_ai or OpenEvolve), and calling it without the SDK's
request layer takes a quarter off the client's CPU per request, which sits on an evolve loop's
critical path (``python bench/http_client_cpu.py`` on the shared 2-core VM: SDK ``post`` 1.3-1.5 ms,
this client 1.0-1.1 ms, bare httpx the same). aiohttp costs 0.2 ms, but it hands a reply that
arrives on an idle kept-alive connection to the next request (tried against a loopback server);
httpx refuses that case in its pool and needs one guard, below, for the other.

What httpx gives: connection pooling, TLS, ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY``
(``trust_env``), ``SSL_CERT_FILE``/``SSL_CERT_DIR`` (else certifi's CAs), ``Accept-Encoding`` with
transparent gzip/deflate, and a per-read timeout. What this module adds:

- **A reply always belongs to its request.** httpcore drops an idle connection whose socket turned
  readable, but bytes that arrived in the same read as the end of a reply stay in h11's buffer and
  are parsed as the *next* request's reply (measured: every second row scored the previous
  problem's answer). :class:`_Checked` wraps each pooled connection and treats one with leftover
  bytes as expired, so it is closed instead of reused; the request goes out on a fresh connection.
  No HTTP/1.1 client can tell a reply a server sends *before* it has read the request from a real
  one; what is guaranteed is that no request is sent on a connection holding unread bytes.
- **A reply is never taken twice.** A stray reply that arrives just after the next request went out
  cannot be told apart by timing; when it repeats a reply already read (the same completion ``id``,
  ``reply_ids``) on a connection that carried a request before, it is :class:`ReplayedReply`: the
  connection it came on is dropped (:class:`_Checked` refuses it from then on), and the backend's
  retry sends the request again on a fresh one, whose first reply is taken whatever its ``id``. A stray
  reply with a fresh ``id`` is indistinguishable from the real one on a kept-alive connection: with
  ``keepalive=False`` every request gets a connection of its own, closed after its reply.
- **Bounded memory**: a reply head over :data:`MAX_HEAD_BYTES` (h11 itself stops at 100 KiB) or a
  body over :data:`MAX_BODY_BYTES` (counted as it streams in, after decompression) ends the attempt
  with :class:`ReplyTooLarge`.
- **Header values checked before any request** (:func:`check_header`): a key read from a file with
  its newline would otherwise add headers to every request.
- **Errors that say which failure it was**, because the backend's retry policy is decided by them
  (:mod:`vpo_harness.harness.core.models.openai_retry`): :class:`ConnectError` (no connection: fails fast),
  :class:`Timeout` (with the seconds that actually passed), :class:`RemoteProtocolError` (dropped or
  not HTTP), :class:`StatusError` (non-2xx, with ``Retry-After``; a redirect names its Location), and
  :class:`json.JSONDecodeError` for a 2xx body that is not JSON. :data:`PERMANENT` are those that
  asking again cannot change (a reply over the caps, bytes that are not an HTTP reply).
- **The URL checked before any request** (:func:`check_url`), and ``NO_PROXY`` entries written as
  address ranges (``127.0.0.0/8``, as the openai SDK's users write them) honoured: httpx matches
  ``NO_PROXY`` by host name only.

A request is never sent twice by this module: whether to ask again is the backend's retry policy.
"""
from __future__ import annotations

import http
import ipaddress
import json
import os
import time
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from vpo_harness.harness.core.printable import printable

USER_AGENT = "vpo-harness"
#: the largest reply body read into memory (after decompression): a model's answer is kilobytes,
#: a chat reply with n = 64 long chains a few megabytes
MAX_BODY_BYTES = 256 * 2**20
#: the largest reply head (status line and headers); h11 refuses anything over 100 KiB before this
MAX_HEAD_BYTES = 64 * 2**10


class HTTPError(Exception):
    """Base class: ``method`` and ``url`` name the request that failed."""

    def __init__(self, message: str, *, method: str = "", url: str = ""):
        super().__init__(message)
        self.method, self.url = method, url


class ConnectError(HTTPError):
    """No connection could be opened; the OS error (``ConnectionRefusedError``, ...) is in its causes."""


class Timeout(HTTPError):
    """No connection, or no byte of the reply, within the timeout."""


class RemoteProtocolError(HTTPError):
    """The server closed the connection mid-reply, or sent something that is not an HTTP reply."""


class ReplyTooLarge(RemoteProtocolError):
    """The reply's head or body is over the module's cap."""


class NotHTTP(RemoteProtocolError):
    """What the server sent is not an HTTP/1.1 reply (a bad status line, a malformed head)."""


class ReplayedReply(RemoteProtocolError):
    """A reply repeats the ``id`` of one already read: a stray reply, not this request's."""


#: the failures of the transport itself (not of the request): the backend retries them, and they count
#: against a server of a fleet
TRANSPORT_ERRORS = (ConnectError, Timeout, RemoteProtocolError)
#: transport failures that asking again cannot change: the backend does not retry them
PERMANENT = (ReplyTooLarge, NotHTTP)
#: the ends of a connection h11 reports as protocol errors: a dropped connection, retried as any other
_DROPPED = ("peer unexpectedly closed", "peer closed connection", "can't receive data")


class StatusError(HTTPError):
    """A reply with a non-2xx status."""

    def __init__(self, status_code: int, headers: dict[str, str], body: Any, *, method: str = "", url: str = ""):
        text = body if isinstance(body, str) else json.dumps(body)
        try:
            phrase = " " + http.HTTPStatus(status_code).phrase
        except ValueError:
            phrase = ""
        where = ""
        if 300 <= status_code < 400:
            where = f" (redirected to {printable(headers.get('location', '?'))}; point --base-url there)"
        super().__init__(f"HTTP {status_code}{phrase}{where}: {printable(text[:500])}", method=method, url=url)
        self.status_code, self.headers, self.body = status_code, headers, body


def check_header(name: str, value: str, source: str) -> None:
    """Refuse a header value that would change the request's framing (CR, LF) or that HTTP cannot
    carry (outside latin-1), in one line naming ``source``; the value itself is never echoed (it is
    usually a key)."""
    for i, ch in enumerate(value):
        if ch in "\r\n":
            raise ValueError(f"{source}: the {name} header value has a line break at character {i + 1} "
                             "(a key read from a file keeps its newline: strip it)")
        if ord(ch) > 255 or (ord(ch) < 32 and ch != "\t") or ord(ch) == 127:
            raise ValueError(f"{source}: the {name} header value has the character {ascii(ch)} at character "
                             f"{i + 1}, which an HTTP header cannot carry")
    if not name or any(not (33 <= ord(c) <= 126) or c in '()<>@,;:\\"/[]?={}' for c in name):
        raise ValueError(f"{source}: {ascii(name)} is not a valid HTTP header name")


def check_url(base_url: str) -> None:
    """Refuse, in one line, a ``--base-url`` that is not an http(s) URL or that holds a character a
    request line cannot carry (a CR/LF pasted with it, a space, a control character)."""
    for i, ch in enumerate(base_url):
        if ord(ch) < 33 or ord(ch) == 127:
            raise ValueError(f"--base-url '{printable(base_url)}' has the character {ascii(ch)} at character "
                             f"{i + 1}, which a URL cannot carry")
    try:
        u = urlsplit(base_url)
        host = u.hostname
        u.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        raise ValueError(f"--base-url '{printable(base_url)}' is not a valid URL ({exc})") from None
    if u.scheme not in ("http", "https") or not host:
        raise ValueError(f"--base-url '{printable(base_url)}' is not an http:// or https:// URL")


def bypasses_proxy(host: str, no_proxy: str | None = None) -> bool:
    """Whether ``NO_PROXY`` (default: the ``NO_PROXY`` / ``no_proxy`` environment variable) names an
    address range (``10.0.0.0/8``) holding ``host``, an IP address. Host names and single addresses
    httpx matches itself; ranges it ignores."""
    if no_proxy is None:
        no_proxy = os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or ""
    try:
        addr = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    for entry in no_proxy.split(","):
        entry = entry.strip()
        if "/" not in entry:
            continue
        try:
            if addr in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def _protocol_error(exc: Exception, method: str, url: str) -> RemoteProtocolError:
    """httpx's protocol, read and write errors as this module's: :class:`NotHTTP` where h11 could not
    parse what the server sent (nothing a retry changes), else a dropped connection. The message
    keeps httpx's class name only where it adds to ours (``ReadError: ...``)."""
    text = printable(str(exc)[:300]) or type(exc).__name__
    cause: BaseException | None = exc
    while cause is not None:
        if type(cause).__module__.startswith("h11") and type(cause).__name__ == "RemoteProtocolError":
            if not str(cause).lower().startswith(_DROPPED):
                return NotHTTP(f"the reply is not valid HTTP ({text})", method=method, url=url)
            break
        cause = cause.__cause__ or cause.__context__
    if type(exc).__name__ != "RemoteProtocolError":
        text = f"{type(exc).__name__}: {text}"
    return RemoteProtocolError(text, method=method, url=url)


def _h11_state(conn: Any) -> Any:
    """The h11 connection under a pooled httpcore connection (through a proxy's wrapper), or None
    when it has not connected yet."""
    for _ in range(4):
        state = getattr(conn, "_h11_state", None)
        if state is not None:
            return state
        conn = getattr(conn, "_connection", None)
        if conn is None:
            return None
    return None


#: the keys of a reply's ``extensions`` naming the :class:`_Checked` connection it came on, and
#: whether that connection had carried a request before (only then can a stray reply be waiting on it)
CONNECTION, REUSED = "vpo_connection", "vpo_reused"


class _Checked(httpcore.AsyncConnectionInterface):
    """A pooled connection that counts as expired while it is idle with bytes left over from its last
    reply, or once a reply it carried was refused (:meth:`drop`), so the pool closes it rather than
    handing it to the next request."""

    def __init__(self, inner: httpcore.AsyncConnectionInterface):
        self._inner = inner
        self._dropped = False
        self._requests = 0

    def drop(self) -> None:
        """Never send another request on this connection (what it carries can no longer be trusted)."""
        self._dropped = True

    def _leftover(self) -> bool:
        if self._dropped:
            return True
        if not self._inner.is_idle():
            return False
        state = _h11_state(self._inner)
        return state is not None and bool(state.trailing_data[0])

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if self._leftover():  # the last word before the request goes out: the pool tries another
            await self._inner.aclose()
            raise httpcore.ConnectionNotAvailable()
        self._requests += 1
        reused = self._requests > 1
        response = await self._inner.handle_async_request(request)
        response.extensions[CONNECTION] = self
        response.extensions[REUSED] = reused
        return response

    def has_expired(self) -> bool:
        return self._inner.has_expired() or self._leftover()

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return self._inner.can_handle_request(origin)

    def is_available(self) -> bool:
        return self._inner.is_available()

    def is_idle(self) -> bool:
        return self._inner.is_idle()

    def is_closed(self) -> bool:
        return self._inner.is_closed()

    def info(self) -> str:
        return self._inner.info()

    async def aclose(self) -> None:
        await self._inner.aclose()


def guard_pools(client: httpx.AsyncClient) -> int:
    """Wrap every connection the client's pools create (the direct one and each proxy's) in
    :class:`_Checked`; returns how many pools were guarded. httpx builds its pools privately, so this
    reaches into ``_transport``/``_mounts``/``_pool``: a test fails loudly if a release moves them."""
    guarded = 0
    for transport in [client._transport, *client._mounts.values()]:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        if not isinstance(pool, httpcore.AsyncConnectionPool):
            raise RuntimeError(f"httpx {httpx.__version__}: a transport without an httpcore pool "
                               f"({type(transport).__name__}); the leftover-bytes guard cannot be installed")
        make = pool.create_connection
        pool.create_connection = lambda origin, make=make: _Checked(make(origin))  # type: ignore[method-assign]
        guarded += 1
    return guarded


class JSONClient:
    """JSON over HTTP to one server (``base_url`` such as ``http://127.0.0.1:8000/v1``), connections
    kept alive between requests unless ``keepalive`` is False. ``timeout`` bounds the connect and
    each read on its own; the backend's per-attempt deadline bounds the whole. ``headers`` are added
    to every request (checked by :func:`check_header`; ``source`` names where they came from in its
    message). ``reply_ids``: the ``id`` of every JSON reply read so far, shared by the clients of one
    run; a reply repeating one is :class:`ReplayedReply`."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float | None = 600.0,
                 keepalive_s: float = 4.0, max_idle: int = 256, headers: dict[str, str] | None = None,
                 api_key_source: str = "api_key", headers_source: str = "headers", keepalive: bool = True,
                 reply_ids: set[str] | None = None):
        check_url(base_url)
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.reply_ids = reply_ids
        fixed = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if not keepalive:  # one connection per request, closed by both ends after its reply
            fixed["Connection"] = "close"
        if api_key:
            check_header("Authorization", api_key, api_key_source)
            fixed["Authorization"] = f"Bearer {api_key}"
        for name, value in (headers or {}).items():  # the user's win, as the SDK's default_headers do
            check_header(str(name), str(value), headers_source)
            fixed[str(name)] = str(value)
        # below uvicorn's 5 s keep-alive (vLLM's server), so an idle connection is dropped by us first
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=int(max_idle) if keepalive else 0,
                              keepalive_expiry=float(keepalive_s))
        host = urlsplit(self.base_url).hostname or ""
        where = f"[{host}]" if ":" in host else host
        direct = {f"all://{where}": None} if bypasses_proxy(host) else None  # None: no proxy for it
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=fixed, timeout=httpx.Timeout(timeout),
                                         limits=limits, trust_env=True, follow_redirects=False, mounts=direct)
        guard_pools(self._client)

    async def post(self, path: str, body: Any) -> Any:
        return await self.request("POST", path, body)

    async def get(self, path: str) -> Any:
        return await self.request("GET", path)

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        """One request; the reply's JSON. Raises the errors in the module docstring."""
        url = self.base_url + path
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else None
        t0 = time.monotonic()
        try:
            async with self._client.stream(method, url, content=data, headers=headers) as resp:
                try:
                    _check_head(resp, method, url)
                    raw = await _read_body(resp, method, url)
                    reply = self._parse(resp, raw, method, url)
                except ReplayedReply:
                    _drop(resp)  # a reply refused midway: what follows on its connection is not trusted
                    raise
        except httpx.TimeoutException as exc:
            step = "connect" if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)) else "read"
            raise Timeout(f"no {'connection' if step == 'connect' else 'reply'} from {url} after "
                          f"{time.monotonic() - t0:.1f} s (timeout {self.timeout:g} s per {step})",
                          method=method, url=url) from exc
        except httpx.ConnectError as exc:
            raise ConnectError(printable(str(exc)) or type(exc).__name__, method=method, url=url) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.DecodingError,
                httpx.ProxyError) as exc:
            raise _protocol_error(exc, method, url) from exc
        return reply

    def _parse(self, resp: httpx.Response, raw: bytes, method: str, url: str) -> Any:
        """The reply's JSON (None for 204), or the error a non-2xx status, a body that is not JSON or
        a replayed reply is."""
        status = resp.status_code
        if not 200 <= status < 300:
            try:
                detail: Any = json.loads(raw)
            except ValueError:
                detail = raw.decode("utf-8", "replace")
            raise StatusError(status, dict(resp.headers), detail, method=method, url=url)
        if status == 204:  # No Content
            return None
        try:
            reply = json.loads(raw)
        except UnicodeDecodeError as exc:  # bytes that are not UTF-8 are not JSON either
            raise json.JSONDecodeError(f"the body is not UTF-8 ({exc.reason})", raw.decode("latin-1"),
                                       exc.start) from exc
        rid = reply.get("id") if isinstance(reply, dict) else None
        if self.reply_ids is not None and isinstance(rid, str) and rid:
            # a connection's first reply cannot be a stray one (nothing was asked on it before): a
            # server that gives every reply the same id still gets through, one retry per reuse
            if rid in self.reply_ids and resp.extensions.get(REUSED, True):
                raise ReplayedReply(f"the reply repeats the id {printable(rid[:80])!r} of a reply already read "
                                    "(a stray reply on a kept-alive connection); the connection is dropped",
                                    method=method, url=url)
            self.reply_ids.add(rid)
        return reply

    async def aclose(self) -> None:
        await self._client.aclose()


def _drop(resp: httpx.Response) -> None:
    conn = resp.extensions.get(CONNECTION)
    if isinstance(conn, _Checked):
        conn.drop()


def _check_head(resp: httpx.Response, method: str, url: str) -> None:
    size = len(resp.extensions.get("reason_phrase", b"")) + 16
    for name, value in resp.headers.raw:
        size += len(name) + len(value) + 4
    if size > MAX_HEAD_BYTES:
        raise ReplyTooLarge(f"the reply's head is over {MAX_HEAD_BYTES} bytes", method=method, url=url)


async def _read_body(resp: httpx.Response, method: str, url: str) -> bytes:
    """The body, streamed and counted so that memory stays within :data:`MAX_BODY_BYTES`."""
    cap = MAX_BODY_BYTES
    declared = resp.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise ReplyTooLarge(f"the reply's body is {int(declared)} bytes, over the {cap}-byte cap",
                            method=method, url=url)
    chunks: list[bytes] = []
    n = 0
    async for chunk in resp.aiter_bytes():
        n += len(chunk)
        if n > cap:
            raise ReplyTooLarge(f"the reply's body is over the {cap}-byte cap", method=method, url=url)
        chunks.append(chunk)
    return b"".join(chunks)
