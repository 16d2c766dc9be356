"""Package a trained run as a bundled checkpoint: HF files, curves and a model card README.md.

    python -m vpo_harness.training.model_card --run runs/train/maze-vpo --sft runs/train/maze-sft \
        --dest checkpoints/maze-tiny-vpo --command "vpo train ..." --demo runs/demo \
        [--checkpoint runs/train/maze-vpo/step_0050]   # the step chosen on validation (default: last)

The evaluation section is filled later from the policy's own demo run (``vpo demo --write-cards``).

The optimizer state (state.pt) stays behind: a bundled checkpoint is for inference and must stay small.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
from pathlib import Path

from vpo_harness.benchmarks.paper_row import PAPER_MAZE_BEST30, ROW_LABELS

HF_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
            "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json", "vpo_training.json")


def _rows(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def _wall(rows: list[dict]) -> float:
    """Wall time over resumed segments: elapsed_s restarts at 0 when a run resumes."""
    if not rows:
        return float("nan")
    total, prev = 0.0, 0.0
    for r in rows:
        if r["elapsed_s"] < prev:
            total += prev
        prev = r["elapsed_s"]
    return total + prev


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---- the eval command every engine's card prints (tests run it as printed) ------------------------------------
def eval_command(model_dir: str | Path, task: str, method: str, m: int, *, task_args: dict | None = None,
                 split: str = "test") -> str:
    """`vpo run` on a checkpoint folder. No --prompt-style / --max-tokens: `vpo run` reads them from the
    folder's vpo_training.json (:func:`generation_record`), the settings the policy was trained with."""
    from vpo_harness.training.advantages import MULTI_ANSWER

    parts = ["vpo run", f"--task {task}", f"--model hf:{Path(model_dir).resolve()}", f"--split {split}"]
    if task_args:
        parts.append("--task-args " + ",".join(f"{k}={v}" for k, v in sorted(task_args.items())))
    parts += [f"-m {m if method in MULTI_ANSWER else 1}", "-n 10"]
    return " ".join(parts)


def generation_record(prompt_style: str, max_new_tokens_single: int, max_new_tokens_multi: int) -> dict:
    """The keys of vpo_training.json's ``config`` that vpo_harness.harness.core.models.zoo.generation_defaults reads."""
    return {"prompt_style": prompt_style, "max_new_tokens_single": int(max_new_tokens_single),
            "max_new_tokens_multi": int(max_new_tokens_multi)}


def validation_section(run: Path) -> str:
    """The validation curve of an RL run (val_curves.jsonl) and the step chosen on it, as markdown; says
    plainly when no evaluation beat the warm start. Empty when the run had no validation."""
    run = Path(run)
    rows = sorted(_rows(run / "val_curves.jsonl"), key=lambda r: r["step"])
    if not rows:
        return ""
    choice = json.loads((run / "val_choice.json").read_text()) if (run / "val_choice.json").exists() else {}
    key = rows[0].get("selection", "objective")
    lines = [f"\n\n## Validation curve (val split, {rows[0].get('problems', '?')} mazes, selected on `{key}`)\n",
             "| step | objective | best@30 | mean scalar | first-answer parse rate |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['step']} | {r['objective']:.4f} | {r['best_at_30']:.4f} | {r['mean_scalar']:.4f} | "
                     f"{r.get('first_answer_parse_rate', float('nan')):.3f} |")
    best = max(rows, key=lambda r: (r["objective"], -r["step"]))
    chosen = choice.get("chosen_step", best["step"])
    lines.append("")
    if choice.get("select", "val") == "last":
        lines.append(f"These weights are the last step's ({chosen}), as the authors take theirs; validation only draws "
                     f"the curve. The best evaluated step was {choice.get('best_step')} "
                     f"({key} {choice.get('best_value', float('nan')):.4f}), kept in the run folder as `best/`, a "
                     "validation-selected variant.")
    else:
        lines.append(f"Chosen step: {chosen} (highest objective; ties go to the earlier step)"
                     + ("; training stopped early, after the patience ran out." if choice.get("stopped_early") else "."))
        if chosen == 0:
            lines.append("**This method did not beat its warm start on validation**: no RL step improved the objective "
                         "over step 0, so these weights are the warm start's.")
    return "\n".join(lines) + "\n"


def objective_line(run: Path) -> str:
    """The card's first line about training: whether the method's own validation objective rose from
    the warm start to the bundled step (val_choice.json), said plainly when it did not."""
    path = Path(run) / "val_choice.json"
    if not path.exists():
        return ""
    c = json.loads(path.read_text())
    warm, got, key = c.get("warm_start_value"), c.get("chosen_value", c.get("best_value")), c.get("selection", "objective")
    if warm is None or got is None:
        return ""
    if got > warm:
        return f"Its own validation objective (`{key}`) rose from {warm:.4f} (warm start) to {got:.4f} (step {c.get('chosen_step')})."
    return (f"**Its own validation objective (`{key}`) did not rise**: {warm:.4f} at the warm start, {got:.4f} at the "
            f"bundled step {c.get('chosen_step')}.")


