"""The demo protocol: the paper's Maze row, every trained policy evaluated the paper's way, side by side.

Shared by `vpo demo` and ``harness/app/val_eval.py`` (validation picks with the same protocol), so the
two can never drift apart.

Layout of ``<out>`` (each run an ordinary run folder, resumable, and reused by the generation cache):

    <out>/maze-tiny-<method>            training seed 0 (the zoo's bare name)
    <out>/maze-tiny-<method>@<seed>     the other training seeds
    <out>/seeds/maze-tiny-<method>/     a training-seed group over those runs (harness.core.seed_groups):
                                        `vpo compare` of two groups pairs (maze, training seed)
    <out>/maze-tiny-warm-m<m>[@<seed>]  the warm start of each training seed, in each format the row asks
                                        for (m = 1: 30 samples, m = 3: 10 chains of 3), and its group
                                        <out>/seeds/maze-tiny-warm-m<m>: each method's movement from it
    <out>/demo_table.md, demo_metrics.json, best_at_k.png, diversity.png, report.html
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from vpo_harness.harness.core.config import RunConfig
from vpo_harness.harness.core.metrics import DEFAULT_KS as DEMO_KS
from vpo_harness.harness.core.metrics import Estimate
from vpo_harness.benchmarks.paper_row import PAPER_MAZE_BEST30 as PAPER_BEST30
from vpo_harness.benchmarks.paper_row import ROW_LABELS as LABELS
from vpo_harness.harness.core.models.zoo import (ROW_METHODS, TINY_MAZE_DEFAULTS, WARM_START, policy_folder_name,
                                                 policy_name, train_hint)
from vpo_harness.harness.core.results import RunResults
from vpo_harness.training.advantages import MULTI_ANSWER

DEMO_POOL = DEMO_KS[-1]  # candidates per maze: 10 chains x 3 answers, or 30 samples
#: the ks of the printed table (every k of DEMO_KS is in demo_metrics.json and the plot)
TABLE_KS = (1, 8, DEMO_POOL)
#: the warm start's runs: one per answer format the row asks for
WARM_LABELS = {f"{WARM_START}-m1": "warm start (30 x 1)", f"{WARM_START}-m3": "warm start (10 x 3)"}


def label_of(method: str) -> str:
    return LABELS.get(method) or WARM_LABELS.get(method) or method.upper()


def warm_of(method: str) -> str:
    """The warm-start run a method's movement is measured from: the same answer format."""
    return f"{WARM_START}-m{3 if method in MULTI_ANSWER else 1}"
#: how a user may spell a method on ``--only``
_ALIASES = {"max@k": "max_at_k", "max-at-k": "max_at_k", "maxatk": "max_at_k", "multi-rlvr": "multi_rlvr",
            "multirlvr": "multi_rlvr"}


@dataclass(frozen=True)
class DemoRun:
    """One (method, training seed) of the demo: its policy folder and the run that evaluates it."""

    method: str
    train_seed: int
    checkpoint: Path
    cfg: RunConfig

    @property
    def label(self) -> str:
        return label_of(self.method)


def demo_config(ckpt: Path | str, multi: bool, out: Path | str, limit: int | None, batch_size: int,
                seed: int = 0, split: str = "test", task_args: dict | None = None) -> RunConfig:
    """The paper's Maze protocol for one checkpoint: pool of 30 (multi-answer: 10 chains x 3 answers,
    single-answer: 30 samples), the task's temperature and top-p (the paper's 0.7 and 1.0), compact
    prompts, test split (``split`` and ``task_args``, e.g. ``base_seed``, pick other mazes: a set no
    policy was trained or selected on). For a bundled checkpoint this is the run the README Quickstart's
    ``vpo run --task maze --model hf:maze-tiny-<method> -n 10 -m 3`` (``-n 30 -m 1``) names: the
    runner identifies both by the zoo name and the resolved temperature (tests/harness/test_identity.py)."""
    m = 3 if multi else 1
    return RunConfig.of(
        task="maze", split=split, task_options=dict(task_args or {}), prompt_style=TINY_MAZE_DEFAULTS.prompt_style,
        m=m, n=DEMO_POOL // m,
        ks=DEMO_KS, max_tokens=TINY_MAZE_DEFAULTS.max_tokens(m), seed=seed,
        model=f"hf:{ckpt}", model_args={"batch_size": batch_size}, out=str(out), limit=limit, progress=True)


