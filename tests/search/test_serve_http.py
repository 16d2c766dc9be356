"""`vpo serve`'s HTTP stack against hostile and careless clients: every bad field through the real server,
body cap, malformed headers, nested JSON, streaming through the real openai client, client disconnects,
slow-header connections and the connection bound. No assertion depends on how fast the machine is:
waits are polls with generous deadlines, and timeouts are checked as configuration."""
from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import httpx
import openai
import pytest

from vpo_harness.harness.core.models.base import GenRequest
from vpo_harness.search.serve import Limits, ModelServer, default_threads
from tests.fakes.scripted_backend import ScriptedBackend
from tests.search.test_serve_protocol import BAD_CHAT, BAD_COMPLETION

NAME = "scripted-model"
MSG = [{"role": "user", "content": "hi"}]


def _echo(req: GenRequest, chain: int, seed: int) -> str:
    return f"{req.messages[-1]['content']}|seed={seed}"


def _start(backend: Any = None, **limits: Any) -> tuple[ModelServer, Any]:
    backend = backend or ScriptedBackend(_echo)
    srv = ModelServer(backend, NAME, limits=Limits(**limits), chat_template_args={"enable_thinking": False})
    return srv.start_background(), backend


@pytest.fixture(scope="module")
def served():
    srv, backend = _start()
    yield srv, backend
    srv.shutdown()


def _addr(srv: ModelServer) -> tuple[str, int]:
    return srv.sock.getsockname()[:2]  # type: ignore[union-attr]


def _raw(srv: ModelServer, data: bytes, timeout: float = 60) -> bytes:
    """Send bytes on a fresh connection; everything the server sends until it closes (or the reply ends)."""
    with socket.create_connection(_addr(srv), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out:
                head, _, body = out.partition(b"\r\n\r\n")
                length = [int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
                if length and len(body) >= length[0]:
                    break
        return out


def _status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def _post(srv: ModelServer, body: bytes, path: str = "/v1/chat/completions") -> httpx.Response:
    return httpx.post(srv.url.rsplit("/v1", 1)[0] + path, content=body, headers={"content-type": "application/json"},
                      timeout=60)


@pytest.mark.parametrize("body,param", BAD_CHAT, ids=[f"{p}-{i}" for i, (_, p) in enumerate(BAD_CHAT)])
def test_every_bad_chat_field_is_a_400_naming_it(served, body, param) -> None:
    srv, backend = served
    n0 = len(backend.calls)
    if isinstance(body.get("model"), str):   # the served name; a missing or mistyped model stays as it is
        body = {**body, "model": NAME}
    r = _post(srv, json.dumps(body).encode())  # json.dumps writes NaN/Infinity as Python's json reads them
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and f"'{param}'" in err["message"] and err["type"] == "invalid_request_error"
    assert len(backend.calls) == n0  # refused before it reached the model


@pytest.mark.parametrize("body,param", BAD_COMPLETION, ids=[p for _, p in BAD_COMPLETION])
def test_every_bad_completion_field_is_a_400_naming_it(served, body, param) -> None:
    srv, _ = served
    r = _post(srv, json.dumps({**body, "model": NAME}).encode(), "/v1/completions")
    assert r.status_code == 400 and r.json()["error"]["param"] == param


def test_model_name_logprobs_and_context_through_the_openai_client(served) -> None:
    srv, backend = served
    client = openai.OpenAI(base_url=srv.url, api_key="x", max_retries=0, timeout=60)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="gpt-4o", messages=MSG)
    with pytest.raises(openai.BadRequestError, match="logprobs"):
        client.chat.completions.create(model=NAME, messages=MSG, logprobs=True, top_logprobs=2)
    backend.context_len = 100
    try:
        with pytest.raises(openai.BadRequestError, match="context of 100"):
            client.chat.completions.create(model=NAME, messages=MSG, max_tokens=101)
        assert client.models.list().data[0].model_extra["max_model_len"] == 100
    finally:
        del backend.context_len
    ok = client.chat.completions.create(model=NAME, messages=MSG, max_tokens=5, seed=1)
    assert ok.choices[0].message.content == "hi|seed=1"
    client.close()


def test_chat_template_kwargs_reach_the_backend_merged_over_the_server_default(served) -> None:
    srv, backend = served
    client = openai.OpenAI(base_url=srv.url, api_key="x", max_retries=0, timeout=60)
    client.chat.completions.create(model=NAME, messages=MSG, seed=1)
    assert backend.calls[-1][1].chat_template_args == (("enable_thinking", False),)
    client.chat.completions.create(model=NAME, messages=MSG, seed=1,
                                   extra_body={"chat_template_kwargs": {"enable_thinking": True, "mode": "x"}})
    assert backend.calls[-1][1].chat_template_args == (("enable_thinking", True), ("mode", "x"))
    client.close()


def test_body_over_the_cap_is_413_before_it_is_read() -> None:
    srv, backend = _start(max_body_bytes=1024)
    try:
        # a 100 MB body announced, not one byte of it sent: the reply comes anyway
        head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000000\r\n\r\n")
        reply = _raw(srv, head)
        assert _status(reply) == 413 and b"--max-body-mb" in reply and b"connection: close" in reply.lower()
        # no Content-Length (chunked upload): counted as it arrives
        chunked = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + b"800\r\n" + b" " * 2048 + b"\r\n")
        assert _status(_raw(srv, chunked)) == 413
        small = json.dumps({"model": NAME, "messages": MSG}).encode()
        assert _post(srv, small).status_code == 200
        assert _post(srv, small + b" " * 1024).status_code == 413
    finally:
        srv.shutdown()


