"""Finite-horizon economies on a stochastic chain (solvopt.games.economy_lattice): the lattice dual bound
against brute-force best responses over the whole history tree (HiGHS and SLSQP), against the path
certificate on a deterministic chain, and the construction through markov-horizon."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog, minimize

from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy_lattice as el
from solvopt.games import economy_path as ep


def tiny_economy(seed, h, T=3, P=None, utility="cobb_douglas", floor=None):
    """2 consumers, 2 goods, the start then world states 1 and 2 drawn with probabilities (0.4, 0.6)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.2, 1.0, (2, 2))
    if utility == "cobb_douglas":
        a = a / a.sum(axis=1, keepdims=True)
    P = np.array([[0.0, 0.4, 0.6], [0.0, 0.4, 0.6], [0.0, 0.4, 0.6]]) if P is None else P
    return MarkovExchangeEconomy((utility, a), rng.uniform(0.2, 1.0, (3, 2, 2)), P, 0.9, initial=[1.0, 0.0, 0.0],
                                 asset_returns=rng.uniform(0.3, 1.2, (3, 1, 2)), borrowing_limit=2.0, holding_limit=2.0,
                                 asset_price_max=3.0, price_sum=2.0, degree=None if h == 1 else h, horizon=T,
                                 endowment_floor=floor)


def random_profile(econ, seed, merge=False):
    """A lattice with random prices, asset prices and holdings (each class its own history unless
    ``merge``: holdings at the limit, so the classes of a period are its world states)."""
    rng = np.random.default_rng(seed)

    def solve_class(t, w, carried):
        p = rng.uniform(0.3, 1.0, 2)
        p *= econ.price_sum / p.sum()
        y = np.full(2, 2.0) if merge else rng.uniform(-1.0, 1.0, 2)
        return p, rng.uniform(0.5, 3.0), y, np.full((2, 2), 0.1)

    return el.grow(econ, solve_class)


def history_tree(econ, lat):
    """Every history node: (class, parent node or -1, probability, period)."""
    child = {(int(k), int(lat.world[j])): int(j) for k, j in zip(lat.parent, lat.child)}
    nodes = [(int(k), -1, float(lat.prob[k]), 0) for k in np.flatnonzero(lat.period == 0)]
    i = 0
    while i < len(nodes):
        k, _, pr, t = nodes[i]
        for w2 in np.flatnonzero(econ.transitions[lat.world[k]] > 0):
            if (k, int(w2)) in child:
                nodes.append((child[(k, int(w2))], i, pr * econ.transitions[lat.world[k], w2], t + 1))
        i += 1
    return nodes


def brute_force(econ, lat, prof, i):
    """Consumer i's best value over every history-dependent policy: max sum pi gamma^t (beta W)^h over the
    history tree's holdings, an LP at h = 1 (HiGHS), SLSQP from several starts at h < 1."""
    h = float(econ.degree)
    box = [(-float(econ.borrowing_limit[0]), float(econ.holding_limit[0]))]
    nodes = history_tree(econ, lat)
    n = len(nodes)
    p, q = prof.prices, prof.asset_prices[:, 0]
    R = econ.returns_at(lat.world, p)[:, 0]
    beta = econ.utility.indirect(p[:, None, :], 1.0)[:, i]
    k = np.array([nd[0] for nd in nodes])
    par = np.array([nd[1] for nd in nodes])
    pi = np.array([nd[2] for nd in nodes]) * econ.discount ** np.array([nd[3] for nd in nodes])
    c = np.einsum("km,km->k", p, econ.endowments[lat.world, i])[k]
    B = np.zeros((n, n))                       # W = c + B y
    B[np.arange(n), np.arange(n)] = -q[k]
    has = par >= 0
    B[np.flatnonzero(has), par[has]] = R[k[has]]
    if h == 1.0:
        res = linprog(-(pi * beta[k]) @ B, A_ub=-B, b_ub=c, bounds=box * n, method="highs")
        return float(pi * beta[k] @ (c + B @ res.x))
    best = -np.inf
    for y0 in (0.0, 0.5, -0.5, 1.5):
        f = lambda y: -np.sum(pi * (beta[k] * np.maximum(c + B @ y, 0.0)) ** h)       # noqa: E731
        res = minimize(f, np.full(n, y0), method="SLSQP", bounds=box * n,
                       constraints=[{"type": "ineq", "fun": lambda y: c + B @ y}], options={"ftol": 1e-15,
                                                                                           "maxiter": 1000})
        if np.all(c + B @ res.x >= -1e-9):
            best = max(best, -res.fun)
    return best


