"""LiveCodeBench task: loader, prompts, parsing, dedup, LCB grading semantics, reward protocol."""
from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import DataError, Problem
from vpo_harness.benchmarks.livecodebench import (
    LiveCodeBench, decode_private_tests, extract_code, normalized_ast, select_tests, split_chain)
from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.benchmarks.livecodebench_judge import stdout_matches, value_matches

pytestmark = pytest.mark.timeout(180)
DATA = shared_data_dir() / "livecodebench" / "code_generation_lite.v5v6.public.jsonl"


@pytest.fixture(scope="module")
def task():
    t = get_task("livecodebench", workers=2)
    yield t
    t.close()


def _problem(mode: str, tests: list[tuple[str, str]], func_name: str | None = None) -> Problem:
    return Problem(id="p", data={"mode": mode, "func_name": func_name, "n_tests": len(tests),
                                 "tests": [{"input": i, "output": o} for i, o in tests],
                                 "content": "Add numbers.", "starter_code": "", "contest_date": "2025-03-01"})


def _row(**over) -> dict:
    row = {"question_title": "t", "question_content": "Print A+B.", "platform": "atcoder",
           "question_id": "abc000_a", "contest_id": "abc000", "contest_date": "2025-03-01T00:00:00",
           "starter_code": "", "difficulty": "easy",
           "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
           "metadata": "{}"}
    row.update(over)
    return row


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "lcb.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


# ---- data -----------------------------------------------------------------------------------------
def test_default_local_file_splits(task):
    test = task.load("test")
    train = task.load("train")
    assert len(test) == 85 and len(train) == 15
    assert all("2025-02-01" <= p.data["contest_date"] < "2025-05-01" for p in test)
    assert all(p.data["contest_date"] < "2025-02-01" for p in train)
    modes = {p.data["mode"] for p in test + train}
    assert modes == {"stdin", "functional"}
    fn = next(p for p in test if p.data["mode"] == "functional")
    assert fn.data["func_name"] and "class Solution" in fn.data["starter_code"]
    assert all(1 <= p.data["n_tests"] <= 16 == len(task.component_names) for p in test)
    assert task.load("test", limit=3) == test[:3]


def test_select_tests_keeps_16_smallest_within_8192_bytes():
    tests = [{"input": "x" * n, "output": ""} for n in [9000, 5, 3, *range(100, 120)]]
    kept = select_tests(tests)
    assert len(kept) == 16
    assert [len(t["input"]) for t in kept[:3]] == [3, 5, 100]
    assert all(len(t["input"]) <= 8192 for t in kept)


def test_malformed_rows_name_file_line_field(tmp_path):
    task = LiveCodeBench()
    cases = [
        ({"public_test_cases": "not json"}, "public_test_cases"),
        ({"public_test_cases": json.dumps([{"input": 1, "output": "2"}])}, "public_test_cases[0].input"),
        ({"contest_date": "yesterday"}, "contest_date"),
        ({"metadata": "{"}, "metadata"),
        ({"question_id": ""}, "question_id"),
        ({"public_test_cases": json.dumps([{"input": "1", "output": "2", "testtype": "functional"}])},
         "metadata"),
    ]
    for over, field in cases:
        p = _write(tmp_path, [_row(), _row(**{"question_id": "abc000_b", **over})])
        with pytest.raises(DataError) as ei:
            task.load("all", path=str(p))
        assert ei.value.line == 2 and ei.value.field_name == field and str(p) in str(ei.value)


def test_private_tests_only_behind_trust_flag(tmp_path):
    private = [{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]
    blob = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(private)))).decode()
    assert decode_private_tests(blob) == private
    p = _write(tmp_path, [_row(private_test_cases=blob)])
    plain = LiveCodeBench().load("test", path=str(p))[0]
    assert plain.data["tests"] == [{"input": "1 2\n", "output": "3\n"}]
    assert plain.meta["test_source"] == "public"
    trusted = LiveCodeBench(trust_private_tests=True).load("test", path=str(p))[0]
    assert trusted.data["tests"] == [{"input": "5 5\n", "output": "10\n"}]
    assert trusted.meta["test_source"] == "private"
    with pytest.raises(DataError):
        LiveCodeBench(test_source="private").load("test", path=str(p))


def test_parquet_and_directory(tmp_path):
    pd = pytest.importorskip("pandas")
    pd.DataFrame([_row(), _row(question_id="abc000_b", contest_date="2024-12-01T00:00:00")]).to_parquet(
        tmp_path / "test.parquet")
    task = LiveCodeBench()
    assert [p.id for p in task.load("test", path=str(tmp_path))] == ["abc000_a"]
    assert [p.id for p in task.load("train", path=str(tmp_path / "test.parquet"))] == ["abc000_b"]


