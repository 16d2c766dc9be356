"""Early stopping on a validation objective: keep the best step, stop after ``patience`` evaluations
without improvement.

Why a class of its own: the RL trainer, its resume path and the tests must agree on one rule. The
trainer feeds it one value per validation evaluation (the warm start is evaluation 0, so a method that
never beats its warm start ends with ``best_step == 0`` and the model card says so); resuming replays
the logged evaluations through the same rule instead of storing its state separately.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass
class EarlyStopping:
    """``patience`` evaluations in a row that fail to beat the best by more than ``min_delta`` stop the run."""

    patience: int
    min_delta: float = 0.0
    best_value: float = -math.inf
    best_step: int | None = None
    bad: int = 0
    history: list[tuple[int, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ValueError(f"patience must be at least 1, got {self.patience}")

    def update(self, step: int, value: float) -> bool:
        """Record the objective at ``step``; True when it is the new best (the caller keeps that step)."""
        self.history.append((int(step), float(value)))
        if math.isfinite(value) and value > self.best_value + self.min_delta:
            self.best_value, self.best_step, self.bad = float(value), int(step), 0
            return True
        self.bad += 1
        return False

    @property
    def stop(self) -> bool:
        return self.bad >= self.patience

    @classmethod
    def replay(cls, patience: int, rows: Iterable[dict[str, Any]], key: str = "objective",
               min_delta: float = 0.0) -> "EarlyStopping":
        """The state after the logged evaluations ``rows`` (in step order), for a resumed run."""
        es = cls(patience, min_delta)
        for r in sorted(rows, key=lambda r: r["step"]):
            es.update(r["step"], r[key])
        return es
