"""What only a GPU can check, in one short run: the hf backend on CUDA in bf16 with the bundled
checkpoints, a TRL step on CUDA, the native trainer's step time. Each part runs the same work on the
CPU path first, in the same process, and prints the ratio (CPU time / CUDA time), so the figure does
not depend on another machine's baseline.

    bash bench/gpu_check.sh [--wheels DIR]      # the wrapper installs trl/openevolve from DIR if given
    bash bench/gpu_check.sh --dry-run           # the same steps on CPU, tiny sizes (CI runs this)

A part whose packages are missing prints one ``skip`` line and the rest still run. Exit 1 when a part
that ran failed its check (e.g. the CUDA run's answers stop parsing), 0 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "checkpoints" / "maze-tiny-vpo"


@dataclass
class Sizes:
    limit: int          # maze problems evaluated
    n: int              # chains per problem (m = 3 answers each)
    trl_steps: int      # TRL generation rounds (the first one is warm-up, not timed)
    rl_steps: int       # native trainer steps (the first one is warm-up, not timed)
    prompts: int        # prompts per TRL round / native step
    group: int          # rollouts per prompt (G)


FULL = Sizes(limit=20, n=10, trl_steps=4, rl_steps=4, prompts=6, group=8)
DRY = Sizes(limit=1, n=2, trl_steps=2, rl_steps=2, prompts=2, group=2)


def cuda_ok() -> bool:
    import torch

    return torch.cuda.is_available()


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


# ---- parts ------------------------------------------------------------------------------------------------------
def hf_eval(device: str, dtype: str, sizes: Sizes, out: Path) -> dict[str, Any]:
    """`vpo run` with the hf backend on the bundled tiny VPO policy: wall time, parse rate, mean scalar."""
    from vpo_harness.harness.app.cli import main
    from vpo_harness.harness.core.results import load_run

    folder = out / f"hf-{device}-{dtype}"
    if folder.exists():                     # a run folder resumes: time fresh work only
        import shutil

        shutil.rmtree(folder)
    t0 = time.perf_counter()
    rc = main(["run", "--task", "maze", "--model", f"hf:{TINY}", "--limit", str(sizes.limit), "-n", str(sizes.n),
               "-m", "3", "--model-args", f"device={device},dtype={dtype},batch_size=32", "--out", str(folder),
               "--no-progress", "--no-cache"])  # timed sampling: never from the generation cache
    sync(device)
    wall = time.perf_counter() - t0
    if rc != 0:
        raise RuntimeError(f"vpo run exited {rc}")
    cand = load_run(folder).candidates
    parsed = float(cand["answer"].notna().mean()) if len(cand) else 0.0
    return {"wall_s": wall, "answers": int(len(cand)), "parsed": parsed,
            "mean_scalar": float(cand["scalar"].mean()) if len(cand) else 0.0}


def trl_steps(device: str, sizes: Sizes, out: Path) -> dict[str, Any]:
    """Seconds per TRL generation round (VPO on the tiny Maze policy), warm-up round excluded."""
    from transformers import TrainerCallback

    from vpo_harness.training.trl_vpo import TRLVPOConfig, train_trl

    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync(device)
            stamps.append(time.perf_counter())

    cuda = device.startswith("cuda")
    import shutil

    shutil.rmtree(out / f"trl-{device}", ignore_errors=True)
    cfg = TRLVPOConfig(init=str(TINY), out=str(out / f"trl-{device}"), task="maze", method="vpo", limit=16,
                       prompt_style="compact", m=3, group_size=sizes.group, prompts_per_step=sizes.prompts,
                       steps=sizes.trl_steps,
                       max_completion_length=110, save_every=0, threads=None if cuda else 2, bf16=cuda,
                       gradient_checkpointing=False, grpo_overrides={} if cuda else {"use_cpu": True})
    t0 = time.perf_counter()
    train_trl(cfg, trainer_hook=lambda t: t.add_callback(Clock()))
    per = [b - a for a, b in zip(stamps, stamps[1:])]
    return {"wall_s": time.perf_counter() - t0, "step_s": sum(per) / len(per) if per else float("nan"),
            "steps": len(stamps)}


def native_steps(device: str, sizes: Sizes, out: Path) -> dict[str, Any]:
    """Seconds per native RL step (training/rl.py, VPO, the sizes' prompts x G), warm-up step excluded."""
    from vpo_harness.training.rl import RLConfig, train_rl

    import shutil

    run = out / f"native-{device}"
    shutil.rmtree(run, ignore_errors=True)              # a run folder resumes: time fresh steps only
    cfg = RLConfig(init=str(TINY), out=str(run), method="vpo", steps=sizes.rl_steps, prompts_per_step=sizes.prompts,
                   group_size=sizes.group, limit=16, threads=2, save_every=10_000, device=device)
    t0 = time.perf_counter()
    train_rl(cfg)
    rows = [json.loads(x) for x in (run / "rl_curves.jsonl").read_text().splitlines() if x.strip()]
    el = [r["elapsed_s"] for r in rows]
    per = [b - a for a, b in zip(el, el[1:])]
    return {"wall_s": time.perf_counter() - t0, "step_s": sum(per) / len(per) if per else float("nan"),
            "gen_s": sum(r["gen_s"] for r in rows[1:]) / max(1, len(rows) - 1)}


# ---- driver -----------------------------------------------------------------------------------------------------
def needs(*modules: str) -> str | None:
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return ", ".join(missing) if missing else None


def part(name: str, fn: Callable[[str], dict[str, Any]], fast: str, key: str, results: dict[str, Any],
         check: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None) -> bool:
    """Run ``fn`` on the CPU and on ``fast``; print the ratio of ``key``. False when a check failed.
    In the dry run ``fast`` is the CPU too, and the work runs once (the ratio is then 1 by definition:
    the dry run checks that every step runs, not a speed)."""
    try:
        cpu = fn("cpu")
        acc = fn(fast) if fast != "cpu" else cpu
    except Exception as exc:  # noqa: BLE001 - one part failing must not hide the others
        print(f"FAIL {name}: {type(exc).__name__}: {exc}")
        traceback.print_exc(limit=3)
        results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        return False
    ratio = cpu[key] / acc[key] if acc[key] else float("nan")
    problem = check(cpu, acc) if check else None
    results[name] = {"cpu": cpu, "accelerated": acc, "device": fast, "ratio": ratio, "check": problem or "ok"}
    print(f"{'FAIL' if problem else 'ok  '} {name}: {key} cpu {cpu[key]:.3f} / {fast} {acc[key]:.3f} = {ratio:.2f}x"
          + (f" ({problem})" if problem else ""))
    return problem is None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="CPU only, tiny sizes: the script's own test")
    ap.add_argument("--out", default="runs/gpu_check")
    a = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    sizes = DRY if a.dry_run else FULL
    if a.dry_run:
        fast = "cpu"
    elif cuda_ok():
        fast = "cuda"
    else:
        print("no CUDA device here: run with --dry-run for the CPU path only")
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"gpu_check: torch {torch.__version__}, device {torch.cuda.get_device_name(0) if fast == 'cuda' else 'cpu'}, "
          f"{os.cpu_count()} CPUs, sizes {sizes}")
    results: dict[str, Any] = {"device": fast, "dry_run": a.dry_run, "torch": torch.__version__}
    ok = True

    def parse_check(cpu: dict[str, Any], acc: dict[str, Any]) -> str | None:
        if acc["parsed"] < cpu["parsed"] - 0.2:
            return f"answers parsed on {fast}: {acc['parsed']:.2f} vs cpu {cpu['parsed']:.2f}"
        return None

    fast_dtype = "bfloat16" if fast == "cuda" else "float32"
    miss = needs("transformers", "safetensors", "pandas", "pyarrow", "scipy", "tqdm")
    if miss:
        print(f"skip hf backend: missing {miss}")
    else:
        ok &= part(f"hf backend (maze-tiny-vpo, {fast_dtype} vs cpu float32, wall s)",
                   lambda d: hf_eval(d, fast_dtype if d == fast else "float32", sizes, out), fast, "wall_s",
                   results, parse_check)
    miss = needs("trl", "datasets", "accelerate")
    if miss:
        print(f"skip TRL step: missing {miss} (bash bench/gpu_check.sh --wheels DIR installs trl from DIR)")
    else:
        ok &= part("TRL round (s per round)", lambda d: trl_steps(d, sizes, out), fast, "step_s", results)
    miss = needs("transformers", "safetensors", "scipy", "tqdm", "matplotlib")
    if miss:
        print(f"skip native trainer: missing {miss} (add their wheels to --wheels DIR)")
    else:
        ok &= part("native trainer (s per step)", lambda d: native_steps(d, sizes, out), fast, "step_s", results)
    (out / "gpu_check.json").write_text(json.dumps(results, indent=2, default=str))
    print(f"results: {out / 'gpu_check.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
