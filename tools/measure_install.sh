#!/usr/bin/env bash
# The core install, measured: a fresh venv, the wheel without extras, its size on disk (site-packages,
# pip and setuptools left out), what the `pyomo` extra adds, and the import time of `import solvopt`
# and `import solvopt.dsl` (python -X importtime, cumulative microseconds of the module; median and
# minimum of N runs, each a fresh interpreter). Writes a markdown report to stdout.
# Usage: tools/measure_install.sh [N]   (needs the package index the machine's pip uses)
set -euo pipefail
N=${1:-7}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 XDG_CACHE_HOME="$T/cache"
unset NUMBA_CACHE_DIR SOLVOPT_CACHE_DIR PYTHONPATH
python3 -m venv "$T/venv"
PY="$T/venv/bin/python"
"$PY" -m pip wheel -q --no-deps -w "$T/dist" "$REPO" 2>/dev/null
WHEEL=$(ls "$T"/dist/solvopt-*.whl)
"$PY" -m pip install -q "$WHEEL" 2>/dev/null
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
size() { du -sm --exclude=pip --exclude='pip-*' --exclude=setuptools --exclude='setuptools-*' \
           --exclude=pkg_resources --exclude=_distutils_hack "$SITE" | cut -f1; }
imports() {  # module -> "median min" in ms
  for _ in $(seq "$N"); do
    (cd "$T" && "$PY" -X importtime -c "import $1" 2>&1 | grep -E "\| $1\$" | awk -F'|' '{print $2}')
  done | sort -n | awk '{a[NR]=$1} END {printf "%.0f %.0f", a[int((NR+1)/2)]/1000, a[1]/1000}'
}
CORE=$(size)
echo "# The core install"
echo
echo "Measured by \`tools/measure_install.sh $N\` on $(date -u +%Y-%m-%d): $(uname -sm), $(nproc) cores,"
echo "Python $("$PY" -c 'import platform; print(platform.python_version())'), wheel $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)."
echo
echo "| installed | size on disk (MiB) |"
echo "| --- | --- |"
echo "| \`pip install solvopt\` (core: numpy, scipy, numba + llvmlite, highspy, jsonschema) | $CORE |"
for pkg in llvmlite scipy numpy numba highspy solvopt; do
  echo "| of which \`$pkg\` | $(du -smc "$SITE/$pkg" "$SITE/$pkg.libs" 2>/dev/null | tail -1 | cut -f1) |"
done
read -r SM SMIN <<<"$(imports solvopt)"
read -r DM DMIN <<<"$(imports solvopt.dsl)"
"$PY" -m pip install -q "$WHEEL[pyomo]" 2>/dev/null
WITH=$(size)
read -r PM PMIN <<<"$(imports pyomo.environ)"
echo "| \`pip install solvopt[pyomo]\` | $WITH (Pyomo adds $((WITH - CORE))) |"
echo
echo "| import | median (ms) | min (ms) |"
echo "| --- | --- | --- |"
echo "| \`import solvopt\` | $SM | $SMIN |"
echo "| \`import solvopt.dsl\` | $DM | $DMIN |"
echo "| \`import pyomo.environ\` (no longer paid by the core) | $PM | $PMIN |"
