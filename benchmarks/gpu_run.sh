#!/usr/bin/env bash
# The GPU run in one command (see benchmarks/gpu_run.py): GPU tests, figures against the CPU kernel,
# benchmarks/results/gpu.{md,json,png}. On the device machine: bash benchmarks/gpu_run.sh --copy-to "$OUT"
# (--quick: a subset; --dry-run: the plan only). Unbuffered, so a log shows each line as it comes.
set -u
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    for candidate in python3 python; do
        if command -v "$candidate" >/dev/null 2>&1; then PY=$candidate; break; fi
    done
fi
if [ -z "$PY" ]; then echo "gpu_run.sh: no python3 or python on PATH" >&2; exit 2; fi
export PYTHONUNBUFFERED=1
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    set -o pipefail
    "$PY" benchmarks/gpu_run.py "$@" 2>&1 | tee "$OUT/gpu_run.log"
else
    exec "$PY" benchmarks/gpu_run.py "$@"
fi