@pytest.mark.parametrize("length", [b"abc", b"-5", b"1e3", b"5, 6"])
def test_malformed_content_length_is_a_400_line(served, length: bytes) -> None:
    srv, _ = served
    reply = _raw(srv, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n{}")
    assert _status(reply) == 400 and reply.split(b"\r\n\r\n", 1)[1].strip()  # a reason, not a dropped connection


def test_bad_json_bodies_are_400s(served) -> None:
    srv, _ = served
    deep = _post(srv, b"[" * 200_000)
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["error"]["message"]
    deep_obj = _post(srv, b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    assert deep_obj.status_code == 400
    assert _post(srv, b"{not json").status_code == 400
    assert _post(srv, b"\xff\xfe\x00garbage").status_code == 400
    assert _post(srv, b"[1, 2]").json()["error"]["message"] == "request body must be a JSON object"


def test_stream_chunks_parse_as_openai_chunks(served) -> None:
    srv, _ = served
    client = openai.OpenAI(base_url=srv.url, api_key="x", max_retries=0, timeout=60)
    whole = client.chat.completions.create(model=NAME, messages=MSG, n=3, seed=7)
    chunks = list(client.chat.completions.create(model=NAME, messages=MSG, n=3, seed=7, stream=True,
                                                 stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks) and len({c.id for c in chunks}) == 1
    texts: dict[int, str] = {}
    finish: dict[int, str] = {}
    for c in chunks[:-1]:
        for ch in c.choices:
            texts[ch.index] = texts.get(ch.index, "") + (ch.delta.content or "")
            if ch.finish_reason:
                finish[ch.index] = ch.finish_reason
    assert texts == {c.index: c.message.content for c in whole.choices}
    assert finish == {0: "stop", 1: "stop", 2: "stop"}
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    comp = list(client.completions.create(model=NAME, prompt="raw", seed=3, stream=True))
    assert "".join(c.choices[0].text for c in comp) == "raw|seed=3"
    raw = _post(srv, json.dumps({"model": NAME, "messages": MSG, "stream": True}).encode())
    assert raw.headers["content-type"].startswith("text/event-stream")
    lines = [ln for ln in raw.text.split("\n") if ln]
    assert all(ln.startswith("data: ") for ln in lines) and lines[-1] == "data: [DONE]"
    client.close()


def test_disconnects_leave_no_traceback_and_skip_queued_work(capfd) -> None:
    """A client that leaves while its request waits behind a running batch: its job is dropped before it
    reaches the model, a streaming client that leaves mid-stream is no error, and stderr stays clean."""
    gate = threading.Event()

    def responder(req: GenRequest, chain: int, seed: int) -> str:
        if req.messages[-1]["content"] == "block":
            assert gate.wait(60)
        return "ok"

    srv, backend = _start(ScriptedBackend(responder))
    try:
        blocker = threading.Thread(target=_post, args=(srv, json.dumps(
            {"model": NAME, "messages": [{"role": "user", "content": "block"}]}).encode()))
        blocker.start()
        _until(lambda: len(backend.calls) == 1)  # the batcher is busy with "block"
        for stream in (False, True):
            body = json.dumps({"model": NAME, "messages": [{"role": "user", "content": f"gone-{stream}"}],
                               "stream": stream}).encode()
            s = socket.create_connection(_addr(srv))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            _until(lambda: srv.batcher.q.qsize() >= 1)
            if stream:  # wait for the role chunk, then leave mid-stream
                got = b""
                while b"chat.completion.chunk" not in got:
                    chunk = s.recv(65536)
                    assert chunk, got
                    got += chunk
            s.close()
            _until(lambda: all(j is None or j.future.cancelled() for j in list(srv.batcher.q.queue)))
        gate.set()
        blocker.join(60)
        after = _post(srv, json.dumps({"model": NAME, "messages": MSG}).encode())
        assert after.status_code == 200
        seen = [m["content"] for reqs, _ in backend.calls for r in reqs for m in r.messages]
        assert "gone-False" not in seen and "gone-True" not in seen and "hi" in seen
    finally:
        srv.shutdown()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception" not in err and "Error" not in err, err


def test_timeouts_and_bounds_are_configured() -> None:
    srv = ModelServer(ScriptedBackend(_echo), NAME, limits=Limits(header_timeout_s=3, keep_alive_s=4,
                                                                  max_header_bytes=9000, max_connections=7))
    try:
        cfg = srv.uvicorn_config()
        assert cfg.timeout_keep_alive == 4 and cfg.limit_concurrency == 7 and cfg.h11_max_incomplete_event_size == 9000
        assert cfg.http.header_timeout == 3 and cfg.timeout_graceful_shutdown == Limits().graceful_shutdown_s
        assert Limits().max_body_bytes == 4 << 20
    finally:
        srv.batcher.close()


def test_slow_header_connections_are_closed_and_cost_no_thread() -> None:
    srv, _ = _start(header_timeout_s=0.5, max_connections=8)
    try:
        threads0 = threading.active_count()
        slow = []
        for _ in range(6):  # slow loris: a request line and half a header, then silence
            s = socket.create_connection(_addr(srv), timeout=60)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
            slow.append(s)
        assert threading.active_count() <= threads0  # connections are sockets on the loop, not threads
        for s in slow:
            assert s.recv(1024) == b""  # closed by the server (recv would time out after 60 s otherwise)
            s.close()
        assert _post(srv, json.dumps({"model": NAME, "messages": MSG}).encode()).status_code == 200
    finally:
        srv.shutdown()


def test_connections_beyond_the_bound_get_503() -> None:
    srv, _ = _start(max_connections=3, header_timeout_s=60)
    idle = [socket.create_connection(_addr(srv), timeout=60) for _ in range(3)]
    try:
        _until(lambda: len(srv.server.server_state.connections) == 3)
        reply = _raw(srv, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(reply) == 503
        for s in idle:
            s.close()
        _until(lambda: len(srv.server.server_state.connections) == 0)
        assert _status(_raw(srv, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) == 200
    finally:
        srv.shutdown()


def test_default_threads_leave_a_core(monkeypatch) -> None:
    import os

    monkeypatch.setattr("vpo_harness.search.serve._cgroup_cpus", lambda: None)
    for cores, workers, want in ((1, 1, 1), (2, 1, 1), (4, 1, 3), (16, 1, 15), (16, 4, 3), (2, 4, 1)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert default_threads(workers) == want, (cores, workers)
    monkeypatch.setattr("vpo_harness.search.serve._cgroup_cpus", lambda: 2)  # a 2-CPU quota on a 16-core host
    assert default_threads() == 1


def _until(cond: Any, deadline_s: float = 60.0) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        time.sleep(0.01)



# ---- client errors are 400s, never 500s --------------------------------------------------------------


class _PickyStops(ScriptedBackend):
    """A backend whose tokenizer cannot take some stop strings (what transformers' stop-string
    criteria raise for a tokenizer that cannot encode them), checked as the hf backend does."""

    BAD = ("\u2603", "\u00e9", "\x00")

    def check_stop_strings(self, stops: Any) -> None:
        for i, s in enumerate(stops):
            if any(b in s for b in self.BAD):
                raise ValueError(f"stop string {i} ({ascii(s)}) cannot be used with this model's tokenizer")


@pytest.fixture(scope="module")
def picky():
    srv, backend = _start(_PickyStops(_echo))
    yield srv, backend
    srv.shutdown()


ODD = ["\ud800", "a\udfffb", "\x00", "\u2603", "\u00e9", "\u202e", "\ufeff", "\U0001F600", "\x7f\x1b[2J",
       "e\u0301", "\uffff", "\r\n", "x" * 10000]


def test_fuzz_odd_unicode_nul_surrogates_and_huge_stop_lists_never_500(picky) -> None:
    """Odd Unicode, NUL and lone surrogates in every text field, and stop lists of every size: each
    reply is a 200 or a 400 naming the field, never a 500; a request beside a bad one still gets 200."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    srv, _ = picky
    rng = random.Random(7)
    bodies = []
    for _ in range(60):
        text = "".join(rng.choice(ODD) for _ in range(rng.randint(1, 3)))
        where = rng.choice(["content", "stop", "stops", "system", "parts", "template", "prompt"])
        body: dict[str, Any] = {"model": NAME, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
        if where == "content":
            body["messages"][0]["content"] = text
        elif where == "stop":
            body["stop"] = text
        elif where == "stops":
            body["stop"] = [text] * rng.choice([1, 3, 16, 17, 1000])
        elif where == "system":
            body["messages"].insert(0, {"role": "system", "content": text})
        elif where == "parts":
            body["messages"][0]["content"] = [{"type": "text", "text": "a"}, {"type": "text", "text": text}]
        elif where == "template":
            body["chat_template_kwargs"] = {"persona": text}
        else:
            body = {"model": NAME, "max_tokens": 4, "prompt": text}
        bodies.append(body)
    bodies.append({"model": NAME, "messages": MSG, "seed": 3})  # a good one among them

    def send(body: dict[str, Any]) -> httpx.Response:
        path = "/v1/completions" if "prompt" in body else "/v1/chat/completions"
        return _post(srv, json.dumps(body).encode(), path)  # lone surrogates travel as \\udXXX escapes

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(send, bodies))
    assert {r.status_code for r in replies} <= {200, 400}, [r.text for r in replies if r.status_code not in (200, 400)]
    for body, r in zip(bodies, replies):
        if r.status_code == 400:
            err = r.json()["error"]
            assert err["param"] and f"'{err['param']}'" in err["message"], err
    assert replies[-1].status_code == 200 and replies[-1].json()["choices"][0]["message"]["content"] == "hi|seed=3"
    assert sum(r.status_code == 400 for r in replies) >= 20 and sum(r.status_code == 200 for r in replies) >= 5


@pytest.mark.parametrize("body, param, said", [
    ({"messages": [{"role": "user", "content": "hi \ud800"}]}, "messages[0].content", "lone surrogate '\\ud800'"),
    ({"messages": MSG, "stop": ["ok", "\udcff"]}, "stop[1]", "lone surrogate"),
    ({"messages": MSG, "stop": ["\u2603"]}, "stop", "stop string 0"),
    ({"messages": MSG, "stop": "\u00e9"}, "stop", "stop string 0"),
    ({"messages": MSG, "stop": ["ok", "\x00"]}, "stop", "stop string 1"),
    ({"prompt": "\ud83d"}, "prompt", "lone surrogate"),
])
def test_unencodable_prompts_and_stop_strings_are_400s_naming_the_field(picky, body, param, said) -> None:
    srv, backend = picky
    n0 = len(backend.calls)
    path = "/v1/completions" if "prompt" in body else "/v1/chat/completions"
    r = _post(srv, json.dumps({"model": NAME, **body}).encode(), path)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and said in err["message"], err
    assert len(backend.calls) == n0  # refused before batching
