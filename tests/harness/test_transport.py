"""The openai backend's transport (harness/core/models/transport.py) against loopback servers,
misbehaving ones included: what httpx gives, and the guards the module adds on top of it.

Every test starts its own tiny server on 127.0.0.1 (``asyncio.start_server``, port 0; on a thread
of its own where the client side is a synchronous `vpo` command). Nothing asserts on elapsed time:
waits only bound how long a broken client may take to fail.
"""
from __future__ import annotations

import asyncio
import gzip
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from vpo_harness.harness.core.models import transport
from vpo_harness.harness.core.models.base import SamplingConfig
from vpo_harness.harness.core.models.endpoints import ServerUnreachable, connect_failure
from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend
from vpo_harness.harness.core.models.transport import (ConnectError, JSONClient, RemoteProtocolError, ReplyTooLarge,
                                           StatusError, Timeout)
from vpo_harness.harness.core.printable import printable

pytestmark = pytest.mark.timeout(60)

SAMPLING = SamplingConfig(temperature=0.7, top_p=0.95, max_tokens=8)


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx reads both cases of every *_proxy variable: none of the machine's may reach the clients
    here (a loopback request sent to a real proxy would fail or hang)."""
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# ---- the loopback server ------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]  # lower-cased names
    body: bytes


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """One request off the connection, or None when the client closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        if line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, target, headers, body)


def response(status: int = 200, body: Any = None, *, headers: dict[str, str] | None = None,
             reason: str = "OK", length: bool = True) -> bytes:
    """A reply's bytes; ``body`` is JSON-encoded unless it is bytes; chunked when ``length`` is False."""
    data = body if isinstance(body, bytes) else json.dumps({"ok": True} if body is None else body).encode()
    head = {"Content-Type": "application/json", **(headers or {})}
    if length:
        head["Content-Length"] = str(len(data))
        payload = data
    else:
        head["Transfer-Encoding"] = "chunked"
        payload = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 4096]), data[i:i + 4096])
                           for i in range(0, len(data), 4096)) + b"0\r\n\r\n"
    return (f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
            + "\r\n").encode("latin-1") + payload


def chat(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


class Loopback:
    """A server on 127.0.0.1: ``reply`` (Request -> bytes, sent in one write) answers every request of
    every connection until the client closes it. ``accepted`` counts connections, ``requests`` logs
    what was read."""

    def __init__(self, reply: Callable[[Request], bytes] | None = None,
                 handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] | None = None):
        self.reply = reply or (lambda req: response())
        self.handler = handler
        self.accepted = 0
        self.requests: list[Request] = []
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> "Loopback":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
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
            if self.handler is not None:
                await self.handler(reader, writer)
                return
            while (req := await read_request(reader)) is not None:
                self.requests.append(req)
                writer.write(self.reply(req))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


