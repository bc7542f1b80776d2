"""A consumer's best path with utilities of degree h < 1 (solvopt.games.economy_path) and markov-horizon
on the paper's Cobb-Douglas economy at its stated degree 0.1, against independent SciPy solves."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy_path as ep

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "games"
DEGREE_FILE = INSTANCES / "markov_paper_cd_deterministic_horizon_degree.json"


def small_economy(seed, h, T=4):
    rng = np.random.default_rng(seed)
    N, M = 2, 2
    a = rng.uniform(0.2, 1.0, (N, M))
    a = h * a / a.sum(axis=1, keepdims=True)                      # exponents summing to h: degree h
    W = T + 1
    P = np.zeros((W, W))
    P[np.arange(W - 1), np.arange(1, W)] = 1.0
    P[-1, -1] = 1.0
    econ = MarkovExchangeEconomy(("cobb_douglas", a), rng.uniform(0.2, 1.0, (W, N, M)), P, 0.9,
                                 initial=np.eye(W)[0], asset_returns=rng.uniform(0.3, 1.2, (W, 1, M)),
                                 borrowing_limit=2.0, holding_limit=2.0, asset_price_max=3.0, degree=h, horizon=T)
    p = rng.uniform(0.3, 1.0, (T, M))
    p *= econ.price_sum / p.sum(axis=1, keepdims=True)
    q = rng.uniform(0.5, 3.0, (T, 1))
    return econ, np.arange(T), p, q, a


def bundle_path_value(econ, worlds, p, q, a, i):
    """Consumer i's best path by SLSQP over bundles and holdings (no indirect utility, no duality)."""
    T, M = p.shape
    e = econ.endowments[worlds, i]
    R = np.einsum("tm,tm->t", p, econ.asset_bundles[worlds, 0])
    R[0] = 0.0
    disc = econ.discount ** np.arange(T)

    def split(z):
        return z[:T * M].reshape(T, M), z[T * M:]

    def f(z):
        x, _ = split(z)
        return -disc @ np.prod(np.maximum(x, 1e-300) ** a[i], axis=1)

    def budget(z):
        x, y = split(z)
        carried = np.concatenate([[0.0], y[:-1]])
        return np.einsum("tm,tm->t", p, e) + R * carried - q[:, 0] * y - np.einsum("tm,tm->t", p, x)

    best = -np.inf
    for start_y in (0.0, 1.0, -1.0):
        z0 = np.concatenate([np.full(T * M, 1e-3), np.full(T, start_y)])
        res = minimize(f, z0, method="SLSQP", constraints=[{"type": "ineq", "fun": budget}],
                       bounds=[(1e-9, None)] * (T * M) + [(-2.0, 2.0)] * T, options={"ftol": 1e-14, "maxiter": 2000})
        if np.all(budget(res.x) >= -1e-9):
            best = max(best, -res.fun)
    return best


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), h=st.sampled_from([0.1, 0.5, 0.9]))
def test_best_path_brackets_an_independent_bundle_solve(seed, h):
    econ, worlds, p, q, a = small_economy(seed, h)
    T, N = len(worlds), econ.n_consumers
    consumption = np.full((T, N, 2), 1e-3)
    b = ep.path_bounds(econ, worlds, p, q, consumption)
    for i in range(N):
        ref = bundle_path_value(econ, worlds, p, q, a, i)
        scale = abs(b.upper[i])
        assert ref <= b.upper[i] + 1e-9 * scale                   # the dual bound holds
        assert b.lower[i] >= ref - 1e-7 * scale                   # and the barrier path is as good
        assert b.upper[i] - b.lower[i] <= 1e-10 * scale           # the certificate is tight


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_every_multiplier_bounds_every_feasible_path(seed):
    econ, worlds, p, q, _ = small_economy(seed % 50, 0.3)
    rng = np.random.default_rng(seed)
    c, qq, R, beta = ep.path_inputs(econ, worlds, p, q)
    a = econ.discount ** np.arange(len(worlds)) * beta[:, 0] ** 0.3
    B = ep.path_matrix(qq, R)
    lo, hi = np.full(len(worlds), -2.0), np.full(len(worlds), 2.0)
    y = rng.uniform(-2, 2, len(worlds))
    W = c[:, 0] + B @ y
    lam = np.exp(rng.normal(size=len(worlds)))
    if np.all(W >= 0):
        assert a @ W ** 0.3 <= ep.dual_bound(a, c[:, 0], B, lo, hi, 0.3, lam) + 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_the_dual_bounds_gradient_is_its_derivative(seed):
    # L-BFGS lowers L with this gradient; central differences agree where no box slope changes sign
    econ, worlds, p, q, _ = small_economy(seed, 0.5)
    rng = np.random.default_rng(seed)
    c, qq, R, beta = ep.path_inputs(econ, worlds, p, q)
    a = econ.discount ** np.arange(len(worlds)) * beta[:, 0] ** 0.5
    B = ep.path_matrix(qq, R)
    lo, hi = np.full(len(worlds), -2.0), np.full(len(worlds), 2.0)
    for _ in range(5):
        lam = np.exp(rng.normal(size=len(worlds)))
        value, g = ep.dual_bound(a, c[:, 0], B, lo, hi, 0.5, lam, gradient=True)
        assert value == ep.dual_bound(a, c[:, 0], B, lo, hi, 0.5, lam)
        fd = np.array([(ep.dual_bound(a, c[:, 0], B, lo, hi, 0.5, lam + e)
                        - ep.dual_bound(a, c[:, 0], B, lo, hi, 0.5, lam - e)) / 2e-7 for e in 1e-7 * np.eye(len(lam))])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(g).max()))


