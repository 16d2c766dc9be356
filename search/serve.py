"""`vpo serve`: one local model behind an OpenAI-compatible HTTP API, on uvicorn + Starlette.

OpenEvolve (and any other OpenAI client) talks to servers; this puts ``hf:`` and zoo models behind
``/v1/chat/completions``, ``/v1/completions`` and ``/v1/models`` (plus ``/health``). ``vllm:`` specs
are not wrapped here: they get vLLM's own OpenAI server (search/vllm_serve.py), which batches
continuously and is what vLLM users run.

One model instance per process, owned by one batcher thread (search/serve_batcher.py); the event loop
only parses, validates (search/serve_protocol.py) and waits. The HTTP stack is bounded on every side a
client controls: the body size (413 from the Content-Length header, before reading it), the time to
send headers and body, idle keep-alive connections, header size, and the number of open connections
(503 beyond it). Connections cost a socket, not a thread, so slow clients cannot exhaust the process.

Binds to 127.0.0.1 by default: this is a research tool, not an authenticated service.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator, Sequence

from vpo_harness.harness.core.models import add_chat_template_args, kv_arg
from vpo_harness.harness.core.models.base import Backend
from vpo_harness.harness.core.models.served_defaults import publish
from vpo_harness.harness.core.models.zoo import GenerationDefaults
from vpo_harness.search.server_process import CHILD_ARGS, CHILD_ARGS_FLAG
from vpo_harness.search.serve_batcher import Batcher
from vpo_harness.search.serve_protocol import (  # noqa: F401  (re-exported: the server's public names)
    DEFAULT_MAX_TOKENS,
    BadRequest,
    Job,
    choice_seeds,
    error_body,
    new_id,
    opening_chunks,
    parse_body,
    response,
    result_chunks,
)

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

log = logging.getLogger("vpo.serve")
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What one client may cost the server. Defaults suit a loopback research server."""

    max_body_bytes: int = 4 * MiB
    header_timeout_s: float = 10.0     # from connect (or the end of the last reply) to complete headers
    body_timeout_s: float = 30.0       # to receive the whole body once headers are in
    keep_alive_s: int = 5              # an idle keep-alive connection is closed after this
    max_header_bytes: int = 64 * 1024  # request line + headers (h11's incomplete-event limit)
    max_connections: int = 512         # open connections and in-flight requests; 503 beyond
    request_timeout_s: float = 600.0   # queueing + generation of one request
    graceful_shutdown_s: float = 5.0   # in-flight requests finish within this on SIGTERM