class ThreadedLoopback:
    """A :class:`Loopback` on an event loop of its own thread, for a synchronous client (a `vpo` command)."""

    def __init__(self, reply: Callable[[Request], bytes] | None = None,
                 handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] | None = None):
        self.reply, self.handler = reply, handler
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> Loopback:
        self.thread.start()
        self.srv = asyncio.run_coroutine_threadsafe(Loopback(self.reply, self.handler).__aenter__(),
                                                    self.loop).result(10)
        return self.srv

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self.srv.__aexit__(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def dead_url() -> str:
    from vpo_harness.search.server_process import free_port

    return f"http://127.0.0.1:{free_port()}/v1"


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


# ---- what httpx gives ---------------------------------------------------------------------------------



async def get_error(url: str, expected: type[BaseException], timeout: float = 5) -> BaseException:
    """The ``expected`` error a client's ``GET /models`` at ``url`` ends in (AssertionError if none)."""
    c = JSONClient(url, timeout=timeout)
    try:
        await c.get("/models")
    except expected as exc:
        return exc
    finally:
        await c.aclose()
    raise AssertionError("no error")

def test_post_sends_json_with_key_user_headers_and_accept_encoding() -> None:
    async def main() -> Any:
        async with Loopback(reply=lambda req: response(body={"echo": req.target})) as srv:
            c = JSONClient(srv.url + "/v1/", api_key="KEY", timeout=5, headers={"X-Team": "nlp"})
            got = await c.post("/chat/completions", {"messages": [{"role": "user", "content": "héllo"}]})
            await c.aclose()
        return got, srv

    got, srv = run(main())
    assert got == {"echo": "/v1/chat/completions"}
    (req,) = srv.requests
    assert req.method == "POST" and json.loads(req.body)["messages"][0]["content"] == "héllo"
    assert req.headers["authorization"] == "Bearer KEY" and req.headers["x-team"] == "nlp"
    assert req.headers["content-type"] == "application/json" and "gzip" in req.headers["accept-encoding"]


def test_a_user_authorization_header_wins_over_the_key() -> None:
    async def main() -> Loopback:
        async with Loopback() as srv:
            c = JSONClient(srv.url, api_key="KEY", timeout=5, headers={"Authorization": "Token abc"})
            await c.get("/models")
            await c.aclose()
        return srv

    assert run(main()).requests[0].headers["authorization"] == "Token abc"


def test_a_gzip_reply_is_decoded() -> None:
    body = gzip.compress(json.dumps({"choices": [1]}).encode())

    async def main() -> Any:
        async with Loopback(reply=lambda req: response(body=body, headers={"Content-Encoding": "gzip"})) as srv:
            c = JSONClient(srv.url, timeout=5)
            try:
                return await c.get("/models")
            finally:
                await c.aclose()

    assert run(main()) == {"choices": [1]}


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY"])
def test_the_environment_proxy_gets_the_request(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx's proxy rules: the request goes to the proxy with the absolute URL as its target."""
    async def main() -> Any:
        async with Loopback() as proxy:
            monkeypatch.setenv(variable, proxy.url)
            c = JSONClient("http://model-server.invalid:8000/v1", timeout=5)
            got = await c.get("/models")
            await c.aclose()
        return got, proxy

    got, proxy = run(main())
    assert got == {"ok": True}
    assert [r.target for r in proxy.requests] == ["http://model-server.invalid:8000/v1/models"]


def test_two_sequential_requests_share_one_connection() -> None:
    """The guard does not cost keep-alive: a clean reply leaves its connection reusable."""
    async def main() -> Loopback:
        async with Loopback() as srv:
            c = JSONClient(srv.url, timeout=5)
            await c.post("/a", {})
            await c.post("/b", {})
            await c.aclose()
        return srv

    srv = run(main())
    assert srv.accepted == 1 and [r.target for r in srv.requests] == ["/a", "/b"]


def test_connection_refused_is_a_connect_error_with_its_reason() -> None:
    async def main() -> BaseException:
        return await get_error(dead_url(), ConnectError)

    exc = run(main())
    assert connect_failure(exc) == "connection refused" and exc.method == "GET"


@pytest.mark.parametrize("partial, permanent", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"a\"", False), (b"HTTP/1.1 200 OK\r\nContent-Le", False),
    (b"", False), (b"not http at all\r\n\r\n", True), (b"HTTP/1.1 2x0 OK\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", True)])
