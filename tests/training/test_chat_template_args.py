"""`vpo train --chat-template-args`: the trainers render rollout prompts with the same template
arguments `vpo run` uses (native: render_messages; TRL: GRPOConfig.chat_template_kwargs; verl:
data.apply_chat_template_kwargs in the launch overrides)."""
from __future__ import annotations

import json
from pathlib import Path

from vpo_harness.harness.app.cli import main


def test_verl_launch_carries_the_template_args_into_verls_config(tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    import verl
    from vpo_harness.training.verl_export import VerlLaunch, overrides

    ov = overrides(VerlLaunch(chat_template_args={"enable_thinking": False}))
    assert "+data.apply_chat_template_kwargs.enable_thinking=false" in ov
    assert not any("apply_chat_template_kwargs" in o for o in overrides(VerlLaunch()))
    cdir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=cdir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=ov)
    assert cfg.data.apply_chat_template_kwargs.enable_thinking is False


def test_trl_config_passes_chat_template_kwargs() -> None:
    from vpo_harness.training.trl_vpo import TRLVPOConfig, grpo_config

    assert grpo_config(TRLVPOConfig(chat_template_args={"enable_thinking": False})).chat_template_kwargs == {
        "enable_thinking": False}
    assert not grpo_config(TRLVPOConfig()).chat_template_kwargs


def test_vpo_train_verl_writes_the_flag_into_the_launch(tmp_path: Path) -> None:
    out = tmp_path / "verl"
    # the token limits are computed with the init model's tokenizer: a bundled one, so no hub is needed
    assert main(["train", "--engine", "verl", "--task", "maze", "--limit", "2", "--no-launch", "--init", "maze-tiny-vpo",
                 "--out", str(out), "--chat-template-args", "enable_thinking=false"]) == 0
    launch = json.loads((out / "launch.json").read_text())
    assert launch["chat_template_args"] == {"enable_thinking": False}
    assert "+data.apply_chat_template_kwargs.enable_thinking=false" in (out / "launch.sh").read_text()


def test_native_trainer_flag_parses_like_model_args() -> None:
    import argparse

    from vpo_harness.training.rl import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    assert p.parse_args(["--chat-template-args", "enable_thinking=false"]).chat_template_args == {"enable_thinking": False}
    assert p.parse_args([]).chat_template_args == {}
