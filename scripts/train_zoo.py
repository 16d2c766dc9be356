"""Train the paper's Maze row from scratch: four methods x five training seeds, resumable.

    python scripts/train_zoo.py                        # all twenty (seeds 0-4; grpo, max_at_k, multi_rlvr, vpo)
    python scripts/train_zoo.py --seeds 1 --methods vpo
    python scripts/train_zoo.py --dry-run              # print the `vpo train` steps, run nothing
    python scripts/train_zoo.py --smoke --seeds 0      # a tiny budget into runs/zoo-smoke, never checkpoints/
    python scripts/train_zoo.py --install              # package into checkpoints/, over the bundled policies

Per training seed: one SFT warm start (``vpo train --stage sft``) on routes blind to the reward, measured
by ``training/warm_eval.py`` and packaged as ``maze-tiny-warm``, shared by that seed's four RL runs
(``vpo train --stage rl --init <warm start>``, the authors' recipe, docs/training_protocol.md); each run's
last step is packaged with its model card into the zoo's folder
(``<runs>/checkpoints/maze-tiny-<method>`` for seed 0, ``.../maze-tiny-<method>-s<seed>`` otherwise; only
``--install`` writes into the bundled ``checkpoints/``, replacing the shipped policies).
Every step is printed before it runs; its output goes to ``<runs>/logs/<step>.log``. A finished step
is skipped when the command is run again, an interrupted one resumes from its last checkpoint
(``vpo train`` resumes itself), and a failed step stops only the steps that depend on it.

The settings are the protocol's (``RULE``), fixed before any test-split use; ``--smoke`` only shrinks
the budget to check the plumbing.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from vpo_harness.harness.core.models.zoo import ROW_METHODS, TRAINING_SEEDS, WARM_START, policy_folder_name  # noqa: E402

#: the training protocol (docs/training_protocol.md): fixed before the test split is used. The SFT
#: targets (routes blind to the reward), the loss (token-mean, dual-clip 3.0), truncation scoring, AdamW
#: betas / weight decay and "the last step is the result" are the trainers' defaults (SFTConfig, RLConfig)
RULE = {
    "sft": {"--sft-steps": 200, "--sft-batch-size": 24, "--sft-lr": 2e-3, "--sft-warmup": 15, "--sft-layers": 4,
            "--sft-prefix-fraction": 0.25},
    "rl": {"--rl-steps": 100, "--prompts-per-step": 6, "--group-size": 8, "--rl-lr": 3e-4, "--kl-coef": 1e-3,
           "--rl-temperature": 1.0, "--m": 3, "--val-every": 20, "--val-limit": 50,
           "--prefix-fraction": 0.25, "--save-every": 10},
    #: weights stored in fp16: bench/fp16_check.py found the demo's best@30 of the bundled pair unchanged
    #: (difference 0.0000 for both; docs/training_protocol.md)
    "fp16": True,
    #: val mazes of each warm start's evaluation (training/warm_eval.py)
    "warm_limit": 50,
}
#: a plumbing check only: the same steps on a tiny budget
SMOKE = {
    "sft": {"--sft-steps": 20, "--sft-warmup": 5, "--limit": 32},
    "rl": {"--rl-steps": 6, "--val-every": 3, "--val-limit": 6, "--limit": 32, "--save-every": 3},
    "warm_limit": 4,
}


@dataclass
class Step:
    name: str
    argv: list[str]
    done: Callable[[], bool]
    needs: list[str] = field(default_factory=list)

    def shown(self) -> str:
        """The command as a person types it (`vpo` is ``python -m vpo_harness.harness.app.cli``)."""
        argv = self.argv[3:] if self.argv[1:3] == ["-m", "vpo_harness.harness.app.cli"] else self.argv[1:]
        head = "vpo" if self.argv[1:3] == ["-m", "vpo_harness.harness.app.cli"] else "python"
        return " ".join([head] + [shlex.quote(a.replace("\n", " && ")) for a in argv])   # one line per step


def _flags(d: dict[str, object]) -> list[str]:
    return [x for k, v in d.items() for x in (k, str(v))]


def _step_of(path: Path) -> int | None:
    """The step a checkpoint folder was saved at (its training record), None when there is none."""
    try:
        return int(json.loads((path / "vpo_training.json").read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _same_file(a: Path, b: Path) -> bool:
    return a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()


def plan(seeds: list[int], methods: list[str], runs: Path, dest: Path, smoke: bool = False,
         threads: int = 1) -> list[Step]:
    """The steps for ``seeds`` x ``methods``: every warm start, then every RL run, then every card. In
    this order a step's needs always come earlier, so ``jobs`` workers taking steps in turn never wait
    on a step that has not started (and two RL runs of a seed train side by side)."""
    py = [sys.executable, "-m", "vpo_harness.harness.app.cli", "train", "--task", "maze", "--threads", str(threads)]
    sft_flags = {**RULE["sft"], **(SMOKE["sft"] if smoke else {})}
    rl_flags = {**RULE["rl"], **(SMOKE["rl"] if smoke else {})}
    sfts: list[Step] = []
    warms: list[Step] = []
    rls: list[Step] = []
    cards: list[Step] = []
    for seed in seeds:
        root = runs / f"s{seed}"
        sft_ckpt = root / "sft" / "checkpoint"
        n_sft = int(sft_flags["--sft-steps"])
        sft = Step(f"s{seed}-sft", py + ["--stage", "sft", "--method", "vpo", "--out", str(root),
                                        "--seed", str(seed)] + _flags(sft_flags),
                   lambda c=sft_ckpt, n=n_sft: (_step_of(c) or 0) >= n)
        sfts.append(sft)
        warm_json = root / "sft" / "warm_eval.json"
        warm_eval = Step(f"s{seed}-warm-eval", [sys.executable, "-m", "vpo_harness.training.warm_eval", str(root / "sft"),
                                                "--limit", str(SMOKE["warm_limit"] if smoke else RULE["warm_limit"])],
                         lambda f=warm_json: f.is_file(), [sft.name])
        warm_folder = dest / policy_folder_name(WARM_START, seed)
        warm_pack = Step(f"s{seed}-warm-card",
                         [sys.executable, "-m", "vpo_harness.training.model_card", "--warm", "--sft", str(root / "sft"),
                          "--dest", str(warm_folder), "--command", sft.shown()] + (["--fp16"] if RULE["fp16"] else []),
                         lambda f=warm_folder, w=warm_json: _same_file(w, f / "warm_eval.json"), [warm_eval.name])
        warms += [warm_eval, warm_pack]
        for method in methods:
            run = root / method
            rl = Step(f"s{seed}-{method}", py + ["--stage", "rl", "--method", method, "--init", str(sft_ckpt),
                                                "--out", str(run), "--seed", str(seed)] + _flags(rl_flags),
                      lambda r=run: (r / "val_choice.json").is_file(), [f"s{seed}-sft"])
            folder = dest / policy_folder_name(method, seed)
            pack = Step(f"s{seed}-{method}-card",  # after the warm start's numbers: the card carries them
                        [sys.executable, "-m", "vpo_harness.training.model_card", "--run", str(run), "--sft", str(root / "sft"),
                         "--dest", str(folder), "--checkpoint", str(run / "checkpoint"),
                         "--command", "\n".join([sft.shown(), rl.shown()])] + (["--fp16"] if RULE["fp16"] else []),
                        lambda r=run, f=folder: _same_file(r / "val_choice.json", f / "val_choice.json"),
                        [rl.name, f"s{seed}-warm-eval"])
            rls.append(rl)
            cards.append(pack)
    return sfts + rls + warms + cards


def execute(steps: list[Step], logs: Path, jobs: int = 1) -> int:
    """Run the steps (``jobs`` at a time, each after the steps it needs); 0 when every step succeeded."""
    logs.mkdir(parents=True, exist_ok=True)
    by_name = {s.name: s for s in steps}
    status: dict[str, str] = {}
    futures: dict[str, Future] = {}
    lock = threading.Lock()
    print_lock = threading.Lock()

    def say(line: str) -> None:
        with print_lock:
            print(line, flush=True)

    def run(step: Step) -> str:
        for need in step.needs:
            futures[need].result()
            if status.get(need) not in ("done", "skipped"):
                say(f"[{step.name}] not run: {need} did not finish")
                return "blocked"
        if step.done():
            say(f"[{step.name}] skipped (finished earlier): {step.shown()}")
            return "skipped"
        log = logs / f"{step.name}.log"
        say(f"[{step.name}] {step.shown()}  (log: {log})")
        with log.open("a") as fh:
            rc = subprocess.call(step.argv, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO)
        if rc != 0 or not step.done():
            say(f"[{step.name}] FAILED (exit {rc}); see {log}")
            return "failed"
        say(f"[{step.name}] done")
        return "done"

    def tracked(step: Step) -> None:
        result = run(step)
        with lock:
            status[step.name] = result

    # steps are submitted in plan order (needs first), so a step's needs are already in ``futures`` and
    # started or finished by the time a worker waits on them
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for step in steps:
            missing = [n for n in step.needs if n not in by_name]
            if missing:
                raise ValueError(f"step {step.name} needs unknown steps {missing}")
            futures[step.name] = ex.submit(tracked, step)
        for f in futures.values():
            f.result()
    bad = [n for n, s in status.items() if s in ("failed", "blocked")]
    print(f"{len(steps) - len(bad)} of {len(steps)} steps finished" + (f"; not finished: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


def summary(runs: Path, seeds: list[int], methods: list[str]) -> list[dict[str, object]]:
    """Per method: its own validation objective at the warm start and at the last step of each seed's
    run (val_curves.jsonl), the mean rise over seeds with its between-seed s.e., and whether it rose by
    the protocol's rule (mean > 2 s.e.); best@30 the same way. Seeds without a finished run are left out."""
    import numpy as np

    out = []
    for method in methods:
        rises: dict[str, list[float]] = {"objective": [], "best_at_30": []}
        done = []
        for seed in seeds:
            path = runs / f"s{seed}" / method / "val_curves.jsonl"
            rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []
            rows = sorted(rows, key=lambda r: r["step"])
            if len(rows) < 2 or rows[0]["step"] != 0 or not (runs / f"s{seed}" / method / "val_choice.json").is_file():
                continue
            done.append(seed)
            for key in rises:
                rises[key].append(rows[-1][key] - rows[0][key])
        row: dict[str, object] = {"method": method, "seeds": done,
                                  "selection": rows[0].get("selection") if done else None}
        for key, v in rises.items():
            a = np.array(v)
            se = float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else float("nan")
            row[f"{key}_rise"] = float(a.mean()) if a.size else float("nan")
            row[f"{key}_rise_se"] = se
            row[f"{key}_rose"] = bool(a.size > 1 and a.mean() > 2 * se)
        out.append(row)
    return out


