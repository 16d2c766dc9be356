"""`vpo serve`: one local model behind an OpenAI-compatible HTTP API.

OpenEvolve (and any other OpenAI client) talks to servers; this puts ``hf:``, ``vllm:`` and zoo
models behind ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/models`` (plus ``/health``),
honouring ``n``, ``seed``, ``max_tokens``, ``temperature``, ``top_p`` and ``stop``.

One model instance per process: the weights are loaded once, and a single batcher thread owns the
backend. HTTP handler threads only enqueue requests; the batcher takes whatever is waiting (same
sampling settings) as one batch, so concurrent clients share forward passes instead of each loading a
model or serialising on a lock. Choice i of a request with ``seed`` s is sampled with seed s (i = 0)
or a seed derived from (s, i), and the hf backend samples every row with its own generator, so a
reply does not depend on what it was batched with.

Binds to 127.0.0.1 by default: this is a research tool, not an authenticated service.
"""
from __future__ import annotations

import json
import queue
import secrets
import socket
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.models.base import Backend, GenRequest, SamplingConfig
from harness.seeding import derive_seed

DEFAULT_MAX_TOKENS = 512


class BadRequest(ValueError):
    pass


@dataclass
class Job:
    kind: str                         # "chat" | "completion"
    payload: Any                      # messages list or prompt string
    seeds: list[int]
    sampling: SamplingConfig
    future: Future = field(default_factory=Future)


def choice_seeds(seed: Any, n: int) -> list[int]:
    if seed is None:
        base = secrets.randbelow(2**31)
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise BadRequest(f"seed must be an integer, got {seed!r}")
    else:
        base = seed & 0x7FFFFFFF
    return [base if i == 0 else derive_seed(base, "choice", i) for i in range(n)]


