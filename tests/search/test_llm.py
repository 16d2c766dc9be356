"""The mutation operator's chat client: the chat template's arguments travel in the request body as
``chat_template_kwargs`` (what vLLM, SGLang and `vpo serve` read), and only when set."""
from __future__ import annotations

import asyncio

import pytest

from search.llm import ChatLLM
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
    import harness.evolve
    from harness.cli import main

    seen = []

    def fake_run(cfg):
        seen.append(cfg)
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.evolve, "run_evolve", fake_run)
    assert main(["evolve", "--task", "maze", "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                 "--chat-template-args", "enable_thinking=false,x=2"]) == 130
    cfg = seen[0]
    assert cfg.chat_template_args == {"enable_thinking": False, "x": 2}
    assert cfg.identity()["sampling"]["chat_template_args"] == {"enable_thinking": False, "x": 2}
    assert "base_url" not in cfg.identity()["model"] and cfg.sections()["execution"]["base_url"]