def parse_methods(only: Sequence[str] | None) -> list[str]:
    """``--only`` to methods of the row, in the paper's order (None, [] or "all": every one); an
    unknown name is a ValueError naming the flag and the known names."""
    if not only or "all" in [o.lower() for o in only]:
        return list(ROW_METHODS)
    wanted = set()
    for o in only:
        for part in (x.strip().lower() for x in o.split(",")):
            if not part:
                continue
            name = _ALIASES.get(part, part)
            if name not in ROW_METHODS:
                raise ValueError(f"--only: unknown method {part!r}; the row's methods are {', '.join(ROW_METHODS)} "
                                 "(or all)")
            wanted.add(name)
    return [m for m in ROW_METHODS if m in wanted]


def demo_configs(checkpoints: Path, out: Path, limit: int | None, batch_size: int, seed: int = 0,
                 only: Sequence[str] | None = None, train_seeds: Sequence[int] = (0,), split: str = "test",
                 task_args: dict | None = None) -> tuple[list[DemoRun], list[str]]:
    """The demo protocol for every (method, training seed) asked for, then the warm start of each
    training seed in each answer format those methods use: the runs whose policy folder is under
    ``checkpoints``, and one line for each that is not (with the command that trains it)."""
    runs, missing = [], []
    methods = parse_methods(only)
    warm = list(dict.fromkeys(warm_of(m) for m in methods))
    for method in methods + warm:
        policy = WARM_START if method in WARM_LABELS else method
        for ts in train_seeds:
            ck = Path(checkpoints) / policy_folder_name(policy, ts)
            if not (ck / "config.json").is_file():
                missing.append(f"{policy_name(policy, ts)}: no policy at {ck}; {train_hint(policy, ts)}")
                continue
            multi = method in MULTI_ANSWER or method == f"{WARM_START}-m3"
            cfg = demo_config(ck, multi, Path(out) / policy_name(method, ts), limit, batch_size, seed, split, task_args)
            runs.append(DemoRun(method, int(ts), ck, cfg))
    return runs, list(dict.fromkeys(missing))


def movement(method_group: Path, warm_group: Path, k: int = DEMO_POOL) -> Estimate | None:
    """best@k of a method minus its warm start's (same answer format), paired over (maze, training
    seed), as one estimate whose s.e. treats each training run as one draw
    (:func:`~vpo_harness.harness.core.metrics.crossed_estimate`). None when no training seed has both."""
    import numpy as np

    from vpo_harness.harness.core.metrics import crossed_estimate
    from vpo_harness.harness.core.results import problem_values
    from vpo_harness.harness.core.seed_groups import group_state

    a = dict(group_state(method_group).runs)
    b = dict(group_state(warm_group).runs)
    rows, shared = [], None
    per = {}
    for ts in sorted(set(a) & set(b)):
        pa, pb = problem_values(a[ts], [k]), problem_values(b[ts], [k])
        if pa is None or pb is None:
            continue
        per[ts] = (dict(zip(pa[0], pa[1][f"best@{k}"])), dict(zip(pb[0], pb[1][f"best@{k}"])))
        ids = set(per[ts][0]) & set(per[ts][1])
        shared = ids if shared is None else shared & ids
    if not per or not shared:
        return None
    order = sorted(shared)
    for ts, (va, vb) in per.items():
        rows.append([va[p] - vb[p] for p in order])
    return crossed_estimate(np.array(rows, dtype=float))


def group_folder(out: Path, method: str) -> Path:
    """The training-seed group of one method under the demo's folder."""
    return Path(out) / "seeds" / f"maze-tiny-{method}"


def write_groups(out: Path, done: Sequence[tuple[DemoRun, Path]]) -> dict[str, Path]:
    """One training-seed group per method over its finished runs (method -> group folder)."""
    from vpo_harness.harness.core.seed_groups import register_training_seeds
    from vpo_harness.harness.core.store import RunStore

    groups: dict[str, Path] = {}
    for method in dict.fromkeys(r.method for r, _ in done):
        mine = [(r, f) for r, f in done if r.method == method]
        ident = {r.train_seed: RunStore(f).read_config()["identity"] for r, f in mine}
        first = ident[mine[0][0].train_seed]
        register_training_seeds(group_folder(out, method), {r.train_seed: f for r, f in mine},
                                {s: i["model"]["spec"] for s, i in ident.items()}, first)
        groups[method] = group_folder(out, method)
    return groups