def test_a_broken_reply_is_a_protocol_error(partial: bytes, permanent: bool) -> None:
    """A connection dropped mid-reply is retried; bytes that are not HTTP are NotHTTP, which no retry
    changes. Either way the message names the failure once (not httpx's class name again)."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(partial)
        await writer.drain()

    async def main() -> BaseException:
        async with Loopback(handler=handler) as srv:
            return await get_error(srv.url, RemoteProtocolError)

    exc = run(main())
    assert connect_failure(exc) is None  # not a fail-fast connect error
    b = OpenAIServerBackend("m", "http://127.0.0.1:1/v1", max_retries=0, timeout=5)
    assert isinstance(exc, transport.NotHTTP) is permanent and b.retry.retryable(exc) is not permanent
    assert "RemoteProtocolError" not in str(exc)


def test_status_json_and_no_content_replies() -> None:
    replies = {"/busy": response(429, {"error": "slow"}, headers={"Retry-After": "3"}, reason="Too Many Requests"),
               "/garbage": response(body=b"not json"), "/empty": b"HTTP/1.1 204 No Content\r\n\r\n"}

    async def main() -> list[Any]:
        async with Loopback(reply=lambda req: replies[req.target]) as srv:
            c = JSONClient(srv.url, timeout=5)
            out: list[Any] = []
            for path in replies:
                try:
                    out.append(await c.get(path))
                except (StatusError, json.JSONDecodeError) as exc:
                    out.append(exc)
            await c.aclose()
        return out

    busy, garbage, empty = run(main())
    b = OpenAIServerBackend("m", "http://127.0.0.1:1/v1", max_retries=0, timeout=5)
    assert isinstance(busy, StatusError) and busy.status_code == 429 and busy.body == {"error": "slow"}
    assert str(busy) == 'HTTP 429 Too Many Requests: {"error": "slow"}'
    assert b.retry.retryable(busy) and b.retry.delay(0, busy) == 3.0
    assert isinstance(garbage, json.JSONDecodeError) and b.retry.retryable(garbage)
    assert empty is None
    for exc in (Timeout("t"), RemoteProtocolError("p"), ConnectError("c"), transport.ReplayedReply("again")):
        assert b.retry.retryable(exc), exc
    for exc in (ReplyTooLarge("big"), transport.NotHTTP("no status line")):  # the same bytes would come back
        assert not b.retry.retryable(exc), exc
    assert not b.retry.retryable(StatusError(400, {}, "bad request")) and not b.retry.retryable(ValueError("a bug"))


# ---- a reply belongs to its request -------------------------------------------------------------------


EXTRAS = {"an unsolicited extra reply": lambda: response(body=chat("WRONG")),
          "extra bytes after the reply": lambda: b"garbage\r\n"}


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_bytes_left_after_a_reply_never_answer_the_next_request(extra: str) -> None:
    """httpx alone hands the leftover reply to the next request on that connection (measured: every
    second answer was the extra one); with the guard the connection is closed instead."""
    def reply(req: Request) -> bytes:
        return response(body={"echo": json.loads(req.body)["q"]}) + EXTRAS[extra]()

    async def main() -> list[Any]:
        async with Loopback(reply=reply) as srv:
            c = JSONClient(srv.url, timeout=5)
            got = [await c.post("/x", {"q": i}) for i in range(4)]
            await c.aclose()
        return got

    assert run(main()) == [{"echo": i} for i in range(4)]


def test_a_reply_sent_while_the_connection_is_idle_never_answers_the_next_request() -> None:
    """Extra bytes that arrive after the reply was read, while the connection sits idle: httpcore's
    own check (the idle socket turned readable) drops the connection, and the guard keeps that check."""
    go, sent = asyncio.Event(), asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = True
        while (req := await read_request(reader)) is not None:
            writer.write(response(body={"echo": json.loads(req.body)["q"]}))
            await writer.drain()
            if first:
                first = False
                await go.wait()
                writer.write(response(body={"echo": "WRONG"}))
                await writer.drain()
                sent.set()

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        async with Loopback(handler=handler) as srv:
            c = JSONClient(srv.url, timeout=5)
            got = [await c.post("/x", {"q": 0})]
            go.set()
            await sent.wait()
            (conn,) = c._client._transport._pool.connections
            end = loop.time() + 5
            while not conn._inner.has_expired():  # httpcore sees the extra reply in the socket
                assert loop.time() < end, "the extra reply never arrived"
                await asyncio.sleep(0.01)
            got += [await c.post("/x", {"q": i}) for i in (1, 2)]
            await c.aclose()
        return got

    assert run(main()) == [{"echo": i} for i in range(3)]


def test_the_guard_reaches_h11_in_this_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard reads httpx's private pool layout; a release that moves it must fail here, not turn
    the guard silently off."""
    async def main() -> list[Any]:
        async with Loopback() as srv:
            c = JSONClient(srv.url, timeout=5)
            await c.get("/a")
            pooled = c._client._transport._pool.connections
            assert all(isinstance(conn, transport._Checked) for conn in pooled)
            states = [transport._h11_state(conn._inner) for conn in pooled]
            await c.aclose()
        return states

    states = run(main())
    assert len(states) == 1 and states[0] is not None and hasattr(states[0], "trailing_data")


