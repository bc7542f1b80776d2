"""Where the benchmarks find the public instance sets that the package does not ship.

The published k-HC set, CVRPLIB's X set and Archetti's IRP set are large; a benchmark reads
them from ``$SOLVOPT_INSTANCES`` (a folder with ``khc/``, ``cvrp/``, ``irp/``) or, when that is
unset, from ``shared/instances`` in the folder that holds the checkout. A script that needs a
set that is absent says so and skips it.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def public_instances(subfolder: str = "") -> Path:
    """The folder of a public set (``khc``, ``cvrp``, ``irp``); it may not exist."""
    root = os.environ.get("SOLVOPT_INSTANCES")
    base = Path(root) if root else REPO.parent / "shared" / "instances"
    return base / subfolder if subfolder else base