def format_table(rows: Sequence[tuple[str, RunResults]], ks: Sequence[int] = TABLE_KS,
                 paper: dict[str, float | None] | None = None, fmt: str = "markdown",
                 seeds: dict[str, str] | None = None,
                 warm: dict[str, tuple[Estimate | None, Estimate | None]] | None = None) -> str:
    """best@k at ``ks`` and diversity, each mean ± s.e. (a training-seed group: each training run one
    draw, s± between training seeds), then, with ``warm`` (label -> (the warm start's best@k_max, the
    movement from it)), those two, then the paper's best@k_max of the row's method when ``paper``
    (label -> value) is given; ``seeds`` (label -> text) names the training seed of a row that is a
    single run. pass@k is left out: no Maze route collects every reward, so it is 0 by construction."""
    from vpo_harness.reports.tables import TRAINING_SEED_LEGEND, Cell, write_table

    head = (["model", "training seeds"] + [f"best@{k}" for k in ks] + ["diversity"]
            + ([f"warm start best@{ks[-1]}", f"movement (best@{ks[-1]})"] if warm is not None else [])
            + ([f"paper best@{ks[-1]}"] if paper is not None else []))
    lines = []
    for name, res in rows:
        seed_text = ",".join(str(s) for s in res.seeds) if res.seeds else (seeds or {}).get(name, "-")
        cells = [name, seed_text] + [res.best.get(k) for k in ks] + [res.diversity]
        if warm is not None:
            w, mv = warm.get(name, (None, None))
            if mv is not None and mv.defined and mv.stderr == mv.stderr:
                lo, hi = mv.interval()
                mv = Cell(mv, sign=True, note=f" [{lo:+.3f}, {hi:+.3f}]")   # the 95% interval, runs as draws
            cells += [w, mv]
        if paper is not None:
            val = paper.get(name)
            cells.append(float("nan") if val is None else float(val))
        lines.append([("-" if c is None else c) for c in cells])
    return write_table(head, lines, fmt, seed_legend=TRAINING_SEED_LEGEND)


