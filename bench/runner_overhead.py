"""Runner overhead: candidates/s through `vpo run` vs a bare AsyncOpenAI loop sending the same requests.

Both talk to the same loopback OpenAI-compatible server (the test fake, with a fixed per-request
latency so the server is not the bottleneck) with the same concurrency and the same request bodies
(one chat request per chain, per-chain seed). The harness side includes everything a user pays for:
problem loading, prompts, parsing, Maze rewards, append+fsync, metrics. Target: ratio >= 0.9.
    python bench/runner_overhead.py [--problems 50] [--chains 20] [--concurrency 32] [--delay 0.02]
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vpo_harness.benchmarks import get_task  # noqa: E402
from vpo_harness.harness.eval.runner import RunConfig, run  # noqa: E402
from vpo_harness.harness.core.seeding import derive_seed  # noqa: E402
from bench.loopback_openai import FakeOpenAIServer, FakeServerConfig  # noqa: E402


async def bare_loop(base_url: str, messages: list, n_chains: int, conc: int, max_tokens: int) -> int:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    sem = asyncio.Semaphore(conc)
    done = 0

    async def one(pid: str, msgs: list, c: int) -> None:
        nonlocal done
        async with sem:
            r = await client.chat.completions.create(model="fake", messages=msgs, temperature=0.7, top_p=1.0,
                                                     max_tokens=max_tokens, seed=derive_seed(0, pid, c))
            done += len(r.choices[0].message.content) > 0

    await asyncio.gather(*(one(pid, msgs, c) for pid, msgs in messages for c in range(n_chains)))
    await client.close()
    return done


def _serve(delay: float, q) -> None:  # runs in its own process so the server does not share our GIL
    srv = FakeOpenAIServer(FakeServerConfig(delay_s=delay)).start()
    q.put(srv.base_url)
    while True:
        time.sleep(3600)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=50)
    ap.add_argument("--chains", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--delay", type=float, default=0.02, help="server latency per request (s)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each side is kept")
    args = ap.parse_args()
    total = args.problems * args.chains
    task = get_task("maze")
    problems = task.load("test", limit=args.problems)
    messages = [(p.id, task.prompt(p)) for p in problems]
    import multiprocessing as mp

    q: mp.Queue = mp.Queue()
    server = mp.Process(target=_serve, args=(args.delay, q), daemon=True)
    server.start()
    base_url = q.get(timeout=30)
    t_bare, t_vpo = [], []
    try:
        for rnd in range(args.rounds):  # alternate, so warm-up and machine load hit both sides alike
            t0 = time.perf_counter()
            n_ok = asyncio.run(bare_loop(base_url, messages, args.chains, args.concurrency, args.max_tokens))
            t_bare.append(time.perf_counter() - t0)
            with tempfile.TemporaryDirectory() as tmp:
                cfg = RunConfig.of(task="maze", model="openai:fake", base_url=base_url, limit=args.problems,
                                n=args.chains, m=1, ks=(1, args.chains), max_tokens=args.max_tokens,
                                progress=False, out=str(Path(tmp) / "run"), seed=0,
                                model_args={"use_n": False, "concurrency": args.concurrency})
                t0 = time.perf_counter()
                run(cfg)
                t_vpo.append(time.perf_counter() - t0)
    finally:
        server.terminate()
    t_bare_best, t_vpo_best = min(t_bare), min(t_vpo)
    assert n_ok == total
    bare, vpo = total / t_bare_best, total / t_vpo_best
    print(f"runner overhead: {args.problems} mazes x {args.chains} chains = {total} candidates, "
          f"concurrency {args.concurrency}, server latency {args.delay * 1000:.0f} ms")
    print(f"  bare AsyncOpenAI loop  {bare:8.1f} candidates/s")
    print(f"  vpo run (end to end)   {vpo:8.1f} candidates/s")
    print(f"  (best of {args.rounds} alternating rounds each)")
    print(f"  ratio vpo/bare: {vpo / bare:.2f}  (target >= 0.9)")


if __name__ == "__main__":
    main()