def digest(req: Request) -> str:
    """A short name of the request's question: the answer a row must carry."""
    import hashlib

    return hashlib.sha256(json.loads(req.body)["messages"][-1]["content"].encode()).hexdigest()[:16]


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_vpo_run_rows_never_carry_another_problems_answer(extra: str, tmp_path: Path, capsys: Any) -> None:
    """End to end: a server that echoes each request's question, then sends more on the kept-alive
    connection. Every row's answer is its own problem's echo (an error would be allowed; a shifted
    answer is not)."""
    from vpo_harness.harness import load_run
    from vpo_harness.harness.app.cli import main

    def reply(req: Request) -> bytes:
        return response(body=chat("ECHO " + digest(req))) + EXTRAS[extra]()

    with ThreadedLoopback(reply) as srv:
        rc = main(["run", "--task", "maze", "--model", "openai:x", "--base-url", srv.url + "/v1", "--limit", "4",
                   "-n", "2", "--out", str(tmp_path / "r"), "--no-progress",
                   "--model-args", "use_n=false,concurrency=1,max_retries=0"])
    capsys.readouterr()
    posts = [r for r in srv.requests if r.method == "POST"]  # after the one GET /models of the served defaults
    assert rc == 0 and len(posts) == 8
    chains = load_run(tmp_path / "r").chains
    questions = {digest(r) for r in posts}
    assert len(questions) == 4
    by_problem = chains.groupby("problem_id")["text"].apply(set).to_dict()
    assert len(by_problem) == 4
    seen = set()
    for texts in by_problem.values():
        (text,) = texts  # both chains of a problem have their own problem's echo
        assert text.startswith("ECHO ") and text[5:] in questions and text not in seen
        seen.add(text)


# ---- a stray reply that arrives after the next request went out ----------------------------------------


def chat_reply(text: str) -> bytes:
    """A chat completion with an id of its own, as every real server gives each reply."""
    import uuid

    return response(body={"id": f"chatcmpl-{uuid.uuid4().hex}", **chat(text)})


