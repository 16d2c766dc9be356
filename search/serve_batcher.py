"""The single owner of a `vpo serve` backend: queued jobs in, one generate call per batch out.

HTTP handlers only enqueue; this thread takes whatever is waiting with the same kind and sampling
settings (chat template arguments included) as one batch, so concurrent clients share forward passes
instead of serialising on a lock. Choice seeds are fixed per request (:func:`choice_seeds`) and the hf
backend samples every row with its own generator, so a reply does not depend on its batch mates.

A job whose client went away before its batch started is skipped (its future was cancelled). A batch
that raises is re-run one job at a time, so one bad request (a prompt longer than the context) fails
alone instead of taking its batch mates with it; the seeds make the re-run give the same texts.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable

from vpo_harness.harness.core.models.base import Backend, GenRequest, check_prefill
from vpo_harness.harness.core.models.prefill import continuation
from vpo_harness.search.serve_protocol import Job


class Batcher:
    """Gathering a batch: ``arriving()`` counts requests the server has accepted but not yet queued
    (still being read or validated); while it is non-zero the batcher waits for them, up to
    ``gather_s``, instead of starting a batch of one that the next request misses by a millisecond.
    Otherwise, when the previous batch held several requests, it waits ``linger_s`` after the last job
    for another (clients answered by the same batch come back a few milliseconds apart); `vpo serve`
    lingers 5 ms, about 1% of one tiny-model call. A lone client never waits."""

    def __init__(self, backend: Backend, max_batch: int = 64, arriving: Callable[[], int] | None = None,
                 gather_s: float = 0.02, linger_s: float = 0.0):
        self.backend, self.max_batch = backend, max_batch
        self.arriving, self.gather_s, self.linger_s = arriving or (lambda: 0), gather_s, linger_s
        self.q: "queue.Queue[Job | None]" = queue.Queue()
        self.last_batch_s = 0.0
        self._last_jobs = 0
        self.batches = 0
        self.thread = threading.Thread(target=self._loop, name="vpo-serve-batcher", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> Any:
        self.q.put(job)
        return job.future

    def close(self) -> None:
        self.q.put(None)
        self.thread.join(timeout=30)

    def _loop(self) -> None:
        held: list[Job | None] = []
        while True:
            job = held.pop(0) if held else self.q.get()
            if job is None:
                return
            batch, rows = [job], len(job.seeds)
            deadline = time.monotonic() + self.gather_s
            linger = self.linger_s if self._last_jobs > 1 else 0.0  # a lone client never lingers
            quiet_until = time.monotonic() + linger
            while rows < self.max_batch:
                try:
                    nxt = self.q.get_nowait()
                except queue.Empty:
                    now = time.monotonic()
                    wait = (deadline if self.arriving() else min(deadline, quiet_until)) - now
                    if wait <= 0:
                        break
                    try:
                        nxt = self.q.get(timeout=min(wait, 0.002))
                    except queue.Empty:
                        continue
                    quiet_until = time.monotonic() + linger
                if nxt is None:
                    held.append(nxt)
                    break
                if nxt.kind == job.kind and nxt.sampling == job.sampling:
                    batch.append(nxt)
                    rows += len(nxt.seeds)
                else:
                    held.append(nxt)
            self._last_jobs = len(batch)
            live = [j for j in batch if j.future.set_running_or_notify_cancel()]
            if live:
                self._run(live)

    def _run(self, batch: list[Job]) -> None:
        t0 = time.perf_counter()
        try:
            for j, res in zip(batch, self._generate(batch)):
                if isinstance(res, BaseException):
                    j.future.set_exception(res)
                else:
                    j.future.set_result(res)
        except Exception as exc:  # noqa: BLE001 - a failing batch fails its requests, not the server
            if len(batch) > 1:
                for j in batch:
                    self._run([j])
            else:
                batch[0].future.set_exception(exc)
        finally:
            self.batches += 1
            self.last_batch_s = time.perf_counter() - t0

    def _generate(self, batch: list[Job]) -> list[Any]:
        """One backend call for the batch: a result list (or an exception) per job."""
        if batch[0].kind == "completion" and hasattr(self.backend, "_generate_batch"):
            # raw text prompts go to the model as written (no chat template)
            prompts = [(j.payload, True) for j in batch for _ in j.seeds]
            seeds = [s for j in batch for s in j.seeds]
            out = self.backend._generate_batch(prompts, seeds, batch[0].sampling)  # type: ignore[attr-defined]
            res, k = [], 0
            for j in batch:
                res.append([{"text": t, "prompt_tokens": p, "completion_tokens": c, "finish_reason": f}
                            for t, p, c, f in out[k:k + len(j.seeds)]])
                k += len(j.seeds)
            return res
        reqs = []
        for b, j in enumerate(batch):
            msgs = j.payload if j.kind == "chat" else [{"role": "user", "content": j.payload}]
            reqs.append(GenRequest(str(b), msgs, tuple(range(len(j.seeds))), tuple(j.seeds), prefix=j.prefix))
        check_prefill(self.backend, reqs)
        got: dict[tuple[int, int], Any] = {}
        for g in self.backend.generate(reqs, batch[0].sampling):
            got[(int(g.problem_id), g.chain_index)] = g
        res = []
        for b, j in enumerate(batch):
            gens = [got.get((b, i)) for i in range(len(j.seeds))]
            bad = next((g for g in gens if g is None or g.error), "ok")
            if bad != "ok":
                res.append(RuntimeError(bad.error if bad is not None else "backend returned no generation"))
                continue
            # the reply holds the continuation only (vLLM's convention; the client keeps the prefix)
            res.append([{"text": continuation(g.text, j.prefix), "prompt_tokens": g.prompt_tokens or 0,
                         "completion_tokens": g.completion_tokens or 0,
                         "finish_reason": g.finish_reason or "stop"} for g in gens])
        return res
