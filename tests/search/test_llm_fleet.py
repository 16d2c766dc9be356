"""`vpo evolve --base-url URL1,URL2`: the mutation operator's calls spread over a fleet of servers,
a dead server is ejected and its calls land on the live one; the run records every candidate once."""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from search.evolve import EvolveConfig, run_evolve
from search.config import build_config
from search.llm import ChatLLM, LLMUnreachable
from search.server_process import free_port
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder


def _ask(llm: ChatLLM, n: int) -> list[str]:
    async def go() -> list[str]:
        try:
            outs = await asyncio.gather(*(llm.complete([{"role": "user", "content": f"q{i}"}], seed=i)
                                          for i in range(n)))
            return [o.text for o in outs]
        finally:
            await llm.aclose()
    return asyncio.run(go())


def test_calls_spread_over_two_live_servers() -> None:
    with ScriptedOpenAIServer(lambda b, i: "A") as a, ScriptedOpenAIServer(lambda b, i: "B") as b:
        llm = ChatLLM(f"{a.base_url},{b.base_url}", "m", timeout_s=10)
        llm.check()
        assert all(ep.admitted for ep in llm.pool.endpoints)  # both answer the health check
        texts = _ask(llm, 12)
    counts = Counter(texts)
    assert counts["A"] >= 3 and counts["B"] >= 3 and sum(counts.values()) == 12


def test_dead_server_is_ejected_and_calls_land_on_the_live_one(capsys: pytest.CaptureFixture) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedOpenAIServer(lambda b, i: "live") as live:
        llm = ChatLLM(f"{dead},{live.base_url}", "m", timeout_s=5, retries=0)
        llm.check()  # the dead one starts ejected
        texts = _ask(llm, 8)
        assert texts == ["live"] * 8 and len(live.requests) == 8
    assert "ejected" in capsys.readouterr().err


def test_dead_server_mid_call_is_retried_on_another() -> None:
    """No health check first: the first call hits the dead server, fails over, and the pool ejects it."""
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedOpenAIServer(lambda b, i: "live") as live:
        llm = ChatLLM(f"{dead},{live.base_url}", "m", timeout_s=5, retries=0, eject_after=1)
        texts = _ask(llm, 6)
        stats = llm.describe()
    assert texts == ["live"] * 6
    assert stats[dead]["failures"] >= 1 and stats[dead]["ejections"] == 1 and not stats[dead]["admitted"]


def test_all_servers_dead_is_one_clear_error() -> None:
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    llm = ChatLLM(",".join(urls), "m", timeout_s=2, retries=0)
    with pytest.raises(LLMUnreachable, match="servers"):
        llm.check(timeout_s=2)


def test_openevolve_config_lists_one_model_per_server() -> None:
    cfg = build_config({}, task_name="maze", feature_dims=["gold", "diamond"], code=False, iterations=2, seed=0,
                       model_name="m", api_base="http://a/v1,http://b/v1", temperature=0.7, top_p=1.0,
                       max_tokens=64, timeout_s=10)
    assert [(m.api_base, m.weight) for m in cfg.llm.models] == [("http://a/v1", 0.5), ("http://b/v1", 0.5)]


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
