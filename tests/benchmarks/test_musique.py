"""MuSiQue on the real 150-question dev slice: loader, gold answers, corruptions, parsing, errors."""
from __future__ import annotations

import json
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_harness.benchmarks import DataError, get_task
from vpo_harness.benchmarks.musique import MuSiQue, cited_indices, format_answer
from vpo_harness.harness.core.paths import shared_data_dir

DATA = shared_data_dir() / "musique" / "musique_ans_v1.0_dev.sample.jsonl"


@pytest.fixture(scope="module")
def task() -> MuSiQue:
    return get_task("musique")


@pytest.fixture(scope="module")
def problems(task):
    return task.load("validation")


def gold_answer(p, support=None, answer=None):
    return format_answer(p.data["support"] if support is None else support,
                         p.data["answer"] if answer is None else answer)


def test_local_slice_loads_with_hop_counts(task, problems):
    assert len(problems) == 150
    assert Counter(p.meta["num_hops"] for p in problems) == {2: 109, 3: 24, 4: 17}
    assert len({p.id for p in problems}) == 150
    assert problems[0].id == "2hop__574419_270105"
    assert problems[0].data["support"] == [8, 1]  # decomposition order, not paragraph order
    assert [p.id for p in task.load("test")] == [p.id for p in problems]
    assert len(task.load("test", limit=7)) == 7
    json.dumps(problems[0].data)  # Problem.data must be JSON-serialisable


def test_sampling_defaults(task):
    assert (task.default_temperature, task.default_top_p) == (0.7, 1.0)
    assert task.component_names == ("hop_1", "hop_2", "hop_3", "hop_4", "answer_f1")


def test_gold_answer_scores_all_ones_on_every_item(task, problems):
    for p in problems:
        r = task.reward(p, task.parse(gold_answer(p))[0])
        assert r.tolist() == [1.0] * 5, p.id
        assert task.scalar(r) == pytest.approx(1.0)
        for alias in p.data["aliases"]:
            assert task.reward(p, gold_answer(p, answer=alias))[4] == 1.0


def test_dropping_a_citation_lowers_exactly_that_hop(task, problems):
    for p in problems:
        sup = p.data["support"]
        for i in range(len(sup)):
            r = task.reward(p, gold_answer(p, support=sup[:i] + sup[i + 1:]))
            want = [1.0] * 5
            want[i] = 0.0
            assert r.tolist() == want, (p.id, i)


def test_only_first_four_distinct_citations_count(task, problems):
    p = next(q for q in problems if q.meta["num_hops"] == 2)
    sup = p.data["support"]
    distractors = [i["idx"] for i in p.data["paragraphs"] if i["idx"] not in sup][:4]
    # cite-everything: four distractors first push the gold paragraphs past the cap
    assert task.reward(p, gold_answer(p, support=distractors + sup)).tolist() == [0, 0, 1, 1, 1]
    # repeats count once, so the gold citations after them still fit in the first 4 distinct
    assert task.reward(p, gold_answer(p, support=[distractors[0]] * 5 + sup)).tolist() == [1] * 5
    assert cited_indices("3, 3, [7] and 12; 1, 99") == [3, 7, 12, 1]
    assert cited_indices("") == [] and cited_indices(None) == []


def test_hops_beyond_the_question_are_one_and_answer_f1(task, problems):
    p2 = next(q for q in problems if q.meta["num_hops"] == 2)
    p4 = next(q for q in problems if q.meta["num_hops"] == 4)
    assert task.reward(p2, gold_answer(p2, support=[])).tolist() == [0, 0, 1, 1, 1]
    assert task.reward(p4, gold_answer(p4, support=[])).tolist() == [0, 0, 0, 0, 1]
    # a wrong answer keeps the hop credit but loses F1
    assert task.reward(p2, gold_answer(p2, answer="zzz qqq")).tolist() == [1, 1, 1, 1, 0]
    # SQuAD F1: "Stanley" vs "Stanley town" -> P=1/2, R=1 -> 2/3; articles/punctuation/case ignored
    assert p2.data["answer"] == "Stanley" and not p2.data["aliases"]
    assert task.reward(p2, gold_answer(p2, answer="Stanley town"))[4] == pytest.approx(2 / 3)
    assert task.reward(p2, gold_answer(p2, answer="The  STANLEY.")).tolist() == [1] * 5