def default_threads(workers: int = 1) -> int:
    """torch CPU threads for a serving process: the usable cores, shared among ``workers`` model
    processes, less one for the event loop, tokenizer and clients on the same machine.

    torch's own default takes every core with spin-waiting OpenMP threads; as soon as anything else
    wants a core (the HTTP loop, a client, another job) one of those threads is descheduled and every
    parallel region waits for it. On 2 cores that made each hf request ~12x slower than one thread."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    if quota is not None:
        cores = min(cores, quota)
    return max(1, cores // max(1, workers) - 1)


def _cgroup_cpus() -> int | None:
    try:
        q, period = open("/sys/fs/cgroup/cpu.max").read().split()[:2]
    except (OSError, ValueError):
        return None
    return None if q == "max" else max(1, int(int(q) / int(period)))


# ---- the HTTP protocol: uvicorn's h11 with a header deadline -----------------------------------------


def _protocol_class(header_timeout_s: float) -> type:
    """uvicorn's h11 protocol plus a deadline on receiving a request's headers.

    uvicorn arms its keep-alive timer only after a reply and cancels it on any received byte, so a
    client that connects and dribbles header bytes (slow loris) is never closed and holds a connection
    slot for ever. This arms a timer at connect and after each reply, cancelled only when a complete
    request line and headers have arrived."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadlineH11(H11Protocol):
        header_timeout = header_timeout_s
        _deadline: Any = None

        def _arm(self) -> None:
            self._disarm()
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._deadline = self.loop.call_later(self.header_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                log.debug("closing a connection that sent no complete request headers in %.0fs", self.header_timeout)
                self.transport.close()

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self._deadline is not None and self.conn.their_state is not h11.IDLE:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadlineH11


class _Server:
    """uvicorn.Server whose signal handling stops the server without re-raising the signal."""

    def __new__(cls, config: Any) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                saved = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for s, h in saved.items():
                        signal.signal(s, h)

        return Server(config)


# ---- the app -------------------------------------------------------------------------------------------


class _TooLarge(Exception):
    pass


class _ClientGone(Exception):
    pass


class ModelServer:
    """``ModelServer(backend, name).start_background()``; ``.url`` is the ``/v1`` root."""

    def __init__(self, backend: Backend, model_name: str, *, max_batch: int = 64, request_timeout_s: float | None = None,
                 limits: Limits | None = None, chat_template_args: dict[str, Any] | None = None,
                 defaults: "tuple[GenerationDefaults, str] | None" = None, seeded: bool = False):
        self.backend, self.model_name = backend, model_name
        #: the served model's trained defaults and their source, and whether a one-choice reply is a
        #: function of the request and its seed: published in /v1/models (served_defaults)
        self.defaults, self.seeded = defaults, bool(seeded)
        self.limits = limits or Limits()
        if request_timeout_s is not None:
            self.limits = dataclasses.replace(self.limits, request_timeout_s=float(request_timeout_s))
        self.template_args = dict(chat_template_args or {})
        self._arriving = 0  # requests accepted, not yet queued (the event loop is the only writer)
        self.batcher = Batcher(backend, max_batch, arriving=lambda: self._arriving, linger_s=0.005)
        self.app = self._build_app()
        self.sock: socket.socket | None = None
        self.server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def context_len(self) -> int | None:
        ctx = getattr(self.batcher.backend, "context_len", None)
        return ctx if isinstance(ctx, int) and ctx > 0 else None

    @property
    def url(self) -> str:
        assert self.sock is not None, "bind() first"
        host, port = self.sock.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    # -- lifecycle

    def uvicorn_config(self) -> Any:
        import uvicorn

        lim = self.limits
        return uvicorn.Config(
            self.app, http=_protocol_class(lim.header_timeout_s), loop="asyncio", lifespan="off", ws="none",
            interface="asgi3", log_config=None, log_level="warning", access_log=False, server_header=False,
            timeout_keep_alive=lim.keep_alive_s, h11_max_incomplete_event_size=lim.max_header_bytes,
            limit_concurrency=lim.max_connections, timeout_graceful_shutdown=lim.graceful_shutdown_s)

    def bind(self, host: str = "127.0.0.1", port: int = 0) -> "ModelServer":
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # connections made before the loop runs wait here instead of being refused
        sock.set_inheritable(False)
        self.sock = sock
        self.server = _Server(self.uvicorn_config())
        return self

    def serve_forever(self) -> None:
        """Serve until SIGINT/SIGTERM (main thread) or :meth:`shutdown`."""
        assert self.server is not None and self.sock is not None, "bind() first"
        self.server.run(sockets=[self.sock])

    def start_background(self, host: str = "127.0.0.1", port: int = 0) -> "ModelServer":
        self.bind(host, port)
        self._thread = threading.Thread(target=self.serve_forever, name="vpo-serve-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.server.started:
            raise RuntimeError("vpo serve: the HTTP server did not start")
        return self

    def shutdown(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.sock is not None:
            self.sock.close()
        self.batcher.close()

    # -- routes

    def _build_app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def health(request: Any) -> Any:
            return JSONResponse({"status": "ok", "model": self.model_name})

        async def models(request: Any) -> Any:
            d, source = self.defaults if self.defaults is not None else (None, None)
            return JSONResponse({"object": "list", "data": [
                {"id": self.model_name, "object": "model", "owned_by": "vpo-harness", "created": 0,
                 **publish(d, source, context_len=self.context_len, seeded=self.seeded)}]})

        async def chat(request: Any) -> Any:
            return await self._complete(request, "chat")

        async def completions(request: Any) -> Any:
            return await self._complete(request, "completion")

        async def http_error(request: Any, exc: Exception) -> Any:
            status = getattr(exc, "status_code", 500)
            msg = f"no route {request.method} {request.url.path}" if status in (404, 405) else str(getattr(exc, "detail", exc))
            return JSONResponse(error_body(status, msg), status_code=status)

        routes = [Route(p, health, methods=["GET"]) for p in ("/health", "/v1/health")]
        routes += [Route("/v1/models", models, methods=["GET"]),
                   Route("/v1/chat/completions", chat, methods=["POST"]),
                   Route("/v1/completions", completions, methods=["POST"])]
        return self._shutdown_guard(Starlette(routes=routes, exception_handlers={HTTPException: http_error}))

    def _shutdown_guard(self, app: Any) -> Any:
        """Requests still generating when a stop outlasts the graceful period are cancelled by uvicorn,
        which logs each as a traceback. They get a 503 (or an in-band error event) instead."""

        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            started = False

            async def tracked(message: Any) -> None:
                nonlocal started
                started = started or message["type"] == "http.response.start"
                await send(message)

            try:
                await app(scope, receive, tracked)
            except asyncio.CancelledError:
                if not (self.server is not None and self.server.should_exit):
                    raise
                err = json.dumps(error_body(503, "vpo serve is shutting down")).encode()
                if not started:
                    await send({"type": "http.response.start", "status": 503,
                                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
                    await send({"type": "http.response.body", "body": err})
                else:
                    await send({"type": "http.response.body", "body": b"data: " + err + b"\n\ndata: [DONE]\n\n"})

        return guarded

    @staticmethod
    def _error(status: int, message: str, param: str | None = None, code: str | None = None,
               close: bool = False) -> Any:
        from starlette.responses import JSONResponse

        headers = {"connection": "close"} if close else None
        return JSONResponse(error_body(status, message, param, code), status_code=status, headers=headers)

    async def _read_body(self, request: Any) -> bytes:
        cap = self.limits.max_body_bytes
        declared = request.headers.get("content-length")
        # h11 has already answered a malformed Content-Length with a 400; a too-large one is refused
        # here, before a single body byte is read
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise _TooLarge()
        body = bytearray()
        async for chunk in request.stream():  # chunked uploads have no Content-Length: count as they come
            body += chunk
            if len(body) > cap:
                raise _TooLarge()
        return bytes(body)

    async def _complete(self, request: Any, kind: str) -> Any:
        self._arriving += 1
        try:
            job = await self._accept(request, kind)
            if not isinstance(job, Job):
                return job  # the refusal
            submitted = self.batcher.submit(job)
        finally:
            self._arriving -= 1
        if job.stream:
            return self._stream(job, submitted)
        try:
            results = await self._wait(request, submitted)
        except _ClientGone:
            return self._error(499, "client closed the connection")  # never seen by anyone: uvicorn drops it
        except BaseException as exc:  # noqa: BLE001 - any failure is this request's reply, not a traceback
            if isinstance(exc, asyncio.CancelledError):
                raise
            return self._failure(exc)
        from starlette.responses import JSONResponse

        return JSONResponse(response(kind, self.model_name, results))

    async def _accept(self, request: Any, kind: str) -> Any:
        """The request's Job, or the error reply that refuses it."""
        from starlette.requests import ClientDisconnect

        lim = self.limits
        try:
            raw = await asyncio.wait_for(self._read_body(request), lim.body_timeout_s)
        except _TooLarge:
            return self._error(413, f"request body over the limit of {lim.max_body_bytes} bytes "
                                    "(vpo serve --max-body-mb raises it)", close=True)
        except asyncio.TimeoutError:
            return self._error(408, f"request body not received within {lim.body_timeout_s:g}s", close=True)
        except ClientDisconnect:
            return self._error(400, "client disconnected while sending the body", close=True)
        try:
            body = json.loads(raw or b"{}")
        except RecursionError:
            return self._error(400, "body is not valid JSON (nested too deeply)")
        except (ValueError, UnicodeDecodeError) as exc:
            return self._error(400, f"body is not valid JSON ({getattr(exc, 'msg', exc)})")
        try:
            job = parse_body(body, kind, model_name=self.model_name, context_len=self.context_len,
                             template_args=self.template_args)
        except BadRequest as exc:
            return self._error(exc.status, str(exc), exc.param, exc.code)
        except RecursionError:
            return self._error(400, "body is nested too deeply")
        check = getattr(self.backend, "check_stop_strings", None)
        if job.sampling.stop and callable(check):  # before batching: a batch fails as a whole
            try:
                await asyncio.to_thread(check, job.sampling.stop)
            except ValueError as exc:
                return self._error(400, f"field 'stop': {str(exc)[:500]}", "stop")
        return job

    def _failure(self, exc: BaseException) -> Any:
        if isinstance(exc, asyncio.TimeoutError):
            return self._error(504, f"generation did not finish within {self.limits.request_timeout_s:g}s")
        if isinstance(exc, ValueError):  # the backend refused this request (a prompt longer than the context)
            return self._error(400, str(exc)[:500], "messages")
        log.warning("generation failed: %s: %s", type(exc).__name__, str(exc)[:300])
        return self._error(500, f"generation failed: {type(exc).__name__}: {str(exc)[:300]}")

    async def _wait(self, request: Any, submitted: Any) -> Any:
        """The job's results; :class:`_ClientGone` (and the job cancelled) when the client leaves first."""
        fut = asyncio.wrap_future(submitted)
        gone = asyncio.ensure_future(self._disconnected(request))
        try:
            done, _ = await asyncio.wait({fut, gone}, timeout=self.limits.request_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if fut in done:
            return fut.result()
        fut.cancel()  # cancels the queued job too (a batch already running finishes; nobody reads it)
        if gone in done:
            raise _ClientGone()
        raise asyncio.TimeoutError()

    @staticmethod
    async def _disconnected(request: Any) -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    def _stream(self, job: Job, submitted: Any) -> Any:
        """Server-sent events in OpenAI's chunk format: the role chunks at once, each choice's text when
        its batch is done (the backends return whole texts), the finish reasons, then ``[DONE]``."""
        from starlette.responses import StreamingResponse

        rid, created, model = new_id(job.kind), int(time.time()), self.model_name

        async def events() -> AsyncIterator[bytes]:
            fut = asyncio.wrap_future(submitted)
            try:
                for c in opening_chunks(job.kind, rid, model, created, len(job.seeds)):
                    yield _sse(c)
                try:
                    results = await asyncio.wait_for(fut, self.limits.request_timeout_s)
                except Exception as exc:  # noqa: BLE001 - reported in-band: the 200 is already sent
                    err = json.loads(bytes(self._failure(exc).body))
                    yield _sse(err)
                else:
                    for c in result_chunks(job.kind, rid, model, created, results, job.include_usage):
                        yield _sse(c)
                yield b"data: [DONE]\n\n"
            finally:
                fut.cancel()  # a client that left mid-stream cancels its queued job

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


# ---- the command ---------------------------------------------------------------------------------------


def serve(spec: str, *, host: str = "127.0.0.1", port: int = 8000, model_args: dict[str, Any] | None = None,
          served_name: str | None = None, max_batch: int = 64, threads: int | None = None,
          limits: Limits | None = None, chat_template_args: dict[str, Any] | None = None,
          log_path: str | None = None) -> int:
    """Load the model once and serve until SIGINT/SIGTERM. Prints one ``ready`` line when listening."""
    kind = spec.split(":", 1)[0].strip().lower()
    if kind == "openai":
        raise ValueError("an openai: model is already a server; pass it to clients directly")
    check_port_free(host, port)  # before the model load: a busy port was a raw [Errno 98] after it
    if kind == "vllm":
        from vpo_harness.search.server_process import serve_vllm

        return serve_vllm(spec, host=host, port=port, model_args=model_args or {}, served_name=served_name,
                          chat_template_args=chat_template_args or {}, log_path=log_path)
    if not host.startswith("127.") and host not in ("localhost", "::1"):
        _log.warning(f"vpo serve: warning: listening on {host}, reachable from other machines without authentication")
    import torch  # every local backend but mock is torch; the setting must precede the model load

    torch.set_num_threads(int(threads) if threads else default_threads())
    from vpo_harness.harness.core.models import deterministic, load_backend, model_defaults, parse_spec

    backend = load_backend(spec, model_args=model_args or {})
    name = served_name or parse_spec(spec)[1]  # the model's name, as vLLM's server reports its --model
    server = ModelServer(backend, name, max_batch=max_batch, limits=limits, chat_template_args=chat_template_args,
                         defaults=model_defaults(spec), seeded=deterministic(spec, model_args)).bind(host, port)
    print(f"vpo serve: ready {name} at {server.url} (torch threads {torch.get_num_threads()})", flush=True)
    try:
        server.serve_forever()
    finally:
        server.sock.close()  # type: ignore[union-attr]
        server.batcher.close()
        backend.close()
    return 0


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another process listens on, in one line, before minutes of model loading (a
    probe bind with the server's own socket options, released at once; port 0 picks a free one)."""
    if not port:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ValueError(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc}); another "
                             "server may hold it: stop it, or pass another --port (or --port 0 for a free one)") from None


def _positive(cast: Any) -> Any:
    def parse(text: str) -> Any:
        try:
            v = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        if not v > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v

    return parse


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="hf:PATH_OR_ZOO | vllm:ID_OR_PATH (vLLM's own server) | mock:MODE")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1", help="default loopback only")
    p.add_argument("--model-args", type=kv_arg, default={},
                   help="backend arguments; for vllm: the flags of vLLM's server (tensor_parallel_size=2,"
                        "max_model_len=4096, dtype=bfloat16, seed=0, enforce_eager=true ...)")
    p.add_argument("--served-name", default=None, help="model id reported by /v1/models (default: the spec's model, e.g. maze-tiny-vpo)")
    add_chat_template_args(p, "; for every request, a request's chat_template_kwargs field merged over them")
    p.add_argument("--max-batch", type=int, default=64, help="most sequences generated together (not vllm)")
    p.add_argument("--threads", type=_positive(int), default=None,
                   help="torch CPU threads (default: usable cores - 1, at least 1; not vllm)")
    p.add_argument("--max-body-mb", type=_positive(float), default=4.0,
                   help="largest request body in MiB; bigger ones get a 413 before they are read (not vllm)")
    p.add_argument("--max-connections", type=_positive(int), default=512,
                   help="open connections and in-flight requests; more get a 503 (not vllm)")
    p.add_argument("--log", default=None, metavar="PATH", help="vllm: where vLLM's server writes its log "
                                                               "(default: a file in the temp folder)")


def _child_args(text: str) -> dict[str, dict[str, Any]]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{CHILD_ARGS_FLAG}: not JSON ({exc})") from None
    if not isinstance(value, dict) or set(value) - set(CHILD_ARGS) or \
            not all(isinstance(v, dict) for v in value.values()):
        raise argparse.ArgumentTypeError(f"{CHILD_ARGS_FLAG}: expected an object of {', '.join(CHILD_ARGS)} objects")
    return value


def structured_args(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``model_args`` and ``chat_template_args``: the user's k=v flags, or what a parent handed over
    as JSON (:data:`~vpo_harness.search.server_process.CHILD_ARGS_FLAG`)."""
    given = {name: dict(getattr(args, name) or {}) for name in CHILD_ARGS}
    given.update(getattr(args, "args_json", None) or {})
    return given


def parser() -> argparse.ArgumentParser:
    """The flags of ``python -m vpo_harness.search.serve``: `vpo serve`'s, plus the one a parent process uses."""
    p = argparse.ArgumentParser(prog="vpo serve")
    add_serve_arguments(p)
    p.add_argument(CHILD_ARGS_FLAG, dest="args_json", type=_child_args, default=None, help=argparse.SUPPRESS)
    return p


def serve_args(args: argparse.Namespace) -> int:
    limits = Limits(max_body_bytes=int(args.max_body_mb * MiB), max_connections=args.max_connections)
    given = structured_args(args)
    return serve(args.model, host=args.host, port=args.port, model_args=given["model_args"],
                 served_name=args.served_name, max_batch=args.max_batch, threads=args.threads,
                 limits=limits, chat_template_args=given["chat_template_args"], log_path=args.log)


def main(argv: Sequence[str] | None = None) -> int:
    """The `vpo serve` child that `vpo evolve` starts (``python -m vpo_harness.search.serve``)."""
    from vpo_harness.harness.core.log import to_terminal

    to_terminal()  # its own process: the library's notes reach its log as `vpo serve`'s do
    args = parser().parse_args(argv)
    try:
        return serve_args(args)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError, ImportError, OSError) as exc:
        print(f"vpo serve: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