def late_stray(answer: Callable[[Request], bytes], requests: list[Request] | None = None,
               real_reply: bool = True) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """A server that, once the next request on a kept-alive connection has arrived, first sends the
    previous reply again (the same bytes, so the same completion ``id``), then the real one
    (``real_reply``; else the real one is held back and sent only if another request comes on this
    connection). Read alone, the stray reply is indistinguishable from an answer by timing. A GET
    (the model listing) is answered plainly."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        last: bytes | None = None
        held: bytes | None = None
        while (req := await read_request(reader)) is not None:
            if requests is not None:
                requests.append(req)
            if held is not None:  # the connection was used again after the stray reply: the held reply
                writer.write(held)
                held = None
            if req.method == "GET":  # the model listing: no completion, no id
                writer.write(response(body={"object": "list", "data": [{"id": "m", "object": "model"}]}))
                await writer.drain()
                continue
            own = answer(req)
            if last is not None:
                writer.write(last)
            if last is None or real_reply:
                writer.write(own)
            else:
                held = own
            await writer.drain()
            last = own
    return handler


def test_a_replayed_reply_is_refused_and_its_connection_dropped() -> None:
    """The stray reply (a repeat of reply 1) answers request 2 on the kept-alive connection: it is
    ReplayedReply, and the retry goes out on a fresh connection, so the reply held back on the old one
    never answers anything."""
    seen: list[Request] = []

    def answer(req: Request) -> bytes:
        return chat_reply("ECHO " + json.loads(req.body)["q"])

    async def main() -> tuple[list[Any], BaseException, int]:
        async with Loopback(handler=late_stray(answer, seen, real_reply=False)) as srv:
            c = JSONClient(srv.url, timeout=5, reply_ids=set())
            first = await c.post("/x", {"q": "one"})
            try:
                await c.post("/x", {"q": "two"})
            except transport.ReplayedReply as exc:
                err = exc
            else:
                raise AssertionError("the stray reply was taken")
            again = await c.post("/x", {"q": "two"})
            await c.aclose()
            return [first, again], err, srv.accepted

    got, err, connections = run(main())
    assert [g["choices"][0]["message"]["content"] for g in got] == ["ECHO one", "ECHO two"]
    assert "repeats the id" in str(err) and connections == 2 and len(seen) == 3


def test_without_reply_ids_a_replayed_id_is_not_checked() -> None:
    """keepalive=false leaves the check out (each request has its own connection), so a server that
    gives every reply the same id still works that way."""
    async def main() -> list[Any]:
        async with Loopback(reply=lambda req: response(body={"id": "same", **chat("x")})) as srv:
            c = JSONClient(srv.url, timeout=5, keepalive=False)
            got = [await c.post("/x", {"q": i}) for i in range(3)]
            await c.aclose()
            return [got, srv.accepted]

    got, connections = run(main())
    assert len(got) == 3 and connections == 3  # one connection per request


def test_a_server_that_repeats_ids_still_gets_through() -> None:
    """A connection's first reply cannot be a stray one: a server giving every reply the same id
    is answered, each reuse of a connection costing one retry on a fresh one."""
    async def main() -> tuple[list[Any], int]:
        async with Loopback(reply=lambda req: response(body={"id": "same", **chat("x")})) as srv:
            b = OpenAIServerBackend("m", srv.url, max_retries=2, backoff_base=0.0, timeout=5)
            try:
                gens = [await b.generate_one([{"role": "user", "content": "q"}], i, SAMPLING) for i in range(3)]
            finally:
                await b.aclose()
            return gens, srv.accepted

    gens, connections = run(main())
    assert [g.error for g in gens] == [None] * 3 and [g.text for g in gens] == ["x"] * 3
    assert [g.attempts for g in gens] == [1, 2, 2] and connections == 3


def test_vpo_run_a_late_stray_reply_gives_no_wrong_row(tmp_path: Path, capsys: Any) -> None:
    """End to end through `vpo run`, one request at a time: every row's answer is its own problem's
    echo (0 wrong rows), none an error: each stray reply is refused and its request sent again."""
    from vpo_harness.harness import load_run
    from vpo_harness.harness.app.cli import main

    seen: list[Request] = []
    with ThreadedLoopback(handler=late_stray(lambda req: chat_reply("ECHO " + digest(req)), seen)) as srv:
        rc = main(["run", "--task", "maze", "--model", "openai:x", "--base-url", srv.url + "/v1", "--limit", "6",
                   "-n", "1", "--out", str(tmp_path / "r"), "--no-progress", "--concurrency", "1",
                   "--model-args", "use_n=false,max_retries=3,backoff_base=0"])
    err = capsys.readouterr().err
    assert rc == 0, err
    chains = load_run(tmp_path / "r").chains
    questions = {digest(r) for r in seen if r.method == "POST"}
    assert len(chains) == 6 and chains["error"].isna().all()
    assert sorted(chains["text"]) == sorted(f"ECHO {q}" for q in questions)
    assert "repeats the id" in err  # the strays were there, and refused


def test_vpo_evolve_a_late_stray_reply_gives_no_wrong_row(tmp_path: Path, capsys: Any) -> None:
    """End to end through `vpo evolve`: each row's text is the reply to its own request (the scripted
    routes are a function of the request's seed, which the row records)."""
    from tests.fakes.scripted_openai import maze_routes_responder
    from vpo_harness.harness.app.cli import main

    respond = maze_routes_responder(3)
    seen: list[Request] = []
    with ThreadedLoopback(handler=late_stray(lambda req: chat_reply(respond(json.loads(req.body), 0)), seen)) as srv:
        rc = main(["evolve", "--task", "maze", "--model", "openai:scripted", "--base-url", srv.url + "/v1",
                   "--limit", "3", "--iterations", "3", "--out", str(tmp_path / "e"), "--no-progress",
                   "--concurrency", "1", "--model-args", "max_retries=3,backoff_base=0"])
    err = capsys.readouterr().err
    assert rc == 0, err
    rows = [json.loads(ln) for ln in (tmp_path / "e" / "samples.jsonl").read_text().splitlines() if ln.strip()]
    assert len(rows) >= 9 and all(r["error"] is None for r in rows)
    wrong = [r for r in rows if r["text"] != respond({"seed": r["seed"]}, 0)]
    assert wrong == []
    assert "repeats the id" in err


# ---- what a retry cannot change, URLs, proxies ----------------------------------------------------------


NOT_HTTP = b"SSH-2.0-OpenSSH_9.6\r\n\r\n"


@pytest.mark.parametrize("reply, expect", [(NOT_HTTP, "NotHTTP: the reply is not valid HTTP"),
                                           (b"big", "ReplyTooLarge: the reply's body is")])