def test_missing_answer_is_all_zeros(task, problems):
    p = problems[0]
    sup = ", ".join(map(str, p.data["support"]))
    assert task.reward(p, f"<support>{sup}</support>").tolist() == [0] * 5
    assert task.parse(f"<support>{sup}</support> no answer")[0] is None
    assert task.reward(p, None).tolist() == [0] * 5
    # paper (default): the first tags win even inside <think>, and an empty answer earns nothing
    done = f"<think><support>0</support><answer>x</answer></think>{gold_answer(p)}"
    assert task.reward(p, task.parse(done)[0]).tolist() == [0, 0, 1, 1, 0]
    assert task.parse(f"<support>{sup}</support><answer> </answer>")[0] is None
    # lenient: an answer drafted inside <think> only does not count; the one after it does
    lenient = get_task("musique", parse="lenient")
    assert lenient.parse("<think><answer>x</answer></think>")[0] is None
    assert lenient.reward(p, lenient.parse(done)[0]).tolist() == [1] * 5
    assert lenient.reward(p, f"<support>{sup}</support><answer></answer>").tolist() == [1, 1, 1, 1, 0]


def test_paper_citations_and_normalisation(task, problems):
    from vpo_harness.benchmarks.musique import paper_cited
    from vpo_harness.benchmarks.textnorm import authors_normalize

    assert paper_cited("8, 1, 25") == [8, 1, 25] and paper_cited("[8] [1]") == [] and paper_cited("8 and 1") == []
    assert paper_cited("8 1") == [] and paper_cited(" 3 ,x, 4 ") == [3, 4] and paper_cited(None) == []
    assert authors_normalize("the-Stanley", strip_articles=True) == "stanley"       # articles before punctuation
    assert authors_normalize("The Stanley.", strip_articles=False) == "the stanley"
    p = problems[0]
    sup = ", ".join(map(str, p.data["support"]))
    lenient = get_task("musique", parse="lenient")
    text = f"<support>[{sup.replace(', ', '] [')}]</support><answer>{p.data['answer']}</answer>"
    assert task.reward(p, task.parse(text)[0]).tolist() == [0, 0, 1, 1, 1]
    assert lenient.reward(p, lenient.parse(text)[0]).tolist() == [1] * 5
    with pytest.raises(ValueError):
        get_task("musique", parse="loose")


def test_squad_normalisation_and_f1():
    from vpo_harness.benchmarks.textnorm import best_token_f1, squad_normalize, token_f1

    assert squad_normalize("The  Eiffel-Tower, (Paris)!") == "eiffeltower paris"
    assert squad_normalize("an apple a day") == "apple day" and squad_normalize(None) == ""
    assert token_f1("x y z", "y z w") == pytest.approx(2 / 3) and token_f1("a b c", "b c d") == pytest.approx(0.8)
    assert token_f1("b b", "b") == pytest.approx(2 / 3)  # multiset overlap, not set overlap
    assert token_f1("the", "Paris") == 0 and token_f1("", "") == 1
    assert best_token_f1("NYC", ["New York City", "nyc"]) == 1 and best_token_f1("x", []) == 0


def test_scalar_weights_answer_three_times_and_vectorises(task):
    r = np.array([1, 0, 1, 1, 0.5])
    assert task.scalar(r) == pytest.approx((3 + 1.5) / 7)
    batch = np.random.default_rng(0).random((3, 4, 5))
    s = task.scalar(batch)
    assert s.shape == (3, 4)
    assert s[2, 1] == pytest.approx((batch[2, 1, :4].sum() + 3 * batch[2, 1, 4]) / 7)


def test_multi_answer_parsing(task, problems):
    p = problems[0]
    g = gold_answer(p)
    chain = f"shared reasoning\n<response_1>{g}</response_1>\n<response_3>{gold_answer(p, answer='x')}</response_3>"
    ans = task.parse(chain, 3)
    assert len(ans) == 3 and ans[1] is None
    assert task.reward(p, ans[0]).tolist() == [1] * 5
    assert task.reward(p, ans[2]).tolist() == [1, 1, 1, 1, 0]
    truncated = f"<response_1>{g}</response_1><response_2><support>1</support><answer>Stan"
    assert task.parse(truncated, 3)[0] is not None and task.parse(truncated, 3)[1:] == [None, None]
    # a response without a closed <answer> is a missing answer
    assert task.parse("<response_1><support>1</support></response_1>", 1) == [None]


def test_prompts(task, problems):
    p = problems[0]
    single = task.prompt(p)
    assert [m["role"] for m in single] == ["user"]
    text = single[0]["content"]
    assert "[1] (Title: Mountrail County Courthouse) The Mountrail" in text
    assert p.data["question"] in text and "<support>" in text and "<answer>" in text
    assert text.startswith("Read the paragraphs below and answer the multi-hop question. Identify which")
    assert text.endswith("indices (e.g., 3, 7, 12)</support>\n<answer>your answer</answer>")   # the authors' prompt
    multi = task.multi_prompt(p, 4)[0]["content"]
    assert multi.endswith("Give 4 different answers in <response_i>...</response_i> tags, each with "
                          "<support>indices</support> and <answer>answer</answer>.")
    assert multi[: text.index("First reason")] == text[: text.index("First reason")]
    compact = task.multi_prompt(p, 4, style="compact")[0]["content"]
    assert "<response_4>" in compact and "<response_5>" not in compact
    assert task.prompt(p, style="compact")[0]["content"] != text
    with pytest.raises(ValueError):
        task.prompt(p, style="nope")


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=5))
def test_parse_and_reward_never_raise(task, problems, text, m):
    p = problems[0]
    for a in task.parse(text) + task.parse(text, m):
        r = task.reward(p, a)
        assert r.shape == (5,) and np.all((r >= 0) & (r <= 1))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["<support>", "</support>", "<answer>", "</answer>", "<think>", "</think>",
                                 "<response_1>", "</response_1>", "1", ",", " ", "99999999999999", "x"])))
