"""`vpo train --engine verl` decides from the exported data: token limits that keep every prompt whole,
a validation set disjoint from training, the user's Hydra overrides, a loadable model path. Checked by
composing the written launch with verl 0.9.1's own ``ppo_trainer`` config for every task."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.training import verl_plan as V

REPO = Path(__file__).resolve().parents[2]
EUREQA = REPO / "tests" / "benchmarks" / "fixtures" / "eureqa_synthetic.jsonl"

# (task, argv, expected validation) per task: offline data only
CASES = {
    "maze": (["--task", "maze", "--limit", "20", "--init", "maze-tiny-vpo", "--method", "multi_rlvr"], "split val"),
    "musique": (["--task", "musique", "--split", "validation", "--init", "hf:smollm2-135m"], "held out"),
    "toolrl": (["--task", "toolrl", "--split", "sft", "--limit", "40", "--init", "smollm2-135m", "--method", "grpo"],
               "split test"),
    "eureqa": (["--task", "eureqa", "--split", "train", "--data-path", str(EUREQA), "--init", "smollm2-135m"],
               "held out"),
    "livecodebench": (["--task", "livecodebench", "--split", "train", "--init", "smollm2-135m", "--method", "grpo"],
                      "split test"),
}


def _n_tokens(tok, prompt) -> int:
    """Tokens of a prompt as verl's RLHFDataset counts them (chat template, generation prompt)."""
    ids = tok.apply_chat_template([dict(m) for m in prompt], add_generation_prompt=True, tokenize=True)
    return len(ids["input_ids"] if hasattr(ids, "keys") else ids)


def _one_line_error(argv: list[str], capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    return err


@pytest.mark.integration
@pytest.mark.parametrize("task", list(CASES))
def test_launch_keeps_every_prompt_and_validates_on_other_problems(task, tmp_path, capsys):
    pytest.importorskip("verl")
    argv, how = CASES[task]
    out = tmp_path / task
    assert main(["train", "--engine", "verl", *argv, "--out", str(out), "--no-launch",
                 "--verl-args", "trainer.save_freq=7,trainer.logger=[console,tensorboard]"]) == 0
    printed = capsys.readouterr().out
    assert "token limits: data.max_prompt_length=" in printed and how in printed
    from vpo_harness.training.verl_export import VerlLaunch, overrides

    launch = VerlLaunch(**json.loads((out / "launch.json").read_text()))
    cfg = V.compose(overrides(launch))
    model = cfg.actor_rollout_ref.model.path
    assert (Path(model) / "config.json").is_file(), model          # a folder verl can load, not a spec
    assert cfg.trainer.save_freq == 7 and list(cfg.trainer.logger) == ["console", "tensorboard"]
    assert cfg.actor_rollout_ref.rollout.prompt_length == cfg.data.max_prompt_length
    script = (out / "launch.sh").read_text()
    assert f"data.max_prompt_length={cfg.data.max_prompt_length}" in script and "trainer.save_freq=7" in script
    tok, ctx = V.load_tokenizer(model)
    train, val = pd.read_parquet(cfg.data.train_files), pd.read_parquet(cfg.data.val_files)
    assert len(train) and len(val)
    ids = {i["problem_id"] for i in train.extra_info}
    assert not ids & {i["problem_id"] for i in val.extra_info}
    lengths = [_n_tokens(tok, p) for p in list(train.prompt) + list(val.prompt)]
    assert max(lengths) <= cfg.data.max_prompt_length < max(lengths) + V.ROUND_TO
    assert cfg.data.max_prompt_length + cfg.data.max_response_length <= ctx


def test_overlapping_validation_context_and_bad_overrides_are_one_line(tmp_path, capsys):
    pytest.importorskip("verl")
    base = ["train", "--engine", "verl", "--task", "maze", "--limit", "6", "--init", "maze-tiny-vpo",
            "--out", str(tmp_path / "r"), "--no-launch"]
    err = _one_line_error(base + ["--val-split", "train"], capsys)
    assert "shares 6 of its" in err
    err = _one_line_error(base + ["--max-completion-length", "1000"], capsys)
    assert "exceed the model's context of 512" in err
    err = _one_line_error(base + ["--verl-args", "data.max_prompt_length=64"], capsys)
    assert "shorter than the longest prompt" in err
    err = _one_line_error(base + ["--verl-args", "trainer.no_such_key=1"], capsys)
    assert "rejects the launch overrides" in err and "no_such_key" in err
    err = _one_line_error(base[:8] + ["maze-tiny-nope"] + base[9:], capsys)
    assert "--init maze-tiny-nope: not a zoo model" in err
    # a hold-out is disjoint and the same on every export
    assert main(base + ["--val-holdout", "2"]) == 0
    d = tmp_path / "r" / "data"
    tr, va = (set(x["problem_id"] for x in pd.read_parquet(d / f).extra_info) for f in ("train.parquet", "val.parquet"))
    assert len(tr) == 4 and len(va) == 2 and not tr & va


def test_limits_round_up_and_refuse_what_does_not_fit():
    lim = V.plan_limits([100, 5067, 300], context=8192, response=None)
    assert (lim.max_prompt_length, lim.max_response_length) == (5120, 2048)
    assert V.plan_limits([5067], context=None, response=512).max_response_length == 512
    assert V.plan_limits([128], context=4096, response=100).max_prompt_length == 128
    with pytest.raises(ValueError, match="exceed the model's context of 6000"):
        V.plan_limits([5067], context=6000, response=2048)
    with pytest.raises(ValueError, match="cannot hold the longest prompt"):
        V.plan_limits([9000], context=8192, response=None)
    assert V.plan_limits([300], context=None, response=10, prompt=256, filter_overlong=True).max_prompt_length == 256


def test_verl_args_split_and_merge():
    ov = V.split_overrides("a.b=1,trainer.logger=[console,wandb],+x.y='p,q',~c.d")
    assert ov == ["a.b=1", "trainer.logger=[console,wandb]", "+x.y='p,q'", "~c.d"]
    merged = V.merge_overrides(["a.b=0", "trainer.logger=[console]", "k=2"], ov)
    assert merged == ["a.b=1", "trainer.logger=[console,wandb]", "k=2", "+x.y='p,q'", "~c.d"]
    with pytest.raises(ValueError, match="'oops' is not key=value"):
        V.split_overrides("a=1,oops")


def test_resolve_model_gives_loadable_paths(tmp_path):
    p = V.resolve_model("hf:maze-tiny-grpo")
    assert Path(p).is_absolute() and (Path(p) / "config.json").is_file()
    assert V.resolve_model("Qwen/Qwen3-4B") == "Qwen/Qwen3-4B"
    assert V.resolve_model(f"hf:{REPO / 'checkpoints' / 'maze-tiny-vpo'}") == str(REPO / "checkpoints" / "maze-tiny-vpo")
    with pytest.raises(ValueError, match="no config.json"):
        V.resolve_model(str(tmp_path))