def test_a_reply_a_retry_cannot_change_is_tried_once(reply: bytes, expect: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """max_retries=6 would cost about a minute of backoff for bytes that come back the same: one
    attempt, and the error names its kind once."""
    monkeypatch.setattr(transport, "MAX_BODY_BYTES", 100)
    body = reply if reply == NOT_HTTP else response(body={"pad": "x" * 200})

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await read_request(reader) is not None:
            writer.write(body)
            await writer.drain()

    async def main() -> tuple[Any, int]:
        async with Loopback(handler=handler) as srv:
            b = OpenAIServerBackend("m", srv.url, max_retries=6, backoff_base=0.0, timeout=5)
            try:
                gen = await b.generate_one([{"role": "user", "content": "q"}], 1, SAMPLING)
            finally:
                await b.aclose()
            return gen, srv.accepted

    gen, connections = run(main())
    assert gen.attempts == 1 and connections == 1 and gen.error.startswith(expect), gen.error
    assert gen.error.count("Error") <= 1 and gen.error.count(expect.split(":")[0]) == 1


@pytest.mark.parametrize("cmd", ["run", "evolve"])
def test_a_line_break_in_the_base_url_is_one_line(cmd: str, tmp_path: Path, capsys: Any) -> None:
    from vpo_harness.harness.app.cli import main

    extra = ["-n", "1"] if cmd == "run" else ["--iterations", "1"]
    rc = main([cmd, "--task", "maze", "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1\r\nX-Evil: 1",
               "--limit", "1", *extra, "--out", str(tmp_path / cmd), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "--base-url 'http://127.0.0.1:9/v1\\r\\nX-Evil: 1' has the character '\\r' at character 22" in err


@pytest.mark.parametrize("url", ["http://a b/v1", "http://host:port/v1", "ftp://host/v1", "http:///v1"])
def test_urls_that_are_not_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="--base-url"):
        transport.check_url(url)


def test_no_proxy_address_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NO_PROXY=127.0.0.0/8`` (the openai SDK's users write ranges): a loopback server is reached
    directly although HTTP_PROXY points at a dead proxy; without the range, the proxy is used."""
    assert transport.bypasses_proxy("127.0.0.1", "example.com, 127.0.0.0/8")
    assert transport.bypasses_proxy("::1", "::1/128") and not transport.bypasses_proxy("10.1.2.3", "127.0.0.0/8")
    assert not transport.bypasses_proxy("localhost", "127.0.0.0/8") and not transport.bypasses_proxy("1.2.3.4", "x/y")
    monkeypatch.setenv("HTTP_PROXY", dead_url().removesuffix("/v1"))

    async def main(no_proxy: str) -> Any:
        monkeypatch.setenv("NO_PROXY", no_proxy)
        async with Loopback() as srv:
            c = JSONClient(srv.url, timeout=5)
            try:
                return await c.get("/models")
            except ConnectError as exc:
                return exc
            finally:
                await c.aclose()

    assert run(main("10.0.0.0/8, 127.0.0.0/8")) == {"ok": True}
    assert isinstance(run(main("10.0.0.0/8")), ConnectError)  # through the (dead) proxy


def test_evolve_start_up_check_says_a_server_answered_badly() -> None:
    """A server that answers with bytes that are not HTTP did answer: the check says so (not
    "cannot connect"), and stops the search, since every request would end the same way."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(NOT_HTTP)
        await writer.drain()

    msg = _check_refused(handler, timeout=5)
    assert "answered GET /models, but not with a usable HTTP reply (NotHTTP" in msg and "cannot connect" not in msg


# ---- header values are refused before any request ------------------------------------------------------


@pytest.mark.parametrize("where, value, expect", [
    ("env", "sk-abc\n", "OPENAI_API_KEY environment variable: the Authorization header value has a line break"),
    ("env", "sk-\u20ac", "OPENAI_API_KEY environment variable: the Authorization header value has the character"),
    ("args", "sk-abc\r\nX-Evil: 1", "--model-args api_key (or an evolve --config's llm.api_key): the Authorization "
                                     "header value has a line break"),
])
def test_a_bad_api_key_is_one_line_naming_its_source(where: str, value: str, expect: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if where == "env":
        monkeypatch.setenv("OPENAI_API_KEY", value)
        kw: dict[str, Any] = {}
    else:
        kw = {"api_key": value}
    with pytest.raises(ValueError) as err:
        OpenAIServerBackend("m", "http://127.0.0.1:1/v1", **kw)
    line = str(err.value)
    assert expect in line and "\n" not in line and "sk-abc" not in line


def test_a_bad_header_via_the_cli_is_one_line_and_no_request(tmp_path: Path, capsys: Any) -> None:
    from vpo_harness.harness.app.cli import main

    with ThreadedLoopback(lambda req: response(body=chat("x"))) as srv:
        rc = main(["run", "--task", "maze", "--model", "openai:x", "--base-url", srv.url + "/v1", "--limit", "1",
                   "-n", "1", "--out", str(tmp_path / "r"), "--no-progress",
                   "--model-args", "headers=X-Team:caf\u00e9;X-Tag:\u2603"])
    err = capsys.readouterr().err
    assert rc == 2 and srv.requests == [] and srv.accepted == 0
    (line,) = [ln for ln in err.splitlines() if "error" in ln]
    assert line.startswith("vpo run: error: --model-args headers: the X-Tag header value has the character")


def test_headers_from_the_command_line_are_sent() -> None:
    async def main() -> Loopback:
        async with Loopback(reply=lambda req: response(body=chat("hi"))) as srv:
            b = OpenAIServerBackend("m", srv.url + "/v1", use_n=False, max_retries=0, timeout=5,
                                    headers="X-Team: nlp;X-Trace:7")
            gen = await b.generate_one([{"role": "user", "content": "q"}], 1, SAMPLING)
            await b.aclose()
            assert gen.error is None
        return srv

    (req,) = run(main()).requests
    assert req.headers["x-team"] == "nlp" and req.headers["x-trace"] == "7"


# ---- bounded replies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_a_body_over_the_cap_ends_the_attempt(length: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_BODY_BYTES", 10_000)
    big = json.dumps({"text": "x" * 50_000}).encode()

    async def main() -> BaseException:
        async with Loopback(reply=lambda req: response(body=big, length=length)) as srv:
            return await get_error(srv.url, ReplyTooLarge)

    exc = run(main())
    assert "10000-byte cap" in str(exc) and isinstance(exc, RemoteProtocolError)


def test_a_head_over_the_cap_ends_the_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_HEAD_BYTES", 2_000)

    async def main() -> BaseException:
        async with Loopback(reply=lambda req: response(headers={"X-Pad": "p" * 5_000})) as srv:
            return await get_error(srv.url, ReplyTooLarge)

    assert "head is over 2000 bytes" in str(run(main()))


# ---- messages -----------------------------------------------------------------------------------------


def test_a_timeout_says_how_long_it_waited() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()  # never answers

    async def main() -> BaseException:
        async with Loopback(handler=silent) as srv:
            return await get_error(srv.url, Timeout, timeout=0.2)

    assert re.search(r"no reply from http://127\.0\.0\.1:\d+/models after \d+\.\d s \(timeout 0\.2 s per read\)",
                     str(run(main())))


def test_a_redirect_names_its_location_and_server_text_is_escaped() -> None:
    def reply(req: Request) -> bytes:
        if req.target == "/old":
            return response(307, b"", headers={"Location": "http://elsewhere:1/v1"}, reason="Temporary Redirect")
        return response(500, b"boom\x1b]0;pwned\x07\nforged line", reason="Internal Server Error")

    async def main() -> tuple[BaseException, BaseException]:
        async with Loopback(reply=reply) as srv:
            c = JSONClient(srv.url, timeout=5)
            errs = []
            for path in ("/old", "/x"):
                try:
                    await c.get(path)
                except StatusError as exc:
                    errs.append(exc)
            await c.aclose()
        return errs[0], errs[1]

    moved, failed = run(main())
    assert "redirected to http://elsewhere:1/v1;" in str(moved) and moved.status_code == 307
    assert str(failed) == "HTTP 500 Internal Server Error: boom\\x1b]0;pwned\\x07\\nforged line"


def test_printable_escapes_controls_and_keeps_letters() -> None:
    assert printable("é ok\t\x1b[1m\x85\u2028") == "é ok\\t\\x1b[1m\\x85\\u2028"
    assert printable("plain") == "plain"


# ---- the backend above the transport ------------------------------------------------------------------


def test_each_retry_prints_one_line(capsys: Any) -> None:
    replies = [response(503, b"busy", reason="Service Unavailable")] * 2 + [response(body=chat("ok"))]

    async def main() -> Any:
        async with Loopback(reply=lambda req: replies.pop(0)) as srv:
            b = OpenAIServerBackend("m", srv.url + "/v1", use_n=False, max_retries=3, timeout=5,
                                    backoff_base=0.001, backoff_max=0.01)
            gen = await b.generate_one([{"role": "user", "content": "q"}], 1, SAMPLING)
            await b.aclose()
        return gen, srv.url

    gen, url = run(main())
    assert gen.error is None and gen.attempts == 3
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    for i, line in enumerate(lines, 1):
        assert line.startswith(f"[vpo] {url}/v1: attempt {i} failed (StatusError: HTTP 503 Service Unavailable: busy)"
                               "; next try in ")


def test_a_server_that_keeps_failing_is_given_up_on_as_a_whole(capsys: Any) -> None:
    """Not max_retries per chain: once nothing has succeeded for give_up_after seconds, the backend
    stops with ServerUnreachable (every command: exit code 3)."""
    async def main() -> tuple[BaseException, int]:
        async with Loopback(reply=lambda req: response(503, b"down", reason="Service Unavailable")) as srv:
            b = OpenAIServerBackend("m", srv.url + "/v1", use_n=False, max_retries=500, timeout=5,
                                    backoff_base=0.001, backoff_max=0.005, give_up_after=0.05)
            try:
                await b.generate_one([{"role": "user", "content": "q"}], 1, SAMPLING)
            except ServerUnreachable as exc:
                return exc, len(srv.requests)
            finally:
                await b.aclose()
        raise AssertionError("never gave up")

    exc, sent = run(main())
    capsys.readouterr()
    assert "give_up_after=0.05" in str(exc) and "HTTP 503" in str(exc) and sent < 500


def _check_refused(handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
                   **llm_args: Any) -> str:
    """The message `vpo evolve`'s start-up check refuses a server served by ``handler`` with."""
    from vpo_harness.search.llm import ChatLLM, LLMUnreachable

    async def main() -> BaseException:
        async with Loopback(handler=handler) as srv:
            llm = ChatLLM(srv.url + "/v1", "m", **llm_args)
            try:
                await llm.check()
            except LLMUnreachable as exc:
                return exc
            finally:
                await llm.aclose()
        raise AssertionError("no error")

    return str(run(main()))


def test_evolve_start_up_check_has_the_request_deadline() -> None:
    """A server that trickles a byte at a time never trips the per-read timeout; the check is bounded
    by the backend's deadline like every request."""
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"X")
            await writer.drain()
            await asyncio.sleep(0.02)

    msg = _check_refused(trickle, timeout=1.0, deadline=0.3, max_retries=0)
    assert msg.startswith("cannot connect to the server at http://127.0.0.1:") and "the deadline is 0.3 s" in msg


def test_evolve_start_up_check_says_the_server_answered(capsys: Any) -> None:
    from vpo_harness.search.llm import ChatLLM

    async def main() -> list[str]:
        async with Loopback(reply=lambda req: response(404, {"error": "no such route"}, reason="Not Found")) as srv:
            llm = ChatLLM(srv.url + "/v1", "m", timeout=5)
            try:
                return await llm.check()
            finally:
                await llm.aclose()

    assert run(main()) == []
    assert "answered GET /models, with an error (StatusError: HTTP 404 Not Found" in capsys.readouterr().err


@pytest.mark.integration
def test_run_and_evolve_against_a_dead_server_say_the_same(tmp_path: Path, capsys: Any) -> None:
    from vpo_harness.harness.app.cli import main

    url = dead_url()
    shapes = {}
    for cmd, extra in (("run", ["-n", "1"]), ("evolve", ["--iterations", "1"])):
        rc = main([cmd, "--task", "maze", "--model", "openai:x", "--base-url", url, "--limit", "1", *extra,
                   "--out", str(tmp_path / cmd), "--no-progress"])
        (line,) = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
        shapes[cmd] = (rc, line.split(" (")[0].replace(f"vpo {cmd}: ", ""))
    assert shapes["run"] == shapes["evolve"] == (3, f"error: cannot connect to the server at {url}: connection refused")
