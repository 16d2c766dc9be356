"""The mutation operator's chat client: the chat template's arguments travel in the request body as
``chat_template_kwargs`` (what vLLM, SGLang and `vpo serve` read), and only when set."""
from __future__ import annotations

import asyncio

import pytest

from vpo_harness.search.llm import ChatLLM
from tests.fakes.scripted_openai import ScriptedOpenAIServer


def _one(llm: ChatLLM) -> str:
    async def go() -> str:
        try:
            return (await llm.complete([{"role": "user", "content": "q"}], seed=3)).text
        finally:
            await llm.aclose()
    return asyncio.run(go())


def test_template_args_are_sent_as_chat_template_kwargs() -> None:
    with ScriptedOpenAIServer(lambda b, i: "ok") as srv:
        assert _one(ChatLLM(srv.base_url, "m", chat_template_args={"enable_thinking": False})) == "ok"
        assert _one(ChatLLM(srv.base_url, "m")) == "ok"
    with_args, without = srv.requests
    assert with_args["chat_template_kwargs"] == {"enable_thinking": False} and with_args["seed"] == 3
    assert "chat_template_kwargs" not in without


def test_evolve_flag_reaches_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    import vpo_harness.search.evolve as evolve_mod
    from vpo_harness.harness.app.cli import main

    seen = []

    def fake_run(cfg):
        seen.append(cfg)
        raise KeyboardInterrupt

    monkeypatch.setattr(evolve_mod, "run_evolve", fake_run)
    assert main(["evolve", "--task", "maze", "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                 "--chat-template-args", "enable_thinking=false,x=2"]) == 130
    cfg = seen[0]
    assert cfg.chat_template_args == {"enable_thinking": False, "x": 2}
    assert cfg.identity()["sampling"]["chat_template_args"] == {"enable_thinking": False, "x": 2}
    assert "base_url" not in cfg.identity()["model"] and cfg.sections()["execution"]["base_url"]


def test_an_evolve_run_sends_them_with_every_mutation_and_baseline_request(tmp_path) -> None:
    import json

    from vpo_harness.search.evolve import EvolveConfig, run_evolve
    from tests.fakes.scripted_openai import maze_routes_responder

    with ScriptedOpenAIServer(maze_routes_responder(1)) as srv:
        cfg = EvolveConfig(task="maze", model="openai:scripted", base_url=srv.base_url, limit=1, iterations=2,
                           prompt_mode="task", prompt_style="compact", out=str(tmp_path / "evo"), progress=False,
                           chat_template_args={"enable_thinking": False})
        folder = run_evolve(cfg)
    chats = [r for r in srv.requests if "messages" in r]
    assert len(chats) >= 4 and any((r.get("n") or 1) == 3 for r in chats)  # 3 iterations + the baseline's n=3
    assert all(r.get("chat_template_kwargs") == {"enable_thinking": False} for r in chats)
    base = json.loads((folder / "baseline" / "config.json").read_text())
    assert base["identity"]["sampling"]["chat_template_args"] == {"enable_thinking": False}


def test_a_server_gone_mid_run_stops_the_loop_with_one_line_naming_it() -> None:
    """The loop's requests use the openai backend's policy: a refused connection is LLMUnreachable
    after one quick retry (counted), a server error after max_retries is LLMError; both name the URL."""
    from bench.loopback_openai import FakeOpenAIServer, FakeServerConfig
    from vpo_harness.search.llm import LLMError, LLMUnreachable
    from vpo_harness.search.server_process import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMUnreachable, match="connection refused") as err:
        _one(ChatLLM(url, "m", connect_backoff=0.0))
    assert url in str(err.value) and "2 attempts" in str(err.value)
    with FakeOpenAIServer(FakeServerConfig(fault_rate=1.0, faults=("500",))) as srv:
        with pytest.raises(LLMError, match="after 3 attempts") as err:
            _one(ChatLLM(srv.base_url, "m", max_retries=2, backoff_base=0.001))
    assert srv.base_url in str(err.value) and "HTTP 500 Internal Server Error" in str(err.value)
