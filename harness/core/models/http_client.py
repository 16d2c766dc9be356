"""The openai backend's HTTP client: JSON requests over HTTP/1.1 keep-alive connections, on asyncio
streams.

Why not the openai SDK (or httpx, or aiohttp) underneath: an evolve loop sends one request per
iteration and waits on each reply, so the client's CPU per request sits on the search's critical
path. Measured on the idle 2-core VM against the loopback bench server (``python
bench/http_client_cpu.py``: sequential posts of a chat body, CPU per request as a ratio to the SDK's
generic ``post``, which took 1.0-1.6 ms): httpx 0.71, aiohttp 0.21-0.22, this client 0.14. Inside
``bench/evolve_throughput.py`` (one problem, W = 8) the search reached 0.85-0.86 of the ideal through
the SDK, 0.83-0.84 through an aiohttp session (5-6 ms of client CPU per iteration: its per-request
timers and connector) and 0.87 through this client (3.1 ms). What a backend needs of a client is
small and is all here: a connection pool per server, TLS, proxies from the environment, a timeout
per step, and errors that say which failure it was, because the backend's retry policy is decided
by that (:mod:`harness.core.models.openai_server`):

- :class:`ConnectError`: no connection could be opened (refused, no such host); its cause is the
  OS error. Fails fast in the backend.
- :class:`Timeout`: no connection, or nothing of the reply, within ``timeout`` seconds. Retried (a
  loaded server may accept the next try).
- :class:`RemoteProtocolError`: the connection closed mid-reply, or the reply is not HTTP. Retried.
- :class:`StatusError`: a non-2xx reply (``HTTP 429 Too Many Requests: <body>``), with ``status_code``, the headers (``Retry-After``) and the
  body. The backend retries 408/409/429/5xx.
- a 2xx body that is not JSON raises :class:`json.JSONDecodeError`. Retried as garbage.

Idle connections are dropped after ``keepalive_s``, below the 5 s keep-alive of uvicorn (which
vLLM's server runs on), and one the server closed while it sat idle is never reused. A request is
never sent twice by this client: a server that read a request and dropped the connection may have
done the work, and whether to ask again is the backend's retry policy (it counts attempts).
"""
from __future__ import annotations

import asyncio
import base64
import collections
import http
import json
import ssl
import time
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

USER_AGENT = "vpo-harness"


class HTTPError(Exception):
    """Base class: ``method`` and ``url`` name the request that failed."""

    def __init__(self, message: str, *, method: str = "", url: str = ""):
        super().__init__(message)
        self.method, self.url = method, url


class ConnectError(HTTPError):
    """No connection could be opened; ``__cause__`` is the OS error (``ConnectionRefusedError``, ...)."""


class Timeout(HTTPError):
    """No connection, or no byte of the reply, within the timeout."""


class RemoteProtocolError(HTTPError):
    """The server closed the connection mid-reply, or sent something that is not an HTTP reply."""


#: the failures of the transport itself (not of the request): the backend retries them, and they count
#: against a server of a fleet
TRANSPORT_ERRORS = (ConnectError, Timeout, RemoteProtocolError)


class StatusError(HTTPError):
    """A reply with a non-2xx status."""

    def __init__(self, status_code: int, headers: dict[str, str], body: Any, *, method: str = "", url: str = ""):
        text = body if isinstance(body, str) else json.dumps(body)
        try:
            phrase = " " + http.HTTPStatus(status_code).phrase
        except ValueError:
            phrase = ""
        super().__init__(f"HTTP {status_code}{phrase}: {text[:500]}", method=method, url=url)
        self.status_code, self.headers, self.body = status_code, headers, body


@dataclass
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0

    def usable(self, now: float, keepalive_s: float) -> bool:
        return (not self.writer.is_closing() and not self.reader.at_eof()
                and now - self.idle_since < keepalive_s)

    def close(self) -> None:
        self.writer.close()


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


