"""Candidates per second of `vpo evolve` against a server with a fixed latency, as a fraction of the
ideal, for one problem and many, with one iteration and W iterations of a problem in flight.

The server is a loopback OpenAI-compatible endpoint in a child process (as a real server would be;
one asyncio loop, so its capacity is unlimited) that answers every request ``--latency`` seconds
after it arrived with Maze routes drawn from the request's seed and prompt. The search is the real
one: `run_evolve` in ``--prompt-mode evolve`` with ``-m`` answers per call, OpenEvolve's database
and prompts, Maze grading. With a server that answers in L seconds and C requests allowed in
flight, no schedule can beat

    ideal candidates/s = min(C, problems x W) x m / L

Each configuration is printed as measured / ideal over the search (first problem's start to last
problem's end: its last admission, after which its final checkpoint is written while the run goes
on; the whole command's wall time, with its fixed setup and that write, is printed next to it). Two
more columns tell a starved machine from a slow schedule: the client's CPU time per iteration, and
the share of a core one busy thread got just before (``core share``), and from the two the most
the single event loop could process (``CPU ceiling`` = share / CPU per iteration x m): when the
measured rate sits at the ceiling below the ideal, the machine, not the schedule, is the limit. Every configuration uses the same
``--lag`` (W <= lag), so the rows must be identical across W: the bench checks it, prints the
verdict and exits 1 if they differ.

The schedule itself bounds one problem: iteration 0 must come back before anything else is drawn,
so I + 1 iterations at W in flight take at least (1 + ceil(I / W)) L (9 L for 65 iterations at
W = 8, where the plain ideal is 8.1 L: 0.90 at best). ``of schedule cap`` divides by that bound
(and by ``ideal`` where it is the larger limit), next to the plain ``of ideal``.

``--compare REF`` measures a git ref's code (``git archive``, with this bench file) against the
working tree in the same run, against the same server, alternating the two on every configuration
so that both see the same machine load; each side runs in its own process (imports and a warm-up
run first, outside the measured search). Both sides' rows must be the same too.

    nice python bench/evolve_throughput.py [--latency 0.2] [--concurrency 8] [--lag 8] [--compare REF]
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vpo_harness.search.evolve import EvolveConfig, run_evolve  # noqa: E402
from vpo_harness.harness.core.store import latest_rows  # noqa: E402

MOVES = ("UP", "DOWN", "LEFT", "RIGHT")
TIMINGS = ("latency_s", "score_s")


def routes_reply(body: dict[str, Any]) -> str:
    """Maze routes for the prompt: tagged routes for the task's prompt (iteration 0), fenced
    rewrites of the parent for OpenEvolve's prompt; a pure function of seed and prompt."""
    msgs = body.get("messages") or []
    user = msgs[-1]["content"] if msgs else ""
    evolve = bool(msgs) and msgs[0]["role"] == "system" and "# The task" in msgs[0]["content"]
    rng = random.Random(f"{body.get('seed')}|{user[-400:]}")
    if evolve:
        k = int((re.search(r"write (\d+) different complete", user) or [None, 1])[1])
        blocks = [" ".join(rng.choice(MOVES) for _ in range(rng.randint(6, 24))) for _ in range(k)]
        return "\n---\n".join(f"```text\n{b}\n```" for b in blocks)
    k = max([int(x) for x in re.findall(r"<route_(\d+)>", user)] or [1])
    routes = [", ".join(rng.choice(MOVES) for _ in range(rng.randint(6, 24))) for _ in range(k)]
    return "".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(routes, 1)) if k > 1 else f"<answer>{routes[0]}</answer>"


