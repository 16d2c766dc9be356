"""The driver's bookkeeping of distributed work, free of any Ray call so its guarantees are unit-tested.

Invariant: a batch is either waiting, in flight on exactly one replica, or done. A replica that dies
sends its in-flight batches back to the front of the queue (they are the oldest work). A chain is
delivered to the writer at most once (``accept``), and the run ends only when nothing waits and
nothing is in flight, so every chain is delivered exactly once whatever replicas die on the way.
"""
from __future__ import annotations

from collections import deque
from typing import Hashable, Iterable

from vpo_harness.harness.core.executors.base import Batch, Key


class WorkQueue:
    def __init__(self, batches: Iterable[Batch]):
        self.waiting: deque[Batch] = deque(batches)
        self.inflight: dict[Hashable, tuple[int, Batch]] = {}  # ticket -> (replica slot, batch)
        self.delivered: set[Key] = set()
        self.stats = {"requeued_batches": 0, "requeued_chains": 0, "duplicates_dropped": 0}

    def take(self) -> Batch | None:
        return self.waiting.popleft() if self.waiting else None

    def sent(self, ticket: Hashable, slot: int, batch: Batch) -> None:
        if ticket in self.inflight:
            raise ValueError(f"ticket {ticket!r} is already in flight")
        self.inflight[ticket] = (slot, batch)

    def load(self, slot: int) -> int:
        return sum(1 for s, _ in self.inflight.values() if s == slot)

    def done(self, ticket: Hashable) -> Batch:
        return self.inflight.pop(ticket)[1]

    def lost(self, ticket: Hashable) -> Batch:
        """The replica holding ``ticket`` died: its chains not yet delivered go back to the front."""
        _, batch = self.inflight.pop(ticket)
        self.waiting.appendleft(batch)
        self.stats["requeued_batches"] += 1
        self.stats["requeued_chains"] += sum(1 for k in batch.keys if k not in self.delivered)
        return batch

    def accept(self, key: Key) -> bool:
        """True the first time a chain is delivered; False (counted) for any later copy."""
        if key in self.delivered:
            self.stats["duplicates_dropped"] += 1
            return False
        self.delivered.add(key)
        return True

    @property
    def finished(self) -> bool:
        return not self.waiting and not self.inflight
