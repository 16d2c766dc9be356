"""The generation cache's cost and gain: the same `vpo run` three times in one process, with a fresh
cache folder each round.

1. ``--no-cache``: the baseline (sampling, scoring, writing the run folder);
2. cache on, empty: every chain keyed, looked up and stored (what a first run pays for the cache;
   with a fresh cache root, so the checkpoint's file digests are computed in it too);
3. cache on, full: a second identical run, every chain from the cache (no model built).

It prints the times, ``store overhead`` = (2) / (1) and ``speed-up`` = (1) / (3), and checks that run
3 sampled nothing and that its metrics equal run 1's. Rounds alternate and the best of each is kept.

    python bench/generation_cache.py                                  # mock:moves, 100 mazes x 30 chains
    python bench/generation_cache.py --model hf:maze-tiny-vpo --problems 10 --chains 10 --m 3 --rounds 1
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vpo_harness.harness.eval.runner import RunConfig, run  # noqa: E402


def timed(work: dict, out: Path, cache: bool | None) -> tuple[float, dict]:
    t0 = time.perf_counter()
    folder = run(RunConfig.of(**work, out=str(out), cache=cache))
    wall = time.perf_counter() - t0
    return wall, {"config": json.loads((folder / "config.json").read_text()),
                  "results": json.loads((folder / "results.json").read_text())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mock:moves")
    ap.add_argument("--problems", type=int, default=100)
    ap.add_argument("--chains", type=int, default=30)
    ap.add_argument("--m", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = dict(task="maze", model=args.model, limit=args.problems, n=args.chains, m=args.m, ks=(1,),
                prompt_style="compact", max_tokens=110 if args.m > 1 else 40, progress=False)
    times: dict[str, list[float]] = {"off": [], "empty": [], "full": []}
    from vpo_harness.harness.core.paths import CACHE_ENV, cache_dir

    models = cache_dir() / "models"  # converted zoo models are shared: a round should not rebuild one
    models.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            root = Path(tmp) / f"cache{rnd}"
            root.mkdir()
            (root / "models").symlink_to(models, target_is_directory=True)
            os.environ[CACHE_ENV] = str(root)
            t, base = timed(work, Path(tmp) / f"off{rnd}", False)
            times["off"].append(t)
            t, _ = timed(work, Path(tmp) / f"empty{rnd}", True)
            times["empty"].append(t)
            t, full = timed(work, Path(tmp) / f"full{rnd}", True)
            times["full"].append(t)
            cache = full["config"]["cache"]
            assert cache["sampled"] == 0 and cache["found"] == args.problems * args.chains, cache
            assert full["results"]["metrics"] == base["results"]["metrics"], "cached chains must score the same"
    off, empty, fullt = (min(times[k]) for k in ("off", "empty", "full"))
    n = args.problems * args.chains
    print(f"generation cache: {args.model}, {args.problems} mazes x {args.chains} chains x m={args.m} = {n} chains, "
          f"best of {args.rounds} round(s); load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  --no-cache              {off:8.2f} s")
    print(f"  cache on, empty (store) {empty:8.2f} s   store overhead {empty / off:.2f}x "
          f"({(empty - off) / n * 1000:+.2f} ms per chain)")
    print(f"  cache on, full (reuse)  {fullt:8.2f} s   speed-up {off / fullt:.1f}x, 0 chains sampled")


if __name__ == "__main__":
    main()
