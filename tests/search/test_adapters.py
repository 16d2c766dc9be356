"""search/adapters.py: the search's view of each task (prefix steps, plateau cut, mutation prompt),
found by task name; a task without an entry reads its answers as words."""
from __future__ import annotations

from vpo_harness.benchmarks import REGISTRY, get_task
from vpo_harness.benchmarks.toolrl import QWEN3_NO_THINK_PREFIX
from vpo_harness.search.adapters import ADAPTERS, CodeSteps, WordSteps, adapter_for


def test_adapters_are_keyed_by_registered_task_names() -> None:
    assert set(ADAPTERS) <= set(REGISTRY)  # a renamed task would silently fall back to words
    assert type(adapter_for(get_task("musique"))) is WordSteps
    assert type(adapter_for(get_task("livecodebench"))) is CodeSteps


def test_code_prefix_is_an_open_python_block_of_whole_lines() -> None:
    ad = adapter_for(get_task("livecodebench"))
    code = "x = 1\ny = 2\nprint(x + y)\n"
    assert ad.steps(None, code) == ["x = 1\n", "y = 2\n", "print(x + y)\n"]
    assert ad.prefix(None, code, 2, 1) == ad.prefix(None, code, 2, 3) == "```python\nx = 1\ny = 2\n"


def test_toolrl_prefix_drops_the_think_block_prefill_put_there() -> None:
    answer = QWEN3_NO_THINK_PREFIX + "call a b"
    assert adapter_for(get_task("toolrl", prefill_think=True)).prefix(None, answer, 2, 1) == "call a"
    assert adapter_for(get_task("toolrl", prefill_think=True)).prefix(None, answer, 1, 3).startswith("<response_1><think>")
    assert adapter_for(get_task("toolrl")).prefix(None, answer, 1, 1) == "<think>"
