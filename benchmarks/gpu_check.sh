#!/usr/bin/env bash
# The GPU backend's one prepared check (see benchmarks/gpu_check.py). From the repo root:
#   bash benchmarks/gpu_check.sh                          # on a machine with an NVIDIA GPU
#   GPU_CHECK_BACKEND=gpu_sim bash benchmarks/gpu_check.sh   # rehearsal with the simulator
# Results: stdout and $OUT/gpu_check.txt. Conformance cases: $XLAPY_CONFORMANCE_DIR, else
# ../shared/conformance/cases, else ./shared/conformance/cases.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XLAPY_CACHE_DIR="${XLAPY_CACHE_DIR:-/tmp/xlapy-cache-gpu-check}"
if [ -z "${XLAPY_CONFORMANCE_DIR:-}" ] && [ ! -d ../shared/conformance/cases ] \
        && [ -d shared/conformance/cases ]; then
    export XLAPY_CONFORMANCE_DIR="$PWD/shared/conformance/cases"
fi
PY="${PYTHON:-python3}"
exec timeout 345 "$PY" benchmarks/gpu_check.py "$@"