class FixedLatencyServer:
    """Every completion answered ``latency_s`` after it arrived, however many are waiting: a minimal
    HTTP/1.1 server on one asyncio loop (keep-alive, Content-Length bodies), so that waiting costs
    no thread and the server adds as little CPU as it can to a loaded machine."""

    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.in_flight = self.max_in_flight = self.requests = 0

    async def _reply(self, writer: asyncio.StreamWriter, obj: Any) -> None:
        data = json.dumps(obj).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(data)).encode() + b"\r\n\r\n" + data)
        await writer.drain()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length = next((int(ln.split(":", 1)[1]) for ln in lines[1:] if ln.lower().startswith("content-length:")), 0)
                body = json.loads(await reader.readexactly(length)) if length else {}
                if method == "GET" and path.rstrip("/").endswith("/stats"):
                    stats = {"requests": self.requests, "max_in_flight": self.max_in_flight}
                    self.requests = self.max_in_flight = 0
                    await self._reply(writer, stats)
                elif method == "GET":
                    await self._reply(writer, {"object": "list", "data": [{"id": "bench", "object": "model"}]})
                else:  # one request at a time per connection (HTTP/1.1): concurrency is connections
                    await self._complete(writer, body, asyncio.get_running_loop().time())
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _complete(self, writer: asyncio.StreamWriter, body: dict[str, Any], t0: float) -> None:
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        text = routes_reply(body)
        await asyncio.sleep(max(0.0, t0 + self.latency_s - asyncio.get_running_loop().time()))
        self.in_flight -= 1
        n = len(text.split())
        await self._reply(writer, {
            "id": f"b-{uuid.uuid4().hex}", "object": "chat.completion", "created": 0, "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n}})

    def serve_forever(self) -> None:
        async def main() -> None:
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024)
            host, port = server.sockets[0].getsockname()[:2]
            print(f"http://{host}:{port}/v1", flush=True)
            await server.serve_forever()

        asyncio.run(main())


def core_share(seconds: float = 0.3) -> float:
    """The fraction of one core a busy thread of this process gets right now (1.0 on an idle
    machine): what a single event loop can count on."""
    t0, c0 = time.perf_counter(), time.thread_time()
    while time.perf_counter() - t0 < seconds:
        sum(range(1000))
    return (time.thread_time() - c0) / (time.perf_counter() - t0)


class SearchClock:
    """Time from the first problem's start to the last one's end (``ProblemEvolution.run``): the
    search itself, without the run's fixed setup (task load, server check, config and results files)."""

    def __init__(self) -> None:
        from vpo_harness.search.engine import ProblemEvolution

        self.start = self.end = None
        orig, clock = ProblemEvolution.run, self

        async def run(pe: Any, rows: Any) -> None:
            t = time.perf_counter()
            clock.start = t if clock.start is None else min(clock.start, t)
            try:
                await orig(pe, rows)
            finally:
                clock.end = time.perf_counter()

        ProblemEvolution.run = run  # type: ignore[method-assign]

    def reset(self) -> None:
        self.start = self.end = None

    def seconds(self) -> float:
        return float(self.end - self.start)


class ServerProcess:
    """The server in a child process, as a real server would be: its CPU is not the client's."""

    def __init__(self, latency_s: float):
        import subprocess

        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(latency_s)],
                                     stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError("the bench server did not start")

    def stats(self) -> dict[str, int]:
        import urllib.request

        with urllib.request.urlopen(self.base_url + "/stats", timeout=10) as r:
            return json.loads(r.read())

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def one_run(url: str, out: Path, problems: int, iterations: int, m: int, parallel: int, lag: int,
            concurrency: int) -> tuple[float, dict[tuple, dict]]:
    cfg = EvolveConfig(task="maze", model="openai:bench", base_url=url, problems="all", limit=problems,
                       iterations=iterations, m=m, prompt_mode="evolve", prompt_style="compact", max_tokens=256,
                       out=str(out), concurrency=concurrency, lag=lag, parallel=parallel, baseline=False,
                       progress=False)
    t0 = time.perf_counter()
    run_evolve(cfg)
    wall = time.perf_counter() - t0
    rows = {(r["problem_id"], r["iteration"], r["answer_index"]): {k: v for k, v in r.items() if k not in TIMINGS}
            for r in latest_rows(out)}
    return wall, rows


def schedule_cap(problems: int, iterations: int, w: int, m: int, concurrency: int, latency: float) -> float:
    """The most candidates/s any client can reach: the plain ideal, or the schedule's own bound
    (iteration 0 first, then waves of W, problems C at a time) where that is lower."""
    cand = problems * (iterations + 1) * m
    t_slots = cand * latency / (min(concurrency, problems * w) * m)
    t_chain = (1 + math.ceil(iterations / w)) * latency * math.ceil(problems / min(concurrency, problems))
    return cand / max(t_slots, t_chain)


def measure(url: str, problems: int, iterations: int, m: int, w: int, lag: int, concurrency: int) -> dict[str, Any]:
    """One configuration in this process: a warm-up run (imports, first grading), then the measured one."""
    import resource

    tmp = Path(tempfile.mkdtemp(prefix="vpo-evolve-bench-"))
    try:
        one_run(url, tmp / "warm", 1, 1, m, 1, lag, concurrency)
        clock = SearchClock()
        share = core_share()
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        wall, rows = one_run(url, tmp / "run", problems, iterations, m, w, lag, concurrency)
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cpu = cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
    digest = hashlib.sha256(json.dumps(sorted(rows.items()), sort_keys=True, default=str).encode()).hexdigest()
    return {"rows": len(rows), "digest": digest, "search_s": clock.seconds(), "wall_s": wall,
            "cpu_per_it": cpu / (problems * (iterations + 1)), "share": share}


