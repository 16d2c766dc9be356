"""Does storing a tiny Maze policy in fp16 move the demo's best@30? The same checkpoint evaluated with
the demo protocol twice: its fp32 weights, and the weights rounded to fp16 (stored half the size,
loaded back as fp32 by the hf backend on a CPU, so only the rounding differs).

    python bench/fp16_check.py [MODEL ...] [--limit 100] [--out runs/fp16-check]

MODEL is a zoo name or a checkpoint folder (default maze-tiny-vpo and maze-tiny-grpo). Prints best@30
(mean ± s.e. over the test mazes) of both and the difference in units of the fp32 run's s.e.; the
packaging rule (docs/training_protocol.md) stores fp16 only when |difference| < 1 s.e. for every model.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def fp16_copy(src: Path, dest: Path) -> Path:
    """A copy of checkpoint ``src`` with its weights stored in fp16 (the packaging's own conversion)."""
    import shutil

    from vpo_harness.training.model import store_fp16

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    return store_fp16(dest)


def main() -> None:
    from vpo_harness.harness.app.demo import demo_config
    from vpo_harness.harness.core.models import zoo
    from vpo_harness.harness.core.results import read_results
    from vpo_harness.harness.eval.runner import run
    from vpo_harness.training.advantages import MULTI_ANSWER

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["maze-tiny-vpo", "maze-tiny-grpo"])
    ap.add_argument("--limit", type=int, default=None, help="test mazes (default all 100)")
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--out", default="runs/fp16-check")
    a = ap.parse_args()
    out = Path(a.out)
    rows = []
    for name in a.models:
        src = Path(zoo.resolve_local(name))
        method = json.loads((src / "vpo_training.json").read_text()).get("method", "")
        multi = method in MULTI_ANSWER
        half = fp16_copy(src, out / f"{src.name}-fp16" / "model")
        res = {}
        for tag, folder in (("fp32", src), ("fp16", half)):
            r = read_results(run(demo_config(folder, multi, out / f"{src.name}-{tag}", a.limit, a.batch_size)))
            res[tag] = r.best[30]
        diff = res["fp16"].mean - res["fp32"].mean
        se = res["fp32"].stderr
        row = {"model": name, "fp32": [res["fp32"].mean, se], "fp16": [res["fp16"].mean, res["fp16"].stderr],
               "difference": diff, "difference_in_se": diff / se if se else float("nan"),
               "fp32_bytes": (src / "model.safetensors").stat().st_size,
               "fp16_bytes": (half / "model.safetensors").stat().st_size}
        rows.append(row)
        print(f"{name}: best@30 fp32 {res['fp32'].mean:.4f} ± {se:.4f}, fp16 {res['fp16'].mean:.4f} ± "
              f"{res['fp16'].stderr:.4f}; difference {diff:+.4f} = {row['difference_in_se']:+.2f} s.e. "
              f"({row['fp32_bytes'] / 1e6:.1f} MB -> {row['fp16_bytes'] / 1e6:.1f} MB)", flush=True)
    (out / "fp16_check.json").write_text(json.dumps(rows, indent=2))
    ok = all(abs(r["difference_in_se"]) < 1 for r in rows)
    print("fp16 keeps best@30 within one s.e. for every model" if ok else "fp16 moves best@30 by one s.e. or more")


if __name__ == "__main__":
    main()
