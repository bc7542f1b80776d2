"""The notebooks' metrics on a markov-horizon answer (benchmarks/games_markov.py, horizon_paper_metrics)
against hand computations on tiny economies (no solve: the answers are written by hand)."""
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from solvopt.dsl.markov_games import MarkovExchangeEconomy

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_games_markov", REPO / "benchmarks" / "games_markov.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_games_markov"] = bench
spec.loader.exec_module(bench)


def test_deterministic_periods_cobb_douglas_of_degree_one_half():
    a = np.array([[0.25, 0.25], [0.1, 0.4]])              # rows sum to 0.5: U = prod x^a, degree 0.5
    E = np.array([[[1.0, 2.0], [3.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]])
    B = np.array([[[0.0, 0.0]], [[1.0, 2.0]]])
    econ = MarkovExchangeEconomy(("cobb_douglas", a), E, [[0, 1], [0, 1]], 0.9, initial=[1, 0], asset_returns=B,
                                 price_sum=2.0, asset_price_max=1.0, degree=0.5, horizon=2)
    p = np.array([[1.0, 1.0], [0.5, 1.5]])
    x = np.array([[[0.5, 1.0], [2.0, 1.0]], [[1.0, 1.0], [2.0, 3.0]]])
    y = np.array([[[1.0], [0.5]], [[0.0], [0.0]]])
    result = SimpleNamespace(objective=0.25, solution={"prices": p, "asset_prices": [[0.5], [0.0]],
                                                       "consumption": x, "portfolio": y, "worlds": [0, 1]})
    o = bench.horizon_paper_metrics(econ, result)
    # period 0: supply (4, 3), demand (2.5, 2), asset held 1.5; period 1: supply (2, 2) + 1.5 (1, 2), demand (3, 4)
    assert o["excess_demand_goods_start"] == pytest.approx((1.5 ** 2 + 1.0) / 2)
    assert o["excess_demand_start"] == pytest.approx(1.625 + 2.25)
    assert o["excess_demand_avg"] == pytest.approx((3.875 + (0.25 + 1.0) / 2) / 2)
    assert o["cumulative_regret"] == 0.25
    U = np.prod(x ** a[None], axis=-1)                     # (period, consumer)
    W = np.array([[3 - 0.5, 4 - 0.25], [2 + 3.5, 2 + 3.5 * 0.5]])       # p.e + (p.B) carried - q y
    fov = np.mean((a[None] * U[..., None] / x - 0.5 * (U / W)[..., None] * p[:, None, :]) ** 2, axis=-1).mean(axis=1)
    assert o["consumer_foc_start"] == pytest.approx(fov[0], rel=1e-12)
    assert o["consumer_foc_avg"] == pytest.approx(fov.mean(), rel=1e-12)
    assert o["corner_consumers"] == 0
    assert o["value_start"] == pytest.approx(np.mean(U[0] + 0.9 * U[1]))
    assert o["bellman_error"] < 1e-25


def test_history_classes_leontief_at_its_demand_and_a_corner():
    a = np.array([[1.0, 2.0], [3.0, 1.0]])
    E = np.array([[[1.0, 1.0], [2.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], [[2.0, 1.0], [1.0, 2.0]]])
    B = np.array([[[0.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]]])
    P = [[0, 0.5, 0.5], [0, 0.5, 0.5], [0, 0.5, 0.5]]
    econ = MarkovExchangeEconomy(("leontief", a), E, P, 0.9, initial=[1, 0, 0], asset_returns=B, price_sum=2.0,
                                 asset_price_max=1.0, horizon=2)
    p = np.array([[1.0, 1.0], [0.5, 1.5], [1.5, 0.5]])
    q = np.array([1.0, 0.0, 0.0])
    y = np.array([[2.0, 1.0], [0.0, 0.0], [0.0, 0.0]])       # consumer 0 invests all she has at the start
    W = np.einsum("km,knm->kn", p, E) + np.array([[0.0, 0.0], [0.5, 0.5], [0.5, 0.5]]) * y[0] - q[:, None] * y
    assert W[0, 0] == 0 and W[0, 1] > 0
    x = (W / (p @ a.T))[..., None] * a[None]                 # Leontief demand: a_i scaled to the budget
    result = SimpleNamespace(objective=1.0, solution={
        "prices": p, "asset_prices": q[:, None], "consumption": x, "portfolio": y[..., None],
        "periods": [0, 1, 1], "worlds": [0, 1, 2], "probabilities": [1.0, 0.5, 0.5], "edges": [[0, 1], [0, 2]]})
    o = bench.horizon_paper_metrics(econ, result)
    z = x.sum(axis=1) - E.sum(axis=1) - np.array([[0, 0], [3, 0], [0, 3]])     # 3 units carried pay B(w)
    msq = np.mean(z ** 2, axis=1) + y.sum(axis=1) ** 2
    assert o["excess_demand_start"] == pytest.approx(msq[0])
    assert o["excess_demand_avg"] == pytest.approx((msq[0] + 0.5 * msq[1] + 0.5 * msq[2]) / 2)
    assert o["consumer_foc_start"] < 1e-24 and o["consumer_foc_avg"] < 1e-24    # at the demand: 0
    assert o["corner_consumers"] == 1
    U = (x / a[None]).min(axis=-1)
    assert o["value_start"] == pytest.approx(np.mean(U[0] + 0.9 * (0.5 * U[1] + 0.5 * U[2])))
    assert o["bellman_error"] < 1e-25
    # away from the demand the violation is positive: more of the first good than the bundle needs
    result.solution["consumption"] = x * np.array([1.5, 1.0])
    assert bench.horizon_paper_metrics(econ, result)["consumer_foc_avg"] > 1e-6
