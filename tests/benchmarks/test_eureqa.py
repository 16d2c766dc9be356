"""EUREQA: no real data is reachable offline, so every test here runs on SYNTHETIC fixtures in the real
schema (fixtures/eureqa_synthetic.jsonl and rows derived from it). They test the loader, the mixed split,
the answer format and the reward, not the benchmark's content."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_harness.benchmarks import DataError, get_task
from vpo_harness.benchmarks.eureqa import Eureqa, format_answer, parse_entities

FIXTURE = Path(__file__).parent / "fixtures" / "eureqa_synthetic.jsonl"


@pytest.fixture(scope="module")
def task() -> Eureqa:
    return get_task("eureqa")


@pytest.fixture(scope="module")
def problems(task):
    return task.load("test", path=str(FIXTURE))


def fixture_rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def test_fixture_is_labelled_synthetic():
    assert "synthetic" in FIXTURE.name
    assert all("SYNTHETIC" in r["_synthetic"] for r in fixture_rows())


def test_single_file_loads_as_the_split(task, problems):
    assert [p.id for p in problems] == [f"test-{i}" for i in range(5)]
    p = problems[0]
    assert p.data["entities"] == ["Robert_Rodriguez", "El_Mariachi", "Columbia_Pictures",
                                  "Culver_City,_California", "California"]
    assert p.data["masks"][0] == "Person A" and len(p.data["masks"]) == 5
    assert p.data["narrative"].split("\n")[0] == "Person A directed Film B."
    assert (task.default_temperature, task.default_top_p) == (0.7, 0.95)
    assert task.component_names == ("entity_A", "entity_B", "entity_C", "entity_D", "entity_E")


def test_gold_answer_scores_all_ones(task, problems):
    for p in problems:
        assert task.reward(p, task.parse(format_answer(p.data["entities"]))[0]).tolist() == [1.0] * 5
        spaced = [e.replace("_", " ") for e in p.data["entities"]]
        assert task.reward(p, format_answer(spaced)).tolist() == [1.0] * 5
        assert task.scalar(np.ones(5)) == 1.0


def test_normalisation(task, problems):
    p0, p1, p2 = problems[:3]
    # underscores, case, punctuation, articles, extra spaces
    assert task.reward(p0, "<entity_D> culver   city california </entity_D>").tolist() == [0, 0, 0, 1, 0]
    assert task.reward(p1, "<entity_A>author example</entity_A><entity_B>Tale of Two Examples!</entity_B>"
                       ).tolist() == [1, 1, 0, 0, 0]
    # punctuation is dropped, not turned into a space: "Example-Player" is one token
    assert task.reward(p2, "<entity_A>jan exampleplayer</entity_A>")[0] == 1
    assert task.reward(p2, "<entity_A>Jan Example Player</entity_A>")[0] == 0


def test_corruptions_lower_exactly_their_entity(task, problems):
    for p in problems:
        for i in range(5):
            wrong = list(p.data["entities"])
            wrong[i] = "Nobody_In_Particular"
            want = [1.0] * 5
            want[i] = 0.0
            assert task.reward(p, format_answer(wrong)).tolist() == want
            dropped = format_answer(p.data["entities"]).split("\n")
            del dropped[i]
            assert task.reward(p, "\n".join(dropped)).tolist() == want
    assert task.reward(problems[0], "<entity_A></entity_A>").tolist() == [0] * 5
    assert task.scalar(np.array([1, 0, 1, 0, 1.0])) == pytest.approx(0.6)


def test_parsing_single_and_multi(task, problems):
    p = problems[0]
    gold = format_answer(p.data["entities"])
    assert task.parse("no tags at all") == [None]
    assert task.reward(p, None).tolist() == [0] * 5
    # the authors' reading (default): the first closed tag in the raw text, drafts in <think> included;
    # the lenient reading drops <think> and keeps the last closed tag
    assert parse_entities("<think><entity_A>x</entity_A></think>")[0] == "x"
    assert parse_entities("<entity_A>x</entity_A> then <entity_A>y</entity_A>")[0] == "x"
    assert parse_entities("<think><entity_A>x</entity_A></think>", "lenient")[0] is None
    assert parse_entities("<entity_A>x</entity_A> then <entity_A>y</entity_A>", "lenient")[0] == "y"
    chain = f"shared thoughts <response_1>{gold}</response_1><response_3>{gold}</response_3><response_2>{gold[:40]}"
    ans = task.parse(chain, 3)
    assert ans[1] is None and ans[0] is not None and ans[2] is not None
    assert task.reward(p, ans[0]).tolist() == [1] * 5
    assert task.parse("<response_1>plain text</response_1>", 2) == [None, None]


def test_prompts(task, problems):
    p = problems[0]
    text = task.prompt(p)[0]["content"]
    assert "Person A directed Film B." in text and "entity_A: Person A" in text
    assert "<entity_E>...</entity_E>" in text and "Country F" not in text.split("Resolve")[1]
    multi = task.multi_prompt(p, 3)[0]["content"]
    assert "<response_3>" in multi and "<entity_C>" in multi
    assert task.prompt(p, style="compact")[0]["content"] != text


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=4))
def test_parse_and_reward_never_raise(task, problems, text, m):
    for a in task.parse(text) + task.parse(text, m):
        r = task.reward(problems[0], a)
        assert r.shape == (5,) and set(r.tolist()) <= {0.0, 1.0}


# ---- the paper's mixed split from local folders ------------------------------------------------------

def _synthetic_split(n: int, start: int) -> list[dict]:
    base = fixture_rows()
    return [{**base[i % len(base)], "idx": start + i} for i in range(n)]


def _folder(tmp_path: Path, n_normal=7, n_hard=11, hub_layout=False) -> Path:
    import pandas as pd

    root = tmp_path / "eureqa"
    for name, rows in (("questions_normal_5", _synthetic_split(n_normal, 0)),
                       ("questions_hard_5", _synthetic_split(n_hard, 0))):
        if hub_layout:
            (root / "data").mkdir(parents=True, exist_ok=True)
            pd.DataFrame(rows).to_parquet(root / "data" / f"{name}-00000-of-00001.parquet")
        else:
            root.mkdir(exist_ok=True)
            (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.mark.parametrize("hub_layout", [False, True])
def test_mixed_split(tmp_path, hub_layout):
    folder = _folder(tmp_path, hub_layout=hub_layout)
    t = Eureqa()
    train, test = t.load("train", path=str(folder)), t.load("test", path=str(folder))
    assert len(train) == 7 + 5 and len(test) == 6
    assert [p.id for p in train[:7]] == [f"questions_normal_5-{i}" for i in range(7)]
    perm = np.random.default_rng(0).permutation(11)
    assert [p.id for p in train[7:]] == [f"questions_hard_5-{i}" for i in perm[:5]]
    assert [p.id for p in test] == [f"questions_hard_5-{i}" for i in perm[5:]]
    # the same permutation datasets uses for Dataset.shuffle(seed=0), so hub and local splits agree
    import datasets
    assert datasets.Dataset.from_dict({"i": list(range(11))}).shuffle(seed=0)["i"] == perm.tolist()
    other = Eureqa(seed=1).load("test", path=str(folder))
    assert [p.id for p in other] != [p.id for p in test]
    raw = t.load("questions_hard_5", path=str(folder))
    assert [p.id for p in raw] == [f"questions_hard_5-{i}" for i in range(11)]


def test_paper_sizes_from_a_full_size_folder(tmp_path):
    folder = _folder(tmp_path, n_normal=428, n_hard=1363)
    t = Eureqa()
    assert (len(t.load("train", path=str(folder))), len(t.load("test", path=str(folder)))) == (1109, 682)


def test_no_data_without_hub_says_how_to_pass_a_path(monkeypatch, tmp_path):
    monkeypatch.setenv("VPO_SHARED_DATA", str(tmp_path))
    with pytest.raises(DataError, match="pass it as --data-path .*--task-args hub=true"):
        Eureqa().load("test")
    with pytest.raises(DataError, match="no file for split 'questions_hard_5'"):
        Eureqa().load("train", path=str(tmp_path))


def test_hub_loader_through_datasets(monkeypatch):
    import datasets

    asked = []

    def fake_load(hub_id, split=None, **kw):
        asked.append((hub_id, split))
        return _synthetic_split(4 if split == "questions_normal_5" else 9, 100)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    test = Eureqa(hub=True).load("test")
    assert asked == [("vincentleebang/EUREQA", "questions_hard_5")] and len(test) == 5

    def offline(*a, **k):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="ConnectionError.*--data-path"):
        Eureqa(hub=True).load("train")


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.__setitem__("entity_masks", r["entity_masks"][:5]), "'entity_masks'"),
    (lambda r: r["entities"].__setitem__(2, 3), "'entities[2]'"),
    (lambda r: r.__setitem__("idx", "1"), "'idx'"),
    (lambda r: r.pop("question"), "'question'"),
    (lambda r: r["entities"].__setitem__(0, "The"), "'entities[0]'"),
])
def test_malformed_row_names_file_line_field(tmp_path, mutate, field):
    rows = fixture_rows()
    mutate(rows[2])
    f = tmp_path / "bad.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as err:
        Eureqa().load("test", path=str(f))
    assert str(f) in str(err.value) and "line 3" in str(err.value) and field in str(err.value)


def test_duplicate_idx_is_an_error(tmp_path):
    rows = fixture_rows()
    rows[1]["idx"] = 0
    f = tmp_path / "dup.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match="line 2.*idx.*duplicate problem id"):
        Eureqa().load("test", path=str(f))
