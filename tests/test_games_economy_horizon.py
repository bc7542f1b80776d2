"""Finite-horizon Markov exchange economies on a deterministic chain (solvopt.games.economy_horizon).

Independent references: the expanded chain written out by hand, and each consumer's best response
over every deviation of the finite-horizon economy as one LP over its holdings path (SciPy's HiGHS),
evaluated on the original economy's data, not on the expanded one.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from solvopt.core.errors import ModelError
from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy as ec
from solvopt.games.economy_horizon import forward_equilibrium, time_expanded

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "games"


def paper_with_horizon(which):
    """The paper's deterministic economy with its horizon (30 periods), degree 1 and no floor or cap."""
    data = json.loads((INSTANCES / f"markov_paper_{which}.json").read_text())
    if data["utility"]["kind"] == "cobb_douglas":
        a = np.asarray(data["utility"]["exponents"])
        data["utility"] = {"kind": "cobb_douglas", "exponents": (a / a.sum(axis=1, keepdims=True)).tolist()}
    return MarkovExchangeEconomy.from_dict(data, drop=("degree", "endowment_floor", "endowment_cap"))


def test_time_expanded_writes_the_periods_out():
    base = ec.random_economy(3, 2, 1, 3, "leontief", stochastic=False, seed=0)
    econ = MarkovExchangeEconomy(base.utility, base.endowments, base.transitions, 0.9, initial=[0, 1.0, 0],
                                 asset_returns=base.asset_returns, horizon=4)
    x = time_expanded(econ)
    w = [1]
    for _ in range(3):
        w.append(int(np.argmax(econ.transitions[w[-1]])))
    assert x.worlds.tolist() == w and x.horizon == 4
    big = x.economy
    assert big.n_world == 5 and big.horizon is None
    assert np.array_equal(big.endowments[:4], econ.endowments[w]) and np.array_equal(big.endowments[4],
                                                                                      econ.endowments[w[-1]])
    money = econ.returns_at(np.arange(3), None)
    assert np.array_equal(big.returns_at(np.arange(4), None), money[w]) and np.all(big.returns_at([4], None) == 0)
    chain = ec.pair_chain(big)
    assert [(int(v), int(u)) for v, u in zip(chain.prev, chain.world)] == [(-1, 0), (0, 1), (1, 2), (2, 3),
                                                                           (3, 4), (4, 4)]
    with pytest.raises(ModelError, match="deterministic chain"):
        time_expanded(MarkovExchangeEconomy(base.utility, base.endowments, np.full((3, 3), 1 / 3), 0.9, horizon=4))
    with pytest.raises(ModelError, match="horizon"):
        time_expanded(base)


def _finite_horizon_regrets(econ, x, profile):
    """Each consumer's best value over every holdings path of the T periods (an LP; holdings bought in
    the last period pay nothing) minus the profile's value, both in money, from the original data."""
    T, w, gamma = x.horizon, x.worlds, econ.discount
    p = profile.prices[:T]                                   # pair state t is period t
    q = profile.asset_prices[:T, 0]
    R = np.zeros(T)                                          # the asset's money return in period t
    R[1:] = np.einsum("tm,tm->t", p[1:], econ.asset_bundles[w[1:], 0])
    rate = ec.money_rates(econ)
    beta = econ.utility.indirect(p[:, None, :], 1.0) / rate       # (T, N)
    disc = gamma ** np.arange(T)
    A = np.zeros((T, T))                                      # W_t = c_t + R_t y_{t-1} - q_t y_t >= 0: A y <= c
    A[np.arange(T), np.arange(T)] = q
    A[np.arange(1, T), np.arange(T - 1)] -= R[1:]
    regrets = []
    for i in range(econ.n_consumers):
        c = np.einsum("tm,tm->t", p, econ.endowments[w, i])
        weight = disc * beta[:, i]
        res = linprog(A.T @ weight, A_ub=A, b_ub=c, method="highs",
                      bounds=[(-econ.borrowing_limit[0], econ.holding_limit[0])] * T)
        assert res.status == 0
        best = weight @ c - (A.T @ weight) @ res.x
        own = disc @ (econ.utility.value(profile.consumption[:T])[:, i] / rate[i])
        regrets.append(best - own)
    return np.array(regrets)


