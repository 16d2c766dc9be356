"""ToolRL on the real rows: all 60 official test rows and all 300 SFT items, corruptions, parsing, errors.

Most tests here pin the ``parse=lenient`` reading (benchmarks.md's wording); the default ``paper``
reading is pinned row for row in tests/benchmarks/test_scoring_parity.py and by the paper tests below."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_harness.benchmarks import DataError, get_task
from vpo_harness.benchmarks.toolrl import GITHUB_RAW, ToolRL, parse_calls, score_calls, sft_to_row, value_match
from vpo_harness.harness.core.paths import shared_data_dir

TEST_FILE = shared_data_dir() / "toolrl" / "rlla_4k_test.jsonl"
SFT_FILE = shared_data_dir() / "toolrl" / "rlla_sft.jsonl"


@pytest.fixture(scope="module")
def task() -> ToolRL:
    return get_task("toolrl", parse="lenient")


@pytest.fixture(scope="module")
def test_rows(task):
    return task.load("test")


@pytest.fixture(scope="module")
def sft_rows(task):
    return task.load("sft")


def answer_with(calls, think=True, response=None) -> str:
    """An answer in the task format holding ``calls`` (one JSON object per line)."""
    out = "<think> reasoning </think>\n" if think else ""
    if calls:
        out += "<tool_call>\n" + "\n".join(json.dumps(c) for c in calls) + "\n</tool_call>\n"
    if response is not None:
        out += f"<response> {response} </response>"
    return out


def test_loads_real_rows(task, test_rows, sft_rows):
    raw = [json.loads(line) for line in TEST_FILE.read_text().splitlines()]
    assert len(test_rows) == 60 and len(sft_rows) == 300
    assert [p.id for p in test_rows] == [f"toolrl-test-{r['extra_info']['index']}" for r in raw]
    assert [p.id for p in sft_rows[:3]] == ["toolrl-sft-0", "toolrl-sft-1", "toolrl-sft-2"]
    assert sum(p.meta["num_calls"] > 0 for p in test_rows) == 54
    assert test_rows[0].data["gold_calls"] == [{"name": "GetNews", "parameters": {"page": "1"}}]
    sft0 = json.loads(SFT_FILE.read_text().splitlines()[0])
    msgs = task.prompt(sft_rows[0])
    assert msgs == [{"role": "system", "content": sft0["instruction"]}, {"role": "user", "content": sft0["input"]}]
    assert (task.default_temperature, task.default_top_p) == (0.7, 0.95)
    assert task.component_names == ("format", "tool_name", "arg_keys", "arg_values")


def test_sft_items_map_to_the_processed_row_format(tmp_path, task, test_rows):
    item = json.loads(SFT_FILE.read_text().splitlines()[5])
    row = sft_to_row(item, index=5)
    official = _raw_rows(1)[0]
    assert set(row) == set(official) and set(row["extra_info"]) == set(official["extra_info"])
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    f = tmp_path / "mapped.jsonl"
    f.write_text(json.dumps(row) + "\n")
    (p,) = task.load("sft", path=str(f))
    assert p.id == "toolrl-sft-5" and p.data == task.load("sft")[5].data


def test_gold_output_scores_all_ones_on_every_row(task, test_rows, sft_rows):
    for p in test_rows + sft_rows:
        r = task.reward(p, task.parse(p.data["gold"])[0])
        assert r.tolist() == [1.0] * 4, p.id
        assert task.passed(r)


def test_sft_think_mentioning_tool_call_is_not_parsed_as_calls(sft_rows):
    # real R1 think text talks about "<tool_call>" blocks; only the calls after </think> count
    tricky = [p for p in sft_rows if "<tool_call>" in p.data["gold"].split("</think>")[0]]
    assert len(tricky) >= 5
    for p in tricky:
        assert parse_calls(p.data["gold"])[0] == p.data["gold_calls"]


def _rows_with_calls(rows):
    return [p for p in rows if p.data["gold_calls"]]


def test_wrong_tool_name(task, test_rows, sft_rows):
    strict = ToolRL(align="strict", parse="lenient")
    checked = 0
    for p in _rows_with_calls(test_rows + sft_rows):
        calls = [dict(c) for c in p.data["gold_calls"]]
        if sum(c["name"] == calls[0]["name"] for c in calls) > 1:
            continue  # renaming one of several same-name calls changes the alignment; tested below
        calls[0]["name"] = "NoSuchTool"
        ans = answer_with(calls)
        r = task.reward(p, ans)
        assert r[0] == 1 and r[1] < 1 and r[2:].tolist() == [1, 1], p.id  # loose: only tool_name
        rs = strict.reward(p, ans)
        assert rs[0] == 1 and rs[1] < 1 and rs[2] < 1 and rs[3] < 1, p.id  # strict: args depend on it
        if len(calls) == 1:
            assert rs.tolist() == [1, 0, 0, 0]
        checked += 1
    assert checked > 250


def _corrupt_value(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 7
    if isinstance(v, str):
        try:
            return str(float(v) + 7)  # numeric strings are compared as numbers
        except ValueError:
            return "zzqx wwvy"
    if isinstance(v, list):
        return ["zzqx"]
    return "zzqx"


def test_wrong_value_lowers_only_arg_values(task, test_rows, sft_rows):
    checked = 0
    for p in _rows_with_calls(test_rows + sft_rows):
        calls = [{"name": c["name"], "parameters": dict(c["parameters"])} for c in p.data["gold_calls"]]
        target = next((c for c in calls if c["parameters"]), None)
        if target is None:
            continue
        key = next(iter(target["parameters"]))
        if target["parameters"][key] in ("", None, [], {}):
            continue
        target["parameters"][key] = _corrupt_value(target["parameters"][key])
        r = task.reward(p, answer_with(calls))
        assert r[:3].tolist() == [1, 1, 1] and r[3] < 1, (p.id, key)
        checked += 1
    assert checked > 250


def test_missing_key_lowers_keys_and_values(task, test_rows):
    p = test_rows[0]  # GetNews(page="1")
    assert task.reward(p, answer_with([{"name": "GetNews", "parameters": {}}])).tolist() == [1, 1, 0, 0]
    extra = task.reward(p, answer_with([{"name": "GetNews", "parameters": {"page": 1, "lang": "en"}}]))
    assert extra.tolist() == pytest.approx([1, 1, 2 / 3, 1])  # an extra key costs arg_keys only


def test_format_component(task, test_rows):
    with_calls = next(p for p in test_rows if p.data["gold_calls"])
    no_calls = next(p for p in test_rows if not p.data["gold_calls"])
    gold = with_calls.data["gold_calls"]
    assert task.reward(with_calls, answer_with(gold, think=False)).tolist() == [0, 1, 1, 1]
    assert task.reward(with_calls, answer_with([], response="done")).tolist() == [0, 0, 0, 0]
    assert task.reward(with_calls, "<think>x</think><tool_call>not json</tool_call>").tolist() == [0, 0, 0, 0]
    # a template-opened think block only shows its closing tag
    assert task.reward(with_calls, "reasoning</think>\n" + answer_with(gold, think=False))[0] == 1
    # gold without calls: calls in the answer break format and the call components
    assert task.reward(no_calls, answer_with([], response="hi")).tolist() == [1, 1, 1, 1]
    assert task.reward(no_calls, answer_with([{"name": "X", "parameters": {}}])).tolist() == [0, 0, 0, 0]
    assert task.reward(no_calls, "<think>x</think><tool_call>junk</tool_call>").tolist() == [0, 1, 1, 1]
    assert task.reward(no_calls, None).tolist() == [0] * 4


def test_multiple_calls_alignment_and_unmatched():
    gold = [{"name": "a", "parameters": {"x": "1"}}, {"name": "b", "parameters": {"y": "hello world"}}]
    assert score_calls(list(reversed(gold)), gold) == (1, 1, 1)  # order does not matter
    # one gold call missing: half the pairs score 0
    assert score_calls(gold[:1], gold) == pytest.approx((2 / 3, 0.5, 0.5))
    # an extra predicted call adds an unmatched pair
    assert score_calls(gold + [{"name": "c", "parameters": {}}], gold) == pytest.approx((0.8, 2 / 3, 2 / 3))
    # same name twice: greedy by key overlap picks the right partner
    g2 = [{"name": "a", "parameters": {"x": 1}}, {"name": "a", "parameters": {"y": 2}}]
    assert score_calls([g2[1], g2[0]], g2) == (1, 1, 1)
    # free text is token F1
    half = [{"name": "a", "parameters": {"x": "1"}}, {"name": "b", "parameters": {"y": "hello"}}]
    assert score_calls(half, gold)[2] == pytest.approx((1 + 2 / 3) / 2)


def test_value_match():
    assert value_match(1, "1") == 1 and value_match("2.0", 2) == 1 and value_match(3, 2) == 0
    assert value_match("true", True) == 1 and value_match(1, True) == 0 and value_match(False, False) == 1
    assert value_match(None, None) == 1 and value_match("x", None) == 0
    assert value_match(["B", "a"], ["a", "b"]) == 1 and value_match("a", ["a", "b"]) == pytest.approx(2 / 3)
    assert value_match({"k": "v", "z": 1}, {"k": "v"}) == 1 and value_match("v", {"k": "v"}) == 0
    assert value_match("The New York", "new york") == 1 and value_match("San Diego", "New York") == 0


def test_lenient_call_parsing():
    calls, _ = parse_calls('<think>t</think><tool_call>[{"name": "a", "arguments": {"x": 1}}]</tool_call>')
    assert calls == [{"name": "a", "parameters": {"x": 1}}]
    calls, _ = parse_calls('<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}, {"name": "b"}</tool_call>'
                           '<tool_call>{"function": {"name": "c", "parameters": {}}}</tool_call>')
    assert [c["name"] for c in calls] == ["a", "b", "c"] and calls[0]["parameters"] == {"x": 1}
    calls, nonempty = parse_calls("<tool_call>call a with x=1 {broken</tool_call>")
    assert calls == [] and nonempty


def test_multi_prompt_appends_to_user_message(task, test_rows):
    p = test_rows[3]
    single, multi = task.prompt(p), task.multi_prompt(p, 3)
    assert multi[0] == single[0]  # the system prompt (tools + format) is untouched
    assert multi[1]["content"].startswith(single[1]["content"])
    assert "<response_3>" in multi[1]["content"][len(single[1]["content"]):]
    assert task.prompt(p)[1]["content"] == single[1]["content"]  # no aliasing between calls


def test_multi_answer_parsing(task, test_rows):
    p = next(q for q in test_rows if q.data["gold_calls"])
    g = p.data["gold"]
    chain = f"<think>plan</think><response_1>{g}</response_1><response_3>{g}</response_3><response_2>{g[:30]}"
    ans = task.parse(chain, 3)
    assert ans[1] is None and [task.reward(p, a).tolist() for a in (ans[0], ans[2])] == [[1] * 4] * 2
    assert task.parse("<response_1> </response_1>", 2) == [None, None]


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=3))
def test_parse_and_reward_never_raise(task, test_rows, text, m):
    for a in task.parse(text) + task.parse(text, m):
        r = task.reward(test_rows[0], a)
        assert r.shape == (4,) and np.all((r >= 0) & (r <= 1))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(['<think>', '</think>', '<tool_call>', '</tool_call>', '{', '}', '[', ']',
                                 '"name"', '"parameters"', '"arguments"', ':', ',', '"a"', '1', 'true',
                                 '{"name": "GetNews", "parameters": {"page": "1"}}', '\n'])))
def test_reward_never_raises_on_json_soup(task, test_rows, parts):
    r = task.reward(test_rows[0], "".join(parts))
    assert r.shape == (4,) and np.all((r >= 0) & (r <= 1))


# ---- files, hub and errors ----------------------------------------------------------------------

def _raw_rows(n=3):
    return [json.loads(line) for line in TEST_FILE.read_text().splitlines()[:n]]


@pytest.mark.parametrize("mutate, line, field", [
    (lambda r: r["reward_model"].pop("ground_truth"), 2, "'reward_model.ground_truth'"),
    (lambda r: r["extra_info"].__setitem__("index", "4"), 2, "'extra_info.index'"),
    (lambda r: r["prompt"][0].__setitem__("content", None), 2, "'prompt[0].content'"),
    (lambda r: r.__setitem__("prompt", [r["prompt"][1]]), 2, "'prompt'"),
    (lambda r: r["reward_model"].__setitem__("ground_truth", "<think>x</think><tool_call>\n{bad json\n</tool_call>"),
     2, "'reward_model.ground_truth'"),
])
def test_malformed_rows_name_file_line_field(tmp_path, mutate, line, field):
    rows = _raw_rows()
    mutate(rows[line - 1])
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as err:
        ToolRL().load("test", path=str(f))
    msg = str(err.value)
    assert str(f) in msg and f"line {line}" in msg and field in msg


def test_malformed_sft_item(tmp_path):
    items = [json.loads(x) for x in SFT_FILE.read_text().splitlines()[:3]]
    del items[2]["output"]
    f = tmp_path / "s.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in items))
    with pytest.raises(DataError, match=r"line 3, field 'output'"):
        ToolRL().load("sft", path=str(f))


def test_parquet_rows_like_the_official_files(tmp_path):
    import pandas as pd

    rows = _raw_rows(4)
    f = tmp_path / "test.parquet"
    pd.DataFrame(rows).to_parquet(f)
    ps = ToolRL().load("test", path=str(f))
    assert [p.id for p in ps] == [f"toolrl-test-{r['extra_info']['index']}" for r in rows]
    assert all(ToolRL(parse="lenient").reward(p, p.data["gold"]).tolist() == [1] * 4 for p in ps)


def test_hub_parquet_builder(monkeypatch):
    import datasets

    asked = []

    def fake_load(builder, data_files=None, split=None, **kw):
        asked.append((builder, data_files, split))
        return _raw_rows()

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    assert len(ToolRL().load("train")) == 3  # no local train rows: straight to the GitHub parquet
    assert asked == [("parquet", {"train": GITHUB_RAW.format(split="train")}, "train")]
    assert len(ToolRL(hub=True).load("test")) == 3
    assert asked[-1][1] == {"test": GITHUB_RAW.format(split="test")}
    with pytest.raises(DataError, match="no hub copy"):
        ToolRL(hub=True).load("sft")

    def offline(*a, **k):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="Pass path="):
        ToolRL().load("train")


# ---- the authors' reading (parse=paper, the default) ---------------------------------------------------

def test_paper_reading_first_block_half_think_and_malformed(test_rows):
    paper = get_task("toolrl")
    p = next(p for p in test_rows if len(p.data["gold_calls"]) == 1)
    gold = p.data["gold_calls"]
    good = answer_with(gold)
    assert paper.reward(p, paper.parse(good)[0]).tolist() == [1] * 4
    # only the first <tool_call> block counts (a second block adds nothing, a wrong first one costs)
    wrong = [{"name": "zz_other", "parameters": {}}]
    two = "<think> r </think>\n<tool_call>\n" + json.dumps(wrong[0]) + "\n</tool_call>\n<tool_call>\n" + \
        json.dumps(gold[0]) + "\n</tool_call>"
    assert paper.reward(p, two)[1] == 0 and get_task("toolrl", parse="lenient").reward(p, two)[1] > 0
    # a half think block is no think block
    assert paper.reward(p, "thinking</think>\n" + answer_with(gold, think=False))[0] == 0
    # a malformed first object ends the stream: the valid call after it is lost
    broken = "<think> r </think>\n<tool_call>\n{\"name\": \"x\", \n" + json.dumps(gold[0]) + "\n</tool_call>"
    assert paper.reward(p, broken).tolist() == [0, 0, 0, 0]
    # an empty reply: format 0, call components 1 exactly when the gold has no calls
    none = next(p for p in test_rows if not p.data["gold_calls"])
    assert paper.reward(none, paper.parse("")[0]).tolist() == [0, 1, 1, 1]
    assert paper.reward(p, paper.parse("")[0]).tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError):
        get_task("toolrl", parse="loose")


def test_paper_value_match_types():
    from vpo_harness.benchmarks.toolrl import paper_value_match as vm
    assert vm("the 1", "1") == pytest.approx(2 / 3)          # no article removal
    assert vm("no", True) == 1 and vm(False, "false") == 0   # truthiness, as the authors' code does
    assert vm("2", 2) == 1 and vm("2.5", 2) == 0 and vm(2.0, 2) == 1
    assert vm(["A", "b"], ["a", "B"]) == 1 and vm("a", ["a", "b"]) == pytest.approx(2 / 3)
    assert vm({"x": 1}, {"x": 2, "y": 3}) == pytest.approx(2 / 3) and vm("x", {"x": 1}) == 0
    assert vm(None, None) == 1 and vm("", None) == 1 and vm(5, "5") == 1
