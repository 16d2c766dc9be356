"""Requests/s and p95 latency of `vpo serve` (hf, the bundled maze-tiny-vpo) at 1, 8 and 64 concurrent
clients: the http.server implementation it replaced (loaded from git, commit ``OLD_COMMIT``) against the
current uvicorn + Starlette one, in the same run, each in its own process on a free loopback port.

Servers measured (``--servers``):
  old          the old server with its default threads (torch's own choice: every core)
  old-t1       the old server with ``--threads 1`` (separates the HTTP stack from the thread default)
  new          the current server with its default threads (usable cores - 1, at least 1)

All servers run at once and are measured in turns, ``--repeats`` times (median requests/s; p95 over
all turns), so a change in machine load hits each alike. Each client sends ``--rounds`` chat requests back to back (the Maze compact prompt, ``max_tokens``
40, temperature 0.7, a distinct seed per request); both servers get ``batch_size=64`` so a level's
requests can share one forward pass. Short by default: run it with ``nice`` on a shared machine.

    nice -n 5 python bench/serve_throughput.py [--levels 1,8,64] [--rounds 2] [--servers old,old-t1,new]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vpo_harness.harness.core.models import parse_spec  # noqa: E402
from vpo_harness.harness.core.paths import child_pythonpath  # noqa: E402
from vpo_harness.search.server_process import free_port  # noqa: E402

OLD_COMMIT = "c4246ec"
MODEL = "hf:maze-tiny-vpo"
#: the name requests ask for: `vpo serve` answers only to the model's name, as vLLM's server does
SERVED = parse_spec(MODEL)[1]


def _old_server_main(port: int, threads: int | None) -> None:
    """Child mode: the old search/serve.py, straight from git, serving MODEL."""
    import importlib.util

    src = subprocess.run(["git", "show", f"{OLD_COMMIT}:search/serve.py"], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "serve_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("serve_old", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["serve_old"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    mod.serve(MODEL, port=port, model_args={"batch_size": 64}, threads=threads)


def _start(kind: str, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    if kind == "new":
        cmd = [sys.executable, "-m", "vpo_harness.search.serve", "--model", MODEL, "--port", str(port), "--model-args", "batch_size=64"]
    else:
        cmd = [sys.executable, __file__, "--_old-server", str(port), "1" if kind == "old-t1" else "0"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{kind} server exited with {proc.returncode}; log {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, port
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind} server not ready; log {log}")
            time.sleep(0.5)


async def _level(port: int, clients: int, rounds: int, messages: list, seed0: int) -> tuple[float, list[float]]:
    import httpx

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    lat: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=3600, limits=limits) as client:
        async def one(seed: int) -> None:
            body = {"model": SERVED, "messages": messages, "max_tokens": 40, "temperature": 0.7, "seed": seed}
            t0 = time.perf_counter()
            r = await client.post(url, json=body)
            r.raise_for_status()
            assert r.json()["choices"][0]["message"]["content"] is not None
            lat.append(time.perf_counter() - t0)

        await one(seed0 - 1)  # warm: the first request pays for lazy setup
        lat.clear()

        async def worker(w: int) -> None:
            for r in range(rounds):
                await one(seed0 + w * rounds + r)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(clients)))
        return time.perf_counter() - t0, lat


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="1,8,64")
    ap.add_argument("--rounds", type=int, default=2, help="requests per client per level")
    ap.add_argument("--repeats", type=int, default=2, help="turns per (server, level); the median req/s is reported")
    ap.add_argument("--servers", default="old,old-t1,new")
    ap.add_argument("--_old-server", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._old_server:
        port, threads = args._old_server
        _old_server_main(int(port), int(threads) or None)
        return 0
    from vpo_harness.benchmarks import get_task

    task = get_task("maze")
    messages = task.prompt(task.load("test", limit=1)[0], style="compact")
    levels = [int(x) for x in args.levels.split(",")]
    servers = args.servers.split(",")
    logdir = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    print(f"# {MODEL}, max_tokens 40, {args.rounds} request(s) per client, {args.repeats} repeat(s) interleaved; "
          f"cores {os.cpu_count()}, load average at start {os.getloadavg()[0]:.1f}; server logs in {logdir}", flush=True)
    procs = {}
    try:
        for kind in servers:  # all up at once, measured in turns: load changes hit every server alike
            procs[kind] = _start(kind, logdir / f"{kind}.log")
        rates: dict[tuple[str, int], list[float]] = {}
        lats: dict[tuple[str, int], list[float]] = {}
        for rep in range(args.repeats):
            for c in levels:
                for kind in servers:
                    wall, lat = asyncio.run(_level(procs[kind][1], c, args.rounds, messages, seed0=1000 * c + 100 * rep))
                    rates.setdefault((kind, c), []).append(len(lat) / wall)
                    lats.setdefault((kind, c), []).extend(lat)
                    print(f"  repeat {rep} {kind:7s} clients {c:3d}: {len(lat) / wall:7.2f} req/s "
                          f"({len(lat)} requests in {wall:.1f} s)", flush=True)
    finally:
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait(timeout=60)
    print(f"# load average at end {os.getloadavg()[0]:.1f}")
    table = {key: (statistics.median(rates[key]), _p95(lats[key])) for key in rates}
    print(f"{'server':8s} {'clients':>7s} {'req/s':>8s} {'p95 s':>8s}")
    for kind in servers:
        for c in levels:
            r, p = table[(kind, c)]
            print(f"{kind:8s} {c:7d} {r:8.2f} {p:8.2f}")
    if "new" in servers:
        for base in (s for s in servers if s != "new"):
            for c in levels:
                (rn, pn), (rb, pb) = table[("new", c)], table[(base, c)]
                print(f"new / {base:6s} clients {c:3d}: req/s x{rn / rb:.2f}, p95 latency x{pn / pb:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