def checkout(ref: str, into: Path) -> Path:
    """``ref``'s tree (git archive) with this bench file in it, so both sides measure the same way."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    tree = into / "ref"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", ref], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--compare {ref}: git archive failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    shutil.copy(__file__, tree / "bench" / "evolve_throughput.py")
    return tree


def measure_in(tree: Path, url: str, a: argparse.Namespace, problems: int, iterations: int, w: int) -> dict[str, Any]:
    """:func:`measure` in a child process running ``tree``'s code."""
    import subprocess

    cmd = [sys.executable, str(tree / "bench" / "evolve_throughput.py"), "--measure",
           f"{problems},{iterations},{w}", "--url", url, "--lag", str(a.lag), "-m", str(a.m),
           "--concurrency", str(a.concurrency)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tree)
    if res.returncode != 0:
        raise SystemExit(f"the bench child for {tree} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    ap.add_argument("--concurrency", type=int, default=8, help="`vpo evolve --concurrency`")
    ap.add_argument("--lag", type=int, default=8, help="`vpo evolve --lag` (the same for every W)")
    ap.add_argument("--widths", default="1,8", help="the --parallel values to compare")
    ap.add_argument("-m", type=int, default=3, help="answers per call")
    ap.add_argument("--one", type=int, default=64, help="iterations of the one-problem search")
    ap.add_argument("--many", type=int, default=32, help="problems of the many-problem search")
    ap.add_argument("--many-iterations", type=int, default=8, help="iterations of each of the many problems")
    ap.add_argument("--compare", metavar="REF", help="also measure this git ref's code, alternating with the tree's")
    ap.add_argument("--repeat", type=int, default=1, help="measurements of each configuration (and side)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the child: serve, print the URL
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # the child: one configuration, print JSON
    ap.add_argument("--url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        FixedLatencyServer(a.latency).serve_forever()
        return 0
    if a.measure:
        problems, iterations, w = (int(x) for x in a.measure.split(","))
        print(json.dumps(measure(a.url, problems, iterations, a.m, w, a.lag, a.concurrency)))
        return 0
    widths = [int(w) for w in a.widths.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="vpo-evolve-bench-"))
    here = Path(__file__).resolve().parents[1]
    sides = [("tree", here)] + ([(a.compare, checkout(a.compare, tmp))] if a.compare else [])
    srv = ServerProcess(a.latency)
    verdicts = []
    try:
        print(f"server latency L = {a.latency:.3f} s, unlimited capacity; --concurrency {a.concurrency}, "
              f"--lag {a.lag}, -m {a.m}, --prompt-mode evolve, task maze"
              + (f"; code: the working tree and {a.compare}, alternating" if a.compare else ""))
        print("| code | problems x iterations | W | candidates | search s | candidates/s | ideal/s | of ideal "
              "| of schedule cap | whole run s | CPU ms/iteration | core share | CPU ceiling/s | max in flight |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for problems, iters in ((1, a.one), (a.many, a.many_iterations)):
            digests: dict[tuple[str, int], set[str]] = {}
            for w in widths:
                ideal = min(a.concurrency, problems * w) * a.m / a.latency
                cap = schedule_cap(problems, iters, w, a.m, a.concurrency, a.latency)
                for rep in range(a.repeat):
                    for name, tree in (sides if rep % 2 == 0 else sides[::-1]):
                        srv.stats()
                        r = measure_in(tree, srv.base_url, a, problems, iters, w)
                        stats = srv.stats()
                        rate = r["rows"] / r["search_s"]
                        ceiling = r["share"] / r["cpu_per_it"] * a.m  # what one event loop can process
                        digests.setdefault((name, w), set()).add(r["digest"])
                        print(f"| {name} | {problems} x {iters + 1} | {w} | {r['rows']} | {r['search_s']:.2f} | "
                              f"{rate:.1f} | {ideal:.1f} | {rate / ideal:.2f} | {rate / cap:.2f} | {r['wall_s']:.2f} | "
                              f"{1000 * r['cpu_per_it']:.1f} | {r['share']:.2f} | {ceiling:.1f} | "
                              f"{stats['max_in_flight']} |", flush=True)
            for name, _ in sides:
                same = len(set().union(*(digests[(name, w)] for w in widths))) == 1
                verdicts.append(same)
                print(f"rows of {problems} problem(s) identical across W = {', '.join(map(str, widths))} "
                      f"({name}): {'yes' if same else 'NO'} (every field but {', '.join(TIMINGS)})")
            if a.compare:
                same = len(set().union(*digests.values())) == 1
                print(f"rows of {problems} problem(s) identical between the tree and {a.compare}: "
                      f"{'yes' if same else 'no'}")
    finally:
        srv.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
