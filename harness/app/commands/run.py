"""`vpo run`: sample a pool per problem, score it, write a resumable run folder."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from vpo_harness.harness.app.commands._args import (TASK_HELP, add_cache_flag, add_chat_template_args, add_unsafe_sandbox,
                                                    apply_unsafe_sandbox, int_list, kv, task_ref)

if TYPE_CHECKING:
    from vpo_harness.harness.core.config import RunConfig

EXAMPLES = """\
vpo run --task maze --model mock:moves --limit 5 -n 4 -m 3          # no model: exercises the harness
vpo run --task maze --model hf:maze-tiny-vpo --limit 20 -n 10 -m 3 --out runs/vpo
vpo run --task musique --model openai:Qwen/Qwen3-1.7B --base-url http://localhost:8000/v1 -n 10 -m 3
vpo run --task toolrl --model vllm:Qwen/Qwen3-1.7B --protocol paper -m 1   # the paper's settings, 50 samples
vpo run ... --k 1,3,10     # same command, other ks: metrics recomputed from the stored rows
vpo run --task maze --model mock:moves --limit 5 -n 4 --seeds 0,1,2 --out runs/seeds   # one run per seed
vpo run --task maze --model hf:maze-tiny-vpo -n 8 -m 3 --prefix "<route_1>RIGHT"   # continue a given answer start
vpo run ... --out runs/again   # another folder: the chains come from the generation cache (vpo cache)
"""


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help="sample a pool per problem, score it, write a run folder (resumable)")
    p.add_argument("--task", required=True, type=task_ref, help=TASK_HELP)
    p.add_argument("--model", required=True,
                   help="hf:PATH_OR_ZOO_NAME | vllm:ID_OR_PATH | openai:MODEL_NAME | mock:moves (zoo: smollm2-135m, ...)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server URL (openai backend)")
    p.add_argument("--model-args", type=kv, default={}, help="backend arguments k=v,k2=v2")
    p.add_argument("--split", default="test", help="which split of the task (see `vpo ls`)")
    p.add_argument("--data-path", default=None, help="local data file/folder or hub id (task-specific)")
    p.add_argument("--task-args", type=kv, default={}, help="task options k=v,... (e.g. reward_mode=convex_bonus)")
    p.add_argument("--limit", type=int, default=None, help="only the first N problems")
    p.add_argument("--prompt-style", default=None,
                   help="full | compact | paper (the authors' prompt: livecodebench, eureqa); default: the model's "
                        "own (bundled checkpoints), else full; --protocol paper: paper where the task has it")
    p.add_argument("-n", "--num-chains", dest="n", type=int, default=None,
                   help="chains per problem (default: 10); --protocol paper: ceil(30 / m), a pool of 30 (ToolRL: ceil(50 / m))")
    p.add_argument("-m", "--answers", dest="m", type=int, default=None,
                   help="answers per chain (1 = single-answer prompt); pool = n*m candidates "
                        "(default: 1); --protocol paper: 3")
    p.add_argument("--protocol", choices=PROTOCOL_NAMES, default=None,
                   help="paper: the paper's per-task temperature, top-p, token budget, m, pool of 30 and chat "
                        "template arguments (enable_thinking=false) in one flag; explicit flags override it")
    p.add_argument("--k", dest="ks", type=int_list, default=None,
                   help="best@k / pass@k values, e.g. 1,2,4,8,16,30 (default: those of 1,2,4,8,16,30 within the "
                        "pool n*m). Not part of the run: other ks on a finished run only recompute the metrics")
    p.add_argument("--temperature", type=float, default=None, help="default: the task's paper setting")
    p.add_argument("--top-p", type=float, default=None, help="default: the task's paper setting")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="completion budget; default: the model's own (bundled checkpoints), else 1024")
    p.add_argument("--seed", type=int, default=None,
                   help="sampling seed; every chain's seed derives from it (default 0). With --out naming a "
                        "seed group (a --seeds folder), the run is added to it as one more seed")
    p.add_argument("--seeds", default=None,
                   help="several sampling seeds, e.g. 0,1,2,3 or 0-3: one run per seed under the --out folder "
                        "(OUT/seed-0, OUT/seed-1, ...; default: runs/<...>-seeds), each resumable; show, compare, "
                        "plot and report read the folder as the mean over seeds. --protocol paper: the authors' "
                        "evaluation seed count where they average several (EUREQA, ToolRL: 4)")
    add_chat_template_args(p)
    p.add_argument("--prefix", default="", metavar="TEXT",
                   help="assistant prefill: every chain continues this start of the answer (the completion "
                        "scored and stored is prefix + continuation); part of the run's identity")
    p.add_argument("--concurrency", type=int, default=32, help="parallel requests (openai backend)")
    p.add_argument("--score-workers", type=int, default=1, help="threads grading chains (code tasks)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads of a local model (hf backend), as `vpo demo --threads` and `vpo train --threads`")
    p.add_argument("--flush-every", type=int, default=16, help="chains per append+fsync of samples.jsonl")
    p.add_argument("--retry-errors", action="store_true", help="on resume, sample again chains that failed")
    p.add_argument("--out", default=None, help="run folder (default: runs/<task>-<model>-m<m>-n<n>-<hash>)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_cache_flag(p)
    add_unsafe_sandbox(p)
    from vpo_harness.harness.core.executors.cli_args import add_executor_arguments

    add_executor_arguments(p)  # --executor local|ray, --replicas, --score-on, ...
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.app.commands.show import format_table
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.harness.eval.runner import run as run_eval

    apply_unsafe_sandbox(args)
    if args.threads is not None:
        if args.threads < 1:
            raise SystemExit(f"vpo run: --threads must be >= 1, got {args.threads}")
        import torch

        torch.set_num_threads(args.threads)
    seeds = resolve_seeds(args)
    cfg = build_config(args)
    from vpo_harness.harness.core.seed_groups import is_seed_group, seed_runs
    from vpo_harness.harness.eval.runner import run_seeds

    # --seeds, or --seed S with --out naming a group (the runner adds the seed to it)
    folder = run_seeds(cfg, seeds) if seeds is not None else run_eval(cfg)
    if is_seed_group(folder):
        folders = [f for _, f in seed_runs(folder)]
        print(format_table([load_run(f) for f in folders] + [load_run(folder)]))
        print(f"\nseed group: {folder} (one run folder per seed: {', '.join(f.name for f in folders)})")
        return max(report_failures(f) for f in folders)
    print(format_table([load_run(folder)]))
    print(f"\nrun folder: {folder}")
    return report_failures(folder)


def resolve_seeds(args: argparse.Namespace) -> list[int] | None:
    """The seeds of a seed group, or None for one run: ``--seeds``, else the protocol's evaluation
    seed count (seeds 0..S-1) when ``--seed`` is not given."""
    import sys

    from vpo_harness.harness.core.seed_groups import parse_seeds
    from vpo_harness.harness.eval.protocols import eval_seeds

    if args.seeds is not None:
        if args.seed is not None:
            raise ValueError("--seed and --seeds: give one (--seeds 0,1,2 runs one run per seed)")
        return parse_seeds(args.seeds)
    count = eval_seeds(args.protocol, args.task)
    if count > 1 and args.seed is None:
        print(f"[vpo] --protocol {args.protocol} for {args.task}: {count} evaluation seeds (0-{count - 1}), one run "
              "each, as the authors' reproduction notes average them; --seed S or --seeds 0,... override",
              file=sys.stderr)
        return list(range(count))
    return None


PROTOCOL_NAMES = ("paper",)  # harness.eval.protocols.PROTOCOLS, spelled here so `vpo --help` imports nothing


def build_config(args: argparse.Namespace) -> "RunConfig":
    """The :class:`RunConfig` a `vpo run` command line names. The namespace is only read: the
    protocol preset and the model's trained defaults fill what the flags left open (explicit flags
    win), and the runner resolves the task's sampling defaults before the identity, so the demo (which
    builds its RunConfig in Python) and this command name the same run for the same settings."""
    import sys

    from vpo_harness.harness.core.executors.cli_args import executor_config
    from vpo_harness.harness.core.metrics import default_ks
    from vpo_harness.harness.core.models import model_defaults
    from vpo_harness.harness.core.models.zoo import prompt_settings
    from vpo_harness.harness.eval.protocols import departures, describe, resolve
    from vpo_harness.harness.eval.runner import RunConfig

    got = resolve(args.protocol, args.task, m=args.m, n=args.n, temperature=args.temperature, top_p=args.top_p,
                  max_tokens=args.max_tokens, chat_template_args=args.chat_template_args, task_args=args.task_args,
                  prompt_style=args.prompt_style)
    m, n = got["m"], got["n"]
    if args.protocol is not None:
        print(f"[vpo] {describe(args.protocol, args.task, got)}", file=sys.stderr)
        for line in departures(args.protocol, args.task, got):
            print(f"[vpo] {line}", file=sys.stderr)
    style, max_tokens, source = prompt_settings(
        args.model, m, got["prompt_style"], got["max_tokens"],
        lambda spec: model_defaults(spec, base_url=args.base_url, model_args=args.model_args))
    if source is not None:
        print(f"[vpo] {args.model}: prompt style {style}, max tokens {max_tokens} "
              f"(from {source}; --prompt-style / --max-tokens override)", file=sys.stderr)
    return RunConfig.of(task=args.task, model=args.model, split=args.split, task_options=got["task_args"],
                        data_path=args.data_path, limit=args.limit, prompt_style=style, m=m, n=n,
                        ks=args.ks or default_ks(n * m), temperature=got["temperature"], top_p=got["top_p"],
                        max_tokens=max_tokens, seed=0 if args.seed is None else args.seed, chat_template_args=got["chat_template_args"],
                        prefix=args.prefix,
                        base_url=args.base_url, model_args=args.model_args, out=args.out, protocol=args.protocol,
                        concurrency=args.concurrency, score_workers=args.score_workers,
                        flush_every=args.flush_every, retry_errors=args.retry_errors,
                        progress=not args.no_progress, executor=executor_config(args), cache=args.cache)


def report_failures(folder) -> int:
    """When chains failed, say how many and show the first error; every chain failed is exit 1
    (a server that is down, a wrong URL or model name) instead of a table of "-" and exit 0."""
    import sys

    from vpo_harness.harness.core.store import latest_rows

    rows = latest_rows(folder)
    failed = [r for r in rows if r.get("error")]
    if not failed:
        return 0
    first = failed[0]
    where = f"{first['problem_id']} chain {first['chain_index']}"
    msg = " ".join(str(first["error"]).split())[:300]
    if len(failed) == len(rows):
        print(f"vpo run: error: all {len(rows)} chains failed; first error ({where}): {msg}", file=sys.stderr)
        return 1
    print(f"vpo run: warning: {len(failed)} of {len(rows)} chains failed and are left out of the metrics; "
          f"first error ({where}): {msg}. Re-run with --retry-errors to sample them again.", file=sys.stderr)
    return 0