def test_leontief_paper_economy_with_its_horizon_has_a_certified_equilibrium():
    econ = paper_with_horizon("leontief_deterministic")
    assert econ.horizon == 30
    x, profile, m = forward_equilibrium(econ)
    assert m["horizon_relative_exploitability"] < 1e-6
    assert m["budget_violation"] < 1e-9 and m["price_violation"] < 1e-9
    # independently: no holdings path of the finite-horizon economy does better for any consumer
    regrets = _finite_horizon_regrets(econ, x, profile)
    scale = m["horizon_endowment_value"]
    assert np.all(regrets <= 1e-7 * scale)
    assert np.all(regrets >= -1e-9 * scale)                        # the profile's own path is one of them
    assert regrets.sum() <= m["consumer_regret"] + 1e-9 * scale      # the certificate is an upper bound
    # the asset at the cap until the next-to-last period, every consumer at the limit after two periods
    assert np.allclose(profile.asset_prices[:29, 0], econ.asset_price_max) and profile.asset_prices[29, 0] == 0
    assert np.allclose(profile.portfolio[2:29, :, 0], econ.holding_limit[0])


def test_cobb_douglas_paper_economy_with_its_horizon_needs_indifferent_consumers():
    # in the second period nobody can afford the limit: the first construction puts the whole price
    # on the scarcest good, and Cobb-Douglas consumers would rather buy the nearly free others (the
    # certificate says so); the rounds make them indifferent at the value of investing
    econ = paper_with_horizon("cd_deterministic")
    _, _, first = forward_equilibrium(econ, rounds=0)
    assert first["horizon_relative_exploitability"] > 1.0
    x, profile, m = forward_equilibrium(econ, rounds=3)
    assert m["rounds"] == 3 and m["horizon_relative_exploitability"] < 1e-4
    regrets = _finite_horizon_regrets(econ, x, profile)
    scale = m["horizon_endowment_value"]
    assert np.all(regrets >= -1e-9 * scale)
    assert regrets.sum() <= m["consumer_regret"] + 1e-9 * scale      # the certificate is an upper bound
    # in the second period every consumer holds less than the limit
    assert np.all(profile.portfolio[1, :, 0] < econ.holding_limit[0])


def test_forward_equilibrium_refuses_what_it_does_not_build():
    base = ec.random_economy(3, 2, 1, 3, "leontief", stochastic=False, seed=0)
    bundles = np.ones((3, 1, 2))
    with pytest.raises(NotImplementedError, match="uniform"):
        forward_equilibrium(MarkovExchangeEconomy(base.utility, base.endowments, base.transitions, 0.9,
                                                  initial=[1.0, 0, 0], asset_returns=bundles, horizon=3))
    with pytest.raises(NotImplementedError, match="bundle"):
        forward_equilibrium(MarkovExchangeEconomy(base.utility, base.endowments, base.transitions, 0.9,
                                                  initial=[1.0, 0, 0], asset_returns=base.asset_returns, horizon=3))


# --- the method markov-horizon ------------------------------------------------------------------
def _horizon_file(which):
    return INSTANCES / f"markov_paper_{which}_deterministic_horizon.json"


def test_the_horizon_files_are_the_paper_economies_as_markov_horizon_takes_them():
    for which in ("cd", "leontief"):
        econ = MarkovExchangeEconomy.from_dict(json.loads(_horizon_file(which).read_text()))
        stated = paper_with_horizon(f"{which}_deterministic")
        assert econ.horizon == 30 and econ.degree == 1.0 and econ.endowment_floor is None
        assert np.allclose(econ.utility.weights, stated.utility.weights)
        assert np.array_equal(econ.endowments, stated.endowments)
        assert np.array_equal(econ.asset_bundles, stated.asset_bundles)
        assert econ.default_method == "markov-horizon"