# ---- prompts and parsing ----------------------------------------------------------------------------
def test_prompts(task):
    p = next(p for p in task.load("test") if p.data["mode"] == "functional")
    msgs = task.prompt(p)
    assert msgs[0]["role"] == "system" and p.data["starter_code"].strip() in msgs[-1]["content"]
    multi = task.multi_prompt(p, 3)[-1]["content"]
    assert "3 different solutions" in multi and "---" in multi and "different approach" in multi
    assert task.prompt(p, style="compact")[0]["role"] == "user"
    with pytest.raises(ValueError):
        task.prompt(p, style="weird")


def test_extract_code_matches_lcb_rule():
    text = "Idea...\n```python\nprint(1)\n```\nThen better:\n```python\nprint(2)\n```\nDone."
    assert extract_code(text) == "print(2)"
    assert extract_code("no code") is None and extract_code("```python\nprint(1)") is None
    assert extract_code("```\n```") is None


def test_split_chain():
    a, b, c = "print(1)", "print(2)", "print(3)"
    text = f"Plan.\n```python\n{a}\n```\n---\nSecond idea\n```python\n{b}\n```\n---\n```python\n{c}\n```"
    assert split_chain(text, 3) == [a, b, c]
    assert split_chain(text, 2) == [a, b]
    assert split_chain(text, 4) == [a, b, c, None]
    truncated = f"```python\n{a}\n```\n---\n```python\n{b}\n```\n---\n```python\nprint(3"
    assert split_chain(truncated, 3) == [a, b, None]
    no_sep = f"```python\n{a}\n```\n```python\n{b}\n```"
    assert split_chain(no_sep, 2) == [a, b]
    inside = "```python\nx = '''\n---\n'''\nprint(x)\n```"  # a --- line inside code is not a separator
    assert split_chain(inside, 1) == ["x = '''\n---\n'''\nprint(x)"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("`-\n pyhton:()'\"x=1") + ["```", "```python\n", "\n---\n"])
                | st.text(max_size=20), max_size=120).map("".join),
       st.integers(min_value=1, max_value=5))
def test_parser_never_raises(text, m):
    task = LiveCodeBench()
    single = task.parse(text)
    multi = task.parse(text, m)
    assert len(single) == 1 and len(multi) == m
    assert all(a is None or isinstance(a, str) for a in single + multi)
    normalized_ast(multi[0])


def test_parse_non_string_is_safe():
    task = LiveCodeBench()
    assert task.parse(None) == [None]  # type: ignore[arg-type]
    assert task.parse(123, 2) == [None, None]  # type: ignore[arg-type]


def test_dedup_key_uses_ast():
    task = LiveCodeBench()
    p = _problem("stdin", [("1", "1")])
    r = np.zeros(1)
    k1 = task.dedup_key(p, "x = 1\nprint(x)  # comment\n", r)
    k2 = task.dedup_key(p, '"""doc"""\nx=1\n\n\nprint( x )', r)
    k3 = task.dedup_key(p, "x = 2\nprint(x)", r)
    assert k1 == k2 != k3
    assert task.dedup_key(p, "def f(:", r) != k1


# ---- comparison semantics -------------------------------------------------------------------------
def test_stdout_comparison():
    assert stdout_matches("3\n", "3")
    assert stdout_matches("  1 2  \n3\n\n", "1 2\n3")
    assert stdout_matches("0.50000", "0.5")  # Decimal token comparison
    assert not stdout_matches("1 2 3", "1 2")
    assert not stdout_matches("1\n2", "1 2")
    assert not stdout_matches("Yes", "yes")
    assert not stdout_matches("50000000000000001", "50000000000000000")


def test_value_comparison():
    assert value_matches(json.dumps({"t": [1, 2]}), "[1, 2]")  # a top-level tuple counts as a list
    assert not value_matches(json.dumps([{"t": [1, 2]}]), "[[1, 2]]")  # nested tuples do not (LCB ==)
    assert value_matches(json.dumps(True), "true") and value_matches("1", "true")  # Python ==
    assert value_matches("2.0", "2")
    assert not value_matches(json.dumps({"o": "ndarray:array([1])"}), "[1]")
    assert value_matches(json.dumps({"d": [["a", 1]]}), '{"a": 1}')


# ---- grading in the sandbox -------------------------------------------------------------------------
def test_verdict_codes(task):
    p = _problem("stdin", [("1 2", "3"), ("2 2", "4")])
    progs = {
        "a, b = map(int, input().split())\nprint(a + b)": ["pass", "pass"],
        "a, b = map(int, input().split())\nprint(a * b)": ["wrong_answer", "pass"],
        "a, b = map(int, input().split())\nif a == 1:\n    while True: pass\nprint(a + b)": ["time_limit", "pass"],
        "a, b = map(int, input().split())\nprint(1 // (a - 1))": ["runtime_error", "wrong_answer"],
        "print(:": ["compile_error", "compile_error"],
    }
    grades = task.grade_many(p, list(progs))
    got = {code: g.verdicts for code, g in zip(progs, grades)}
    assert got == progs
    for g in grades:
        assert g.isolation["rlimits"] and "netns" in g.isolation


