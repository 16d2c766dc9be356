"""`vpo`: run, inspect and plot best@k evaluations (and train/demo through the training package).

Flags follow lm-evaluation-harness where they overlap: ``--model hf:PATH --model-args k=v,...``.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence


def _int_list(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1,2,4,8, got {text!r}")
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one k")
    return vals


def _kv(text: str) -> dict[str, Any]:
    from harness.models import parse_model_args

    return parse_model_args(text)


def add_run_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="sample a pool per problem, score it, write a run folder (resumable)")
    p.add_argument("--task", required=True, help="task name (see `vpo ls`)")
    p.add_argument("--model", required=True,
                   help="hf:PATH_OR_ZOO_NAME | vllm:ID_OR_PATH | openai:MODEL_NAME (zoo: smollm2-135m, ...)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server URL (openai backend)")
    p.add_argument("--model-args", type=_kv, default={}, help="backend arguments k=v,k2=v2")
    p.add_argument("--split", default="test")
    p.add_argument("--data-path", default=None, help="local data file/folder or hub id (task-specific)")
    p.add_argument("--task-args", type=_kv, default={}, help="task options k=v,... (e.g. reward_mode=convex_bonus)")
    p.add_argument("--limit", type=int, default=None, help="only the first N problems")
    p.add_argument("--prompt-style", default="full", help="full | compact (task-specific)")
    p.add_argument("-n", "--num-chains", dest="n", type=int, default=10, help="chains per problem")
    p.add_argument("-m", "--answers", dest="m", type=int, default=1,
                   help="answers per chain (1 = single-answer prompt); pool = n*m candidates")
    p.add_argument("--k", dest="ks", type=_int_list, default=None, help="best@k / pass@k values, e.g. 1,2,4,8,16,30")
    p.add_argument("--temperature", type=float, default=None, help="default: the task's paper setting")
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--concurrency", type=int, default=32, help="parallel requests (openai backend)")
    p.add_argument("--score-workers", type=int, default=1)
    p.add_argument("--flush-every", type=int, default=16, help="chains per append+fsync of samples.jsonl")
    p.add_argument("--retry-errors", action="store_true", help="on resume, sample again chains that failed")
    p.add_argument("--out", default=None, help="run folder (default: runs/<task>-<model>-m<m>-n<n>-<hash>)")
    p.add_argument("--no-progress", action="store_true")
    from harness.executors.cli_args import add_executor_arguments

    add_executor_arguments(p)  # --executor local|ray, --replicas, --score-on, ...
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from harness.executors.cli_args import executor_config
    from harness.runner import DEFAULT_KS, RunConfig, run
    from harness.store import load_run

    ks = args.ks or tuple(k for k in DEFAULT_KS if k <= args.n * args.m) or (1,)
    cfg = RunConfig(task=args.task, model=args.model, split=args.split, task_options=args.task_args,
                    data_path=args.data_path, limit=args.limit, prompt_style=args.prompt_style, m=args.m,
                    n=args.n, ks=ks, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                    seed=args.seed, base_url=args.base_url, model_args=args.model_args, out=args.out,
                    concurrency=args.concurrency, score_workers=args.score_workers, flush_every=args.flush_every,
                    retry_errors=args.retry_errors, progress=not args.no_progress,
                    executor=executor_config(args))
    folder = run(cfg)
    print(format_table([load_run(folder)]))
    print(f"\nrun folder: {folder}")
    return 0


def add_ls_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ls", help="list tasks with reward dimensions, components, splits and sizes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ls)


def cmd_ls(args: argparse.Namespace) -> int:
    from benchmarks import get_task, task_names

    rows = []
    for name in task_names():
        try:
            t = get_task(name)
            comps = list(t.component_names)
            rows.append({"task": name, "d": "per-problem" if getattr(t, "variable_d", False) else len(comps),
                         "components": comps, "splits": dict(t.splits)})
        except Exception as exc:  # an unavailable task must not hide the others
            rows.append({"task": name, "error": f"{type(exc).__name__}: {exc}"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'task':<15}{'d':<13}{'components':<58}splits (size)")
    for r in rows:
        if "error" in r:
            print(f"{r['task']:<15}unavailable: {r['error']}")
            continue
        comps = ", ".join(r["components"])
        if len(comps) > 55:
            comps = comps[:52] + "..."
        splits = ", ".join(f"{k} ({v if v is not None else '?'})" for k, v in r["splits"].items())
        print(f"{r['task']:<15}{str(r['d']):<13}{comps:<58}{splits}")
    return 0


def format_table(runs: Sequence[Any]) -> str:
    """best@k / pass@k / diversity of runs side by side (mean ± standard error)."""
    if not runs:
        return "(no runs)"
    ks = sorted({int(key.split("@")[1]) for r in runs for key in (r.results or {}).get("metrics", {})
                 if key.startswith("best@")})
    head = ["run", "task", "pool"] + [f"best@{k}" for k in ks] + [f"pass@{k}" for k in ks[:1] + ks[-1:]] + ["diversity", "errors"]
    lines = []
    for r in runs:
        res = r.results or {}
        mt = res.get("metrics", {})

        def cell(key: str) -> str:
            v = mt.get(key)
            if not v or v.get("mean") is None or v["mean"] != v["mean"]:
                return "-"
            return f"{v['mean']:.3f}±{v['stderr']:.3f}"

        pass_keys = [f"pass@{k}" for k in ks[:1] + ks[-1:]]
        lines.append([r.path.name, res.get("task", r.config.get("task", "?")),
                      f"{res.get('n', '?')}x{res.get('m', '?')}"]
                     + [cell(f"best@{k}") for k in ks] + [cell(k) for k in pass_keys]
                     + [cell("diversity"), str(res.get("n_errors", "-"))])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*ln) for ln in lines])


def add_show_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="table of a run's metrics")
    p.add_argument("runs", nargs="+")
    p.add_argument("--json", action="store_true", help="print results.json")
    p.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from harness.store import load_run

    loaded = [load_run(r) for r in args.runs]
    for r in loaded:
        if r.results is None:
            print(f"{r.path}: no results.json yet (interrupted run? re-run the same command to resume)",
                  file=sys.stderr)
    if args.json:
        print(json.dumps([r.results for r in loaded], indent=2))
    else:
        print(format_table(loaded))
    return 0


def add_plot_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="best@k curves with standard-error bands, one line per run")
    p.add_argument("runs", nargs="+")
    p.add_argument("--out", default="best_at_k.png")
    p.add_argument("--metric", default="best", choices=["best", "pass"])
    p.add_argument("--labels", default=None, help="comma-separated line labels")
    p.add_argument("--title", default=None)
    p.set_defaults(func=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> int:
    from harness.store import load_run
    from reports.plots import plot_best_at_k

    loaded = [load_run(r) for r in args.runs]
    labels = args.labels.split(",") if args.labels else None
    out = plot_best_at_k(loaded, args.out, metric=args.metric, labels=labels, title=args.title)
    print(f"wrote {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vpo", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_parser(sub)
    add_ls_parser(sub)
    add_show_parser(sub)
    add_plot_parser(sub)
    import importlib.util

    if importlib.util.find_spec("training.cli") is not None:  # `vpo train` and `vpo demo`
        from training.cli import add_parsers as add_training_parsers

        add_training_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"vpo {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
