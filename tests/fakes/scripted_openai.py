"""A loopback OpenAI-compatible chat server whose replies come from a Python callback (tests only).

``ScriptedOpenAIServer(respond)``: ``respond(body, call_index) -> str`` gets the request body and the
running number of the request, and returns the assistant text (raising makes the reply an HTTP 500). ``delay_s`` is
seconds to wait before answering, or a callable giving them per request (random latencies answer out of
order). Every body is kept in ``requests`` so a
test can read the prompts the search sent (artifacts shown, hidden data never shown).
Run as a script (``python -m tests.fakes.scripted_openai --maze-optimal-after K``) it serves Maze
routes, for subprocess tests that kill the client.
"""
from __future__ import annotations

import json
import threading
import uuid
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Respond = Callable[[dict[str, Any], int], str]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):  # a killed client
            super().handle_error(request, client_address)


class ScriptedOpenAIServer:
    def __init__(self, respond: Respond, *, delay_s: float | Callable[[], float] = 0.0, port: int = 0):
        self.respond, self.delay_s = respond, delay_s
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ScriptedOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, obj: Any, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with srv._lock:
                    idx = len(srv.requests)
                    srv.requests.append(body)
                delay = srv.delay_s() if callable(srv.delay_s) else srv.delay_s
                if delay:
                    time.sleep(delay)
                n = int(body.get("n") or 1)  # choice i answers as if asked with seed (seed, i)
                seed = body.get("seed")
                try:
                    texts = [srv.respond(body if i == 0 else {**body, "seed": None if seed is None else
                                                              hash((seed, i)) & 0x7FFFFFFF}, idx) for i in range(n)]
                except Exception as exc:  # a responder that raises is a server answering 500
                    self._send({"error": {"message": f"scripted failure: {exc}", "code": 500}}, 500)
                    return
                toks = sum(len(t.split()) for t in texts)
                self._send({"id": f"x{idx}-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": 0, "model": "scripted",
                            "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                                         "finish_reason": "stop"} for i, t in enumerate(texts)],
                            "usage": {"prompt_tokens": 10, "completion_tokens": toks, "total_tokens": 10 + toks}})

        return H


def prefilled(body: dict[str, Any]) -> str | None:
    """The prefix a chat body asks the server to continue (vLLM's ``continue_final_message`` with
    ``add_generation_prompt: false`` and an assistant message last), or None for an ordinary request."""
    msgs = body.get("messages") or []
    if body.get("continue_final_message") is True and body.get("add_generation_prompt") is False \
            and msgs and msgs[-1].get("role") == "assistant":
        return msgs[-1]["content"]
    return None


def maze_routes_responder(m: int) -> Respond:
    """Seeded random routes (a pure function of the request seed), m per reply in <route_i> tags. A
    prefilled request is answered as vLLM does, with the continuation only: the open route gets more
    moves and its closing tag, then the remaining routes follow (the mock backend's continuation)."""
    import random

    def respond(body: dict[str, Any], idx: int) -> str:
        prefix = prefilled(body)
        if prefix is not None:
            from vpo_harness.harness.core.models.mock import MockBackend

            mock = MockBackend("moves", length=30)
            return mock.text_for(body["messages"][:-1], int(body.get("seed") or 0), prefix)[len(prefix):]
        rng = random.Random(body.get("seed"))
        routes = [", ".join(rng.choice(("UP", "DOWN", "LEFT", "RIGHT")) for _ in range(rng.randint(4, 30)))
                  for _ in range(m)]
        if m == 1:
            return f"<answer>{routes[0]}</answer>"
        return "".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(routes, 1))

    return respond


if __name__ == "__main__":  # a standalone server for kill -9 tests
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    with ScriptedOpenAIServer(maze_routes_responder(a.m), delay_s=a.delay, port=a.port) as s:
        print(s.base_url, flush=True)
        while True:
            time.sleep(3600)
