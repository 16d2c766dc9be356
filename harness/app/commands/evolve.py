"""`vpo evolve`: evolutionary test-time search over a task's problems on OpenEvolve's engine
(orchestration in search/evolve.py, the search itself in search/)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from vpo_harness.harness.app.commands._args import TASK_HELP, task_ref, add_chat_template_args, add_unsafe_sandbox, apply_unsafe_sandbox, kv


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("evolve", help="evolutionary test-time search (OpenEvolve) over a task's problems")
    p.add_argument("--task", required=True, type=task_ref, help=TASK_HELP)
    p.add_argument("--model", required=True, help="openai:NAME (with --base-url) | hf:PATH_OR_ZOO | vllm:ID "
                                                  "(hf/vllm/zoo models are served by a `vpo serve` child)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server URL for openai: models; "
                   "URL1,URL2,... spreads the calls over a fleet of servers (dead ones are ejected)")
    p.add_argument("--model-args", type=kv, default={}, help="backend arguments k=v,... for the served model")
    p.add_argument("--problems", default="all", help="all | ID,ID,... | hardest:N@RUN_FOLDER[,RUN2]")
    p.add_argument("--iterations", type=int, default=20, help="iterations per problem (plus iteration 0, the seed)")
    p.add_argument("-m", "--answers", dest="m", type=int, default=1, help="answers (children) per LLM call")
    p.add_argument("--prompt-mode", choices=["evolve", "task", "prefix", "feedback"], default="evolve",
                   help="evolve: OpenEvolve's templates with the task in the system message (or the task's mutation "
                        "prompt); task: the task's own prompt (independent samples); prefix: the task's own prompt, "
                        "the policy continuing the start of a parent's answer (any model trained on the task prompt); "
                        "feedback: the task's own prompt, the parent's answer and its reward components in words "
                        "(models that read text)")
    p.add_argument("--select", choices=["scalar", "pareto"], default="scalar",
                   help="parents: scalar = OpenEvolve's selection by the task scalar; pareto = drawn from the "
                        "candidates no other beats on every reward component, each draw the best under a "
                        "Dirichlet(1) weighting of the components; part of the run's identity")
    p.add_argument("--cut", choices=["uniform", "plateau"], default="uniform",
                   help="prefix mode: where the parent's answer is cut: a uniform step, or where its reward stopped "
                        "improving (Maze; other tasks fall back to uniform)")
    p.add_argument("--allow-zero-parents", default=None, action=argparse.BooleanOptionalAction,
                   help="whether a zero-score parent may be drawn while better ones exist (default: not in prefix "
                        "mode, yes in the others, as OpenEvolve draws)")
    p.add_argument("--config", dest="config_path", default=None, help="OpenEvolve YAML for everything the flags do not set")
    p.add_argument("--out", default=None, help="run folder (default: runs/evo-<task>-<model>-<mode>-m<m>-<hash>)")
    p.add_argument("--split", default="test", help="split the problems come from")
    p.add_argument("--limit", type=int, default=None, help="only the first N problems (after ranking, for hardest:)")
    p.add_argument("--task-args", type=kv, default={}, help="task options k=v,... as in `vpo run`")
    p.add_argument("--data-path", default=None, help="local data file/folder (task-specific)")
    p.add_argument("--prompt-style", default=None,
                   help="full | compact (task-specific; default: the zoo model's trained style, else full)")
    p.add_argument("--temperature", type=float, default=None,
                   help="default: llm.temperature of --config, else the task's paper setting")
    p.add_argument("--top-p", type=float, default=None, help="default: llm.top_p of --config, else the task's")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="completion budget per call (default: llm.max_tokens of --config, else the zoo model's "
                        "trained budget, else 1024)")
    p.add_argument("--seed", type=int, default=0, help="run seed: OpenEvolve's seed and every request seed derive from it")
    add_chat_template_args(p)
    p.add_argument("--concurrency", type=int, default=8,
                   help="LLM requests in flight at once over all problems (and problems evolved at once)")
    p.add_argument("--lag", type=int, default=8,
                   help="iteration i draws its parent from the database holding iterations 0..i-LAG (default 8; "
                        "1 = strictly sequential); part of the run's identity, and the most --parallel can be")
    p.add_argument("--parallel", type=int, default=None,
                   help="iterations of one problem in flight (default: evaluator.parallel_evaluations from "
                        "--config, else --lag); only speed: the rows do not depend on it")
    p.add_argument("--serve-threads", type=int, default=1,
                   help="torch threads of the `vpo serve` child (hf/vllm/zoo models; 0 = torch's default)")
    p.add_argument("--timeout", dest="timeout_s", type=float, default=None,
                   help="seconds per LLM request (default: llm.timeout of --config, else 300)")
    p.add_argument("--no-baseline", action="store_true", help="skip plain sampling at the same candidate budget")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_unsafe_sandbox(p)
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.search.evolve import EvolveConfig, run_evolve

    apply_unsafe_sandbox(args)
    cfg = EvolveConfig(task=args.task, model=args.model, problems=args.problems, iterations=args.iterations,
                       m=args.m, prompt_mode=args.prompt_mode, cut=args.cut,
                       allow_zero_parents=args.allow_zero_parents, select=args.select, config_path=args.config_path, out=args.out,
                       split=args.split, limit=args.limit, task_options=args.task_args, data_path=args.data_path,
                       prompt_style=args.prompt_style, base_url=args.base_url, model_args=args.model_args,
                       temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens, seed=args.seed,
                       chat_template_args=dict(args.chat_template_args or {}),
                       concurrency=args.concurrency, baseline=not args.no_baseline, timeout_s=args.timeout_s,
                       serve_threads=args.serve_threads, progress=not args.no_progress, lag=args.lag,
                       parallel=args.parallel)
    try:
        folder = run_evolve(cfg)
    except KeyboardInterrupt:
        print("vpo evolve: interrupted; the rows so far are kept, re-run the same command to resume",
              file=sys.stderr)
        return 130
    res = json.loads((folder / "results.json").read_text())
    print(format_summary([res]))
    print(f"\nrun folder: {folder}")
    return 0


def format_summary(results: Sequence[dict[str, Any]]) -> str:
    """Solved fraction of evolve runs next to plain sampling at the same budget."""
    from vpo_harness.reports.tables import as_estimate, write_table

    head = ["model", "mode", "m", "iterations", "candidates", "solved (evolve)", "solved (sampling)"]
    lines = []
    for r in results:
        ev = r["evolve"]["solved"]
        b = (r.get("baseline") or {}).get("solved")
        lines.append([r["model"], r["prompt_mode"], str(r["m"]), str(r["iterations"]), str(r["pool_size"]),
                      as_estimate(ev) if ev else "-", as_estimate(b) if b else "-"])
    return write_table(head, lines, align="l" * len(head))


