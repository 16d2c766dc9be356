"""A fixed set of sandbox slots, one per core by default, used from a thread pool.

Threads are enough: each slot spends its time waiting on a child process. Each slot is a Sandbox
with its own zygote (started on first use, stopped by ``close``) and its own cgroup (the budget of
the candidate it runs, removed with the zygote). Every slot owns a distinct unprivileged uid, so one
candidate's fork bomb (RLIMIT_NPROC counts per uid) or ``kill(-1, ...)`` cannot touch the candidate
running next to it.
"""
from __future__ import annotations

import os
import queue
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Iterable, Sequence

from vpo_harness.harness.core.sandbox.isolation import Isolation, detect_isolation
from vpo_harness.harness.core.sandbox.limits import Limits
from vpo_harness.harness.core.sandbox.sandbox import Sandbox, SandboxResult

#: pool slots get unnamed, unprivileged uids from this range, 64 per harness process, chosen by pid
#: so that two harness processes on one machine (tests next to a run) do not share uids: a shared uid
#: would couple their RLIMIT_NPROC counts, and the no-PID-namespace fallback sweeps by uid
UID_RANGE_START = 200_000
UID_BLOCK = 64


def default_uid_base() -> int:
    return UID_RANGE_START + (os.getpid() % 10_000) * UID_BLOCK


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class SandboxPool:
    """``submit``/``map`` sandbox runs on ``workers`` parallel slots."""

    def __init__(self, workers: int | None = None, limits: Limits | None = None, *,
                 uid_base: int | None = None, isolation: Isolation | None = None,
                 tmp_root: str | None = None, unsafe: bool | None = None):
        self.workers = workers or default_workers()
        self.limits = limits or Limits()
        iso = isolation or detect_isolation()
        if uid_base is None:
            uid_base = default_uid_base()
        if self.workers > UID_BLOCK:
            raise ValueError(f"at most {UID_BLOCK} workers per pool")
        self._slots: "queue.Queue[Sandbox]" = queue.Queue()
        self._all = [Sandbox(self.limits, uid=uid_base + i, gid=uid_base + i, isolation=iso,
                             tmp_root=tmp_root, unsafe=unsafe) for i in range(self.workers)]
        for sb in self._all:
            self._slots.put(sb)
        self.uids = tuple(range(uid_base, uid_base + self.workers))
        self._ex = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sandbox")

    def run(self, driver_source: str, payload: Any, limits: Limits | None = None,
            files: dict[str, str] | None = None,
            on_record: Callable[[dict[str, Any]], Any] | None = None) -> SandboxResult:
        """Blocking run on the next free slot (callers with their own threads use this)."""
        sb = self._slots.get()
        try:
            return sb.run(driver_source, payload, limits=limits, files=files, on_record=on_record)
        finally:
            self._slots.put(sb)

    def submit(self, driver_source: str, payload: Any, *, limits: Limits | None = None,
               files: dict[str, str] | None = None) -> "Future[SandboxResult]":
        return self._ex.submit(self.run, driver_source, payload, limits, files)

    def map(self, jobs: Iterable[tuple[str, Any]] | Sequence[tuple[str, Any]], *,
            limits: Limits | None = None) -> list[SandboxResult]:
        """Run (driver_source, payload) jobs in parallel; results in input order."""
        futs = [self.submit(src, payload, limits=limits) for src, payload in jobs]
        return [f.result() for f in futs]

    def isolation_record(self) -> dict[str, Any]:
        return self._all[0].isolation_record()

    def close(self) -> None:
        """Wait for queued runs, then stop every slot's zygote."""
        self._ex.shutdown(wait=True)
        for sb in self._all:
            sb.close()

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
