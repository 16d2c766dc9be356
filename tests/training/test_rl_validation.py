"""The RL trainer's validation loop end to end on a tiny model, and the model card's validation section."""
from __future__ import annotations

import dataclasses
import json

import pytest

from vpo_harness.training.model import build_model, build_tokenizer, save_checkpoint
from vpo_harness.training.model_card import validation_section

TINY = dict(hidden=32, layers=1, heads=2, intermediate=64)


def test_card_says_when_the_warm_start_was_not_beaten(tmp_path):
    rows = [{"step": s, "objective": v, "best_at_30": v, "mean_scalar": v / 3, "selection": "best_at_30",
             "problems": 50, "first_answer_parse_rate": 0.9} for s, v in ((0, 0.5), (10, 0.4), (20, 0.45))]
    (tmp_path / "val_curves.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "val_choice.json").write_text(json.dumps({"chosen_step": 0, "stopped_early": True}))
    md = validation_section(tmp_path)
    assert "| 10 | 0.4000 |" in md and "Chosen step: 0" in md and "did not beat its warm start" in md
    rows[1]["objective"] = 0.6
    (tmp_path / "val_curves.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "val_choice.json").write_text(json.dumps({"chosen_step": 10, "stopped_early": False}))
    md = validation_section(tmp_path)
    assert "Chosen step: 10" in md and "did not beat" not in md
    assert validation_section(tmp_path / "nothing") == ""


@pytest.mark.integration
def test_rl_with_prefixes_and_validation_keeps_the_best_step(tmp_path):
    from vpo_harness.training.rl import RLConfig, train_rl

    tok = build_tokenizer()
    init = save_checkpoint(build_model(tok, seed=0, **TINY), tok, tmp_path / "init")
    cfg = RLConfig(init=str(init), out=str(tmp_path / "rl"), method="grpo", steps=3, limit=2, augment=False,
                   prompts_per_step=2, group_size=2, max_new_tokens_single=6, max_new_tokens_multi=6,
                   threads=1, save_every=1, prefix_fraction=1.0, val_every=1, val_limit=2, patience=5, select="val")
    final = train_rl(cfg)
    out = tmp_path / "rl"
    rl_rows = [json.loads(x) for x in (out / "rl_curves.jsonl").read_text().splitlines()]
    assert [r["prefixed_groups"] for r in rl_rows] == [2, 2, 2]
    val = [json.loads(x) for x in (out / "val_curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in val] == [0, 1, 2, 3] and all(r["selection"] == "mean_scalar" for r in val)
    choice = json.loads((out / "val_choice.json").read_text())
    best = max(val, key=lambda r: (r["objective"], -r["step"]))
    assert choice["chosen_step"] == best["step"] and final == out / "best"
    assert json.loads((final / "vpo_training.json").read_text())["step"] == best["step"]
    assert "Validation curve" in (final / "README.md").read_text()
    # resuming a finished run evaluates nothing again
    train_rl(cfg)
    assert len((out / "val_curves.jsonl").read_text().splitlines()) == 4
    # the authors' rule (the default): the result is the last step; the best step stays beside it as best/
    last_cfg = dataclasses.replace(cfg, out=str(tmp_path / "last"), select="last")
    final = train_rl(last_cfg)
    choice = json.loads((tmp_path / "last" / "val_choice.json").read_text())
    assert final == tmp_path / "last" / "checkpoint" and choice["chosen_step"] == choice["last_step"] == 3
    assert json.loads((final / "vpo_training.json").read_text())["step"] == 3
    assert (tmp_path / "last" / "best" / "config.json").is_file() and choice["select"] == "last"
    assert "the last step's (3)" in (final / "README.md").read_text()


@pytest.mark.integration
def test_prefilled_rollouts_are_graded_with_their_prefix(tmp_path, monkeypatch):
    """The bundled GRPO policy continues a prefilled <answer> in its format (bench/prefix_parse_rate.py:
    1.000), so its prefilled rollouts parse when they are graded as prefix + continuation; the texts
    the trainer grades (seen through a wrapper around its scorer) carry the prefix."""
    from vpo_harness.harness.core.paths import REPO_ROOT
    from vpo_harness.training import rl
    from vpo_harness.training.rl import RLConfig, train_rl

    graded: list[str] = []
    real = rl.score_chain
    monkeypatch.setattr(rl, "score_chain", lambda task, p, text, m: graded.append(text) or real(task, p, text, m))

    cfg = RLConfig(init=str(REPO_ROOT / "checkpoints" / "maze-tiny-grpo"), out=str(tmp_path / "rl"), method="grpo",
                   steps=2, limit=2, augment=False, prompts_per_step=2, group_size=4, threads=1, save_every=10,
                   prefix_fraction=1.0, targets_cache=str(tmp_path / "targets.json"))
    train_rl(cfg)
    rows = [json.loads(x) for x in (tmp_path / "rl" / "rl_curves.jsonl").read_text().splitlines()]
    assert all(r["prefixed_groups"] == 2 and r["prefix_parse_rate"] >= 0.5 for r in rows)
    assert len(graded) == 2 * 2 * 4 and all(t.startswith("<answer>") for t in graded)
