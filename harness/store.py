"""The run store: one run = one folder, append-only, resumable.

    RUN/config.json     everything needed to reproduce the run (written once, checked on resume)
    RUN/samples.jsonl   one row per chain, appended in batches (fsync'ed every few seconds and at the end)
    RUN/results.json    metrics with standard errors (rewritten from samples at the end)

A crash can only ever cut the last line of samples.jsonl; on resume that partial line is truncated
away, every complete row is kept, and only the missing chains are generated again. Rows are keyed by
(problem_id, chain_index); if a key appears twice (``--retry-errors``) the later row wins.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

CONFIG, SAMPLES, RESULTS = "config.json", "samples.jsonl", "results.json"

#: config keys that may differ between a run and its resumption (they don't change what is sampled)
RESUME_FREE_KEYS = {"created", "versions", "git", "concurrency", "flush_every", "retry_errors", "progress",
                    "score_workers", "command", "resumed", "executor"}


class RunStoreError(RuntimeError):
    pass


def _json_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, ensure_ascii=False)


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, default=_json_default, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


class RunStore:
    """Append-only writer of one run folder."""

    def __init__(self, folder: str | Path, flush_every: int = 16, fsync_interval_s: float = 2.0):
        self.folder = Path(folder)
        self.flush_every = max(1, int(flush_every))
        # write() already survives a killed process (the page cache keeps it); fsync only guards
        # against power loss, so it is paced by time instead of paid on every batch
        self.fsync_interval_s = fsync_interval_s
        self._last_fsync = 0.0
        self._buf: list[str] = []
        self._fh = None

    # ---- config -----------------------------------------------------------------------------------
    def init(self, config: dict[str, Any]) -> bool:
        """Create the folder or check it belongs to the same run. Returns True when resuming."""
        self.folder.mkdir(parents=True, exist_ok=True)
        cfg_path = self.folder / CONFIG
        if cfg_path.exists():
            try:
                old = json.loads(cfg_path.read_text())
            except json.JSONDecodeError as exc:
                raise RunStoreError(f"{cfg_path}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
            diff = sorted(k for k in set(old) | set(config)
                          if k not in RESUME_FREE_KEYS and _canon(old.get(k)) != _canon(config.get(k)))
            if diff:
                detail = "; ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in diff[:5])
                raise RunStoreError(
                    f"{cfg_path}: the run folder holds a different run (fields {', '.join(diff)} differ: {detail}). "
                    "Use another --out folder, or the same settings to resume.")
            return True
        write_json_atomic(cfg_path, config)
        return False

    # ---- samples ----------------------------------------------------------------------------------
    def repair(self) -> int:
        """Cut a partial last line left by a crash; returns the number of bytes dropped."""
        path = self.folder / SAMPLES
        if not path.exists():
            return 0
        data = path.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
        return len(data) - cut

    def done_keys(self, include_errors: bool = True) -> set[tuple[str, int]]:
        keys: set[tuple[str, int]] = set()
        for row in iter_samples(self.folder / SAMPLES):
            key = (row["problem_id"], int(row["chain_index"]))
            if include_errors or not row.get("error"):
                keys.add(key)
            else:
                keys.discard(key)
        return keys

    def append(self, row: dict[str, Any]) -> None:
        self._buf.append(dumps(row) + "\n")
        if len(self._buf) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        if not self._buf:
            return
        if self._fh is None:
            self._fh = open(self.folder / SAMPLES, "a", encoding="utf-8")
        self._fh.write("".join(self._buf))
        self._fh.flush()
        self._buf.clear()
        now = time.monotonic()
        if now - self._last_fsync >= self.fsync_interval_s:
            os.fsync(self._fh.fileno())
            self._last_fsync = now

    def close(self) -> None:
        self.flush()
        if self._fh is not None:
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def write_results(self, results: dict[str, Any]) -> None:
        write_json_atomic(self.folder / RESULTS, results)


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=_json_default)


def iter_samples(path: Path) -> Iterable[dict[str, Any]]:
    """Rows of samples.jsonl; a malformed complete line is an error naming file and line."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                return  # partial tail of a crashed writer: ignored here, cut by RunStore.repair
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RunStoreError(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from exc
            for field in ("problem_id", "chain_index"):
                if field not in row:
                    raise RunStoreError(f"{path}: line {lineno}: missing field {field!r}")
            yield row


def latest_rows(folder: str | Path) -> list[dict[str, Any]]:
    """One row per (problem, chain): the last one written."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for row in iter_samples(Path(folder) / SAMPLES):
        rows[(row["problem_id"], int(row["chain_index"]))] = row
    return list(rows.values())


@dataclass
class LoadedRun:
    """A run as pandas DataFrames: one row per chain, one row per candidate answer."""

    path: Path
    config: dict[str, Any]
    results: dict[str, Any] | None
    chains: "Any"  # pandas.DataFrame
    candidates: "Any"  # pandas.DataFrame


def load_run(path: str | Path) -> LoadedRun:
    """Read a run folder. ``candidates`` has one row per answer with its reward components as columns."""
    import pandas as pd

    folder = Path(path)
    cfg_path = folder / CONFIG
    if not cfg_path.exists():
        raise RunStoreError(f"{folder}: not a run folder (no {CONFIG})")
    config = json.loads(cfg_path.read_text())
    res_path = folder / RESULTS
    results = json.loads(res_path.read_text()) if res_path.exists() else None
    rows = latest_rows(folder)
    chains = pd.DataFrame(rows)
    names = config.get("components") or []
    cand_rows = []
    for row in rows:
        if row.get("error"):
            continue
        for j, (ans, r, s, ok) in enumerate(zip(row["answers"], row["rewards"], row["scalars"], row["passed"])):
            c = {"problem_id": row["problem_id"], "chain_index": row["chain_index"], "answer_index": j,
                 "answer": ans, "scalar": s, "passed": ok}
            for nm, v in zip(names if len(names) == len(r) else [f"c{i}" for i in range(len(r))], r):
                c[nm] = v
            cand_rows.append(c)
    return LoadedRun(folder, config, results, chains, pd.DataFrame(cand_rows))