def test_parse_never_raises_on_tag_soup(task, problems, parts):
    text = "".join(parts)
    for a in task.parse(text, 2) + task.parse(text):
        assert task.reward(problems[0], a).shape == (5,)


# ---- splits and options -------------------------------------------------------------------------

def test_hop_stratified_split_on_local_slice_says_it_is_short():
    t = MuSiQue(hop_stratified=True, seed=0)
    with pytest.warns(UserWarning, match="24 of 100 3-hop"):
        ps = t.load("validation")
    assert Counter(p.meta["num_hops"] for p in ps) == {2: 100, 3: 24, 4: 17}
    assert "17 of 100 4-hop" in t.describe()["selection_note"]


def test_hop_stratified_selection_is_seeded():
    def ids(seed):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # 10 per hop exists: no shortfall warning allowed
            return [p.id for p in MuSiQue(hop_stratified=True, per_hop=10, seed=seed).load("test")]
    a, b, c = ids(0), ids(0), ids(1)
    assert a == b and a != c and len(a) == 30
    assert Counter(i.split("hop")[0] for i in a) == {"2": 10, "3": 10, "4": 10}


def _rows():
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()[:3]]


def _write(tmp_path, rows, name="m.jsonl"):
    f = tmp_path / name
    f.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return f


def test_answerable_filter(tmp_path):
    rows = _rows()
    rows[1]["answerable"] = False
    for step in rows[1]["question_decomposition"]:
        step["paragraph_support_idx"] = None
    f = _write(tmp_path, rows)
    assert [p.id for p in MuSiQue().load("test", path=str(f))] == [rows[0]["id"], rows[2]["id"]]
    kept = MuSiQue(answerable_only=False).load("test", path=str(f))
    assert len(kept) == 3 and kept[1].data["support"] == []


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.pop("answer"), "'answer'"),
    (lambda r: r.__setitem__("answer_aliases", "x"), "'answer_aliases'"),
    (lambda r: r["paragraphs"][3].pop("title"), "'paragraphs[3].title'"),
    (lambda r: r["question_decomposition"][1].__setitem__("paragraph_support_idx", "8"),
     "'question_decomposition[1].paragraph_support_idx'"),
    (lambda r: r["question_decomposition"][0].__setitem__("paragraph_support_idx", 77),
     "'question_decomposition[0].paragraph_support_idx'"),
])
def test_malformed_row_names_file_line_field(tmp_path, mutate, field):
    rows = _rows()
    mutate(rows[1])
    f = _write(tmp_path, rows)
    with pytest.raises(DataError) as err:
        MuSiQue().load("test", path=str(f))
    msg = str(err.value)
    assert str(f) in msg and "line 2" in msg and field in msg


def test_bad_json_line_and_parquet_rows(tmp_path):
    rows = _rows()
    f = _write(tmp_path, [rows[0], "{not json", rows[2]])
    with pytest.raises(DataError, match="line 2"):
        MuSiQue().load("test", path=str(f))
    import pandas as pd
    pq = tmp_path / "m.parquet"
    pd.DataFrame(rows).to_parquet(pq)
    assert [p.id for p in MuSiQue().load("test", path=str(pq))] == [r["id"] for r in rows]
    rows[2]["question_decomposition"] = []  # (a parquet column cannot mix types; an empty list can be bad)
    pd.DataFrame(rows).to_parquet(pq)
    with pytest.raises(DataError, match=r"m.parquet, line 3, field 'question_decomposition'"):
        MuSiQue().load("test", path=str(pq))


def test_hub_path_goes_through_datasets(monkeypatch):
    import datasets

    calls = []

    def fake_load(hub_id, split=None, **kw):
        calls.append((hub_id, split))
        return _rows()

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    ps = MuSiQue(hub=True).load("test")
    assert calls == [("dgslibisey/MuSiQue", "validation")] and len(ps) == 3
    assert len(MuSiQue().load("train", path="dgslibisey/MuSiQue")) == 3
    assert calls[-1] == ("dgslibisey/MuSiQue", "train")

    def offline(*a, **k):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="Pass path="):
        MuSiQue().load("train")
