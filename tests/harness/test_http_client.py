"""The openai backend's HTTP client (harness/core/models/http_client.py) against loopback servers.

Every test starts its own tiny server on 127.0.0.1 (``asyncio.start_server``, port 0) and runs its
client in ``asyncio.run``. Connections are told apart by the client's ephemeral port, which the
server sees as the peer address. Nothing here asserts on elapsed time: waits are generous and only
bound how long a broken client may take to fail.
"""
from __future__ import annotations

import asyncio
import base64
import errno
import gc
import json
import socket
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import pytest

from harness.core.models.base import SamplingConfig
from harness.core.models.endpoints import connect_failure
from harness.core.models.http_client import ConnectError, JSONClient, RemoteProtocolError, StatusError, Timeout
from harness.core.models.openai_server import OpenAIServerBackend, _retry_after, _status

pytestmark = pytest.mark.timeout(60)

SAMPLING = SamplingConfig(temperature=0.7, top_p=0.95, max_tokens=8)


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib.request.getproxies reads both cases of every *_proxy variable: none of the machine's
    may reach the clients here (a loopback request sent to a real proxy would fail or hang)."""
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.delenv("REQUEST_METHOD", raising=False)  # urllib drops HTTP_PROXY under CGI


@pytest.fixture(autouse=True)
def _no_unclosed_sockets(recwarn: pytest.WarningsRecorder) -> Any:
    """A connection the client drops without closing is closed only by the garbage collector (with a
    ResourceWarning on 3.11+, not at all on 3.10): every test here ends with none."""
    yield
    gc.collect()
    unclosed = [str(w.message) for w in recwarn if issubclass(w.category, ResourceWarning)]
    assert not unclosed


# ---- the loopback server ------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    peer: Any = None  # the client's (host, port): one per connection


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """One request off the connection, or None when the client closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        if line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, target, version, headers, body)


