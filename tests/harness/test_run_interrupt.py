"""Ctrl-C in the middle of an hf run keeps every chain whose text was complete, and the same command
then finishes the run with the rows an uninterrupted run writes.

The interrupt is a real SIGINT, raised from inside the decoding loop at a chosen step of the second
batch (``signal.raise_signal`` runs the handler before it returns), so where it lands does not depend
on timing: the first batch is on disk, and of the second exactly the rows that had ended by then.
"""
from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.models import hf
from vpo_harness.harness.core.store import SAMPLES, iter_samples
from tests.fakes.tiny_llama import one_torch_thread, tiny_llama_dir  # noqa: F401 (fixtures)

MAX_TOKENS = 100


@pytest.fixture
def sigint_raises():
    """SIGINT as an interactive shell delivers it (a test started with `pytest &` inherits it ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def vpo_run(model_dir: Path, out: Path) -> int:
    # temperature 2 on the random tiny model: some chains end (end-of-sequence) well before the budget;
    # --no-cache: the reference run would otherwise supply every chain of the interrupted one
    return main(["run", "--task", "maze", "--model", f"hf:{model_dir}", "--limit", "2", "-n", "8",
                 "--max-tokens", str(MAX_TOKENS), "--temperature", "2.0", "--prompt-style", "compact",
                 "--model-args", "batch_size=8", "--no-cache", "--out", str(out), "--no-progress"])


def rows(folder: Path) -> dict[tuple[str, int], dict[str, Any]]:
    keep = ("text", "completion_tokens", "prompt_tokens", "finish_reason", "scalars")
    return {(r["problem_id"], r["chain_index"]): {k: r.get(k) for k in keep} for r in iter_samples(folder / SAMPLES)}


def test_sigint_mid_batch_keeps_finished_chains_and_rerun_completes(tiny_llama_dir, tmp_path, monkeypatch,
                                                                    sigint_raises, capsys) -> None:
    assert vpo_run(tiny_llama_dir, tmp_path / "ref") == 0
    ref = rows(tmp_path / "ref")
    first, second = sorted({pid for pid, _ in ref})
    assert len(ref) == 16
    # interrupt the second batch (the second problem's 8 chains) one step after its last early ending
    ended = {k: r["completion_tokens"] for k, r in ref.items() if k[0] == second and r["finish_reason"] == "stop"}
    assert ended and len(ended) < 8, "the tiny model must end some chains of the batch early, not all"
    at_step = max(ended.values()) + 1   # the ids seen at call s hold s-1 generated tokens

    samplers: list[Any] = []
    steps: dict[int, int] = {}
    real_call = hf.RowSampler.__call__

    def call(self: Any, input_ids: Any, scores: Any) -> Any:
        if id(self) not in steps:
            samplers.append(self)
            steps[id(self)] = 0
        steps[id(self)] += 1
        out = real_call(self, input_ids, scores)
        if len(samplers) == 2 and steps[id(self)] == at_step:
            signal.raise_signal(signal.SIGINT)
        return out

    monkeypatch.setattr(hf.RowSampler, "__call__", call)
    out = tmp_path / "run"
    capsys.readouterr()
    assert vpo_run(tiny_llama_dir, out) == 130
    assert "interrupted" in capsys.readouterr().err
    kept = rows(out)
    want = {k for k in ref if k[0] == first} | set(ended)
    assert set(kept) == want          # the whole first batch, and every chain of the second that had ended
    assert all(kept[k] == ref[k] for k in kept)   # ... exactly as the uninterrupted run wrote them
    assert not (out / "results.json").exists()

    monkeypatch.setattr(hf.RowSampler, "__call__", real_call)
    assert vpo_run(tiny_llama_dir, out) == 0
    assert "resuming, %d chains done, %d to go" % (len(want), 16 - len(want)) in capsys.readouterr().err
    assert rows(out) == ref
    assert json.loads((out / "results.json").read_text())["n_chains"] == 16


def test_interrupt_before_any_row_ends_keeps_nothing_of_the_batch(tiny_llama_dir, monkeypatch) -> None:
    """An interrupt at the first decoding step: no row has ended, so none is handed on half-written."""
    backend = hf.HFBackend(str(tiny_llama_dir), batch_size=4, device="cpu")
    from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig

    real_call = hf.RowSampler.__call__

    def call(self: Any, input_ids: Any, scores: Any) -> Any:
        real_call(self, input_ids, scores)
        raise KeyboardInterrupt

    monkeypatch.setattr(hf.RowSampler, "__call__", call)
    req = GenRequest("p", [{"role": "user", "content": "find the exit"}], (0, 1), (1, 2))
    got = []
    with pytest.raises(KeyboardInterrupt):
        for g in backend.generate([req], SamplingConfig(temperature=1.0, top_p=1.0, max_tokens=20)):
            got.append(g)
    assert got == []