def parse_body(body: dict[str, Any], kind: str) -> Job:
    """Validate an OpenAI request body into a Job (errors name the field)."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    if kind == "chat":
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) for m in msgs):
            raise BadRequest("field 'messages': expected a non-empty list of {role, content} objects")
        payload: Any = [{"role": m["role"], "content": _content(m.get("content"))} for m in msgs]
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise BadRequest("field 'prompt': expected a string")
        payload = prompt
    n = body.get("n")
    n = 1 if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 128:
        raise BadRequest(f"field 'n': expected an integer in 1..128, got {n!r}")
    temp = body.get("temperature", 1.0)
    top_p = body.get("top_p", 1.0)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens")) or DEFAULT_MAX_TOKENS
    for name, v in (("temperature", temp), ("top_p", top_p), ("max_tokens", max_tokens)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise BadRequest(f"field {name!r}: expected a non-negative number, got {v!r}")
    stop = body.get("stop") or ()
    if isinstance(stop, str):
        stop = (stop,)
    if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("field 'stop': expected a string or a list of strings")
    sampling = SamplingConfig(temperature=float(temp if temp is not None else 1.0),
                              top_p=float(top_p if top_p is not None else 1.0),
                              max_tokens=int(max_tokens), stop=tuple(s for s in stop if s))
    return Job(kind, payload, choice_seeds(body.get("seed"), n), sampling)


def _content(c: Any) -> str:
    if isinstance(c, str):
        return c
    if isinstance(c, list):  # content parts: keep the text ones
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return "" if c is None else str(c)


class Batcher:
    """The single owner of the backend: takes queued jobs, batches those with equal sampling."""

    def __init__(self, backend: Backend, max_batch: int = 64):
        self.backend, self.max_batch = backend, max_batch
        self.q: "queue.Queue[Job | None]" = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="vpo-serve-batcher", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> Future:
        self.q.put(job)
        return job.future

    def close(self) -> None:
        self.q.put(None)
        self.thread.join(timeout=30)

    def _loop(self) -> None:
        held: list[Job] = []
        while True:
            job = held.pop(0) if held else self.q.get()
            if job is None:
                return
            batch, rows = [job], len(job.seeds)
            while rows < self.max_batch:
                try:
                    nxt = self.q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    held.append(nxt)
                    break
                if nxt.kind == job.kind and nxt.sampling == job.sampling:
                    batch.append(nxt)
                    rows += len(nxt.seeds)
                else:
                    held.append(nxt)
            self._run(batch)

    def _run(self, batch: list[Job]) -> None:
        t0 = time.perf_counter()
        try:
            if batch[0].kind == "completion" and hasattr(self.backend, "_generate_batch"):
                # raw text prompts go to the model as written (no chat template)
                prompts = [(j.payload, True) for j in batch for _ in j.seeds]
                seeds = [s for j in batch for s in j.seeds]
                out = self.backend._generate_batch(prompts, seeds, batch[0].sampling)  # type: ignore[attr-defined]
                k = 0
                for j in batch:
                    res = [{"text": t, "prompt_tokens": p, "completion_tokens": c, "finish_reason": f}
                           for t, p, c, f in out[k:k + len(j.seeds)]]
                    k += len(j.seeds)
                    j.future.set_result(res)
                return
            reqs = []
            for b, j in enumerate(batch):
                msgs = j.payload if j.kind == "chat" else [{"role": "user", "content": j.payload}]
                reqs.append(GenRequest(str(b), msgs, tuple(range(len(j.seeds))), tuple(j.seeds)))
            got: dict[tuple[int, int], Any] = {}
            for g in self.backend.generate(reqs, batch[0].sampling):
                got[(int(g.problem_id), g.chain_index)] = g
            for b, j in enumerate(batch):
                gens = [got.get((b, i)) for i in range(len(j.seeds))]
                err = next((g.error for g in gens if g is None or g.error), None) if any(
                    g is None or g.error for g in gens) else None
                if err is not None or any(g is None for g in gens):
                    j.future.set_exception(RuntimeError(err or "backend returned no generation"))
                    continue
                j.future.set_result([{"text": g.text, "prompt_tokens": g.prompt_tokens or 0,
                                      "completion_tokens": g.completion_tokens or 0,
                                      "finish_reason": g.finish_reason or "stop"} for g in gens])
        except Exception as exc:  # noqa: BLE001 - a failing batch fails its requests, not the server
            for j in batch:
                if not j.future.done():
                    j.future.set_exception(exc)
        finally:
            self.last_batch_s = time.perf_counter() - t0


def response(kind: str, model: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    chat = kind == "chat"
    choices = []
    for i, r in enumerate(results):
        c: dict[str, Any] = {"index": i, "finish_reason": r["finish_reason"] or "stop", "logprobs": None}
        if chat:
            c["message"] = {"role": "assistant", "content": r["text"]}
        else:
            c["text"] = r["text"]
        choices.append(c)
    pt = int(results[0]["prompt_tokens"] or 0) if results else 0
    ct = sum(int(r["completion_tokens"] or 0) for r in results)
    return {"id": f"{'chatcmpl' if chat else 'cmpl'}-{secrets.token_hex(8)}",
            "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
            "model": model, "choices": choices,
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


class ModelServer:
    """``ModelServer(backend, name).start(host, port)``; ``.url`` is the ``/v1`` root."""

    def __init__(self, backend: Backend, model_name: str, *, max_batch: int = 64, request_timeout_s: float = 600):
        self.backend, self.model_name = backend, model_name
        self.batcher = Batcher(backend, max_batch)
        self.request_timeout_s = request_timeout_s
        self.httpd: _HTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.httpd is not None
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def bind(self, host: str = "127.0.0.1", port: int = 0) -> "ModelServer":
        self.httpd = _HTTPServer((host, port), self._handler())
        return self

    def serve_forever(self) -> None:
        assert self.httpd is not None
        self.httpd.serve_forever(poll_interval=0.2)

    def start_background(self, host: str = "127.0.0.1", port: int = 0) -> "ModelServer":
        self.bind(host, port)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def shutdown(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        self.batcher.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out as two writes: without NODELAY, Nagle + delayed ACK add
                # ~40 ms to every keep-alive reply
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, msg: str, typ: str = "invalid_request_error") -> None:
                self._send(status, {"error": {"message": msg, "type": typ, "code": status}})

            def do_GET(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                if path in ("/health", "/v1/health"):
                    self._send(200, {"status": "ok", "model": srv.model_name})
                elif path == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": srv.model_name, "object": "model", "owned_by": "vpo-harness", "created": 0}]})
                else:
                    self._error(404, f"no route GET {path}")

            def do_POST(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                kind = {"/v1/chat/completions": "chat", "/v1/completions": "completion"}.get(path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if kind is None:
                    self._error(404, f"no route POST {path}")
                    return
                try:
                    job = parse_body(json.loads(raw or b"{}"), kind)
                except json.JSONDecodeError as exc:
                    self._error(400, f"body is not valid JSON ({exc.msg})")
                    return
                except BadRequest as exc:
                    self._error(400, str(exc))
                    return
                try:
                    results = srv.batcher.submit(job).result(timeout=srv.request_timeout_s)
                except Exception as exc:  # noqa: BLE001
                    self._error(500, f"generation failed: {type(exc).__name__}: {str(exc)[:300]}", "server_error")
                    return
                self._send(200, response(kind, srv.model_name, results))

        return Handler


def serve(spec: str, *, host: str = "127.0.0.1", port: int = 8000, model_args: dict[str, Any] | None = None,
          served_name: str | None = None, max_batch: int = 64, threads: int | None = None) -> int:
    """Load the model once and serve until SIGINT/SIGTERM. Prints one ``ready`` line when listening."""
    import signal
    import sys

    from harness.models import load_backend

    if spec.split(":", 1)[0] == "openai":
        raise ValueError("vpo serve: an openai: model is already a server; pass it to clients directly")
    if threads:  # CPU: torch's default (all cores, spin-waiting) collapses on a shared, loaded machine
        import torch

        torch.set_num_threads(int(threads))
    backend = load_backend(spec, model_args=model_args or {})
    server = ModelServer(backend, served_name or spec, max_batch=max_batch).bind(host, port)

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.httpd.shutdown, daemon=True).start()  # type: ignore[union-attr]

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"vpo serve: ready {served_name or spec} at {server.url}", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"vpo serve: warning: listening on {host}, reachable from other machines without authentication",
              file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.httpd.server_close()  # type: ignore[union-attr]
        server.batcher.close()
        backend.close()
    return 0
