"""The `vpo view` HTTP server: stdlib ``ThreadingHTTPServer`` on a loopback address, read-only.

Why stdlib and not a framework: the viewer is a handful of GET routes returning JSON and the few
static files of one page (``FILES``: the page, its stylesheet, its icon and the scripts in
``SCRIPTS``); ``http.server`` serves that with no new runtime dependency and starts in a thread inside
a test. The page is safe against the texts it shows: every response carries a
Content-Security-Policy that allows scripts from this origin only (the files of ``SCRIPTS``; no
inline script, no ``eval``), the app writes data with ``textContent`` only, and JSON is
ASCII-escaped (lone surrogates included). Requests whose Host header names neither this address
and port nor ``localhost`` on this port are refused (a DNS-rebinding page elsewhere cannot read the
runs).
"""
from __future__ import annotations

import ipaddress
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, urlsplit

from vpo_harness.reports.view.api import NotFound, ViewData
from vpo_harness.reports.view.catalog import to_json_text

STATIC = Path(__file__).resolve().parent / "static"
#: the app's scripts, in the order index.html loads them (the export copies the same files)
SCRIPTS = ("dom.js", "charts.js", "graph.js", "problem.js", "app.js")
#: path -> (file under static/, content type)
FILES = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
         "/app.css": ("app.css", "text/css; charset=utf-8"),
         "/favicon.svg": ("favicon.svg", "image/svg+xml"), "/favicon.ico": ("favicon.svg", "image/svg+xml"),
         **{f"/{n}": (n, "text/javascript; charset=utf-8") for n in SCRIPTS}}
#: the page's Content-Security-Policy, one directive a line; an exported page carries the same in a
#: <meta> element, less ``frame-ancestors`` (a browser ignores it there, with a console warning)
CSP_DIRECTIVES = ("default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'",
                  "connect-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'")
CSP = "; ".join(CSP_DIRECTIVES)
META_CSP = "; ".join(d for d in CSP_DIRECTIVES if not d.startswith("frame-ancestors"))
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def _one(q: dict[str, list[str]], name: str, default: str = "") -> str:
    v = q.get(name)
    return v[0] if v else default


def _routes(data: ViewData) -> dict[str, Callable[[dict[str, list[str]]], Any]]:
    return {
        "/api/runs": lambda q: data.runs(),
        "/api/run": lambda q: data.run(_one(q, "id"), _one(q, "page", "0"), _one(q, "per", "100"), _one(q, "sort"),
                                       _one(q, "desc"), _one(q, "q")),
        "/api/problem": lambda q: data.problem(_one(q, "run"), _one(q, "pid"), _one(q, "page", "0"),
                                               _one(q, "per", "50"), _one(q, "sort", "chain"), _one(q, "show", "all")),
        "/api/problem-info": lambda q: data.problem_info(_one(q, "run"), _one(q, "pid")),
        "/api/lineage": lambda q: data.lineage(_one(q, "run"), _one(q, "pid")),
        "/api/node": lambda q: data.node(_one(q, "run"), _one(q, "pid"), _one(q, "id")),
        "/api/runs-with": lambda q: data.runs_with_problem(_one(q, "pid")),
        "/api/search": lambda q: data.search(_one(q, "run"), _one(q, "q"), _one(q, "page", "0"), _one(q, "pid")),
        "/api/progress": lambda q: data.progress(_one(q, "id")),
        "/api/curve": lambda q: data.curve(_one(q, "id")),
    }


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, data: ViewData, host: str, port: int, log: bool = False):
        self.data, self.log = data, log
        self.routes = _routes(data)
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Handler)
        h, p = self.server_address[:2]
        self.port = int(p)
        shown = f"[{h}]" if ":" in str(h) else str(h)
        self.url = f"http://{shown}:{self.port}/"
        self.allowed_hosts = {f"{shown}:{self.port}", f"localhost:{self.port}"}

    def start_background(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="vpo-view", daemon=True)
        t.start()
        return t


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "vpo-view"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet unless asked: a terminal per request is noise
        if self.server.log:
            sys.stderr.write("vpo view: " + (fmt % args) + "\n")

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, to_json_text(obj).encode("ascii"), "application/json")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        host = (self.headers.get("Host") or "").lower()
        if host not in self.server.allowed_hosts:
            self._json(403, {"error": f"host {host!r} refused: open {self.server.url}"})
            return
        url = urlsplit(self.path)
        if url.path in FILES:
            name, ctype = FILES[url.path]
            self._send(200, (STATIC / name).read_bytes(), ctype)
            return
        route = self.server.routes.get(url.path)
        if route is None:
            self._json(404, {"error": f"no page {url.path!r}"})
            return
        try:
            self._json(200, route(parse_qs(url.query, keep_blank_values=True)))
        except NotFound as exc:
            self._json(404, {"error": str(exc)})
        except Exception as exc:  # one damaged run must not take the viewer down: say what failed
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            sys.stderr.write(f"vpo view: {url.path}: {msg}\n")
            self._json(500, {"error": msg})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def make_server(roots: Iterable[str | Path], port: int = 0, host: str = "127.0.0.1", log: bool = False,
                all_metrics: bool = False) -> ViewServer:
    """A server over the run folders under ``roots`` (not yet serving: call ``serve_forever`` or
    ``start_background``). Only loopback addresses: the viewer has no authentication."""
    if not is_loopback(host):
        raise ValueError(f"vpo view serves on loopback only (127.0.0.1, ::1, localhost), not {host!r}")
    return ViewServer(ViewData(roots, all_metrics), "127.0.0.1" if host == "localhost" else host.strip("[]"), port, log)
