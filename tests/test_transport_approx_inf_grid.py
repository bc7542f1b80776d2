"""approx for p = inf on a grid of cells: graph="grid", and graph="auto" at scale."""
import numpy as np
import pytest

from solvopt.core.errors import ModelError
from solvopt.dsl.transport import Transport
from solvopt.transport import approx as approx_module


def _clouds(n=300, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, d)), rng.uniform(size=(n, d))


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
def test_grid_choice_brackets_the_exact_bottleneck(metric):
    x, y = _clouds()
    exact = Transport(x, y, p=float("inf"), metric=metric).solve("bottleneck").objective
    r = Transport(x, y, p=float("inf"), metric=metric).solve("approx", graph="grid")
    err = r.stats["additive_error"]
    assert r.bound <= exact * (1 + 1e-12)
    assert exact <= r.objective * (1 + 1e-12)
    assert r.objective <= r.bound + err + 1e-12


def test_auto_takes_the_grid_of_cells_from_its_threshold(monkeypatch):
    x, y = _clouds(200)
    model = Transport(x, y, p=float("inf"))
    assert "additive_error" not in model.solve("approx").stats              # two-hop below the threshold
    monkeypatch.setattr(approx_module, "GRID_FROM_PAIRS", 200 * 200)
    assert "additive_error" in model.solve("approx").stats
    four = Transport(np.tile(x, (1, 2)), np.tile(y, (1, 2)), p=float("inf"))  # d = 4: not under auto
    assert "additive_error" not in four.solve("approx").stats


def test_grid_choice_needs_points_with_a_named_metric():
    x, y = _clouds(20)
    M = np.abs(x[:, None, 0] - y[None, :, 0])
    with pytest.raises(ModelError, match="graph='grid' for p = inf"):
        Transport(distance=M, p=float("inf")).solve("approx", graph="grid")