def run_demo(checkpoints: Path, out: Path, *, limit: int | None = None, batch_size: int = 200, seed: int = 0,
             only: Sequence[str] | None = None, cache: bool | None = None,
             train_seeds: Sequence[int] = (0,), write_cards: bool = False, split: str = "test",
             task_args: dict | None = None) -> Path:
    """Evaluate the row's policies for each training seed, print the table (mean over the training
    seeds, s.e. over mazes and between seeds, the paper's best@30 beside ours), write
    demo_table.md, demo_metrics.json, the plots and the report. ``cache``: the generation cache
    (``--cache/--no-cache``; None: on, the checkpoints are seeded hf); ``write_cards``: fill each
    policy's model card with its own row (:func:`write_card_evaluation`)."""
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.harness.eval.runner import run

    cfgs, missing = demo_configs(checkpoints, out, limit, batch_size, seed, only, train_seeds, split, task_args)
    for line in missing:
        print(f"vpo demo: skipped {line}")
    if not cfgs:
        raise SystemExit(f"vpo demo: none of the asked policies is under {checkpoints} "
                         f"(methods {', '.join(parse_methods(only))}, training seeds {', '.join(map(str, train_seeds))})")
    done: list[tuple[DemoRun, Path]] = []
    t0 = time.time()
    for i, d in enumerate(cfgs, 1):
        t = time.time()
        d.cfg.execution.cache = cache
        folder = run(d.cfg)
        done.append((d, folder))
        print(f"[{i}/{len(cfgs)}] {d.label} training seed {d.train_seed}: {folder} ({time.time() - t:.0f}s)", flush=True)
    all_groups = write_groups(out, done)
    groups = {m: g for m, g in all_groups.items() if m not in WARM_LABELS}
    warm_groups = {m: g for m, g in all_groups.items() if m in WARM_LABELS}
    loaded = [(label_of(m), load_run(g)) for m, g in groups.items()]
    rows = [(name, r.summary) for name, r in loaded]
    paper = {LABELS[m]: PAPER_BEST30.get(m) for m in groups}
    warm_cols: dict[str, tuple[Estimate | None, Estimate | None]] = {}
    for m, g in groups.items():
        wg = warm_groups.get(warm_of(m))
        if wg is not None:
            wsum = load_run(wg).summary
            warm_cols[label_of(m)] = (wsum.best.get(DEMO_POOL) if wsum else None, movement(g, wg))
    n_mazes = min(r.n_problems for _, r in rows)
    table = format_table(rows, paper=paper, warm=warm_cols if warm_cols else None)
    where = split + (f" ({', '.join(f'{k}={v}' for k, v in task_args.items())})" if task_args else "")
    print(f"Maze {where}, {n_mazes} mazes, pool of {DEMO_POOL} (10 x 3 for the set methods, 30 x 1 for the others)")
    print(table)
    if len(train_seeds) > 1:
        print("movement: best@30 minus the warm start's (same answer format), paired over (maze, training seed); "
              "[lo, hi]: its 95% interval, each training run one draw")
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_table.md").write_text(table + "\n")
    (out / "demo_metrics.json").write_text(json.dumps(
        {n: {**r.raw["metrics"], **({"warm_start_best@30": w.as_dict() if (w := warm_cols[n][0]) else None,
                                     "movement_best@30": v.as_dict() if (v := warm_cols[n][1]) else None}
                                    if n in warm_cols else {})} for n, r in rows}, indent=2))
    from vpo_harness.reports.plots import plot_best_at_k, plot_diversity

    labels = [n for n, _ in loaded]
    p1 = plot_best_at_k([r for _, r in loaded], out / "best_at_k.png", labels=labels,
                        title=f"Maze test ({n_mazes} mazes), pool of {DEMO_POOL}")
    p2 = plot_diversity([r for _, r in loaded], out / "diversity.png", labels=labels)
    print(f"plots: {p1} {p2}")
    from vpo_harness.reports.report import build_report

    # GRPO first (the paper's order): the report's paired comparison is every run minus the first one
    rep = build_report(list(groups.values()), out / "report.html", labels=labels)
    print(f"report: {rep}")
    if len(groups) > 1:
        print(f"paired differences over (maze, training seed): vpo compare {' '.join(map(str, groups.values()))}")
    if write_cards:
        command = "vpo demo" + (f" --seeds {','.join(map(str, train_seeds))}" if list(train_seeds) != [0] else "")
        for r, folder in done:
            print(f"model card: {write_card_evaluation(r.checkpoint, folder, command, r.method, r.train_seed)}")
    print(f"demo wall time: {time.time() - t0:.0f}s")
    return out


def write_card_evaluation(checkpoint: Path, run: Path, command: str, method: str, seed: int) -> Path:
    """Rewrite the evaluation section of the model card in ``checkpoint`` with the policy's own demo
    run (``method``, training ``seed``): its row of the demo table (the paper's best@30 beside it) and
    the command that made it. Why:
    a card is written when training ends, before any test-split run, so its evaluation is filled in
    afterwards from the demo's stored results, never from a number typed by hand."""
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.training.model_card import EVAL_HEAD, PAPER_LINE

    card = Path(checkpoint) / "README.md"
    text = card.read_text(encoding="utf-8")
    start = text.find(EVAL_HEAD)
    if start < 0:
        raise ValueError(f"{card}: no '{EVAL_HEAD}...' section to fill")
    summary = load_run(run).summary
    if summary is None:
        raise ValueError(f"{run}: no results to fill {card} with")
    label = LABELS.get(method, method)
    table = format_table([(label, summary)], paper={label: PAPER_BEST30.get(method)}, seeds={label: str(seed)})
    body = (f"{EVAL_HEAD}: the paper's 100 test mazes, pool of 30, temperature 0.7, top-p 1.0)\n"
            "VPO/Multi-RLVR: 10 chains x 3 answers; single-answer models: 30 samples. best@k on the task scalar\n"
            "(mean of completion, gold, diamond, avoid_lava; `convex_bonus` reward, the paper's scorer), mean ±\n"
            f"standard error over mazes; training seed {seed}. Made by `{command}` (its run folder "
            f"`{Path(run).name}`).\n\n{table}\n\n{PAPER_LINE}\n")
    rest = text[start:]
    end = rest.find("\n## ", len(EVAL_HEAD))
    card.write_text(text[:start] + body + (rest[end:] if end >= 0 else ""), encoding="utf-8")
    return card
