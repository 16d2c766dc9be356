"""A byte-offset index of one samples.jsonl: scanned once, extended as the file grows, read on demand.

The viewer never holds a run's texts: one pass keeps, per stored row, where it is in the file and
the small numbers the pages sort and summarise by (scores, passes, reward vectors, evolve lineage
fields). A page of 50 candidates is then 50 seeks, whatever the run's size. Row semantics follow
``vpo_harness.harness.core.store``: the latest row of a (problem_id, chain_index) wins, a cut last line (a writer
still running or killed) is not read yet. A damaged line is skipped and reported in one line
instead of failing the whole run, so the rest of a run stays readable.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vpo_harness.harness.core.metrics import best_at_k_curve, mean_pairwise_l1, pass_at_k

#: damaged lines named in the warnings (the rest are counted)
MAX_WARNINGS = 5


@dataclass(slots=True)
class RowMeta:
    """The part of a stored row the index keeps; the rest is read back from ``offset``."""

    offset: int
    length: int
    lineno: int
    problem_id: str
    chain_index: int
    error: bool
    scalars: tuple[float, ...]
    passed: tuple[bool, ...]
    rewards: tuple[tuple[float, ...], ...]
    iteration: int | None = None
    island: int | None = None
    parent_id: str | None = None
    program_id: str | None = None
    answer_index: int | None = None

    @property
    def best(self) -> float:
        try:
            return float(max(self.scalars)) if self.scalars else float("-inf")
        except (TypeError, ValueError):  # a hand-edited row with non-numbers sorts last
            return float("-inf")


# Numbers are kept as stored (JSON numbers are already floats/ints: no per-value conversion on the
# one pass over a large file; SampleIndex.problem_stats converts once, with numpy), in tuples: the
# garbage collector stops tracking tuples of numbers, so a 100k-candidate index does not make every
# full collection walk 100k small lists.
def _flat(v: Any) -> tuple:
    return tuple(v) if isinstance(v, list) else ()


def _nested(v: Any) -> tuple:
    if not isinstance(v, list):
        return ()
    try:
        return tuple(map(tuple, v))
    except TypeError:  # a reward that is not a list: nothing usable
        return ()


def _opt_int(v: Any) -> int | None:
    return v if type(v) is int else None


def _opt_str(v: Any) -> str | None:
    return v if type(v) is str else None


def _meta(row: dict[str, Any], offset: int, length: int, lineno: int) -> RowMeta:
    g = row.get
    if g("error"):
        return RowMeta(offset, length, lineno, str(row["problem_id"]), int(row["chain_index"]), True, (), (), (),
                       _opt_int(g("iteration")), _opt_int(g("island")), _opt_str(g("parent_id")),
                       _opt_str(g("program_id")), _opt_int(g("answer_index")))
    return RowMeta(offset, length, lineno, str(row["problem_id"]), int(row["chain_index"]), False,
                   _flat(g("scalars")), _flat(g("passed")), _nested(g("rewards")),
                   _opt_int(g("iteration")), _opt_int(g("island")), _opt_str(g("parent_id")),
                   _opt_str(g("program_id")), _opt_int(g("answer_index")))


class SampleIndex:
    """Index of ``path`` (a samples.jsonl). Thread-safe: :meth:`refresh` takes a lock, readers open
    their own file handle."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.scanned_to = 0  # bytes of complete lines read so far
        self.lines = 0
        self._ident: tuple[int, int] | None = None  # (device, inode): a replaced file is re-read whole
        self.rows: list[RowMeta] = []  # the latest row per key, in first-seen order
        self._slot: dict[tuple[str, int], int] = {}
        self.by_problem: dict[str, list[int]] = {}
        self.by_program: dict[str, int] = {}
        self.warnings: list[str] = []
        self.n_damaged = 0
        self.version = 0  # bumped whenever rows change: cached summaries compare it
        self._stats: dict[str, dict[str, Any]] = {}  # problem -> its numbers at self._stats_ks
        self._stats_ks: tuple[int, ...] | None = None
        self._dirty: set[str] = set()  # problems with rows added since their numbers were computed

    # ---- scanning ---------------------------------------------------------------------------------
    def refresh(self) -> "SampleIndex":
        """Read what was appended since the last call (everything the first time)."""
        with self._lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                if self.scanned_to:
                    self._reset()
                return self
            ident = (st.st_dev, st.st_ino)
            if self._ident is not None and (ident != self._ident or st.st_size < self.scanned_to):
                self._reset()  # truncated or replaced (a repair cut its tail): start again
            self._ident = ident
            if st.st_size > self.scanned_to:
                self._scan()
        return self

    def _scan(self) -> None:
        pos = self.scanned_to
        changed = False
        with open(self.path, "rb") as fh:
            fh.seek(pos)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # a line still being written: read on a later refresh
                self.lines += 1
                start, pos = pos, pos + len(raw)
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw.decode("utf-8"))  # bytes given to json.loads could be taken for UTF-16
                    if not isinstance(row, dict):
                        raise ValueError("not a JSON object")
                    for f in ("problem_id", "chain_index"):
                        if f not in row:
                            raise ValueError(f"missing field {f!r}")
                    if type(row["chain_index"]) is not int:
                        raise ValueError("field 'chain_index' is not an integer")
                    meta = _meta(row, start, len(raw), self.lines)
                except (ValueError, TypeError, KeyError) as exc:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
                    self.n_damaged += 1
                    if len(self.warnings) < MAX_WARNINGS:
                        why = ("not valid JSON" if isinstance(exc, json.JSONDecodeError) else
                               f"not valid UTF-8 (byte {exc.start})" if isinstance(exc, UnicodeDecodeError) else
                               str(exc).splitlines()[0][:120])
                        self.warnings.append(f"{self.path}: line {self.lines}: {why}; skipped")
                    continue
                self._add(meta)
                changed = True
        self.scanned_to = pos
        if changed:
            self.version += 1

    def _add(self, meta: RowMeta) -> None:
        self._dirty.add(meta.problem_id)
        key = (meta.problem_id, meta.chain_index)
        slot = self._slot.get(key)
        if slot is None:
            slot = len(self.rows)
            self._slot[key] = slot
            self.rows.append(meta)
            self.by_problem.setdefault(meta.problem_id, []).append(slot)
        else:  # a retried chain: the later row wins (harness.core.store.latest_rows)
            old = self.rows[slot]
            if old.program_id and self.by_program.get(old.program_id) == slot:
                del self.by_program[old.program_id]
            self.rows[slot] = meta
        if meta.program_id:
            self.by_program[meta.program_id] = slot

    # ---- reading ----------------------------------------------------------------------------------
    def read(self, slots: list[int]) -> list[dict[str, Any]]:
        """The full stored rows at ``slots`` (one seek each), with ``_line`` set to their line number."""
        out = []
        with open(self.path, "rb") as fh:
            for s in slots:
                m = self.rows[s]
                fh.seek(m.offset)
                row = json.loads(fh.read(m.length))
                row["_line"] = m.lineno
                out.append(row)
        return out

    def problem_slots(self, problem_id: str) -> list[int]:
        return list(self.by_problem.get(problem_id, ()))

    # ---- per-problem numbers ----------------------------------------------------------------------
    def problem_stats(self, ks: list[int]) -> dict[str, dict[str, Any]]:
        """Per problem: chains, candidates, errors, mean and best score, pass rate, best@k / pass@k at
        ``ks`` and diversity (mean pairwise L1 of the reward vectors), the run-level metrics'
        per-problem values (vpo_harness.harness.core.metrics). Only problems that got rows since the last call are
        computed again, so a run still writing costs its new rows, not its size."""
        key = tuple(ks)
        with self._stats_lock:  # one computation at a time: a second caller waits for its result
            with self._lock:
                if key != self._stats_ks:
                    self._stats, self._stats_ks, self._dirty = {}, key, set(self.by_problem)
                dirty = [p for p in self.by_problem if p in self._dirty]
                self._dirty = set()
            if dirty:
                self._stats.update(self._compute(dirty, list(ks)))
            return {pid: self._stats[pid] for pid in self.by_problem if pid in self._stats}

    def _compute(self, pids: list[str], ks: list[int]) -> dict[str, dict[str, Any]]:
        scal, pas, rew = [], [], []
        out: dict[str, dict[str, Any]] = {}
        for pid in pids:
            metas = [self.rows[s] for s in self.by_problem[pid]]
            good = [m for m in metas if not m.error]
            try:
                s = np.asarray([x for m in good for x in m.scalars], dtype=float)
                p = np.asarray([x for m in good for x in m.passed], dtype=bool)
                r = [v for m in good for v in m.rewards]
                r_arr = np.asarray(r, dtype=float) if len({len(v) for v in r}) == 1 else None
            except (TypeError, ValueError):  # a hand-edited row holding non-numbers: no numbers for this problem
                s, p, r_arr = np.zeros(0), np.zeros(0, bool), None
                note = f"{self.path}: problem {pid}: scores that are not numbers; its metrics are left out"
                if note not in self.warnings:
                    self.warnings.append(note)
            scal.append(s)
            pas.append(p)
            rew.append(r_arr)
            its = [m.iteration for m in metas if m.iteration is not None]
            out[pid] = {"problem_id": pid, "chains": len(metas), "candidates": int(s.size),
                        "errors": len(metas) - len(good),
                        "mean": float(s.mean()) if s.size else None, "best": float(s.max()) if s.size else None,
                        "pass_rate": float(p.mean()) if p.size else None,
                        "iterations": (max(its) + 1) if its else None}
        curve = best_at_k_curve(scal, ks) if ks else {}
        for k in ks:
            passk = pass_at_k(pas, k)
            for i, pid in enumerate(pids):
                out[pid][f"best@{k}"] = float(curve[k][i])
                out[pid][f"pass@{k}"] = float(passk[i])
        for i, pid in enumerate(pids):
            r = rew[i]
            out[pid]["diversity"] = mean_pairwise_l1(r) if r is not None and len(r) > 1 else None
        return out
