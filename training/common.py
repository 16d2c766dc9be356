"""Small shared pieces of the trainers: seeding, the JSONL curve log, its PNG, resumable state."""
from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def set_threads(n: int | None) -> None:
    """The CPU is shared; training uses a fixed number of threads so timings are comparable."""
    if n:
        torch.set_num_threads(int(n))


class CurveLog:
    """Append-only JSONL of training metrics (one line per logged step), safe to resume into."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")

    def rows(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def truncate_after(self, step: int) -> None:
        """Drop rows logged after the checkpoint we resume from (they will be logged again)."""
        rows = [r for r in self.rows() if r.get("step", -1) <= step]
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def plot_curves(jsonl: str | Path, png: str | Path, keys: list[str], title: str = "") -> Path | None:
    """One panel per metric against the step; missing metrics are skipped."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = CurveLog(jsonl).rows()
    keys = [k for k in keys if any(k in r for r in rows)]
    if not rows or not keys:
        return None
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 2.8), squeeze=False)
    for ax, k in zip(axes[0], keys):
        pts = [(r["step"], r[k]) for r in rows if k in r and r[k] is not None]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, lw=1.2)
        ax.set_title(k, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return Path(png)


def save_state(path: str | Path, *, step: int, optimizer: torch.optim.Optimizer, scheduler: Any = None,
               extra: dict[str, Any] | None = None) -> None:
    """Optimizer, scheduler and RNG states next to the HF checkpoint, so a resumed run continues exactly."""
    torch.save({
        "step": step, "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "torch_rng": torch.get_rng_state(), "np_rng": np.random.get_state(), "py_rng": random.getstate(),
        "extra": extra or {}, "saved_at": time.time(),
    }, path)


def load_state(path: str | Path, optimizer: torch.optim.Optimizer, scheduler: Any = None) -> dict[str, Any]:
    st = torch.load(path, weights_only=False)
    optimizer.load_state_dict(st["optimizer"])
    if scheduler is not None and st.get("scheduler") is not None:
        scheduler.load_state_dict(st["scheduler"])
    torch.set_rng_state(st["torch_rng"])
    np.random.set_state(st["np_rng"])
    random.setstate(st["py_rng"])
    return st
