"""Every engine's card prints a `vpo run` command that works as printed on the checkpoint it trained:
the prompt style and token budgets come from the folder's vpo_training.json, not from extra flags.

The command is run with `--limit 1 -n 2 --out TMP` appended (argparse keeps the last value), so only
the amount of work changes. verl cannot train here (CUDA): its card's merge step is replaced by a copy
of the init model, then the card's own `cp` and `vpo run` lines run as printed."""
from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "checkpoints" / "maze-tiny-vpo"


def _card_commands(readme: Path) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", readme.read_text(), flags=re.S)
    assert blocks, f"{readme} prints no command"
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip()]


def _run_eval(cmd: str, out: Path, capsys) -> dict:
    argv = shlex.split(cmd)
    assert argv[:2] == ["vpo", "run"] and "--prompt-style" not in argv and "--max-tokens" not in argv
    assert main(argv[1:] + ["--limit", "1", "-n", "2", "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "prompt style compact" in err and "vpo_training.json" in err, err[-500:]
    return json.loads((out / "config.json").read_text()) if (out / "config.json").exists() else {}


def _record(ckpt: Path) -> dict:
    return json.loads((ckpt / "vpo_training.json").read_text())["config"]


@pytest.mark.integration
def test_native_card_eval_command_runs(tmp_path, capsys):
    out = tmp_path / "native"
    assert main(["train", "--stage", "rl", "--init", str(TINY), "--out", str(out), "--rl-steps", "1",
                 "--prompts-per-step", "2", "--group-size", "2", "--limit", "2"]) == 0
    ckpt = out / "checkpoint"
    rec = _record(ckpt)
    assert (rec["prompt_style"], rec["max_new_tokens_single"], rec["max_new_tokens_multi"]) == ("compact", 40, 110)
    (cmd,) = [c for c in _card_commands(ckpt / "README.md") if c.startswith("vpo run")]
    assert f"hf:{ckpt.resolve()}" in cmd and "-m 3" in cmd
    _run_eval(cmd, tmp_path / "eval", capsys)


@pytest.mark.integration
def test_trl_card_eval_command_runs(tmp_path, capsys):
    pytest.importorskip("trl")
    out = tmp_path / "trl"
    assert main(["train", "--engine", "trl", "--task", "maze", "--method", "vpo", "--init", "maze-tiny-vpo",
                 "--limit", "4", "--prompts-per-step", "2", "--group-size", "2", "--rl-steps", "1",
                 "--max-completion-length", "110", "--threads", "1", "--out", str(out)]) == 0
    ckpt = out / "checkpoint"
    rec = _record(ckpt)
    assert (rec["prompt_style"], rec["max_new_tokens_multi"]) == ("compact", 110)
    (cmd,) = [c for c in _card_commands(ckpt / "README.md") if c.startswith("vpo run")]
    _run_eval(cmd, tmp_path / "eval", capsys)


def test_verl_card_commands_run_on_the_merged_folder(tmp_path, capsys):
    pytest.importorskip("verl")
    out = tmp_path / "verl"
    assert main(["train", "--engine", "verl", "--task", "maze", "--method", "vpo", "--init", "maze-tiny-vpo",
                 "--limit", "4", "--max-completion-length", "110", "--out", str(out), "--no-launch"]) == 0
    capsys.readouterr()
    cmds = _card_commands(out / "README.md")
    assert cmds[0].startswith("python -m verl.model_merger merge") and f"--target_dir {out.resolve() / 'hf'}" in cmds[0]
    hf = out / "hf"                                   # stands in for the merged FSDP checkpoint
    hf.mkdir()
    for f in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
              "chat_template.jinja"):
        shutil.copy2(TINY / f, hf / f)
    cp = shlex.split(cmds[1])
    assert cp[0] == "cp"
    shutil.copy2(cp[1], cp[2])
    assert _record(hf)["max_new_tokens_multi"] == 110
    _run_eval(cmds[2], tmp_path / "eval", capsys)