def response(status: int = 200, body: Any = None, *, headers: dict[str, str] | None = None,
             version: str = "HTTP/1.1", reason: str = "OK", length: bool = True) -> bytes:
    """A reply's bytes; ``body`` is JSON-encoded unless it is bytes; Content-Length unless length=False."""
    data = body if isinstance(body, bytes) else json.dumps({"ok": True} if body is None else body).encode()
    head = {"Content-Type": "application/json", **(headers or {})}
    if length:
        head["Content-Length"] = str(len(data))
    return (f"{version} {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
            + "\r\n").encode("latin-1") + data


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Loopback:
    """A server on 127.0.0.1. Either ``handler(reader, writer)`` serves each connection, or ``reply``
    (a Request -> bytes function) answers every request of every connection until the client closes
    it. ``accepted`` counts connections, ``ended`` the connections whose handler returned (for the
    default handler: the client closed the connection), ``requests`` logs what the default handler
    read."""

    def __init__(self, handler: Handler | None = None, reply: Callable[[Request], bytes] | None = None,
                 host: str = "127.0.0.1"):
        self.host = host
        self.handler = handler or self._keep_serving
        self.reply = reply or (lambda req: response())
        self.accepted = self.ended = 0
        self.requests: list[Request] = []
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> "Loopback":
        self.server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://{self.host if ':' not in self.host else f'[{self.host}]'}:{self.port}"
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.server.close()
        for w in self._writers:
            w.close()
        await asyncio.wait_for(self.server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self._writers.append(writer)
        try:
            await self.handler(reader, writer)
            self.ended += 1
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _keep_serving(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (req := await read_request(reader)) is not None:
            req.peer = writer.get_extra_info("peername")
            self.requests.append(req)
            writer.write(self.reply(req))
            await writer.drain()

    def peers(self) -> list[Any]:
        return [r.peer for r in self.requests]


async def eventually(pred: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait until ``pred()`` holds (the other side of a loopback socket runs on the same loop)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        assert loop.time() < end, "condition never held"
        await asyncio.sleep(0.01)


def dead_port() -> int:
    """A port nothing listens on: bound, read and closed again."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def client(url: str, **kw: Any) -> JSONClient:
    kw.setdefault("timeout", 5.0)
    return JSONClient(url, **kw)


# ---- requests -----------------------------------------------------------------------------------------


def test_post_sends_json_with_headers_and_returns_the_parsed_reply() -> None:
    async def main() -> None:
        async with Loopback(reply=lambda req: response(body={"choices": [1, 2], "echo": req.target})) as srv:
            c = client(srv.url + "/v1/", api_key="KEY")
            body = {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}
            got = await c.post("/chat/completions", body)
            await c.aclose()
        assert got == {"choices": [1, 2], "echo": "/v1/chat/completions"}
        (req,) = srv.requests
        assert (req.method, req.target, req.version) == ("POST", "/v1/chat/completions", "HTTP/1.1")
        assert req.headers["content-type"] == "application/json"
        assert req.headers["content-length"] == str(len(req.body))
        assert json.loads(req.body) == body
        assert req.headers["authorization"] == "Bearer KEY"
        assert req.headers["host"] == f"127.0.0.1:{srv.port}"

    asyncio.run(main())


def test_no_authorization_header_without_api_key_and_get_sends_no_body() -> None:
    async def main() -> None:
        async with Loopback() as srv:
            c = client(srv.url + "/v1")
            assert await c.post("/completions", {"prompt": "x"}) == {"ok": True}
            assert await c.get("/models") == {"ok": True}
            await c.aclose()
        post, get = srv.requests
        assert "authorization" not in post.headers and "authorization" not in get.headers
        assert (get.method, get.target) == ("GET", "/v1/models")
        assert "content-length" not in get.headers and get.body == b""

    asyncio.run(main())


def test_an_ipv6_literal_is_bracketed_in_the_host_header() -> None:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 loopback here")

    async def main() -> None:
        async with Loopback(host="::1") as srv:
            c = client(srv.url + "/v1")
            assert await c.post("/x", {}) == {"ok": True}
            await c.aclose()
        assert srv.requests[0].headers["host"] == f"[::1]:{srv.port}"

    asyncio.run(main())


# ---- keep-alive -----------------------------------------------------------------------------------------


def test_two_sequential_requests_share_one_connection() -> None:
    async def main() -> None:
        async with Loopback() as srv:
            c = client(srv.url)
            await c.post("/a", {})
            await c.post("/b", {})
            await c.aclose()
        assert srv.accepted == 1
        assert [r.target for r in srv.requests] == ["/a", "/b"]
        assert len(set(srv.peers())) == 1

    asyncio.run(main())


@pytest.mark.parametrize("version, headers", [
    ("HTTP/1.1", {"Connection": "close"}),
    ("HTTP/1.1", {"Connection": "Close"}),
    ("HTTP/1.0", {}),
])
def test_a_reply_that_closes_is_not_reused(version: str, headers: dict[str, str]) -> None:
    # the server keeps the connection open and would answer on it: only the client's reading of the
    # reply keeps the second request off it
    async def main() -> None:
        async with Loopback(reply=lambda req: response(headers=headers, version=version)) as srv:
            c = client(srv.url)
            await c.post("/a", {})
            await c.post("/b", {})
            await c.aclose()
        assert srv.accepted == 2
        assert len(set(srv.peers())) == 2

    asyncio.run(main())


def test_an_http10_reply_with_keep_alive_is_reused() -> None:
    async def main() -> None:
        async with Loopback(reply=lambda req: response(headers={"Connection": "keep-alive"},
                                                       version="HTTP/1.0")) as srv:
            c = client(srv.url)
            await c.post("/a", {})
            await c.post("/b", {})
            await c.aclose()
        assert srv.accepted == 1

    asyncio.run(main())


# ---- bodies ---------------------------------------------------------------------------------------------


def test_content_length_body() -> None:
    payload = {"text": "x" * 70_000, "n": [1, 2, 3]}  # more than one socket read

    async def main() -> None:
        async with Loopback(reply=lambda req: response(body=payload)) as srv:
            c = client(srv.url)
            assert await c.post("/a", {}) == payload
            assert await c.post("/b", {}) == payload  # and nothing of the first body was left behind
            await c.aclose()
        assert srv.accepted == 1

    asyncio.run(main())


def test_chunked_body_with_extension_and_trailer() -> None:
    data = json.dumps({"choices": [{"text": "a longer chunk of text, over sixteen bytes"}], "n": 7}).encode()
    parts = [data[:5], data[5:40], data[40:]]  # the second chunk's size is 0x23: hex, not decimal
    chunked = (f"{len(parts[0]):x};foo=bar\r\n".encode() + parts[0] + b"\r\n"
               + f"{len(parts[1]):x}\r\n".encode() + parts[1] + b"\r\n"
               + f"{len(parts[2]):X}\r\n".encode() + parts[2] + b"\r\n"
               + b"0\r\nX-Trailer: yes\r\n\r\n")

    def reply(req: Request) -> bytes:
        if req.target == "/chunked":
            return response(body=chunked, headers={"Transfer-Encoding": "chunked"}, length=False)
        return response(body={"after": True})

    async def main() -> None:
        async with Loopback(reply=reply) as srv:
            c = client(srv.url)
            assert await c.post("/chunked", {}) == json.loads(data)
            # the trailer was read to its end: the next reply on the same connection parses
            assert await c.post("/next", {}) == {"after": True}
            await c.aclose()
        assert srv.accepted == 1

    asyncio.run(main())


def test_body_without_length_runs_to_connection_close() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(response(body={"to": "close"}, length=False))
        await writer.drain()
        writer.close()

    async def main() -> None:
        async with Loopback(handler) as srv:
            c = client(srv.url)
            assert await c.post("/a", {}) == {"to": "close"}
            assert not c._idle  # a connection read to its end is not kept
            assert await c.post("/b", {}) == {"to": "close"}  # on a new connection
            await c.aclose()
        assert srv.accepted == 2

    asyncio.run(main())


def test_100_continue_then_the_real_reply() -> None:
    async def main() -> None:
        async with Loopback(reply=lambda req: b"HTTP/1.1 100 Continue\r\n\r\n"
                            + response(body={"real": 200})) as srv:
            c = client(srv.url)
            assert await c.post("/a", {}) == {"real": 200}
            assert await c.post("/b", {}) == {"real": 200}
            await c.aclose()
        assert srv.accepted == 1

    asyncio.run(main())


# ---- errors ---------------------------------------------------------------------------------------------


def test_non_2xx_with_json_body_is_a_status_error() -> None:
    def reply(req: Request) -> bytes:
        return response(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "3"},
                        reason="Too Many Requests")

    async def main() -> None:
        async with Loopback(reply=reply) as srv:
            c = client(srv.url + "/v1")
            with pytest.raises(StatusError) as info:
                await c.post("/chat/completions", {})
            with pytest.raises(StatusError):  # an error reply leaves the connection usable
                await c.post("/chat/completions", {})
            await c.aclose()
        exc = info.value
        assert exc.status_code == 429
        assert exc.headers["retry-after"] == "3" and exc.headers["content-type"] == "application/json"
        assert exc.body == {"error": {"message": "slow down"}}
        assert str(exc).startswith("HTTP 429") and "slow down" in str(exc)
        assert (exc.method, exc.url) == ("POST", srv.url + "/v1/chat/completions")
        assert srv.accepted == 1
        # the backend's reading of it
        assert _status(exc) == 429 and _retry_after(exc) == 3.0

    asyncio.run(main())


def test_non_2xx_with_text_body_is_a_status_error_with_the_text() -> None:
    def reply(req: Request) -> bytes:
        return response(503, b"upstream down", headers={"Content-Type": "text/plain"}, reason="Unavailable")

    async def main() -> None:
        async with Loopback(reply=reply) as srv:
            c = client(srv.url)
            with pytest.raises(StatusError) as info:
                await c.get("/models")
            await c.aclose()
        assert info.value.status_code == 503 and info.value.body == "upstream down"
        assert str(info.value).startswith("HTTP 503") and str(info.value).endswith(": upstream down")
        assert (info.value.method, info.value.url) == ("GET", srv.url + "/models")

    asyncio.run(main())


def test_connection_refused_is_a_connect_error() -> None:
    port = dead_port()

    async def main() -> None:
        c = client(f"http://127.0.0.1:{port}/v1")
        with pytest.raises(ConnectError) as info:
            await c.post("/chat/completions", {})
        await c.aclose()
        exc = info.value
        assert isinstance(exc.__cause__, ConnectionRefusedError)
        assert connect_failure(exc) == "connection refused"
        assert (exc.method, exc.url) == ("POST", f"http://127.0.0.1:{port}/v1/chat/completions")

    asyncio.run(main())


@pytest.mark.parametrize("partial", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"choices\": [",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"choices\": [",
    b"HTTP/1.1 200 OK\r\nContent-Le",
])
def test_server_closing_mid_reply_is_a_protocol_error(partial: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(partial)
        await writer.drain()
        writer.close()

    async def main() -> None:
        async with Loopback(handler) as srv:
            c = client(srv.url)
            with pytest.raises(RemoteProtocolError) as info:
                await c.post("/x", {})
            await c.aclose()
        assert (info.value.method, info.value.url) == ("POST", srv.url + "/x")

    asyncio.run(main())


def test_an_os_connect_timeout_without_a_client_timeout_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    async def timed_out(*args: Any, **kw: Any) -> Any:
        raise OSError(errno.ETIMEDOUT, "Connect call failed")  # what the kernel's SYN retries end in

    monkeypatch.setattr(asyncio, "open_connection", timed_out)

    async def main() -> None:
        c = JSONClient("http://127.0.0.1:1/v1", timeout=None)
        with pytest.raises(Timeout, match="timed out") as info:
            await c.post("/x", {})
        assert (info.value.method, info.value.url) == ("POST", "http://127.0.0.1:1/v1/x")
        assert connect_failure(info.value) is None  # a timeout is retried with backoff, not failed fast

    asyncio.run(main())


def test_a_server_that_never_answers_is_a_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()  # until the client gives up and closes

    async def main() -> None:
        async with Loopback(handler) as srv:
            c = client(srv.url, timeout=0.2)
            with pytest.raises(Timeout) as info:
                await c.post("/x", {})
            await eventually(lambda: srv.ended == 1)  # the timed-out connection was closed
            await c.aclose()
        assert (info.value.method, info.value.url) == ("POST", srv.url + "/x")

    asyncio.run(main())


def test_a_cancelled_request_closes_its_connection() -> None:
    # the backend's per-attempt deadline cancels a request mid-reply: that connection must not carry
    # the next request, whose reply would then be the late reply to this one
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()

    async def main() -> None:
        async with Loopback(handler) as srv:
            c = client(srv.url)
            task = asyncio.ensure_future(c.post("/x", {}))
            await eventually(lambda: srv.accepted == 1)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not c._idle
            await eventually(lambda: srv.ended == 1)
            await c.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("reply", [
    b"garbage\r\n\r\n",
    b"HTTP/1.1 OK 200\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n",
])
def test_a_reply_that_is_not_http_is_a_protocol_error(reply: bytes) -> None:
    async def main() -> None:
        async with Loopback(reply=lambda req: reply) as srv:
            c = client(srv.url)
            with pytest.raises(RemoteProtocolError) as info:
                await c.post("/x", {})
            await eventually(lambda: srv.ended == 1)  # and that connection is not kept
            await c.aclose()
        assert (info.value.method, info.value.url) == ("POST", srv.url + "/x")

    asyncio.run(main())


@pytest.mark.parametrize("body", [b"not json", b"\x80\x81 not utf-8"])
def test_a_2xx_body_that_is_not_json_is_a_json_decode_error(body: bytes) -> None:
    async def main() -> None:
        async with Loopback(reply=lambda req: response(body=body)) as srv:
            c = client(srv.url)
            for _ in range(2):
                with pytest.raises(json.JSONDecodeError):
                    await c.post("/x", {})
            await c.aclose()
        assert srv.accepted == 1  # a well-formed reply: its connection is kept

    asyncio.run(main())


# ---- idle connections -----------------------------------------------------------------------------------


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(response(body={"n": 1}))  # no Connection: close, then closed anyway
        await writer.drain()
        writer.close()

    async def main() -> None:
        async with Loopback(handler) as srv:
            c = client(srv.url)
            assert await c.post("/a", {}) == {"n": 1}
            await eventually(lambda: srv.ended == 1)
            await asyncio.sleep(0.05)  # the client's side reads the EOF
            await eventually(lambda: all(conn.reader.at_eof() for conn in c._idle))
            assert await c.post("/b", {}) == {"n": 1}
            await c.aclose()
        assert srv.accepted == 2

    asyncio.run(main())


def test_an_idle_connection_older_than_keepalive_is_not_reused() -> None:
    async def main() -> None:
        async with Loopback() as srv:
            c = client(srv.url, keepalive_s=0.0)
            await c.post("/a", {})
            await c.post("/b", {})
            await eventually(lambda: srv.ended == 1)  # the expired one was closed, not leaked
            await c.aclose()
        assert srv.accepted == 2
        assert len(set(srv.peers())) == 2

    asyncio.run(main())


def test_max_idle_bounds_the_connections_kept() -> None:
    async def main() -> None:
        async with Loopback() as srv:
            c = client(srv.url, max_idle=1)
            await asyncio.gather(*(c.post(f"/{i}", {}) for i in range(3)))
            assert len(c._idle) == 1
            await eventually(lambda: srv.ended == 2)
            await c.aclose()
        assert srv.accepted == 3

    asyncio.run(main())


# ---- warm and aclose ------------------------------------------------------------------------------------


def test_warm_opens_connections_that_concurrent_requests_then_use() -> None:
    async def main() -> None:
        async with Loopback() as srv:
            c = client(srv.url)
            assert await c.warm(3) == 3
            await eventually(lambda: srv.accepted == 3)
            assert not srv.requests
            assert await c.warm(3) == 3  # already there: nothing more opened
            got = await asyncio.gather(*(c.post(f"/{i}", {}) for i in range(3)))
            await c.aclose()
        assert got == [{"ok": True}] * 3
        assert srv.accepted == 3
        assert len(set(srv.peers())) == 3

    asyncio.run(main())


@pytest.mark.parametrize("closing", ["server closes after the reply", "reply runs to close"])
def test_warm_does_not_count_a_connection_that_was_closed(closing: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await read_request(reader) is not None:  # one request a connection, then closed
            writer.write(response(body={"n": 1}, length=closing == "server closes after the reply"))
            await writer.drain()

    async def main() -> None:
        async with Loopback(handler) as srv:
            c = client(srv.url)
            assert await c.post("/first", {}) == {"n": 1}
            await eventually(lambda: srv.ended == 1)
            await asyncio.sleep(0.05)  # the client's side reads the EOF
            await eventually(lambda: all(conn.reader.at_eof() for conn in c._idle))
            assert await c.warm(1) == 1
            await eventually(lambda: srv.accepted == 2)  # a new one, not the closed one counted
            assert await c.post("/second", {}) == {"n": 1}
            await c.aclose()
        assert srv.accepted == 2  # the second request went over the warmed connection

    asyncio.run(main())


def test_warm_against_a_dead_port_returns_zero() -> None:
    port = dead_port()

    async def main() -> None:
        c = client(f"http://127.0.0.1:{port}")
        assert await c.warm(2) == 0
        await c.aclose()

    asyncio.run(main())


def test_aclose_closes_idle_connections() -> None:
    async def main() -> None:
        async with Loopback() as srv:
            c = client(srv.url)
            await c.warm(2)
            await c.post("/a", {})
            await eventually(lambda: srv.accepted == 2)
            assert srv.ended == 0
            await c.aclose()
            await eventually(lambda: srv.ended == 2)  # the server read EOF on both
            assert not c._idle

    asyncio.run(main())


# ---- proxies --------------------------------------------------------------------------------------------


def test_http_proxy_gets_the_absolute_target_and_proxy_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with Loopback(reply=lambda req: response(body={"via": "proxy"})) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://user:pw@127.0.0.1:{proxy.port}")
            c = client("http://example.invalid:1234/v1", api_key="KEY")
            assert await c.post("/x", {"a": 1}) == {"via": "proxy"}
            assert await c.post("/y", {"a": 1}) == {"via": "proxy"}
            await c.aclose()
        first, second = proxy.requests
        assert (first.method, first.target, first.version) == ("POST", "http://example.invalid:1234/v1/x", "HTTP/1.1")
        assert second.target == "http://example.invalid:1234/v1/y"
        assert first.headers["proxy-authorization"] == "Basic " + base64.b64encode(b"user:pw").decode()
        assert first.headers["host"] == "example.invalid:1234"
        assert first.headers["authorization"] == "Bearer KEY"
        assert proxy.accepted == 1  # the proxy connection is kept alive too

    asyncio.run(main())


def test_no_proxy_sends_straight_to_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with Loopback() as proxy, Loopback() as origin:
            monkeypatch.setenv("HTTP_PROXY", f"http://user:pw@127.0.0.1:{proxy.port}")
            monkeypatch.setenv("NO_PROXY", "elsewhere.invalid,127.0.0.1")
            c = client(origin.url + "/v1")
            await c.post("/x", {})
            await c.aclose()
        assert proxy.accepted == 0
        (req,) = origin.requests
        assert req.target == "/v1/x"
        assert "proxy-authorization" not in req.headers  # the proxy's credentials stay with the proxy

    asyncio.run(main())


def test_https_through_a_proxy_asks_for_a_tunnel(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Request] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        req = await read_request(reader)
        assert req is not None
        seen.append(req)
        writer.write(response(407, b"", reason="Proxy Authentication Required"))
        await writer.drain()
        await reader.read()

    async def main() -> None:
        async with Loopback(handler) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{proxy.port}")
            c = client("https://example.invalid/v1", api_key="KEY")
            with pytest.raises(ConnectError, match="407"):
                await c.post("/x", {})
            await eventually(lambda: proxy.ended == 1)  # the refused tunnel was closed
            await c.aclose()
        (req,) = seen
        assert (req.method, req.target) == ("CONNECT", "example.invalid:443")
        assert req.headers["proxy-authorization"] == "Basic " + base64.b64encode(b"user:pw").decode()
        assert "authorization" not in req.headers  # the API key goes only inside the tunnel

    asyncio.run(main())


def test_a_proxy_that_garbles_the_tunnel_reply_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"garbage\r\n\r\n")
        await writer.drain()
        await reader.read()

    async def main() -> None:
        async with Loopback(handler) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
            c = client("https://example.invalid/v1")
            with pytest.raises(RemoteProtocolError):
                await c.post("/x", {})
            await eventually(lambda: proxy.ended == 1)  # not left open
            await c.aclose()

    asyncio.run(main())


def test_a_proxy_that_is_not_http_is_refused_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ValueError, match="HTTPS_PROXY"):
        JSONClient("https://api.example.invalid/v1")
    JSONClient("http://127.0.0.1:1/v1")  # an http URL does not use the HTTPS proxy


@pytest.mark.parametrize("url", ["ftp://x", "localhost:8000", "127.0.0.1:8000/v1", "http://"])
def test_a_base_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError) as info:
        JSONClient(url)
    assert repr(url) in str(info.value)


# ---- the openai backend on top --------------------------------------------------------------------------


def test_backend_aopen_warms_connections_and_generate_one_uses_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def reply(req: Request) -> bytes:
        if req.target != "/v1/chat/completions":
            return response(404, {"error": "no such path"})
        return response(body={"choices": [{"index": 0, "message": {"role": "assistant", "content": "hello there"},
                                           "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": 3, "completion_tokens": 2}})

    async def main() -> None:
        async with Loopback(reply=reply) as srv:
            backend = OpenAIServerBackend("m", srv.url + "/v1", mode="chat", use_n=False, max_retries=0, timeout=5)
            await backend.aopen(3)
            assert len(backend._pool.endpoints[0].client._idle) == 3
            gen = await backend.generate_one([{"role": "user", "content": "hi"}], 7, SAMPLING)
            await backend.aclose()
        assert gen.error is None and gen.text == "hello there"
        assert gen.completion_tokens == 2 and gen.finish_reason == "stop"
        (req,) = srv.requests
        body = json.loads(req.body)
        assert body["model"] == "m" and body["seed"] == 7 and body["messages"] == [{"role": "user", "content": "hi"}]
        assert body["max_tokens"] == 8 and body["top_p"] == 0.95
        assert req.headers["authorization"] == "Bearer EMPTY"
        assert srv.accepted == 3  # the request went over a warmed connection

    asyncio.run(main())


def test_backend_retries_a_503_and_not_a_400() -> None:
    replies = {"/v1/chat/completions": [response(503, b"busy", reason="Service Unavailable"),
                                        response(body={"choices": [{"message": {"content": "ok"}}]}),
                                        response(400, {"error": "bad"}, reason="Bad Request")]}

    async def main() -> None:
        async with Loopback(reply=lambda req: replies[req.target].pop(0)) as srv:
            backend = OpenAIServerBackend("m", srv.url + "/v1", mode="chat", use_n=False, max_retries=2,
                                          timeout=5, backoff_base=0.001, backoff_max=0.01)
            retried = await backend.generate_one([{"role": "user", "content": "hi"}], 1, SAMPLING)
            refused = await backend.generate_one([{"role": "user", "content": "hi"}], 2, SAMPLING)
            await backend.aclose()
        assert retried.error is None and retried.text == "ok" and retried.attempts == 2
        assert refused.attempts == 1 and refused.error is not None and refused.error.startswith("StatusError: HTTP 400")
        assert srv.accepted == 1  # error replies keep their connection

    asyncio.run(main())


def test_backend_retry_policy_reads_the_client_errors() -> None:
    backend = OpenAIServerBackend("m", "http://127.0.0.1:1/v1", max_retries=0, timeout=5)
    limited = StatusError(429, {"retry-after": "3"}, {"error": "slow"}, method="POST", url="http://x")
    assert backend._retryable(limited) and _retry_after(limited) == 3.0 and _status(limited) == 429
    bad = StatusError(400, {}, "bad request", method="POST", url="http://x")
    assert not backend._retryable(bad) and _retry_after(bad) is None
    assert backend._retryable(StatusError(503, {}, "down"))
    for exc in (Timeout("t"), RemoteProtocolError("p"), ConnectError("c")):
        assert backend._retryable(exc), exc
    assert not backend._retryable(ValueError("a bug"))


def test_a_connection_header_listing_close_among_others_is_not_reused_and_204_is_none() -> None:
    """``Connection: keep-alive, close`` still closes; a 204 has no body to parse."""
    seen: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = len(seen)
        seen.append(conn)
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            if conn == 0:
                writer.write(b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\n{}")
            else:
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()
        writer.close()

    async def go() -> tuple[object, object]:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = JSONClient(f"http://127.0.0.1:{port}/v1", timeout=5)
        try:
            return await client.get("/a"), await client.get("/b")
        finally:
            await client.aclose()
            server.close()
            await server.wait_closed()

    first, second = asyncio.run(go())
    assert first == {} and second is None and len(seen) == 2


def test_connect_failure_names_the_cause_of_a_connect_error_only() -> None:
    """A name that does not resolve fails as fast as a refusal: the reason is the OS error's text. A
    dropped connection with the same OS error under it is not a connect failure."""
    from harness.core.models.http_client import ConnectError, RemoteProtocolError

    def raised(cls: type) -> BaseException:
        try:
            try:
                raise socket.gaierror(-2, "Name or service not known")
            except socket.gaierror as os_err:
                raise cls("no connection", method="POST", url="http://nowhere.invalid/v1") from os_err
        except cls as exc:
            return exc

    assert connect_failure(raised(ConnectError)) == "[Errno -2] Name or service not known"
    assert connect_failure(raised(RemoteProtocolError)) is None
