"""Regenerate the synthetic samples: instances/transport/small.npz and the two tiny models in instances/lp/.

Run from the repository root: ``python instances/generate_samples.py``. The public instances
(khc/, cvrp/, irp/) are copies of the published files and are not generated.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def transport_small(path: Path) -> None:
    """20 source and 30 target points in the unit square (seed 20240), uniform weights."""
    rng = np.random.default_rng(20240)
    x, y = rng.random((20, 2)), rng.random((30, 2))
    np.savez(path, x=x, y=y, a=np.full(20, 1 / 20), b=np.full(30, 1 / 30))


def _highs():
    import highspy
    h = highspy.Highs()
    h.silent()
    return h, highspy


def knapsack_milp(path: Path) -> None:
    """0/1 knapsack: maximise 10a + 13b + 7c + 8d + 4e s.t. 5a + 7b + 4c + 5d + 3e <= 14 (optimum 25: a, c, d)."""
    h, highspy = _highs()
    values, weights = [10.0, 13.0, 7.0, 8.0, 4.0], [5.0, 7.0, 4.0, 5.0, 3.0]
    for j, v in enumerate(values):
        h.addVar(0.0, 1.0)
        h.changeColCost(j, v)
        h.changeColIntegrality(j, highspy.HighsVarType.kInteger)
        h.passColName(j, "abcde"[j])
    h.addRow(-highspy.kHighsInf, 14.0, 5, np.arange(5, dtype=np.int32), np.array(weights))
    h.passRowName(0, "capacity")
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.writeModel(str(path))


def production_lp(path: Path) -> None:
    """The classic two-product LP: max 3x + 5y, x <= 4, 2y <= 12, 3x + 2y <= 18 (optimum 36 at (2, 6))."""
    h, highspy = _highs()
    for j, cost in enumerate([3.0, 5.0]):
        h.addVar(0.0, highspy.kHighsInf)
        h.changeColCost(j, cost)
        h.passColName(j, "xy"[j])
    rows = [([0], [1.0], 4.0, "plant1"), ([1], [2.0], 12.0, "plant2"), ([0, 1], [3.0, 2.0], 18.0, "plant3")]
    for i, (idx, vals, ub, name) in enumerate(rows):
        h.addRow(-highspy.kHighsInf, ub, len(idx), np.array(idx, dtype=np.int32), np.array(vals))
        h.passRowName(i, name)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.writeModel(str(path))


if __name__ == "__main__":
    transport_small(HERE / "transport" / "small.npz")
    knapsack_milp(HERE / "lp" / "knapsack.mps")
    production_lp(HERE / "lp" / "production.lp")
