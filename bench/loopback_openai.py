"""A loopback OpenAI-compatible server for tests and benches (bench/runner_overhead.py): deterministic text, injectable faults.

Stdlib only (``http.server`` on a thread) so tests need no aiohttp/fastapi. Text is a pure function
of (prompt, seed, choice index), so tests can check that seeds reach the server and that chains
differ. Faults are drawn from a seeded RNG per request: HTTP 500, 429, a hang past the client's
timeout, a dropped socket, a 200 with unparseable JSON, or a 200 with valid JSON of the wrong shape.
A test double: it lives in bench/ (not tests/) only because bench/ must not import tests/.
"""
from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango")

FAULTS = ("500", "429", "timeout", "disconnect", "garbage", "shape")
#: opt-in faults (not in the default mix): a 200 whose content is null; a good reply sent one byte
#: every ``trickle_s`` seconds (never trips a per-read client timeout)
EXTRA_FAULTS = ("null", "trickle")


def fake_text(prompt: str, seed: int | None, index: int, max_tokens: int) -> str:
    """Deterministic 'sampled' words; the seed=None case draws from the OS instead."""
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    h = hashlib.sha256(f"{prompt}\x00{seed}\x00{index}".encode()).digest()
    rng = random.Random(h)
    count = min(max_tokens, 3 + rng.randrange(6))
    return " ".join(rng.choice(WORDS) for _ in range(count))


@dataclass
class FakeServerConfig:
    fault_rate: float = 0.0
    faults: tuple[str, ...] = FAULTS
    hang_s: float = 1.0            # how long a "timeout" fault sleeps (set > client timeout)
    support_n: bool = True         # False: 400 on n > 1 (like servers that lack n)
    ignore_n: bool = False         # True: silently return one choice whatever n is
    rng_seed: int = 0
    delay_s: float = 0.0           # latency of every good reply
    fail_after: int | None = None  # after this many completions requests the server is down: 503 to everything
    trickle_s: float = 0.05        # seconds between bytes of a "trickle" reply


@dataclass
class RequestLog:
    path: str
    body: dict[str, Any]
    outcome: str                   # "ok" or a fault name or "400"


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # listen backlog: the default 5 refuses bursts of concurrent clients
    daemon_threads = True


class FakeOpenAIServer:
    """``with FakeOpenAIServer(cfg) as srv: srv.base_url`` -> ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, config: FakeServerConfig | None = None) -> None:
        self.config = config or FakeServerConfig()
        self.log: list[RequestLog] = []
        self._lock = threading.Lock()
        self._rng = random.Random(self.config.rng_seed)
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def outcomes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry in self.log:
            counts[entry.outcome] = counts.get(entry.outcome, 0) + 1
        return counts

    def is_down(self) -> bool:
        """``fail_after`` completions requests were answered: from now on the server fails everything."""
        limit = self.config.fail_after
        with self._lock:
            return limit is not None and sum(1 for e in self.log if e.outcome != "down") >= limit

    def _pick_fault(self) -> str | None:
        with self._lock:
            if self._rng.random() < self.config.fault_rate:
                return self._rng.choice(self.config.faults)
        return None

    def _record(self, path: str, body: dict[str, Any], outcome: str) -> None:
        with self._lock:
            self.log.append(RequestLog(path, body, outcome))

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
                body = json.dumps({"error": {"message": message, "type": "fake", "code": status}}).encode()
                self._send(status, body, headers)

            def do_GET(self) -> None:
                if server.is_down():
                    self._error(503, "server is down")
                elif self.path.rstrip("/") == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())
                else:
                    self._error(404, "not found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                path = self.path.rstrip("/")
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    server._record(path, {}, "400")
                    self._error(400, "bad json")
                    return
                if path not in ("/v1/chat/completions", "/v1/completions"):
                    server._record(path, body, "404")
                    self._error(404, f"no route {path}")
                    return
                if server.is_down():
                    server._record(path, body, "down")
                    self._error(503, "server is down")
                    return
                n = int(body.get("n") or 1)
                if n > 1 and not server.config.support_n:
                    server._record(path, body, "400")
                    self._error(400, "n > 1 is not supported")
                    return
                fault = server._pick_fault()
                server._record(path, body, fault or "ok")
                if fault == "500":
                    self._error(500, "injected internal error")
                elif fault == "429":
                    self._error(429, "injected rate limit", {"Retry-After": "0"})
                elif fault == "timeout":
                    time.sleep(server.config.hang_s)
                    try:
                        self._error(504, "too late")
                    except OSError:
                        pass
                elif fault == "disconnect":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                elif fault == "garbage":
                    self._send(200, b'{"id": "x", "choices": [{"index": 0, "mess')
                elif fault == "shape":
                    self._send(200, b'{"object": "list", "data": [], "choices": null}')
                elif fault == "null":
                    reply = self._reply(path, body, n)
                    for ch in reply["choices"]:
                        if "message" in ch:
                            ch["message"]["content"] = None
                        else:
                            ch["text"] = None
                    self._send(200, json.dumps(reply).encode())
                elif fault == "trickle":
                    payload = json.dumps(self._reply(path, body, n)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    try:
                        for i in range(len(payload)):
                            self.wfile.write(payload[i:i + 1])
                            self.wfile.flush()
                            time.sleep(server.config.trickle_s)
                    except OSError:  # the client gave up
                        self.close_connection = True
                else:
                    if server.config.delay_s:
                        time.sleep(server.config.delay_s)
                    self._send(200, json.dumps(self._reply(path, body, n)).encode())

            def _reply(self, path: str, body: dict[str, Any], n: int) -> dict[str, Any]:
                chat = path.endswith("chat/completions")
                if chat:
                    prompt = "\n".join(m.get("content", "") for m in body.get("messages", []))
                else:
                    prompt = body.get("prompt", "")
                seed = body.get("seed")
                max_tokens = int(body.get("max_tokens") or 16)
                stops = body.get("stop") or []
                if isinstance(stops, str):
                    stops = [stops]
                if server.config.ignore_n:
                    n = 1
                choices = []
                total = 0
                for i in range(n):
                    text = fake_text(prompt, seed, i, max_tokens)
                    finish = "length" if len(text.split()) >= max_tokens else "stop"
                    for s in stops:
                        if s and s in text:
                            text = text[: text.index(s)]
                            finish = "stop"
                    total += len(text.split())
                    if chat:
                        choices.append({"index": i, "message": {"role": "assistant", "content": text},
                                        "finish_reason": finish})
                    else:
                        choices.append({"index": i, "text": text, "finish_reason": finish})
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": total,
                         "total_tokens": len(prompt.split()) + total}
                return {"id": f"fake-{uuid.uuid4().hex}",  # unique, as every real server's
                        "object": "chat.completion" if chat else "text_completion",
                        "created": int(time.time()), "model": body.get("model", "fake"),
                        "choices": choices, "usage": usage}

        return Handler
