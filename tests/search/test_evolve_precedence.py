"""`vpo evolve --config`: defaults < YAML < flags for every kind of setting, and the values reach the
requests through the run's own settings (an OpenEvolve YAML's llm.temperature used to be replaced by
the task's default without a word)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.search.config import unused_keys, yaml_settings
from vpo_harness.search.evolve import DEFAULT_TIMEOUT_S, EvolveConfig, run_evolve, with_yaml
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder

YAML = {"llm": {"temperature": 0.3, "top_p": 0.8, "max_tokens": 77, "timeout": 12},
        "evaluator": {"parallel_evaluations": 2}, "database": {"num_islands": 5}}


def _cfg(**kw) -> EvolveConfig:
    return EvolveConfig(task="maze", model="hf:maze-tiny-vpo", config_path="oe.yaml", lag=4, **kw)


def test_sampling_settings_yaml_over_task_default_flag_over_yaml() -> None:
    samp = with_yaml(_cfg(), YAML).canonical_run().sampling
    assert (samp.temperature, samp.top_p, samp.max_tokens) == (0.3, 0.8, 77)
    samp = with_yaml(_cfg(temperature=0.5, top_p=0.9, max_tokens=64), YAML).canonical_run().sampling
    assert (samp.temperature, samp.top_p, samp.max_tokens) == (0.5, 0.9, 64)
    samp = with_yaml(_cfg(), {}).canonical_run().sampling  # neither: the task's and the zoo model's
    assert (samp.temperature, samp.top_p, samp.max_tokens) == (0.7, 1.0, 40)


def test_execution_settings_yaml_over_default_flag_over_yaml() -> None:
    got = with_yaml(_cfg(), YAML)
    assert (got.timeout_s, got.parallel) == (12, 2)
    got = with_yaml(_cfg(timeout_s=5.0, parallel=3), YAML)
    assert (got.timeout_s, got.parallel) == (5.0, 3)
    got = with_yaml(_cfg(), {})
    assert (got.timeout_s, got.parallel) == (DEFAULT_TIMEOUT_S, 4)


def test_yaml_values_are_checked_and_unused_keys_named() -> None:
    with pytest.raises(ValueError, match=r"oe.yaml: llm.temperature: expected a number, got 'hot'"):
        yaml_settings({"llm": {"temperature": "hot"}}, "oe.yaml")
    with pytest.raises(ValueError, match=r"oe.yaml: evaluator.parallel_evaluations 6 exceeds --lag 4"):
        with_yaml(_cfg(), {"evaluator": {"parallel_evaluations": 6}})
    lines = unused_keys({"max_iterations": 50, "random_seed": 1, "llm": {"temperature": 0.3, "api_key": "k",
                                                                        "primary_model": "gpt"}}, 20)
    assert lines == ["max_iterations (50) is replaced by --iterations", "random_seed (1) is replaced by --seed",
                     "llm.primary_model is not used (the model, server and retries come from --model, "
                     "--base-url and --model-args)"]
    assert unused_keys({"max_iterations": 20}, 20) == []


def _requests(srv: ScriptedOpenAIServer) -> set[tuple]:
    return {(r.get("temperature"), r.get("top_p"), r.get("max_tokens")) for r in srv.requests
            if "messages" in r or "prompt" in r}


@pytest.mark.parametrize("flags, want", [({}, (0.3, 0.8, 77)), ({"temperature": 0.5}, (0.5, 0.8, 77))])
def test_yaml_sampling_reaches_every_request_and_the_record(tmp_path: Path, flags: dict, want: tuple) -> None:
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("llm:\n  temperature: 0.3\n  top_p: 0.8\n  max_tokens: 77\n")
    with ScriptedOpenAIServer(maze_routes_responder(1)) as srv:
        folder = run_evolve(EvolveConfig(task="maze", model="openai:scripted", base_url=srv.base_url, limit=1,
                                         iterations=2, prompt_mode="task", prompt_style="compact",
                                         config_path=str(yaml), out=str(tmp_path / "evo"), progress=False,
                                         **flags))
        # the loop's calls and the baseline's alike
        assert _requests(srv) == {want}
    ident = json.loads((folder / "config.json").read_text())["identity"]["sampling"]
    assert (ident["temperature"], ident["top_p"], ident["max_tokens"]) == want
