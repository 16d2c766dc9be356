#!/usr/bin/env bash
# One check for a machine lent with one GPU for a few minutes and no network (bench/gpu_check.py says
# what it runs). It needs the repository (bundled checkpoints included) and, on that machine's python,
# torch with CUDA, transformers, accelerate, numpy, pandas, safetensors, and what the harness imports:
# pyarrow, scipy, tqdm, matplotlib. TRL and openevolve are often missing there: give a folder of wheels
# and every package the check needs that is missing is installed from it, offline; a part whose packages
# are still missing is skipped with one line.
#
#   bash bench/gpu_check.sh                       # on the GPU machine
#   bash bench/gpu_check.sh --wheels wheels/      # + install trl/openevolve from wheels/ (no index)
#   bash bench/gpu_check.sh --dry-run             # CPU only, tiny sizes (tests/bench/test_gpu_check.py)
#   bash bench/gpu_check.sh --list-wheels         # the command that fills a wheels folder (run it online)
#
# Wheels to carry (python 3.12): trl==1.16.0 openevolve==0.4.1 datasets dill multiprocess xxhash fsspec
# (datasets' own deps) dacite cloudpickle (openevolve's), and if that machine lacks them pyarrow scipy
# tqdm matplotlib (binary wheels, tens of MB each).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WHEELS=""
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --wheels) WHEELS="${2:?--wheels needs a folder}"; shift 2 ;;
    --list-wheels)
      echo "$PY -m pip download --only-binary=:all: --python-version 3.12 --no-deps -d wheels \\"
      echo "    trl==1.16.0 openevolve==0.4.1 datasets dill multiprocess xxhash fsspec dacite cloudpickle \\"
      echo "    tqdm pyarrow scipy matplotlib contourpy cycler fonttools kiwisolver pillow pyparsing"
      exit 0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [[ -n "$WHEELS" ]]; then
  [[ -d "$WHEELS" ]] || { echo "gpu_check: --wheels $WHEELS is not a folder" >&2; exit 2; }
  for pkg in tqdm pyarrow scipy matplotlib trl openevolve; do
    if "$PY" -c "import $pkg" 2>/dev/null; then
      echo "have $pkg"
    elif "$PY" -m pip install -q --no-index --find-links "$WHEELS" "$pkg"; then
      echo "installed $pkg from $WHEELS"
    else
      echo "skip installing $pkg: not installable from $WHEELS alone (the part that needs it is skipped)"
    fi
  done
fi
# the repository is not installed there: its folders become importable as vpo_harness.<folder>
# (the namespace setup.py installs) through a folder of symlinks, and the root for bench/
NS_ROOT=$(mktemp -d)
mkdir "$NS_ROOT/vpo_harness"
for d in harness benchmarks search training reports; do ln -s "$PWD/$d" "$NS_ROOT/vpo_harness/$d"; done
export PYTHONPATH="$NS_ROOT:$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
exec "$PY" bench/gpu_check.py ${ARGS[@]+"${ARGS[@]}"}