class JSONClient:
    """JSON over HTTP/1.1 to one server (``base_url`` such as ``http://127.0.0.1:8000/v1``): one
    event loop's connections, kept alive between requests. ``timeout`` bounds each step on its own: the
    connect, the wait for the reply's head, and the read of its body (of each chunk when chunked);
    the backend's per-attempt deadline bounds the whole."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float | None = 600.0,
                 keepalive_s: float = 4.0, max_idle: int = 256, headers: dict[str, str] | None = None):
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"--base-url {base_url!r} is not an http:// or https:// URL")
        self.base_url = base_url.rstrip("/")
        self.scheme, self.host = u.scheme, u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.timeout, self.keepalive_s, self.max_idle = timeout, float(keepalive_s), int(max_idle)
        host_header = self.host if u.port is None else f"{self.host}:{u.port}"
        if ":" in self.host and not self.host.startswith("["):  # an IPv6 literal
            host_header = f"[{self.host}]" + (f":{u.port}" if u.port else "")
        fixed = {"Host": host_header, "User-Agent": USER_AGENT, "Accept": "application/json"}
        if api_key:
            fixed["Authorization"] = f"Bearer {api_key}"
        fixed.update(headers or {})
        self._proxy = self._proxy_for(u)
        if self._proxy is not None and self._proxy.get("auth") and self.scheme == "http":
            fixed["Proxy-Authorization"] = self._proxy["auth"]
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._idle: collections.deque[_Conn] = collections.deque()
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    # ---- connections ---------------------------------------------------------------------------------

    @staticmethod
    def _proxy_for(u: Any) -> dict[str, Any] | None:
        """The proxy the environment names for this URL (``HTTP(S)_PROXY``, ``NO_PROXY``), as the SDK's
        httpx client would use it."""
        proxies = urllib.request.getproxies()
        proxy = proxies.get(u.scheme)
        if not proxy or urllib.request.proxy_bypass(u.hostname or ""):
            return None
        p = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        if p.scheme != "http" or not p.hostname:
            raise ValueError(f"the {u.scheme.upper()}_PROXY environment variable {proxy!r}: only http:// proxies are supported")
        auth = None
        if p.username is not None:
            cred = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
            auth = "Basic " + base64.b64encode(cred).decode()
        return {"host": p.hostname, "port": p.port or 80, "auth": auth}

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()  # the system's CAs (SSL_CERT_FILE/DIR honoured)
        return self._ssl

    async def _open(self, method: str, url: str) -> _Conn:
        proxy = self._proxy
        host, port = (proxy["host"], proxy["port"]) if proxy else (self.host, self.port)
        tls = self.scheme == "https" and proxy is None
        try:
            reader, writer = await within(asyncio.open_connection(
                host, port, ssl=self._tls() if tls else None, server_hostname=self.host if tls else None,
                limit=2**24), self.timeout)
        except asyncio.TimeoutError as exc:
            # timeout None: the OS's own timeout fired (ETIMEDOUT is a TimeoutError)
            raise Timeout(f"connect to {host}:{port} timed out"
                          + (f" after {self.timeout:g} s" if self.timeout is not None else ""),
                          method=method, url=url) from exc
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(str(exc) or type(exc).__name__, method=method, url=url) from exc
        conn = _Conn(reader, writer)
        if proxy and self.scheme == "https":  # a tunnel through the proxy, then TLS to the server
            target = f"{self.host}:{self.port}"
            auth = f"Proxy-Authorization: {proxy['auth']}\r\n" if proxy.get("auth") else ""
            writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth}\r\n".encode("latin-1"))
            try:
                status, _, _ = await self._read_head(conn, method, url)
            except BaseException:  # a timeout, a reply that is not HTTP, a cancel: the socket is closed
                conn.close()
                raise
            if status != 200:
                conn.close()
                raise ConnectError(f"the proxy refused to tunnel to {target} (status {status})", method=method, url=url)
            if not hasattr(writer, "start_tls"):  # Python 3.10
                conn.close()
                raise ConnectError("https through a proxy needs Python 3.11 or later", method=method, url=url)
            try:
                await writer.start_tls(self._tls(), server_hostname=self.host)
            except (OSError, ssl.SSLError) as exc:
                conn.close()
                raise ConnectError(str(exc) or type(exc).__name__, method=method, url=url) from exc
            except BaseException:  # a cancel mid-handshake
                conn.close()
                raise
        return conn

    def _take_idle(self) -> _Conn | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to have been closed
            if conn.usable(now, self.keepalive_s):
                return conn
            conn.close()
        return None

    def _put_idle(self, conn: _Conn) -> None:
        if self._closed or len(self._idle) >= self.max_idle:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    async def warm(self, n: int) -> int:
        """Open up to ``n`` idle connections now (fewer when some are open already); returns how many
        are idle afterwards. A server that cannot be reached is left for the first request to report."""
        now = time.monotonic()
        for conn in [c for c in self._idle if not c.usable(now, self.keepalive_s)]:
            self._idle.remove(conn)  # closed by the server or too old: not one of the n
            conn.close()
        missing = max(0, n - len(self._idle))
        opened = await asyncio.gather(*(self._open("GET", self.base_url) for _ in range(missing)),
                                      return_exceptions=True)
        for conn in opened:
            if isinstance(conn, _Conn):
                self._put_idle(conn)
        return len(self._idle)

    # ---- requests ------------------------------------------------------------------------------------

    async def post(self, path: str, body: Any) -> Any:
        return await self.request("POST", path, body)

    async def get(self, path: str) -> Any:
        return await self.request("GET", path)

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        """One request; the reply's JSON. Raises the errors in the module docstring."""
        url = self.base_url + path
        target = (url if self._proxy is not None and self.scheme == "http" else self.prefix + path)
        data = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {target} HTTP/1.1\r\n{self._head}"
                + (f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n" if body is not None else "")
                + "\r\n").encode("latin-1")
        conn = self._take_idle() or await self._open(method, url)
        try:
            conn.writer.write(head + data)
            status, headers, raw = await self._read_reply(conn, method, url)
        except BaseException:
            conn.close()
            raise
        if "close" not in [t.strip() for t in headers.get("connection", "").lower().split(",")]:
            self._put_idle(conn)
        else:
            conn.close()
        if not 200 <= status < 300:
            try:
                detail: Any = json.loads(raw)
            except ValueError:
                detail = raw.decode("utf-8", "replace")
            raise StatusError(status, headers, detail, method=method, url=url)
        if status == 204:  # No Content
            return None
        try:
            return json.loads(raw)
        except UnicodeDecodeError as exc:  # bytes that are not UTF-8 are not JSON either
            raise json.JSONDecodeError(f"the body is not UTF-8 ({exc.reason})", raw.decode("latin-1"),
                                       exc.start) from exc

    async def _read(self, aw: Any, method: str, url: str) -> Any:
        try:
            return await within(aw, self.timeout)
        except asyncio.TimeoutError as exc:
            raise Timeout(f"no reply from {url}" + (f" within {self.timeout:g} s" if self.timeout is not None else ""),
                          method=method, url=url) from exc
        except asyncio.IncompleteReadError as exc:
            raise RemoteProtocolError("the server closed the connection mid-reply", method=method, url=url) from exc
        except asyncio.LimitOverrunError as exc:
            raise RemoteProtocolError("the reply's header or chunk line is too long", method=method, url=url) from exc
        except (ConnectionError, OSError) as exc:
            raise RemoteProtocolError(f"the connection failed: {exc}", method=method, url=url) from exc

    async def _read_head(self, conn: _Conn, method: str, url: str) -> tuple[int, dict[str, str], str]:
        raw = await self._read(conn.reader.readuntil(b"\r\n\r\n"), method, url)
        lines = raw.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise RemoteProtocolError(f"not an HTTP reply: {lines[0][:80]!r}", method=method, url=url)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                k = k.strip().lower()
                headers[k] = f"{headers[k]}, {v.strip()}" if k in headers else v.strip()
        if parts[0] == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
            headers["connection"] = "close"
        return int(parts[1]), headers, parts[0]

    async def _read_reply(self, conn: _Conn, method: str, url: str) -> tuple[int, dict[str, str], bytes]:
        status, headers, _ = await self._read_head(conn, method, url)
        while 100 <= status < 200:  # 100 Continue and other interim replies: the real one follows
            status, headers, _ = await self._read_head(conn, method, url)
        reader = conn.reader
        if method == "HEAD" or status in (204, 304):
            return status, headers, b""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                line = await self._read(reader.readuntil(b"\r\n"), method, url)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                    if size < 0:
                        raise ValueError(size)
                except ValueError:
                    raise RemoteProtocolError(f"bad chunk size line {line[:40]!r}", method=method, url=url) from None
                if size == 0:
                    while (await self._read(reader.readuntil(b"\r\n"), method, url)) != b"\r\n":
                        pass  # trailers
                    return status, headers, b"".join(chunks)
                chunks.append((await self._read(reader.readexactly(size + 2), method, url))[:-2])
        length = headers.get("content-length")
        if length is not None:
            try:
                n = int(length)
                if n < 0:
                    raise ValueError(n)
            except ValueError:
                raise RemoteProtocolError(f"bad Content-Length {length!r}", method=method, url=url) from None
            return status, headers, await self._read(reader.readexactly(n), method, url)
        headers["connection"] = "close"  # the body runs to the end of the connection
        return status, headers, await self._read(reader.read(), method, url)

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            conn = self._idle.pop()
            conn.close()
            try:
                await conn.writer.wait_closed()
            except (OSError, ssl.SSLError):  # closing is best effort
                pass
