"""The row schema of samples.jsonl: one :class:`ChainRow` per sampled chain.

Written by the runner (through ``benchmarks.scoring.score_generation``), read by the results reader,
rescoring and reports. It lives at the bottom layer (no task, runner or training import) so every
reader and writer shares the one definition.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

_REQUIRED = ("problem_id", "chain_index")


class RowError(ValueError):
    """A samples.jsonl row that does not follow the schema."""


@dataclass
class ChainRow:
    """One chain: the generation's metadata, its parsed answers and one reward vector per answer.

    ``answers``, ``rewards``, ``scalars`` and ``passed`` have one entry per answer (m for an m-answer
    chain, 1 for a single-answer sample); a failed generation (``error`` set) has none of them.
    ``n_unique`` counts unique answers (distinct texts under the task's dedup key: VPO dedup).
    """

    problem_id: str
    chain_index: int
    seed: int | None = None
    text: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    latency_s: float | None = None
    attempts: int = 1
    error: str | None = None
    answers: list[str | None] = field(default_factory=list)
    rewards: list[list[float]] = field(default_factory=list)
    scalars: list[float] = field(default_factory=list)
    passed: list[bool] = field(default_factory=list)
    n_unique: int = 0
    #: per-answer task details (LCB verdict codes, sandbox isolation, timings); None when the task has none
    details: list[dict[str, Any]] | None = None
    #: backend-specific extras (token ids, server fields); empty when none
    extra: dict[str, Any] = field(default_factory=dict)
    score_s: float | None = None
    #: keys of a stored row this version does not know, kept so a read-modify-write loses nothing
    other: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error

    def to_json(self) -> dict[str, Any]:
        """The dict written to samples.jsonl (``details``/``extra`` only when present)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "other":
                continue
            v = getattr(self, f.name)
            if f.name == "details" and v is None or f.name == "extra" and not v:
                continue
            out[f.name] = v
        out.update(self.other)
        return out

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "ChainRow":
        missing = [k for k in _REQUIRED if k not in row]
        if missing:
            raise RowError(f"missing field {missing[0]!r}")
        known = {f.name for f in fields(cls)} - {"other"}
        kw = {k: v for k, v in row.items() if k in known}
        kw["chain_index"] = int(kw["chain_index"])
        return cls(**kw, other={k: v for k, v in row.items() if k not in known})