def warm_section(sft: Path) -> str:
    """The warm start's numbers (training/warm_eval.py), as markdown; empty when it was not evaluated."""
    from vpo_harness.training.warm_eval import FILE

    path = Path(sft) / FILE
    if not path.exists():
        return ""
    w = json.loads(path.read_text())
    lines = [f"\n## The warm start (before RL; val split, {w.get('mazes', '?')} mazes, temperature {w.get('temperature', 0.7)})\n",
             "| format | best@1 | best@30 | diversity | parse rate | prefilled parse rate |", "|---|---|---|---|---|---|"]
    for key, label in (("m1", "30 single answers"), ("m3", "10 chains x 3")):
        r = w.get(key)
        if r:
            lines.append(f"| {label} | {r['best_at_1']:.3f} | {r['best_at_30']:.3f} | {r['diversity']:.3f} | "
                         f"{r['parse_rate']:.3f} | {r['prefilled_parse_rate']:.3f} |")
    lines.append("\nIts test-split numbers are the warm-start rows of `vpo demo` (below, when filled in).")
    return "\n".join(lines) + "\n"


def write_eval_card(ckpt: Path, *, engine: str, task: str, method: str, m: int, trained: str,
                    task_args: dict | None = None) -> Path:
    """A short README.md for a freshly trained checkpoint that has none: what it is and how to evaluate it."""
    path = Path(ckpt) / "README.md"
    path.write_text(f"""---
library_name: transformers
pipeline_tag: text-generation
tags: [vpo, {task}, {method}, {engine}]
---
# {Path(ckpt).parent.name}: {method} on {task} ({engine})

{trained}

Evaluate (prompt style and token budgets come from `vpo_training.json` in this folder):
```bash
{eval_command(ckpt, task, method, m, task_args=task_args)}
```
""")
    return path


def write_verl_card(out: Path, *, task: str, method: str, m: int, prompt_style: str, max_response_length: int,
                    init: str, launch: Path, task_args: dict | None = None) -> Path:
    """README.md and vpo_training.json next to verl's launch.sh. verl saves FSDP shards; the card says
    how to merge them into a Hugging Face folder and copies the generation record into it, so the
    printed `vpo run` works on the merged folder as on any other engine's checkpoint."""
    out = Path(out)
    hf = (out / "hf").resolve()
    record = {"engine": "verl", "method": method, "task": task, "init": init,
              "config": {"task": task, "method": method, "m": m, "task_args": dict(task_args or {}),
                         **generation_record(prompt_style, max_response_length, max_response_length)}}
    (out / "vpo_training.json").write_text(json.dumps(record, indent=2, sort_keys=True))
    ckpts = (out / "checkpoints").resolve()
    path = out / "README.md"
    path.write_text(f"""# {out.name}: {method} on {task} (verl)

Launch on a GPU node (see docs/verl.md): `bash {launch.resolve()}`

Then merge the last FSDP checkpoint into a Hugging Face folder, give it the generation record, and evaluate:
```bash
python -m verl.model_merger merge --backend fsdp --local_dir "$(ls -d {ckpts}/global_step_* | sort -V | tail -1)/actor" --target_dir {hf}
cp {(out / 'vpo_training.json').resolve()} {hf}/
{eval_command(hf, task, method, m, task_args=task_args)}
```
""")
    return path


#: the paper's Maze best@30 of the four methods, closing every card's evaluation section
PAPER_LINE = ("Paper (Qwen3-4B, Maze best@30): "
              + ", ".join(f"{ROW_LABELS[m]} {v:.3f}" for m, v in PAPER_MAZE_BEST30.items())
              + "; diversity GRPO 0.003, VPO 1.01.")
#: the heading of a card's evaluation section (harness.app.demo.write_card_evaluation rewrites it)
EVAL_HEAD = "## Evaluation (`vpo demo`"


