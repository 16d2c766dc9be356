"""CPU per request of the openai backend's HTTP client against the clients it replaced or could use.

Sequential JSON posts of a chat body to the loopback bench server of ``bench/evolve_throughput.py``
(in a child process, answering at once), through: the openai SDK's generic ``post`` (the backend's
path before), httpx (the SDK's transport), an aiohttp session, and
:class:`vpo_harness.harness.core.models.transport.JSONClient` (httpx underneath, with the backend's guards). Each is printed as CPU ms per request and as a
ratio to the SDK measured in the same run. Only the client's own process CPU is counted; run it on an
idle machine.

    python bench/http_client_cpu.py [--requests 300] [--repeat 2]
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evolve_throughput import ServerProcess  # noqa: E402

BODY = {"model": "bench", "messages": [{"role": "user", "content": "x" * 2000 + " <route_3>"}], "seed": 1,
        "max_tokens": 256, "temperature": 0.7, "top_p": 1.0}


async def _timed(send, n: int) -> float:
    await send()  # connection and first-use costs outside the count
    t = time.process_time()
    for _ in range(n):
        await send()
    return (time.process_time() - t) / n


async def sdk(url: str, n: int) -> float:
    from openai import AsyncOpenAI

    c = AsyncOpenAI(api_key="x", base_url=url, max_retries=0)
    try:
        return await _timed(lambda: c.post("/chat/completions", body=BODY, cast_to=object), n)
    finally:
        await c.close()


async def httpx_client(url: str, n: int) -> float:
    import httpx

    async with httpx.AsyncClient(base_url=url) as c:
        async def send():
            return (await c.post("/chat/completions", json=BODY)).json()
        return await _timed(send, n)


async def aiohttp_session(url: str, n: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession() as c:
        async def send():
            async with c.post(url + "/chat/completions", json=BODY) as r:
                return await r.json()
        return await _timed(send, n)


async def json_client(url: str, n: int) -> float:
    from vpo_harness.harness.core.models.transport import JSONClient

    c = JSONClient(url, api_key="x")
    try:
        return await _timed(lambda: c.post("/chat/completions", BODY), n)
    finally:
        await c.aclose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    srv = ServerProcess(0.0)
    clients = [("openai SDK post", sdk), ("httpx", httpx_client), ("aiohttp", aiohttp_session),
               ("JSONClient", json_client)]
    try:
        print("| client | CPU ms/request | ratio to the SDK |\n|---|---|---|")
        for _ in range(a.repeat):
            base = None
            for name, fn in clients:
                ms = 1000 * asyncio.run(fn(srv.base_url, a.requests))
                base = base or ms
                print(f"| {name} | {ms:.2f} | {ms / base:.2f} |", flush=True)
    finally:
        srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
