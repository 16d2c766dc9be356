"""The bundled maze-tiny-vpo checkpoint served by a real vLLM CPU server and evaluated by `vpo run`.

Proves the trainer's checkpoints are plain Hugging Face folders that vLLM loads without special cases
(chat template included), and that the harness's openai backend gets real, scoreable routes from it.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.core.paths import REPO_ROOT
from harness.eval.runner import RunConfig, run
from harness.core.results import load_run
from tests.integration.vllm_server import VLLMServer, group_members, require_vllm_python


@pytest.mark.integration
@pytest.mark.vllm
@pytest.mark.timeout(900)
def test_bundled_vpo_checkpoint_through_vllm_server(tmp_path: Path) -> None:
    py = require_vllm_python()
    ckpt = REPO_ROOT / "checkpoints" / "maze-tiny-vpo"
    server = VLLMServer(py, ckpt, "maze-tiny-vpo", tmp_path / "server.log", extra_args=["--max-model-len", "512"])
    with server:
        server.wait_healthy(deadline_s=400)
        t0 = time.monotonic()
        folder = run(RunConfig.of(task="maze", split="test", limit=4, prompt_style="compact", m=3, n=4, ks=(1, 12),
                               temperature=0.7, top_p=1.0, max_tokens=110, model="openai:maze-tiny-vpo",
                               base_url=server.base_url, out=str(tmp_path / "run"), progress=False,
                               model_args={"use_n": False}))
        wall = time.monotonic() - t0
        pgid = server.proc.pid
    loaded = load_run(folder)
    assert len(loaded.chains) == 16 and loaded.chains["error"].isna().all(), server.log_tail()
    parsed = sum(a is not None for answers in loaded.chains["answers"] for a in answers)
    assert parsed >= 16, f"only {parsed} of 48 routes parsed: the served model is not the trained policy"
    assert loaded.results["metrics"]["best@12"]["mean"] > 0.0
    assert group_members(pgid) == []
    print(f"vLLM CPU: 16 chains (48 candidates) in {wall:.1f} s")
