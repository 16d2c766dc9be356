"""``--prompt-style paper`` is the VPO authors' prompt, character for character.

The expected texts are the output of the authors' own functions at ``ryanboldi/vpo`` commit 767db79
(``vpo_tasks/livecodebench.py`` ``build_prompt``; ``vpo_tasks/eureqa.py`` ``PROMPT_TEMPLATE`` with
their multi-answer ``SubRewrite``), run on the stored rows and saved in ``fixtures/``: for
LiveCodeBench a sha256 per test problem and m (85 problems x m = 1, 3) and the whole text of one
problem per test type and m; for EUREQA the whole texts on the synthetic fixture rows (no EUREQA data
is stored here). Their code is not part of this repository; its output is."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.eval.protocols import preset

FIXTURES = Path(__file__).parent / "fixtures"


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()]


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at character {i}: {a[i - 20:i + 20]!r} vs {b[i - 20:i + 20]!r}"


def _messages(task, problem, m: int) -> list[dict]:
    return task.prompt(problem, style="paper") if m == 1 else task.multi_prompt(problem, m, style="paper")


def test_livecodebench_paper_prompt_is_the_authors_build_prompt() -> None:
    task = get_task("livecodebench")
    problems = {p.data["question_id"]: p for p in task.load("test")}
    expected = _rows("lcb_authors_prompts.jsonl")
    assert len(expected) == 2 * len(problems) == 170
    assert {(r["testtype"], r["m"]) for r in expected if "prompt" in r} == {
        ("stdin", 1), ("stdin", 3), ("functional", 1), ("functional", 3)}
    for row in expected:
        msgs = _messages(task, problems[row["question_id"]], row["m"])
        assert [m["role"] for m in msgs] == ["user"]  # no system message, as the authors render it
        text = msgs[0]["content"]
        if "prompt" in row:
            assert text == row["prompt"], _first_difference(text, row["prompt"])
        assert hashlib.sha256(text.encode()).hexdigest() == row["sha256"], row["question_id"]


def test_eureqa_paper_prompt_is_the_authors_template() -> None:
    task = get_task("eureqa")
    problems = {p.meta["idx"]: p for p in task.load("test", path=str(FIXTURES / "eureqa_synthetic.jsonl"))}
    expected = _rows("eureqa_authors_prompts.jsonl")
    assert {r["m"] for r in expected} == {1, 3}
    for row in expected:
        msgs = _messages(task, problems[row["idx"]], row["m"])
        assert msgs == [{"role": "user", "content": row["prompt"]}], _first_difference(msgs[-1]["content"], row["prompt"])


@pytest.mark.parametrize("task", ["livecodebench", "eureqa"])
def test_the_paper_protocol_selects_the_authors_prompt(task: str) -> None:
    assert preset("paper", task, 3)["prompt_style"] == preset("paper", task, 1)["prompt_style"] == "paper"


def test_vpo_run_with_the_paper_protocol_renders_the_authors_prompt() -> None:
    """The command line's config (before any sampling) names the paper prompt for LiveCodeBench."""
    from vpo_harness.harness.app.cli import build_parser
    from vpo_harness.harness.app.commands.run import build_config

    args = build_parser().parse_args(["run", "--task", "livecodebench", "--model", "mock:echo", "--protocol",
                                      "paper", "--limit", "1"])
    cfg = build_config(args)
    assert cfg.task.prompt_style == "paper" and (cfg.sampling.m, cfg.sampling.n) == (3, 10)
    args = build_parser().parse_args(["run", "--task", "livecodebench", "--model", "mock:echo", "--protocol",
                                      "paper", "--prompt-style", "full"])
    assert build_config(args).task.prompt_style == "full"  # an explicit flag wins


def test_livecodebench_paper_prompt_edge_cases_match_the_authors() -> None:
    """Problem data no stored problem has (``self`` in the statement, a functional problem without a
    ``def`` line): the authors' function's output on synthetic data."""
    from vpo_harness.benchmarks.livecodebench import paper_prompt

    for row in _rows("lcb_authors_prompts_synthetic.jsonl"):
        text = paper_prompt(row["data"], row["m"])
        assert text == row["prompt"], _first_difference(text, row["prompt"])