@pytest.mark.parametrize("h", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_lattice_bound_is_the_best_response_over_the_history_tree(seed, h):
    econ = tiny_economy(seed, h)
    lat, prof = random_profile(econ, seed)
    assert len(lat.period) == 7                                  # a tree: one class per history
    value, upper, _ = el.consumer_bounds(econ, lat, prof)
    for i in range(2):
        ref = brute_force(econ, lat, prof, i)
        assert upper[i] >= ref - 1e-9 * abs(ref)                 # weak duality
        assert upper[i] <= ref + 2e-5 * abs(ref)                 # and tight: one multiplier per node


@pytest.mark.parametrize("h", [1.0, 0.3])
def test_shared_multipliers_on_merged_histories_still_bound(h):
    econ = tiny_economy(5, h, T=4)
    lat, prof = random_profile(econ, 5, merge=True)
    assert len(lat.period) == 1 + 2 + 2 + 2                       # classes: the world states of each period
    _, upper, _ = el.consumer_bounds(econ, lat, prof)
    for i in range(2):
        ref = brute_force(econ, lat, prof, i)
        assert upper[i] >= ref - 1e-9 * abs(ref)                 # (not tight: a deviation leaves the classes)


def test_on_a_deterministic_chain_the_lattice_is_the_path():
    P = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    econ = tiny_economy(3, 0.4, T=4, P=P)
    lat, prof = random_profile(econ, 3)
    _, upper, _ = el.consumer_bounds(econ, lat, prof)
    b = ep.path_bounds(econ, lat.world, prof.prices, prof.asset_prices, prof.consumption)
    assert np.allclose(upper, b.upper, rtol=1e-8)


def small_stochastic(utility, h=1.0, T=6):
    """3 consumers, 3 goods, the start then 3 world states, ``T`` periods: the paper's economies in small
    (utilities of degree ``h``)."""
    rng = np.random.default_rng(4)
    W = 4
    P = np.zeros((W, W))
    P[:, 1:] = rng.dirichlet(np.ones(W - 1), W)
    a = rng.uniform(0.2, 1.0, (3, 3))
    if utility == "cobb_douglas":
        a = a / a.sum(axis=1, keepdims=True)
    E = rng.uniform(0.01, 0.1, (W, 3, 3))
    E[0] = rng.dirichlet(np.ones(3), 3).T
    econ = MarkovExchangeEconomy((utility, a), E, P, 0.9, initial=np.eye(W)[0],
                                 asset_returns=rng.uniform(0.5, 1.1, (W, 1, 3)), borrowing_limit=10.0,
                                 holding_limit=10.0, asset_price_max=1.0, price_sum=10.0, horizon=T,
                                 degree=None if h == 1 else h)
    return econ


@pytest.mark.parametrize("utility", ["leontief", "cobb_douglas"])
def test_markov_horizon_certifies_a_small_stochastic_economy(utility):
    econ = small_stochastic(utility)
    r = econ.solve(tolerance=1e-6)
    m = r.stats["metrics"]
    assert r.to_dict()["method"] == "markov-horizon"
    assert m["horizon_relative_exploitability"] <= 1e-6
    assert r.termination.name in ("OPTIMAL", "FEASIBLE_WITHIN_GAP")
    assert m["budget_violation"] <= 1e-9
    # the certificate against the brute force: no consumer gains more than its certified regret
    lat, prof, _ = el.forward_equilibrium(econ, rounds=8, tolerance=1e-6)
    value, upper, _ = el.consumer_bounds(econ, lat, prof)
    for i in range(3):
        ref = brute_force(econ, lat, prof, i) if len(lat.period) < 400 else None
        if ref is not None:
            assert value[i] - 1e-9 * abs(ref) <= ref <= upper[i] + 1e-9 * abs(ref)


@pytest.mark.parametrize("h", [0.5, 0.1])
def test_markov_horizon_certifies_a_small_stochastic_economy_of_degree_below_one(h):
    econ = small_stochastic("cobb_douglas", h, T=5)          # 121 histories: the dense best response stays quick
    r = econ.solve(tolerance=1e-8)
    m = r.stats["metrics"]
    assert r.to_dict()["method"] == "markov-horizon" and "history" in r.guarantee
    assert m["horizon_relative_exploitability"] <= 1e-8 and m["budget_violation"] <= 1e-9
    assert r.termination.name in ("OPTIMAL", "FEASIBLE_WITHIN_GAP")
    # the certificate against the best response over the whole history tree (barrier Newton, exact duality)
    lat, prof, _ = el.forward_equilibrium(econ, rounds=8, tolerance=1e-8)
    value, upper, _ = el.consumer_bounds(econ, lat, prof)
    nodes = history_tree(econ, lat)
    k = np.array([nd[0] for nd in nodes])
    par = np.array([nd[1] for nd in nodes])
    pi = np.array([nd[2] for nd in nodes]) * econ.discount ** np.array([nd[3] for nd in nodes])
    n, p, q = len(nodes), prof.prices, prof.asset_prices[:, 0]
    B = np.zeros((n, n))
    B[np.arange(n), np.arange(n)] = -q[k]
    B[np.flatnonzero(par >= 0), par[par >= 0]] = econ.returns_at(lat.world, p)[:, 0][k[par >= 0]]
    for i in range(3):
        beta = econ.utility.indirect(p[:, None, :], 1.0)[:, i]
        c = np.einsum("km,km->k", p, econ.endowments[lat.world, i])[k]
        _, best, _ = ep.best_path(pi * beta[k] ** h, c, B, np.full(n, -10.0), np.full(n, 10.0), h)
        assert value[i] - 1e-9 * best <= best <= upper[i] + 1e-9 * best
        assert upper[i] - value[i] <= 1e-6 * value[i]


def test_floors_and_caps_on_a_stochastic_chain_go_to_the_clip_tree():
    from solvopt.games.economy_clip_tree import TREE_GUARANTEE
    econ = tiny_economy(0, 0.5, floor=0.01)
    assert econ.solve(method="markov-horizon", rounds=0).guarantee == TREE_GUARANTEE


def test_stops_reach_the_construction_and_the_certificate():
    econ = small_stochastic("cobb_douglas")
    calls = []

    def check():                            # a stop after n checks, at every n: none goes unchecked
        calls.append(1)
        if len(calls) >= stop_at:
            raise KeyboardInterrupt

    stop_at = 10 ** 9
    el.forward_equilibrium(econ, rounds=0, check=check)
    total, seen = len(calls), set()
    for stop_at in range(1, total + 1, max(1, total // 7)):
        calls.clear()
        with pytest.raises(KeyboardInterrupt):
            el.forward_equilibrium(econ, rounds=0, check=check)
        seen.add(stop_at)
    assert total > 20 and len(seen) >= 7


@pytest.mark.slow
@pytest.mark.parametrize("utility", ["leontief", "cd"])
def test_the_paper_stochastic_economies_are_certified_within_the_goal(utility):
    import json
    from pathlib import Path
    folder = Path(__file__).resolve().parent.parent / "instances" / "games"
    path = folder / f"markov_paper_{utility}_stochastic_horizon.json"
    econ = MarkovExchangeEconomy.from_dict(json.loads(path.read_text()))
    assert econ.horizon == 30 and econ.degree == 1.0 and econ.endowment_floor is None
    r = econ.solve()                                       # the default: markov-horizon, tolerance 1e-4
    m = r.stats["metrics"]
    assert r.to_dict()["method"] == "markov-horizon" and "history" in r.guarantee
    assert r.termination.value == "feasible_within_gap" and m["horizon_relative_exploitability"] <= 1e-4
    assert m["budget_violation"] <= 1e-12 and m["classes"] == 381
    assert (m["rounds"] >= 1) == (utility == "cd")         # Cobb-Douglas consumers reject the corner
    # the expected holdings: everyone at the limit from period 2
    s = r.solution
    periods, prob = np.array(s["periods"]), np.array(s["probabilities"])
    Y = np.asarray(s["portfolio"])[:, :, 0].sum(axis=1)
    assert prob[periods == 2] @ Y[periods == 2] == pytest.approx(100.0)
    assert np.isclose(prob[periods == 29].sum(), 1.0)


@pytest.mark.slow
def test_the_paper_stochastic_economy_at_its_stated_degree_is_certified_within_the_goal():
    import json
    from pathlib import Path
    name = "markov_paper_cd_stochastic_horizon_degree.json"
    path = Path(__file__).resolve().parent.parent / "instances" / "games" / name
    econ = MarkovExchangeEconomy.from_dict(json.loads(path.read_text()))
    assert econ.horizon == 30 and econ.degree == pytest.approx(0.1) and econ.endowment_floor is None
    r = econ.solve()                                       # the default: markov-horizon, tolerance 1e-4
    m = r.stats["metrics"]
    assert r.to_dict()["method"] == "markov-horizon" and "history" in r.guarantee
    assert r.termination.value == "feasible_within_gap" and m["horizon_relative_exploitability"] <= 1e-4
    assert m["budget_violation"] <= 1e-12 and m["classes"] == 381
    s = r.solution
    periods, prob = np.array(s["periods"]), np.array(s["probabilities"])
    Y = np.asarray(s["portfolio"])[:, :, 0].sum(axis=1)
    assert prob[periods == 2] @ Y[periods == 2] == pytest.approx(100.0)     # everyone at the limit from period 2