def test_functional_solution_class(task):
    p = _problem("functional", [("[1, 2, 3]\n2", "[0, 1]"), ("[5]\n5", "[0, 0]")], func_name="twoIdx")
    ok = ("class Solution:\n    def twoIdx(self, nums: List[int], k: int) -> List[int]:\n"
          "        return (0, k - 1) if k < 5 else (0, 0)\n")
    wrong = "class Solution:\n    def twoIdx(self, nums, k):\n        return [[0, 1]]\n"
    missing = "class Solution:\n    def other(self, nums, k):\n        return [0, 1]\n"
    r = task.rewards(p, [ok, wrong, None, missing, ok])
    assert r.shape == (5, 2)
    assert r.tolist() == [[1, 1], [0, 0], [0, 0], [0, 0], [1, 1]]
    assert task.scalar(r).tolist() == [1.0, 0.0, 0.0, 0.0, 1.0]
    assert task.passed(r).tolist() == [True, False, False, False, True]


def test_stdin_program_lcb_quirks(task):
    p = _problem("stdin", [("3\n1 2 3", "6")])
    progs = [
        # main guard is unwrapped, sys.stdin / input() / exit() behave as in LCB
        "import sys\ndef main():\n    n = int(sys.stdin.readline())\n    print(sum(map(int, sys.stdin.readline().split())))\n"
        "if __name__ == '__main__':\n    main()\n",
        "n = int(input())\nprint(sum(map(int, input().split())))\nexit()\nprint('not reached')\n",
        "data = sys.stdin.read().split()\nprint(sum(map(int, data[1:])))\n",  # prelude imports sys
        "import threading\ndef main():\n    input()\n    print(sum(map(int, input().split())))\n"
        "threading.stack_size(1 << 26)\nt = threading.Thread(target=main)\nt.start()\nt.join()\n",
    ]
    assert task.rewards(p, progs).tolist() == [[1.0]] * 4


def test_crash_restarts_on_remaining_tests(task):
    p = _problem("stdin", [("1", "1"), ("2", "2"), ("3", "3")])
    code = "import os\nx = int(input())\nif x == 2:\n    os._exit(1)\nprint(x)\n"
    g = task.grade(p, code)
    assert g.verdicts == ["pass", "runtime_error", "pass"] and g.runs == 2


def test_components_for_and_reward_length(task):
    probs = task.load("test", limit=5)
    for p in probs:
        names = task.components_for(p)
        assert len(names) == p.data["n_tests"] and names[0] == "test_1"
        r = task.reward(p, None)
        assert r.shape == (len(names),) and not r.any()
    assert task.rewards(probs[0], []).shape == (0, probs[0].data["n_tests"])
    assert task.default_temperature == 0.8 and task.default_top_p == 0.95


def test_hub_download_reads_raw_files(tmp_path, monkeypatch):
    """path='hub' downloads test*.jsonl with huggingface_hub (faked here: no network in tests)."""
    import huggingface_hub

    f = _write(tmp_path, [_row()])
    calls = []

    def fake_download(repo_id, filename, repo_type=None, revision=None):
        calls.append((repo_id, filename, repo_type))
        return str(f)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    probs = LiveCodeBench(hub_files=("test5.jsonl", "test6.jsonl")).load("test", path="hub")
    assert [p.id for p in probs] == ["abc000_a"]  # the same row in two release files is kept once
    assert calls == [("livecodebench/code_generation_lite", "test5.jsonl", "dataset"),
                     ("livecodebench/code_generation_lite", "test6.jsonl", "dataset")]


def test_runner_scores_a_chain(task):
    """The runner's per-chain scoring works with per-problem reward lengths and AST dedup."""
    from vpo_harness.harness.core.models.base import Generation
    from vpo_harness.benchmarks.scoring import score_generation

    p = _problem("stdin", [("1 2", "3"), ("5 5", "10")])
    text = ("First:\n```python\na, b = map(int, input().split())\nprint(a + b)\n```\n---\n"
            "```python\na,b=map(int,input().split())\nprint(a+b)  # same program\n```\n---\n"
            "```python\nprint(3)\n```\n---\n```python\nprint(")
    row = score_generation(task, p, Generation(problem_id="p", chain_index=0, text=text), 4, 0)
    assert row.rewards == [[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    assert row.scalars == [1.0, 1.0, 0.5, 0.0] and row.passed == [True, True, False, False]
    assert row.n_unique == 2
