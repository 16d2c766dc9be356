"""TRL runs that survive a kill -9 and take GRPOConfig's own settings.

A run killed after its first checkpoint and then re-run with the same command must end with the very
weights of an uninterrupted run of the same seed (TRL restores optimizer, scheduler, RNG states and the
data order; our advantages' weights are seeded by the step). On the bundled tiny Maze policy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("trl")

from vpo_harness.harness.app.cli import main  # noqa: E402
from vpo_harness.harness.core.paths import child_pythonpath  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# lr 1e-4 so four steps move the weights well past float noise (the equality below is then meaningful)
INIT = "maze-tiny-warm"   # the warm start: its routes vary, so a group of two rarely ties and four steps move it
ARGS = ["train", "--engine", "trl", "--task", "maze", "--method", "grpo", "--init", INIT, "--limit", "8",
        "--prompts-per-step", "2", "--group-size", "2", "--rl-steps", "4", "--save-every", "2",
        "--max-completion-length", "40", "--threads", "1", "--rl-lr", "1e-4"]

KILLER = """
import os, signal, sys
from transformers import TrainerCallback
import vpo_harness.training.trl_vpo as T
from vpo_harness.harness.app.cli import main

class Kill(TrainerCallback):          # kill -9 after step 3: checkpoint-2 is on disk, step 3 is lost
    def on_step_end(self, args, state, control, **kw):
        if state.global_step == 3:
            os.kill(os.getpid(), signal.SIGKILL)

run = T.train_trl
T.train_trl = lambda cfg, trainer_hook=None: run(cfg, trainer_hook=lambda t: t.add_callback(Kill()))
sys.exit(main(sys.argv[1:]))
"""


def _count_steps(fn) -> list[int]:
    """Global steps that ``fn``'s TRL run executed (a resumed run starts after its checkpoint)."""
    from transformers import TrainerCallback

    import vpo_harness.training.trl_vpo as T

    seen: list[int] = []

    class Count(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            seen.append(int(state.global_step))

    run = T.train_trl
    T.train_trl = lambda cfg, trainer_hook=None: run(cfg, trainer_hook=lambda t: t.add_callback(Count()))
    try:
        assert fn() == 0
    finally:
        T.train_trl = run
    return seen


def _weights(ckpt: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(ckpt / "model.safetensors"))


@pytest.mark.integration
def test_killed_run_resumes_to_the_uninterrupted_weights(tmp_path):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    proc = subprocess.run([sys.executable, "-c", KILLER, *ARGS, "--out", str(killed)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert [p.name for p in (killed / "trl").glob("checkpoint-*")] == ["checkpoint-2"]
    assert not (killed / "checkpoint").exists()
    steps_run = _count_steps(lambda: main(ARGS + ["--out", str(killed)]))    # the same command again: resumes
    assert steps_run == [3, 4], steps_run                           # from checkpoint-2, not from scratch
    assert main(ARGS + ["--out", str(clean)]) == 0
    a, b = _weights(killed / "checkpoint"), _weights(clean / "checkpoint")
    init = _weights(REPO / "checkpoints" / INIT)
    assert max((b[k] - init[k]).abs().max().item() for k in b) > 1e-4, "training did not move the weights"
    assert all(torch.equal(a[k], b[k]) for k in b)
    rows = lambda p: [json.loads(x) for x in (p / "trl_curves.jsonl").read_text().splitlines()]  # noqa: E731
    ra, rb = rows(killed), rows(clean)
    assert [r["round"] for r in ra] == [1, 2, 3, 4]
    assert [r["reward"] for r in ra] == [r["reward"] for r in rb]
    assert not any("reward_std" in r or "frac_reward_zero_std" in r for r in ra)
    assert all("trl/summed_reward_std" in r and "vpo/adv_abs" in r for r in ra)


def test_resume_with_other_settings_and_bad_trl_args_are_one_line(tmp_path, capsys):
    out = tmp_path / "r"
    (out / "trl" / "checkpoint-2").mkdir(parents=True)
    for f in ("trainer_state.json", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (out / "trl" / "checkpoint-2" / f).write_text("{}")
    from vpo_harness.training.trl_vpo import TRLVPOConfig

    (out / "trl_vpo_config.json").write_text(json.dumps({**TRLVPOConfig().__dict__, "method": "vpo"}, default=str))
    for argv, msg in ((ARGS + ["--out", str(out)], "holds a TRL run with init="),
                      (ARGS + ["--out", str(tmp_path / "x"), "--trl-args", "bf16=true,gradient_acumulation_steps=2"],
                       "gradient_acumulation_steps: not a field of TRL's GRPOConfig (did you mean "
                       "gradient_accumulation_steps?)"),
                      (ARGS + ["--out", str(tmp_path / "x"), "--trl-args", "learning_rate=0.1"], "use --rl-lr"),
                      (ARGS + ["--out", str(tmp_path / "x"), "--lora", "rank=8"], "--lora rank: not a field"),
                      (ARGS + ["--out", str(tmp_path / "x"), "--trl-args", "gradient_accumulation_steps=3"],
                       "not divisible")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1, err


@pytest.mark.integration
def test_bf16_accumulation_tensorboard_and_lora_on_cpu(tmp_path):
    pytest.importorskip("peft")
    pytest.importorskip("tensorboard")
    seen = {}

    import vpo_harness.training.trl_vpo as T

    run = T.train_trl

    def spy(cfg, trainer_hook=None):
        def hook(t):
            seen.update(ga=t.args.gradient_accumulation_steps, bs=t.args.per_device_train_batch_size,
                        bf16=t.args.bf16, report=list(t.args.report_to), peft=type(t.model).__name__,
                        trainable=sum(p.numel() for p in t.model.parameters() if p.requires_grad),
                        total=sum(p.numel() for p in t.model.parameters()))
        return run(cfg, trainer_hook=hook)

    T.train_trl = spy
    try:
        out = tmp_path / "lora"
        argv = ARGS[:]
        argv[argv.index("--rl-steps") + 1] = "2"
        assert main(argv + ["--out", str(out), "--trl-args", "bf16=true,gradient_accumulation_steps=2,report_to=tensorboard",
                            "--lora", "r=4,lora_alpha=8,target_modules=q_proj+v_proj"]) == 0
    finally:
        T.train_trl = run
    assert seen["ga"] == 2 and seen["bs"] == 2 and seen["bf16"] is True and seen["report"] == ["tensorboard"]
    assert seen["peft"].startswith("Peft") and 0 < seen["trainable"] < seen["total"] / 10
    assert list((out / "trl").rglob("events.out.tfevents.*")), "no tensorboard event file"
    ckpt = out / "checkpoint"
    assert not (ckpt / "adapter_config.json").exists()             # merged: a plain model `vpo run` loads
    w, init = _weights(ckpt), _weights(REPO / "checkpoints" / INIT)
    assert set(w) == set(init)
    changed = [k for k in w if not torch.equal(w[k].float(), init[k].float())]
    assert changed and all("q_proj" in k or "v_proj" in k for k in changed)
