"""The row schema of samples.jsonl: one :class:`ChainRow` per sampled chain.

Written by the runner (through ``vpo_harness.benchmarks.scoring.score_generation``), read by the results reader,
rescoring and reports. It lives at the bottom layer (no task, runner or training import) so every
reader and writer shares the one definition.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

_REQUIRED = ("problem_id", "chain_index")


class RowError(ValueError):
    """A samples.jsonl row that does not follow the schema."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


_NONE = type(None)
#: optional fields: the exact types each may have (bool is not an int here: ``type(True) is bool``)
_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    **{k: ((int, _NONE), "an integer") for k in ("seed", "prompt_tokens", "completion_tokens", "attempts",
                                                  "n_unique", "iteration", "answer_index", "of",
                                                  "prefix_tokens", "cut")},
    **{k: ((int, float, _NONE), "a number") for k in ("latency_s", "score_s")},
    **{k: ((str, _NONE), "a string") for k in ("error", "text", "finish_reason", "prefix")},
    "solved": ((bool, _NONE), "true or false"),
}
_INF = float("inf")
_NUMBERS = {int, float}


def _unit_interval(xs: list[Any]) -> bool:
    """Every entry a finite number in [0, 1]: one sum (NaN and inf make it non-finite) and min/max,
    not a Python-level loop, so validating a large run costs little next to parsing it."""
    try:
        total = sum(xs)
    except TypeError:
        return False
    return total == total and -_INF < total < _INF and (not xs or (min(xs) >= 0.0 and max(xs) <= 1.0)) \
        and set(map(type, xs)) <= _NUMBERS


def _finite(xs: list[Any]) -> bool:
    try:
        total = sum(xs)
    except TypeError:
        return False
    return total == total and -_INF < total < _INF and set(map(type, xs)) <= _NUMBERS


def _reward_problem(x: Any) -> str:
    if not _is_num(x):
        return "not a number"
    return "not finite" if x != x or abs(x) == _INF else "outside [0, 1]"


def check_row(row: Any) -> str | None:
    """What is wrong with a stored row, as ``"field 'x': ..."``, or None when it follows the schema.

    Readers call it on every row they load, so a damaged or hand-edited samples.jsonl is refused at
    the line that is wrong instead of turning into a traceback or a silently wrong metric: NaN and inf
    rewards (JSON reads them as numbers), a reward outside [0, 1], lists of different lengths (zip
    would drop the tail), and wrong-typed fields."""
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    for name in _REQUIRED:
        if name not in row:
            return f"missing field {name!r}"
    if not isinstance(row["problem_id"], str):
        return f"field 'problem_id': expected a string, got {_show(row['problem_id'])}"
    if not _is_int(row["chain_index"]) or row["chain_index"] < 0:
        return f"field 'chain_index': expected an integer >= 0, got {_show(row['chain_index'])}"
    for name, (types, kind) in _TYPES.items():
        if type(row.get(name)) not in types:
            return f"field {name!r}: expected {kind}, got {_show(row[name])}"
    lists = {}
    for name in ("answers", "rewards", "scalars", "passed"):
        v = row.get(name, [])
        if v is None and row.get("error"):
            v = []
        if not isinstance(v, list):
            return f"field {name!r}: expected a list, got {_show(v)}"
        lists[name] = v
    for i, r in enumerate(lists["rewards"], 1):
        if not isinstance(r, list):
            return f"field 'rewards': answer {i}: expected a list of numbers, got {_show(r)}"
        if not _unit_interval(r):
            j, x = next((j, x) for j, x in enumerate(r, 1) if not (_is_num(x) and 0.0 <= x <= 1.0))
            return (f"field 'rewards': answer {i}, component {j} is {_show(x)} ({_reward_problem(x)}; a reward is "
                    "a finite number in [0, 1])")
    if not _finite(lists["scalars"]):
        i, x = next((i, x) for i, x in enumerate(lists["scalars"], 1) if not _finite([x]))
        return f"field 'scalars': answer {i} is {_show(x)} (a task scalar is a finite number)"
    if not set(map(type, lists["passed"])) <= {bool}:
        i, x = next((i, x) for i, x in enumerate(lists["passed"], 1) if type(x) is not bool)
        return f"field 'passed': answer {i} is {_show(x)} (expected true or false)"
    if not row.get("error"):
        sizes = {k: len(v) for k, v in lists.items() if k in row}
        if len(set(sizes.values())) > 1:
            return "fields " + ", ".join(f"{k!r} ({n})" for k, n in sizes.items()) + \
                " have different lengths: one entry per answer in each"
    return None


#: fields written only when set (added after runs existed: rows without them stay as they were)
_WHEN_SET = ("prefix", "prefix_tokens")


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
    #: assistant prefill: the prefix the model was given (``text`` starts with it) and its token count;
    #: ``completion_tokens`` counts the continuation. Written only for prefilled chains
    prefix: str | None = None
    prefix_tokens: int | None = None
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
            if f.name == "details" and v is None or f.name == "extra" and not v \
                    or f.name in _WHEN_SET and v is None:
                continue
            out[f.name] = v
        out.update(self.other)
        return out

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "ChainRow":
        problem = check_row(row)
        if problem:
            raise RowError(problem)
        known = {f.name for f in fields(cls)} - {"other"}
        kw = {k: v for k, v in row.items() if k in known}
        kw["chain_index"] = int(kw["chain_index"])
        return cls(**kw, other={k: v for k, v in row.items() if k not in known})