def _seeds(text: str) -> list[int]:
    """``0-2`` or ``0,2``: the training seeds."""
    try:
        if "-" in text:
            a, b = text.split("-", 1)
            return list(range(int(a), int(b) + 1))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds: expected N, N-M or N,M,..., got {text!r}") from None


def _methods(text: str) -> list[str]:
    out = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in out if m not in ROW_METHODS]
    if bad:
        raise argparse.ArgumentTypeError(f"--methods: unknown {', '.join(bad)}; known: {', '.join(ROW_METHODS)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=_seeds, default=list(TRAINING_SEEDS), help="training seeds, e.g. 0-2 or 1")
    ap.add_argument("--methods", type=_methods, default=list(ROW_METHODS), help="comma-separated methods")
    ap.add_argument("--runs", default=None, help="run folders (default runs/zoo, or runs/zoo-smoke with --smoke)")
    ap.add_argument("--dest", default=None,
                    help="where packaged policies go (default <runs>/checkpoints; the bundled checkpoints/ only "
                         "with --install)")
    ap.add_argument("--install", action="store_true",
                    help="package into the bundled checkpoints/, replacing the shipped policies")
    ap.add_argument("--jobs", type=int, default=2, help="steps run at once (one torch thread each)")
    ap.add_argument("--smoke", action="store_true", help="tiny budget, to check the plumbing")
    ap.add_argument("--dry-run", action="store_true", help="print the steps and whether each is finished")
    ap.add_argument("--summary", action="store_true",
                    help="print whether each method's own validation objective rose (the budget rule) and stop")
    a = ap.parse_args(argv)
    runs = Path(a.runs or ("runs/zoo-smoke" if a.smoke else "runs/zoo"))
    runs = runs if runs.is_absolute() else REPO / runs
    bundled = REPO / "checkpoints"
    dest = Path(a.dest) if a.dest else (bundled if a.install else runs / "checkpoints")
    if a.install and a.smoke:
        ap.error("--install with --smoke: a smoke budget never replaces the bundled policies")
    if not a.install and dest.resolve() == bundled.resolve():
        ap.error(f"--dest {a.dest}: is the bundled checkpoints/ folder; pass --install to replace the shipped policies")
    if a.summary:
        rows = summary(runs, a.seeds, a.methods)
        if not any(r["seeds"] for r in rows):
            seeds = ",".join(map(str, a.seeds))
            print(f"train_zoo.py: error: no finished RL run of seeds {seeds} under {runs} "
                  f"(train them first: python scripts/train_zoo.py --seeds {seeds})", file=sys.stderr)
            return 2
        print("| method | seeds | own objective | rise (last - warm start) | rose (> 2 s.e.) | best@30 rise |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['method']} | {','.join(map(str, r['seeds'])) or '-'} | {r['selection']} | "
                  f"{r['objective_rise']:+.4f} ± {r['objective_rise_se']:.4f} | {'yes' if r['objective_rose'] else 'no'} | "
                  f"{r['best_at_30_rise']:+.4f} ± {r['best_at_30_rise_se']:.4f} |")
        return 0
    steps = plan(a.seeds, a.methods, runs, dest, smoke=a.smoke)
    if a.dry_run:
        for s in steps:
            print(f"[{s.name}] {'finished' if s.done() else 'to run'}: {s.shown()}")
        return 0
    return execute(steps, runs / "logs", a.jobs)


if __name__ == "__main__":
    sys.exit(main())
