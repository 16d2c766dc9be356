"""`vpo evolve --base-url URL1,URL2`: the mutation operator's calls spread over a fleet of servers,
a dead server is ejected and its calls land on the live one; the run records every candidate once."""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from vpo_harness.search.evolve import EvolveConfig, run_evolve
from vpo_harness.search.llm import ChatLLM, LLMUnreachable
from vpo_harness.search.server_process import free_port
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder


def _ask(llm: ChatLLM, n: int, close: bool = True) -> list[str]:
    async def go() -> list[str]:
        try:
            outs = await asyncio.gather(*(llm.complete([{"role": "user", "content": f"q{i}"}], seed=i)
                                          for i in range(n)))
            return [o.text for o in outs]
        finally:
            if close:
                await llm.aclose()
    return asyncio.run(go())


def test_calls_spread_over_two_live_servers() -> None:
    with ScriptedOpenAIServer(lambda b, i: "A") as a, ScriptedOpenAIServer(lambda b, i: "B") as b:
        llm = ChatLLM(f"{a.base_url},{b.base_url}", "m", timeout=10)
        asyncio.run(llm.check())
        texts = _ask(llm, 12, close=False)
        assert all(s["admitted"] for s in llm.describe().values())  # both answered the health check
        asyncio.run(llm.aclose())
    counts = Counter(texts)
    assert counts["A"] >= 3 and counts["B"] >= 3 and sum(counts.values()) == 12


def test_dead_server_is_ejected_and_calls_land_on_the_live_one(capsys: pytest.CaptureFixture) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedOpenAIServer(lambda b, i: "live") as live:
        llm = ChatLLM(f"{dead},{live.base_url}", "m", timeout=5, max_retries=0)
        asyncio.run(llm.check())
        texts = _ask(llm, 8)  # the pool's health check at start ejects the dead one
        assert texts == ["live"] * 8 and len(live.requests) == 8
    assert "ejected" in capsys.readouterr().err


def test_server_dying_mid_run_is_ejected_and_its_calls_retried_on_another() -> None:
    """Both servers pass the health check; then one goes away: its next calls fail over, and the pool
    ejects it after one failure. One event loop throughout, as in a run."""
    with ScriptedOpenAIServer(lambda b, i: "live") as live:
        doomed = ScriptedOpenAIServer(lambda b, i: "doomed").__enter__()
        url = doomed.base_url
        llm = ChatLLM(f"{url},{live.base_url}", "m", timeout=5, max_retries=0, eject_after=1)

        async def go() -> tuple[list[str], dict]:
            try:
                first = await llm.complete([{"role": "user", "content": "q"}], seed=0)
                doomed.__exit__(None, None, None)
                outs = await asyncio.gather(*(llm.complete([{"role": "user", "content": f"q{i}"}], seed=i)
                                              for i in range(6)))
                return [first.text] + [o.text for o in outs], llm.describe()
            finally:
                await llm.aclose()

        texts, stats = asyncio.run(go())
    # a keep-alive connection opened before the shutdown may still carry one answer; every other call
    # that went to the dead server came back from the live one, and none failed
    assert len(texts) == 7 and texts[1:].count("live") >= 5
    assert stats[url]["failures"] >= 1 and stats[url]["ejections"] == 1 and not stats[url]["admitted"]


def test_all_servers_dead_is_one_clear_error() -> None:
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    llm = ChatLLM(",".join(urls), "m", timeout=2, max_retries=0)
    with pytest.raises(LLMUnreachable, match="servers"):
        asyncio.run(llm.check())


def test_evolve_over_a_fleet_with_one_dead_server(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedOpenAIServer(maze_routes_responder(3)) as a, ScriptedOpenAIServer(maze_routes_responder(3)) as b:
        cfg = EvolveConfig(task="maze", model="openai:scripted", base_url=f"{a.base_url},{dead},{b.base_url}",
                           problems="all", limit=2, iterations=4, m=3, prompt_mode="task", prompt_style="compact",
                           out=str(tmp_path / "evo"), progress=False, baseline=True)
        folder = run_evolve(cfg)
        assert len(a.requests) > 0 and len(b.requests) > 0
    rows = [json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines() if l.strip()]
    keys = Counter((r["problem_id"], r["chain_index"]) for r in rows)
    assert len(rows) == 2 * 5 * 3 and max(keys.values()) == 1
