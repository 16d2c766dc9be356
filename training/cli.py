"""`vpo train` and `vpo demo`, registered into the harness CLI through ``add_parsers(subparsers)``.

    vpo train --task maze --method vpo --stage all --out runs/train/maze-vpo
    vpo demo                       # bundled VPO vs GRPO on the 100 test mazes, pool of 30

``train --stage sft`` builds the shared warm start, ``--stage rl`` runs RL from ``--init``, ``--stage
all`` does both (the warm start goes to ``<out>/sft`` unless ``--init`` already exists). Re-running the
same command resumes from the last checkpoint of each stage.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from training.advantages import METHODS, MULTI_ANSWER

REPO = Path(__file__).resolve().parent.parent
BUNDLED = REPO / "checkpoints"
DEMO_KS = (1, 2, 4, 8, 16, 30)


# ---- train ----------------------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    from training.rl import RLConfig, train_rl
    from training.sft import SFTConfig, train_sft

    if args.task != "maze":
        raise SystemExit(f"vpo train: only --task maze has a bundled trainer (got {args.task!r})")
    out = Path(args.out or f"runs/train/{args.task}-{args.method}")
    init = Path(args.init) if args.init else out / "sft" / "checkpoint"
    if args.stage in ("sft", "all") and not (args.stage == "all" and args.init and init.exists()):
        scfg = SFTConfig(out=str(out / "sft" if not args.init else Path(args.init).parent), task=args.task,
                         limit=args.limit, steps=args.sft_steps, batch_size=args.sft_batch_size, lr=args.sft_lr,
                         seed=args.seed, threads=args.threads, m=args.m, time_budget_s=args.sft_time_budget_s)
        init = train_sft(scfg)
        print(f"warm start: {init}")
    if args.stage in ("rl", "all"):
        rcfg = RLConfig(init=str(init), out=str(out), task=args.task, method=args.method, limit=args.limit,
                        m=args.m, steps=args.rl_steps, prompts_per_step=args.prompts_per_step,
                        group_size=args.group_size, lr=args.rl_lr, kl_coef=args.kl_coef, K=args.K,
                        alpha=args.alpha, sobol=args.sobol, seed=args.seed, threads=args.threads,
                        time_budget_s=args.rl_time_budget_s)
        print(f"policy: {train_rl(rcfg)}")
    return 0


def add_train_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("train", help="train a tiny policy (SFT warm start, then RL with one estimator)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="maze")
    p.add_argument("--method", choices=METHODS, default="vpo")
    p.add_argument("--stage", choices=("sft", "rl", "all"), default="all")
    p.add_argument("--out", default=None, help="run folder (default runs/train/<task>-<method>)")
    p.add_argument("--init", default=None, help="warm-start checkpoint for RL (default <out>/sft/checkpoint)")
    p.add_argument("--limit", type=int, default=None, help="number of train mazes (default all 1000)")
    p.add_argument("--m", type=int, default=3, help="answers per chain for multi-answer methods")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--sft-steps", type=int, default=600)
    p.add_argument("--sft-batch-size", type=int, default=32)
    p.add_argument("--sft-lr", type=float, default=2e-3)
    p.add_argument("--sft-time-budget-s", type=float, default=None)
    p.add_argument("--rl-steps", type=int, default=100)
    p.add_argument("--prompts-per-step", type=int, default=6)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--rl-lr", type=float, default=1e-4)
    p.add_argument("--kl-coef", type=float, default=1e-3)
    p.add_argument("--K", type=int, default=100, help="VPO weight vectors per prompt group")
    p.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration")
    p.add_argument("--sobol", action="store_true", help="scrambled-Sobol VPO weights")
    p.add_argument("--rl-time-budget-s", type=float, default=None)
    p.set_defaults(func=cmd_train)
    return p


# ---- demo -----------------------------------------------------------------------------------------------
def demo_config(ckpt: Path | str, multi: bool, out: Path | str, limit: int | None, batch_size: int,
                seed: int = 0) -> Any:
    """The paper's Maze protocol for one checkpoint: pool of 30 (multi-answer: 10 chains x 3 answers,
    single-answer: 30 samples), temperature 0.7, top-p 1.0, compact prompts, test split."""
    from harness.runner import RunConfig

    return RunConfig(
        task="maze", split="test", prompt_style="compact", m=3 if multi else 1, n=10 if multi else 30,
        ks=DEMO_KS, temperature=0.7, top_p=1.0, max_tokens=110 if multi else 40, seed=seed,
        model=f"hf:{ckpt}", model_args={"batch_size": batch_size}, out=str(out), limit=limit, progress=True)


def demo_configs(checkpoints: Path, out: Path, limit: int | None, batch_size: int, seed: int = 0) -> list[tuple[str, Any]]:
    """The demo protocol for every bundled checkpoint found under ``checkpoints``."""
    cfgs = []
    for name in ("vpo", "grpo", "multi_rlvr", "max_at_k"):
        ck = checkpoints / f"maze-tiny-{name}"
        if not (ck / "config.json").exists():
            continue
        cfgs.append((name.upper() if name != "max_at_k" else "Max@k",
                     demo_config(ck, name in MULTI_ANSWER, out / f"maze-tiny-{name}", limit, batch_size, seed)))
    return cfgs


def format_table(rows: list[tuple[str, dict[str, Any]]], ks: tuple[int, ...] = DEMO_KS) -> str:
    head = ["model"] + [f"best@{k}" for k in ks] + ["pass@1", "pass@30", "diversity", "mean"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, mt in rows:
        def g(key: str) -> str:
            v = mt.get(key, {})
            return f"{v['mean']:.3f}±{v['stderr']:.3f}" if v else "-"
        lines.append("| " + " | ".join([name] + [g(f"best@{k}") for k in ks]
                                       + [g("pass@1"), g(f"pass@{ks[-1]}"), g("diversity"), g("mean_scalar")]) + " |")
    return "\n".join(lines)


def cmd_demo(args: argparse.Namespace) -> int:
    import torch

    from harness.runner import run
    from harness.store import load_run

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    cfgs = demo_configs(Path(args.checkpoints), out, args.limit, args.batch_size, args.seed)
    if not cfgs:
        raise SystemExit(f"vpo demo: no bundled checkpoints under {args.checkpoints}")
    if args.only and "all" not in args.only:
        keep = {o.lower().replace("max_at_k", "max@k") for o in args.only}
        cfgs = [(n, c) for n, c in cfgs if n.lower() in keep]
    runs, rows = [], []
    t0 = time.time()
    for name, cfg in cfgs:
        t = time.time()
        folder = run(cfg)
        loaded = load_run(folder)
        runs.append((name, loaded))
        rows.append((name, loaded.results["metrics"]))
        print(f"{name}: {folder} ({time.time() - t:.0f}s)")
    table = format_table(rows)
    print(table)
    (out / "demo_table.md").write_text(table + "\n")
    (out / "demo_metrics.json").write_text(json.dumps({n: m for n, m in rows}, indent=2))
    try:
        from reports.plots import plot_best_at_k, plot_diversity

        labels = [n for n, _ in runs]
        p1 = plot_best_at_k([r for _, r in runs], out / "best_at_k.png", labels=labels,
                            title=f"Maze test ({len(runs[0][1].chains.problem_id.unique())} mazes), pool of 30")
        p2 = plot_diversity([r for _, r in runs], out / "diversity.png", labels=labels)
        print(f"plots: {p1} {p2}")
    except ImportError as exc:  # reports.plots is the lead's module; the table above still stands
        print(f"(no plots: {exc})")
    print(f"demo wall time: {time.time() - t0:.0f}s")
    return 0


def add_demo_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help="bundled tiny VPO vs GRPO on the Maze test split: best@k, pass@k, diversity")
    p.add_argument("--checkpoints", default=str(BUNDLED))
    p.add_argument("--out", default="runs/demo")
    p.add_argument("--limit", type=int, default=None, help="number of test mazes (default all 100)")
    p.add_argument("--batch-size", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", default=["vpo", "grpo"],
                   help="methods to evaluate (default: vpo grpo; 'all' adds the optional multi_rlvr, max_at_k)")
    p.set_defaults(func=cmd_demo)
    return p


def add_parsers(subparsers: Any) -> None:
    """Hook used by harness/cli.py."""
    add_train_parser(subparsers)
    add_demo_parser(subparsers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vpo")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
