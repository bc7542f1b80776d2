#!/usr/bin/env bash
# Build the API reference (HTML, from the docstrings) with pdoc, offline: no network, no server.
# Usage: tools/build_api.sh [OUT]   (default OUT: build/api; open OUT/index.html)
# Needs the `docs` extra: pip install -e ".[docs]"
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-"$REPO/build/api"}
MODULES=(solvopt solvopt.core solvopt.dsl solvopt.dist solvopt.io
         solvopt.khc solvopt.cvrp solvopt.dp solvopt.irp solvopt.lp solvopt.transport solvopt.games
         solvopt.gpu)
cd "$REPO"
python -m pdoc --docformat restructuredtext "${MODULES[@]}" -o "$OUT"
echo "API reference: $OUT/index.html" >&2