def test_regrets_are_money_scale_free():
    econ, worlds, p, q, _ = small_economy(3, 0.5)
    consumption = np.full((len(worlds), 2, 2), 0.05)
    b = ep.path_bounds(econ, worlds, p, q, consumption)
    scaled = MarkovExchangeEconomy(econ.utility, econ.endowments, econ.transitions, 0.9, initial=econ.initial,
                                   asset_returns=econ.asset_bundles, borrowing_limit=2.0, holding_limit=2.0,
                                   asset_price_max=30.0, price_sum=100.0, degree=0.5, horizon=econ.horizon)
    b10 = ep.path_bounds(scaled, worlds, 10 * p, 10 * q, consumption)
    assert np.allclose(b10.regret, 10 * b.regret, rtol=1e-8)     # prices x 10: money x 10


def test_degree_one_is_refused_with_a_pointer():
    econ, worlds, p, q, _ = small_economy(1, 1.0)
    with pytest.raises(Exception, match="economy_deviation"):
        ep.path_bounds(econ, worlds, p, q, np.ones((len(worlds), 2, 2)))


def test_markov_horizon_solves_the_paper_cobb_douglas_economy_at_degree_0_1():
    data = json.loads(DEGREE_FILE.read_text())
    econ = MarkovExchangeEconomy.from_dict(data)
    assert econ.degree == pytest.approx(0.1) and econ.horizon == 30 and econ.endowment_floor is None
    assert "cell 32" in data["source"]["cells"][0]
    r = econ.solve(method="markov-horizon", tolerance=1e-9)
    m = r.stats["metrics"]
    assert r.termination.value == "optimal" and m["horizon_relative_exploitability"] <= 1e-9
    assert m["budget_violation"] <= 1e-12 and "path" in r.guarantee
    # each consumer's best path against the returned prices, by SLSQP (independent of the dual bound)
    p, q, x = r.solution["prices"], r.solution["asset_prices"][:, 0], r.solution["consumption"]
    T = len(p)
    w = np.asarray(r.solution["worlds"])
    R = np.einsum("tm,tm->t", p, econ.asset_bundles[w, 0])
    R[0] = 0.0
    disc = 0.9 ** np.arange(T)
    beta = econ.utility.indirect(p[:, None, :], 1.0)
    own = disc @ econ.utility.value(x) ** 0.1
    for i in range(econ.n_consumers):
        c = np.einsum("tm,tm->t", p, econ.endowments[w, i])

        def wealth(y, c=c):
            return c + R * np.concatenate([[0.0], y[:-1]]) - q * y

        def minus_value(y, i=i, wealth=wealth):
            return -disc @ (beta[:, i] * np.maximum(wealth(y), 1e-300)) ** 0.1

        res = minimize(minus_value,
                       r.solution["portfolio"][:, i, 0], method="SLSQP", bounds=[(-10.0, 10.0)] * T,
                       constraints=[{"type": "ineq", "fun": wealth}], options={"ftol": 1e-15, "maxiter": 1000})
        assert np.all(wealth(res.x) >= -1e-9)
        assert -res.fun <= own[i] * (1 + 1e-9)                   # no path gains: an equilibrium for consumer i


def test_markov_horizon_at_degree_0_1_stops_with_its_certified_profile():
    from solvopt.core.interrupt import clear_stop, request_stop
    econ = MarkovExchangeEconomy.from_dict(json.loads(DEGREE_FILE.read_text()))
    first = econ.solve(method="markov-horizon", rounds=0)
    assert first.termination.value == "iteration_limit" and first.objective > 0
    try:                                     # Ctrl-C (a stop request) after the first certificate
        r = econ.solve(method="markov-horizon", tolerance=1e-12, log=lambda line: request_stop())
    finally:
        clear_stop()
    assert r.termination.value == "interrupted" and r.objective == pytest.approx(first.objective, rel=1e-12)
    assert r.solution["prices"].shape == (30, 10)
