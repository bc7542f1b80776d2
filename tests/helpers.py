"""Constants and helpers shared by the test files (``from helpers import REPO``).

pytest puts this folder on ``sys.path`` (the tests are not a package), so every test file can
import this module by name; fixtures live in ``conftest.py``.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "instances"
# the public instance sets the package does not ship (as benchmarks/public_instances.py reads them)
SHARED_INSTANCES = Path(os.environ.get("SOLVOPT_INSTANCES") or REPO.parent / "shared" / "instances")
# how long a stopped run (time limit, Ctrl-C) may take to return: generous, since the machine
# running the tests may be loaded; a run that does not poll its stop takes minutes. A check that
# the stop is polled, not a speed test.
PROMPT = 15.0
