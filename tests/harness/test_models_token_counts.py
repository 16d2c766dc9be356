"""Per-chain completion tokens when a server reports one total for an n > 1 request
(harness/core/models/token_counts.py, and the openai backend against a loopback server that does so)."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from vpo_harness.harness.core.models.token_counts import apportion, split_completion_tokens
from vpo_harness.harness.core.store import SAMPLES, iter_samples
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder
from tests.fakes.tiny_llama import tiny_llama_dir  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(120)


def test_apportion_adds_up_and_stays_within_one_of_the_exact_share() -> None:
    for total in range(0, 13):
        for weights in itertools.product(range(0, 4), repeat=3):
            shares = apportion(total, weights)
            assert sum(shares) == total and all(s >= 0 for s in shares)
            w = weights if sum(weights) else (1, 1, 1)
            for s, x in zip(shares, w):
                assert abs(s - total * x / sum(w)) < 1, (total, weights, shares)


def test_choices_at_the_budget_used_the_budget_and_a_lone_other_gets_the_rest() -> None:
    assert split_completion_tokens(30, ["length"] * 3, 10, None, [1, 2, 3]) == ([10, 10, 10], "exact")
    assert split_completion_tokens(27, ["length", "stop", "length"], 10, None, [50, 1, 50]) == ([10, 7, 10], "exact")
    # two that stopped early share the rest in proportion to their tokenizer counts
    # (19 x 3/9 = 6.33 and 19 x 6/9 = 12.67: the larger remainder takes the last token)
    assert split_completion_tokens(29, ["stop", "length", "stop"], 10, [3, 99, 6], [1, 1, 1]) == \
        ([6, 10, 13], "split:tokenizer")
    # without a tokenizer, by characters
    assert split_completion_tokens(9, ["stop", "stop"], 10, None, [20, 10]) == ([6, 3], "split:characters")


def test_numbers_that_contradict_the_budget_rule_split_the_whole_total() -> None:
    # a "length" choice cut by the context before the budget: 2 x 10 would exceed the total
    counts, how = split_completion_tokens(12, ["length", "length"], 10, [4, 8], [1, 1])
    assert counts == [4, 8] and how == "split:tokenizer"


def test_no_total_counts_with_the_tokenizer_or_not_at_all() -> None:
    assert split_completion_tokens(None, ["stop", "stop"], 10, [3, 4], [9, 9]) == ([3, 4], "tokenizer")
    assert split_completion_tokens(None, ["stop"], 10, None, [9]) == ([None], "none")


def _maze_run(tmp_path: Path, srv: ScriptedOpenAIServer, model: str, **args) -> list[dict]:
    folder = run(RunConfig.of(task="maze", split="test", limit=2, n=3, m=3, model=f"openai:{model}",
                              base_url=srv.base_url, model_args=args, out=str(tmp_path / model.replace("/", "_")),
                              progress=False))
    assert all(len(body.get("messages", [])) and body.get("n") == 3 for body in srv.requests)
    return list(iter_samples(folder / SAMPLES))


def _check_rows(rows: list[dict], source: str) -> None:
    assert len(rows) == 6
    for pid in {r["problem_id"] for r in rows}:
        mine = [r for r in rows if r["problem_id"] == pid]
        total = mine[0]["extra"]["group_usage"]["completion_tokens"]
        assert total == sum(len(r["text"].split()) for r in mine)      # what the scripted server reports
        assert sum(r["completion_tokens"] for r in mine) == total       # split over the chains, nothing lost
        assert all(r["extra"]["completion_tokens_from"] == source for r in mine)
        by_len = sorted(mine, key=lambda r: len(r["text"]))
        assert by_len[0]["completion_tokens"] <= by_len[-1]["completion_tokens"]
        assert all(r["prompt_tokens"] == 10 for r in mine)


def test_aggregate_usage_split_by_characters_for_a_label(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        rows = _maze_run(tmp_path, srv, "policy")
    _check_rows(rows, "split:characters")
    results = json.loads((tmp_path / "policy" / "results.json").read_text())
    assert results["mean_completion_tokens"] is not None


def test_aggregate_usage_split_by_the_tokenizer_of_a_local_model(tmp_path: Path, tiny_llama_dir) -> None:
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:   # served under its folder's path
        rows = _maze_run(tmp_path, srv, str(tiny_llama_dir))
    _check_rows(rows, "split:tokenizer")
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:   # a label, with tokenizer= given
        rows = _maze_run(tmp_path, srv, "label", tokenizer=str(tiny_llama_dir))
    _check_rows(rows, "split:tokenizer")