def test_markov_horizon_is_the_default_and_certifies_the_paper_leontief_economy():
    econ = MarkovExchangeEconomy.from_dict(json.loads(_horizon_file("leontief").read_text()))
    r = econ.solve()
    assert r.to_dict()["method"] == "markov-horizon"
    x, profile, m = forward_equilibrium(econ)
    assert r.termination.value == "feasible_within_gap"          # 1e-9 < relative <= the tolerance 1e-4
    assert r.objective == pytest.approx(m["exploitability"], rel=1e-9)
    scale = m["horizon_endowment_value"]
    assert 1e-9 < r.objective / scale <= 1e-4
    assert r.stats["relative_exploitability"] == pytest.approx(r.objective / scale, rel=1e-9)
    assert r.solution["prices"].shape == (30, 10) and r.solution["portfolio"].shape == (30, 10, 1)
    assert r.solution["worlds"] == x.worlds.tolist()
    # the certificate against each consumer's best holdings path (HiGHS, original data)
    regrets = _finite_horizon_regrets(econ, x, profile)
    assert np.all(regrets >= -1e-9 * scale) and regrets.sum() <= r.objective + 1e-9 * scale


def test_markov_horizon_from_the_command_line(capsys):
    from solvopt.cli import main
    code = main(["solve", str(_horizon_file("leontief")), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["termination"] == "feasible_within_gap" and data["stats"]["rounds"] == 0
    code = main(["solve", str(INSTANCES / "markov_paper_cd_deterministic.json"), "--method", "markov-newton"])
    out, err = capsys.readouterr()          # as stated (endowment floors): markov-newton refuses in one line
    assert code == 1 and "does not support" in err and len(err.strip().splitlines()) == 1


def test_markov_horizon_refuses_what_it_cannot_take_in_one_line():
    base = ec.random_economy(3, 2, 1, 3, "leontief", stochastic=False, seed=0)
    bundles = np.ones((3, 1, 2))
    uniform = np.ones((3, 3, 2))
    cases = [
        (MarkovExchangeEconomy(base.utility, base.endowments, base.transitions, 0.9, initial=[1.0, 0, 0],
                               asset_returns=bundles, horizon=3), "uniform over goods"),
        (MarkovExchangeEconomy(base.utility, uniform, base.transitions, 0.9, initial=[1.0, 0, 0],
                               asset_returns=np.ones((3, 2, 2)), horizon=3), "one asset"),
        (MarkovExchangeEconomy(base.utility, uniform, base.transitions, 0.9, initial=[1.0, 0, 0],
                               asset_returns=base.asset_returns, horizon=3), "paying money"),
        (MarkovExchangeEconomy(("linear", np.ones((3, 2))), uniform, base.transitions, 0.9, initial=[1.0, 0, 0],
                               asset_returns=bundles, horizon=3), "Cobb-Douglas or Leontief"),
        (MarkovExchangeEconomy(base.utility, uniform, base.transitions, 0.9, initial=[1.0, 0, 0],
                               asset_returns=bundles), "finite horizon"),
    ]
    for econ, message in cases:
        with pytest.raises(ModelError, match=message) as err:
            econ.solve(method="markov-horizon")
        assert "\n" not in str(err.value)
    # the other methods point to it
    with pytest.raises(ModelError, match="markov-horizon"):
        cases[1][0].solve(method="markov-newton")


def test_markov_horizon_stops_with_its_certified_profile():
    from solvopt.core.interrupt import clear_stop, request_stop
    from solvopt.games.scaling import horizon_economy
    econ = horizon_economy()                # the asset is worth less than its cap: far from an equilibrium
    full = econ.solve(method="markov-horizon")
    assert full.termination.value == "iteration_limit" and full.objective > 1e-3
    # a tiny time limit: the first construction runs in the grace time and is returned, certified
    r = econ.solve(method="markov-horizon", time_limit=1e-6)
    assert r.termination.value == "time_limit" and r.solution_status.value == "feasible"
    assert r.objective == pytest.approx(full.objective, rel=1e-12) and r.solution["prices"].shape == (6, 3)
    # Ctrl-C (a stop request) after the first certificate: INTERRUPTED with it
    try:
        r = econ.solve(method="markov-horizon", log=lambda line: request_stop())
    finally:
        clear_stop()
    assert r.termination.value == "interrupted" and r.objective == pytest.approx(full.objective, rel=1e-12)
