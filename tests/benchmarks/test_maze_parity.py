"""Maze parity with the VPO authors' released code (``ryanboldi/vpo@767db79``, ``vpo_tasks/maze.py``).

``shared/data/maze/authors_mazes.jsonl`` holds the authors' 1,100 generated mazes with their exact
prompts; ``authors_scores.jsonl`` holds 1,600 completions with the rewards their scorer gives. Our
defaults (generator, ``style="full"`` prompts, ``parse=paper``, ``reward_mode=convex_bonus``) must
reproduce every one of them.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from vpo_harness.benchmarks.maze import Maze
from vpo_harness.harness.core.paths import shared_data_dir

MAZES = shared_data_dir() / "maze" / "authors_mazes.jsonl"
SCORES = shared_data_dir() / "maze" / "authors_scores.jsonl"


def _rows(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def splits():
    t = Maze()
    return {"test": t.load("test"), "train": t.load("train")}


def test_every_maze_cell_for_cell(splits):
    rows = _rows(MAZES)
    assert len(rows) == 1100
    from vpo_harness.benchmarks.maze_env import MazeInstance
    for row in rows:
        p = splits[row["split"]][row["index"]]
        m = MazeInstance.from_problem(p)
        got = (p.meta["seed"], m.render(), list(m.start), list(m.exit), m.budget, len(m.gold), len(m.diamond),
               len(m.lava))
        want = (row["seed"], row["grid_text"], row["start"], row["end"], row["max_steps"], row["num_gold"],
                row["num_diamond"], row["num_lava"])
        assert got == want, f"{row['split']} maze {row['index']}"
        assert row["score_mode"] == Maze().reward_mode


def test_full_prompts_character_for_character(splits):
    t = Maze()
    for row in _rows(MAZES):
        p = splits[row["split"]][row["index"]]
        assert t.prompt(p) == [{"role": "user", "content": row["prompt_single"]}], row["index"]
        assert t.multi_prompt(p, 3) == [{"role": "user", "content": row["prompt_multi_m3"]}], row["index"]


def _training_matrix(task, problem, text, m):
    """The authors' training-time chain matrix: duplicate / empty routes dropped, zero-padded to m rows."""
    answers = task.parse(text, m)
    R = task.rewards(problem, answers)
    seen, keep = set(), []
    for a, r in zip(answers, R):
        key = task.dedup_key(problem, a, r)
        if key is None or key in seen:
            continue
        seen.add(key)
        keep.append(r)
    out = np.zeros((m, task.d))
    out[: len(keep)] = keep
    return out


def test_every_scored_completion_matches(splits):
    rows = _rows(SCORES)
    assert len(rows) == 1600
    tasks = {"linear": Maze(reward_mode="linear"), "convex_bonus": Maze()}
    n = 0
    for row in rows:
        p = splits["test"][row["index"]]
        assert p.meta["seed"] == row["seed"]
        for mode, task in tasks.items():
            if row["kind"] == "chain_m3":
                got = _training_matrix(task, p, row["text"], 3)
                want = row[f"rewards_{mode}"]
            else:
                got = task.reward(p, task.parse(row["text"])[0])
                want = row[f"reward_{mode}"]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-9, err_msg=f"{row['kind']} maze {row['index']} {mode}")
            n += 1
    assert n == 3200


def test_reference_rows_discriminate():
    """The reference rows are not all zero and the default reading differs from the lenient one on them
    (so this file would catch a regression to the old conventions)."""
    rows = _rows(SCORES)
    t, lenient = Maze(), Maze(parse="lenient")
    p = Maze().load("test", limit=1)[0]
    first = [r for r in rows if r["index"] == 0]
    assert any(sum(r.get("reward_convex_bonus", [0])) > 0 for r in first)
    diffs = [r["kind"] for r in first if r["kind"] != "chain_m3"
             and not np.allclose(t.reward(p, t.parse(r["text"])[0]), lenient.reward(p, lenient.parse(r["text"])[0]))]
    assert {"shortest_letters", "two_answer_tags"} <= set(diffs)