def write_card(run: Path, sft: Path, dest: Path, command: str, demo: Path | None, notes: str = "",
               checkpoint: Path | None = None, fp16: bool = False) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    src = checkpoint or run / "checkpoint"
    for f in HF_FILES:
        if (src / f).exists():
            shutil.copy2(src / f, dest / f)
    if fp16:
        from vpo_harness.training.model import store_fp16

        store_fp16(dest)
    for f in ("rl_curves.png", "rl_config.json", "val_curves.jsonl", "val_choice.json"):
        if (run / f).exists():
            shutil.copy2(run / f, dest / f)
    for f in ("sft_curves.png", "sft_curves.jsonl"):
        if (sft / f).exists():
            shutil.copy2(sft / f, dest / f)
    cfg = json.loads((run / "rl_config.json").read_text())
    rl, sf = _rows(run / "rl_curves.jsonl"), _rows(sft / "sft_curves.jsonl")
    trained = json.loads((src / "vpo_training.json").read_text()).get("step") if (src / "vpo_training.json").exists() else None
    if trained is not None:
        rl = [r for r in rl if r["step"] < trained]      # the bundled weights' own history
    (dest / "rl_curves.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rl))
    sft_cfg = json.loads((sft / "checkpoint" / "vpo_training.json").read_text())["config"] if (sft / "checkpoint" / "vpo_training.json").exists() else {}
    sft_wall, rl_wall = _wall(sf), _wall(rl)
    first, last = (rl[0], rl[-1]) if rl else ({}, {})

    def tail_mean(key: str, n: int = 5) -> float:
        v = [r[key] for r in rl[-n:] if key in r]
        return sum(v) / len(v) if v else float("nan")

    def head_mean(key: str, n: int = 5) -> float:
        v = [r[key] for r in rl[:n] if key in r]
        return sum(v) / len(v) if v else float("nan")

    eval_md = ""
    if demo is not None and (demo / "demo_table.md").exists():
        eval_md = (demo / "demo_table.md").read_text()
    size = (dest / "model.safetensors").stat().st_size / 1e6
    method = cfg["method"]
    card = f"""---
library_name: transformers
pipeline_tag: text-generation
license: apache-2.0
tags: [vpo, maze, tiny, cpu]
---
# maze-tiny-{method}

{objective_line(run)}

A {sft_cfg.get('layers', '?')}-layer LlamaForCausalLM (hidden {sft_cfg.get('hidden', '?')}, {size:.1f} MB safetensors,
character-level tokenizer for the grid, one token per move word, with a chat template) trained on CPU
for the Maze task of the VPO paper (arXiv 2605.22817) on the paper's own mazes (the authors' generator,
train split: 1000 mazes from base seed 42): a supervised warm start that knows the answer format and
reaches the exit but knows nothing of the reward (routes blind to it), then RL with the **{method}**
advantage estimator (`training/advantages.py`) and the paper's reward mode
(`convex_bonus`). It exists so `vpo demo` and the tests have a real policy to evaluate offline; it is
not a reproduction of the paper's Qwen3-4B numbers.

Prompt format: `Maze.prompt(style="compact")` (answer in the paper's format, move words:
`<answer>RIGHT RIGHT DOWN ..</answer>`) or `Maze.multi_prompt(m, style="compact")` (answers
`<route_1>RIGHT DOWN ..</route_1>..`), rendered with the tokenizer's chat template. Its answers are
scored by the paper's scorer (`parse=paper`, the default). This checkpoint was RL-trained on the
**{'multi-answer (m = ' + str(cfg['m']) + ')' if method in ('vpo', 'multi_rlvr') else 'single-answer'}** format.

## How it was trained
```
{command}
```
- Seed {cfg['seed']}; train split (1000 mazes, base seed 42){' plus their 8 dihedral images' if cfg.get('augment', True) else ''}.
- Stage 1 (the warm start, shared by the seed's four methods): SFT on valid routes blind to the reward
  ({sft_cfg.get('targets', 'search')} targets: a shortest path with random tie-breaks, or one through a random
  free waypoint), single answers and m = 3 chains of independent draws mixed 50/50, on the train mazes and
  their 8 dihedral images; {sft_cfg.get('steps', '?')} steps x batch {sft_cfg.get('batch_size', '?')}, AdamW lr {sft_cfg.get('lr', '?')} cosine; wall {sft_wall / 60:.1f} min.
- Stage 2: {len(rl)} RL steps x {cfg['prompts_per_step']} prompts x G = {cfg['group_size']} rollouts at temperature
  {cfg['temperature']}, PPO-clip {cfg['clip']} with dual-clip {cfg.get('clip_ratio_c', 0)}, {cfg.get('loss_agg', 'seq-mean')} loss,
  low-variance KL {cfg['kl_coef']} to the warm start, AdamW lr {cfg['lr']}, truncated rollouts {cfg.get('truncated_reward')}
  {'(K = ' + str(cfg['K']) + ' Dirichlet(' + str(cfg['alpha']) + ') weights per group, duplicates removed)' if method == 'vpo' else ''}; wall {rl_wall / 60:.1f} min.
  Departures from the authors' settings: docs/training_protocol.md.
- Machine: {_cpu()}, {os.cpu_count()} logical CPUs shared with other jobs, torch {cfg.get('threads', 2)} threads.

## Training curves
![RL curves](rl_curves.png) ![SFT curves](sft_curves.png)

| RL, mean of first / last 5 steps | first | last |
|---|---|---|
| task scalar (all answers) | {head_mean('task_scalar'):.3f} | {tail_mean('task_scalar'):.3f} |
| exit reached | {head_mean('completion'):.3f} | {tail_mean('completion'):.3f} |
| diversity (pairwise L1 within a group) | {head_mean('diversity'):.3f} | {tail_mean('diversity'):.3f} |
| KL to warm start | {head_mean('kl'):.4f} | {tail_mean('kl'):.4f} |
| entropy (nats/token) | {head_mean('entropy'):.3f} | {tail_mean('entropy'):.3f} |

Raw curves: `rl_curves.jsonl`, `sft_curves.jsonl`.
{warm_section(sft)}{validation_section(run)}
{EVAL_HEAD}: the paper's 100 test mazes, pool of 30, temperature 0.7, top-p 1.0)
VPO/Multi-RLVR: 10 chains x 3 answers; single-answer models: 30 samples. best@k on the task scalar
(mean of completion, gold, diamond, avoid_lava; `convex_bonus` reward, the paper's scorer), mean ±
standard error over mazes.

{eval_md or '(not evaluated yet)'}

{PAPER_LINE}
{notes}
"""
    (dest / "README.md").write_text(card)
    return dest


def write_warm_card(sft: Path, dest: Path, command: str, fp16: bool = False) -> Path:
    """Package a warm start (``maze-tiny-warm[-s<seed>]``): its weights and a card with how it was trained
    and what it can do before RL (:func:`warm_section`); `vpo demo` fills in its test rows."""
    sft, dest = Path(sft), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    src = sft / "checkpoint"
    for f in HF_FILES:
        if (src / f).exists():
            shutil.copy2(src / f, dest / f)
    if fp16:
        from vpo_harness.training.model import store_fp16

        store_fp16(dest)
    for f in ("sft_curves.png", "sft_curves.jsonl", "warm_eval.json"):
        if (sft / f).exists():
            shutil.copy2(sft / f, dest / f)
    cfg = json.loads((src / "vpo_training.json").read_text())["config"]
    (dest / "README.md").write_text(f"""---
library_name: transformers
pipeline_tag: text-generation
license: apache-2.0
tags: [vpo, maze, tiny, cpu, warm-start]
---
# maze-tiny-warm (training seed {cfg.get('seed')})

The warm start that the four methods of training seed {cfg.get('seed')} (GRPO, Max-at-K, Multi-RLVR, VPO)
begin RL from. A {cfg.get('layers', '?')}-layer LlamaForCausalLM trained by SFT on valid Maze routes that know
nothing of the reward ({cfg.get('targets')} targets: a shortest S->E path with random tie-breaks, or a shortest
path through a random free waypoint with probability {cfg.get('detour')}; gold, diamonds, lava and the bonus
tile play no part), single answers and chains of m = {cfg.get('m')} independent draws, {cfg.get('prefix_fraction')} of
the examples prefilled. It learns the answer format and to reach the exit, not which trade-offs pay: that is
left to RL, as in the paper, whose methods start from a base model with no SFT.

## How it was trained
```
{command}
```
{cfg.get('steps')} steps x batch {cfg.get('batch_size')}, AdamW lr {cfg.get('lr')} (warm-up {cfg.get('warmup')}, cosine), train split
(1000 mazes, base seed 42) and their 8 dihedral images.

![SFT curves](sft_curves.png)
{warm_section(sft)}
{EVAL_HEAD}: the paper's 100 test mazes, pool of 30, temperature 0.7, top-p 1.0)

(not evaluated yet)
""")
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", default=None, help="the RL run folder (not with --warm)")
    ap.add_argument("--warm", action="store_true", help="package the warm start in --sft instead of an RL run")
    ap.add_argument("--sft", required=True)
    ap.add_argument("--dest", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--demo", default=None)
    ap.add_argument("--notes", default="")
    ap.add_argument("--checkpoint", default=None, help="checkpoint folder to bundle (default: RUN/checkpoint)")
    ap.add_argument("--fp16", action="store_true", help="store the weights in fp16 (bench/fp16_check.py)")
    a = ap.parse_args()
    if a.warm:
        print(write_warm_card(Path(a.sft), Path(a.dest), a.command, fp16=a.fp16))
        return
    if not a.run:
        ap.error("--run is required (or --warm to package a warm start)")
    print(write_card(Path(a.run), Path(a.sft), Path(a.dest), a.command, Path(a.demo) if a.demo else None,
                     Path(a.notes).read_text() if a.notes and Path(a.notes).exists() else a.notes,
                     Path(a.checkpoint) if a.checkpoint else None, fp16=a.fp16))


if __name__ == "__main__":
    main()
