"""Markov pseudo-games and Markov exchange economies (G2 of the games family).

References are independent of the code under test: closed-form stage best responses (concave
quadratics on an interval), brute force over a grid of policies, the Cobb-Douglas exchange
equilibrium as an eigenvector, and a linear exchange market with a known equilibrium.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvopt.core.errors import ModelError
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import MarkovExchangeEconomy, MarkovPseudoGame
from solvopt.games import economy as ec
from solvopt.games import markov as mk

HARKER_RHS = 15.0


def harker_rewards(shift=0.0):
    """Harker's game as rewards (negated costs); ``shift`` moves player 1's linear term."""
    c = np.array([[34.0 + shift, 0.0], [0.0, 24.25]])
    Q = np.array([[[-2.0, -8 / 3], [-8 / 3, 0.0]], [[0.0, -5 / 4], [-5 / 4, -2.0]]])
    return c, Q


def two_state_harker(shifts=(0.0, -4.0), transitions=((0.5, 0.5), (0.2, 0.8)), discount=0.9):
    parts = [harker_rewards(s) for s in shifts]
    lin = np.stack([np.stack([c[i] for c, _ in parts]) for i in range(2)])
    quad = np.stack([np.stack([Q[i] for _, Q in parts]) for i in range(2)])
    S = len(shifts)
    return MarkovPseudoGame([1, 1], lin, transitions, discount, quadratic=quad, lower=0.0, upper=10.0,
                            shared_matrix=np.ones((S, 1, 2)), shared_rhs=np.full((S, 1), HARKER_RHS))


def stage_regret(game, s, a):
    """Static exploitability of joint action a at state s: each player's 1-D best response is the
    unconstrained maximiser of its concave quadratic clipped to its interval (closed form)."""
    total = 0.0
    for i in range(2):
        j = 1 - i
        c, Q = game.linear[i, s], game.quadratic[i, s]
        lo, hi = game.lower[s, i], min(game.upper[s, i], HARKER_RHS - a[j])
        lin = c[i] + Q[i, j] * a[j]
        best = np.clip(-lin / Q[i, i], lo, hi) if Q[i, i] < 0 else (hi if lin > 0 else lo)

        def r(b, i=i, c=c, Q=Q):
            x = a.copy()
            x[i] = b
            return c @ x + 0.5 * x @ Q @ x
        total += r(best) - r(a[i])
    return total


def test_stage_equilibria_are_the_gmpe_when_transitions_ignore_actions():
    game = two_state_harker(shifts=(0.0, 0.0))
    ve = np.array([[5.0, 9.0], [5.0, 9.0]])
    cert = mk.exploitability(game, ve)
    assert cert.value <= 1e-8 and np.all(cert.per_state <= 1e-8)
    # on the GNE segment {(t, 15 - t) : 9 <= t <= 10} too, state by state
    assert mk.exploitability(game, np.array([[9.5, 5.5], [10.0, 5.0]])).value <= 1e-8


@pytest.mark.parametrize("policy", [[[4.0, 8.0], [6.0, 6.0]], [[0.0, 0.0], [10.0, 5.0]], [[7.0, 1.0], [2.0, 3.0]]])
def test_exploitability_is_the_occupancy_weighted_stage_regret(policy):
    game = two_state_harker()
    policy = np.array(policy)
    d = mk.occupancy(game, policy)
    expected = sum(d[s] * stage_regret(game, s, policy[s]) for s in range(2))
    cert = mk.exploitability(game, policy)
    assert cert.value == pytest.approx(expected, rel=1e-8, abs=1e-8)
    assert cert.lower <= cert.value + 1e-9 and cert.lower == pytest.approx(expected, rel=1e-7, abs=1e-7)


def test_best_response_against_brute_force_with_action_dependent_transitions():
    # one player, two states, action a in [0, 1]: reward depends on a, a moves the chain
    lin = np.array([[[1.0], [0.2]]])
    quad = np.array([[[[-1.0]], [[-0.5]]]])
    P0 = np.array([[0.7, 0.3], [0.4, 0.6]])
    P1 = np.zeros((2, 2, 1))
    P1[0, :, 0] = [-0.5, 0.5]          # acting in state 0 moves mass to state 1
    P1[1, :, 0] = [0.3, -0.3]
    game = MarkovPseudoGame([1], lin, P0, 0.8, quadratic=quad, lower=0.0, upper=1.0, transition_slopes=P1,
                            initial=[0.6, 0.4])
    br = mk.best_response(game, np.array([[0.5], [0.5]]), 0)
    grid = np.linspace(0, 1, 401)      # brute force over deterministic policies (a0, a1), batched
    a0, a1 = (g.ravel() for g in np.meshgrid(grid, grid, indexing="ij"))
    acts = np.stack([a0, a1], axis=1)                                       # (n, 2 states)
    r = lin[0, :, 0][None] * acts + 0.5 * quad[0, :, 0, 0][None] * acts ** 2
    P = P0[None] + np.einsum("st,ns->nst", P1[:, :, 0], acts)
    V = np.linalg.solve(np.eye(2)[None] - game.discount * P, r[..., None])[..., 0]
    best = float(np.max(V @ game.initial))
    lower, upper = game.initial @ br.lower, game.initial @ br.upper
    assert lower <= upper + 1e-12
    assert upper >= best - 1e-12                 # the certified bound is never below the true optimum
    assert lower >= best - 1e-5                  # and the response found is as good as the grid's best
    assert upper - lower <= 1e-8


def test_exploitability_never_negative_on_random_games():
    rng = np.random.default_rng(7)
    for _ in range(6):
        S = int(rng.integers(1, 4))
        lin = rng.normal(size=(2, S, 2))
        M = rng.normal(size=(2, S, 2, 2))
        quad = -np.einsum("nsij,nskj->nsik", M, M) - 0.1 * np.eye(2)
        P = rng.uniform(size=(S, S))
        P /= P.sum(axis=1, keepdims=True)
        game = MarkovPseudoGame([1, 1], lin, P, 0.7, quadratic=quad, lower=-1.0, upper=1.0,
                                shared_matrix=np.ones((S, 1, 2)), shared_rhs=np.full((S, 1), 0.5))
        pol = mk.project_policy(game, rng.uniform(-1, 1, size=(S, 2)))
        cert = mk.exploitability(game, pol)
        assert cert.value >= 0 and cert.lower >= 0 and cert.lower <= cert.value + 1e-9


def coupled_game():
    """Two players per state, r_i = -(a_i - t_i)^2 - 0.5 a_i a_j on [0, 4]: a strongly monotone game."""
    targets = np.array([[1.0, 2.0], [3.0, 1.5]])
    S = 2
    lin = np.zeros((2, S, 2))
    quad = np.zeros((2, S, 2, 2))
    for i in range(2):
        j = 1 - i
        lin[i, :, i] = 2 * targets[:, i]
        quad[i, :, i, i] = -2.0
        quad[i, :, i, j] = quad[i, :, j, i] = -0.5
    game = MarkovPseudoGame([1, 1], lin, [[0.9, 0.1], [0.3, 0.7]], 0.9, quadratic=quad, lower=0.0, upper=4.0)
    # stage Nash equilibrium: 2 a_i + 0.5 a_j = 2 t_i
    ne = np.stack([np.linalg.solve([[2.0, 0.5], [0.5, 2.0]], 2 * targets[s]) for s in range(S)])
    return game, ne


def test_gda_reaches_the_stage_equilibria():
    game, ne = coupled_game()
    result = game.solve(tolerance=1e-7, iteration_limit=3000)     # relative to the value scale
    assert result.termination in (Termination.FEASIBLE_WITHIN_GAP, Termination.OPTIMAL)
    assert result.stats["relative_exploitability"] <= 1e-7 and result.bound == 0.0
    assert np.allclose(result.solution["policy"], ne, atol=1e-3)
    assert result.stats["history"][0][2] > result.objective


def test_gda_iteration_limit_returns_best_certified_iterate():
    game = two_state_harker()
    result = game.solve(iteration_limit=20, check_every=10)
    assert result.termination is Termination.ITERATION_LIMIT
    assert result.solution_status is SolutionStatus.FEASIBLE
    cert = mk.exploitability(game, result.solution["policy"])
    assert result.objective == pytest.approx(cert.value)
    assert result.objective <= result.stats["history"][0][2]


# --- economies --------------------------------------------------------------------------------------
def one_state(utility, endowments, **kw):
    return MarkovExchangeEconomy(utility, np.asarray(endowments, dtype=float)[None], [[1.0]], 0.9, **kw)


def cobb_douglas_prices(a, e, total):
    """Arrow-Debreu with Cobb-Douglas: p_j = sum_i a_ij p.e_i / supply_j ... with x_ij = a_ij p.e_i / p_j,
    clearing sum_i x_ij = E_j gives p_j E_j = sum_i a_ij p.e_i: the eigenvector of M = diag(1/E) a' e'."""
    E = e.sum(axis=0)
    M = (a.T @ e) / E[:, None]
    w, v = np.linalg.eig(M)
    p = np.abs(np.real(v[:, np.argmin(np.abs(w - 1))]))
    return p * total / p.sum()


def test_one_state_cobb_douglas_economy_is_the_static_market():
    rng = np.random.default_rng(3)
    a = rng.uniform(0.1, 1, size=(3, 4))
    a /= a.sum(axis=1, keepdims=True)
    e = rng.uniform(0.2, 1, size=(3, 4))
    econ = one_state(("cobb_douglas", a), e, price_sum=2.0)
    p = cobb_douglas_prices(a, e, 2.0)
    chain = ec.pair_chain(econ)
    prices = np.tile(p, (len(chain.world), 1))
    x = (a[None] * (prices @ e.T)[:, :, None]) / prices[:, None, :]
    m = ec.metrics(econ, chain, ec.Profile(prices, np.zeros((len(chain.world), 0)), x, np.zeros((1, 3, 0))))
    assert m["exploitability"] <= 1e-12 and m["excess_demand"] <= 1e-12
    result = econ.solve(tolerance=1e-10, time_limit=30)
    assert result.objective <= 1e-10 * result.stats["metrics"]["endowment_value"] * 1.01
    assert np.allclose(result.solution["prices"], prices, rtol=1e-6)


def test_one_state_linear_exchange_market():
    # consumer 1 owns good 1, consumer 2 good 2, v = [[2, 1], [1, 2]]: p = (1, 1), each keeps its own good
    econ = one_state(("linear", [[2.0, 1.0], [1.0, 2.0]]), [[1.0, 0.0], [0.0, 1.0]], price_sum=2.0)
    result = econ.solve(tolerance=1e-6, time_limit=30)
    # OPTIMAL only when the certified exploitability is within 1e-9, else within the user's tolerance
    expected = Termination.OPTIMAL if result.objective <= 1e-9 else Termination.FEASIBLE_WITHIN_GAP
    assert result.termination is expected and result.objective <= 1e-6 * 2.0
    assert np.allclose(result.solution["prices"], 1.0, atol=1e-4)
    assert np.allclose(result.solution["consumption"], np.eye(2)[None], atol=1e-3)


@pytest.mark.parametrize("utility", ["cobb_douglas", "linear", "leontief"])
def test_economy_with_assets_certified_and_reproducible(utility):
    econ = ec.random_economy(3, 3, 1, 2, utility, stochastic=True, seed=5)
    first = econ.solve("markov-tatonnement", iteration_limit=60, check_every=20)
    second = econ.solve("markov-tatonnement", iteration_limit=60, check_every=20)
    assert first.to_dict()["solution"] == second.to_dict()["solution"]
    assert first.objective == second.objective
    m = first.stats["metrics"]
    assert 0 <= m["exploitability_lower"] <= m["exploitability"] + 1e-9
    assert m["budget_violation"] <= 1e-9


@pytest.mark.parametrize("limit", [1.0, 30.0])      # 30: buying the limit overspends (the LP branch)
def test_portfolio_best_response_bound_matches_brute_force(limit):
    econ = ec.random_economy(2, 2, 1, 2, "cobb_douglas", stochastic=False, seed=2, holding_limit=limit,
                             borrowing_limit=limit)
    chain = ec.pair_chain(econ)
    prof = ec.initial_profile(econ, chain)
    beta = ec.bang_per_buck(econ, prof.prices)
    upper, lower, _ = ec.consumer_best_value(econ, chain, prof.prices, prof.asset_prices, beta)
    grid = np.linspace(-econ.borrowing_limit[0], econ.holding_limit[0], 401)
    y = np.stack([g.ravel() for g in np.meshgrid(grid, grid, indexing="ij")], axis=1)   # (n, world states)
    R, q = econ.asset_returns[chain.world, 0], prof.asset_prices[:, 0]
    carried = np.where(chain.prev >= 0, y[:, np.maximum(chain.prev, 0)], 0.0)            # (n, S)
    for i in range(2):               # brute force over the two world states' holdings, written out here
        Wl = (prof.prices * econ.endowments[chain.world, i]).sum(axis=1) + R * carried - q * y[:, chain.world]
        ok = np.all(Wl >= 0, axis=1)
        best = float(np.max((Wl @ (chain.occupancy * beta[:, i]))[ok]))
        assert upper[i] >= best - 1e-9 and lower[i] >= best - 1e-9 and upper[i] - lower[i] <= 1e-7


# --- bad inputs ----------------------------------------------------------------------------------
def test_bad_inputs():
    lin = np.zeros((1, 1, 1))
    with pytest.raises(ModelError, match="not concave"):
        MarkovPseudoGame([1], lin, [[1.0]], 0.9, quadratic=np.ones((1, 1, 1, 1)))
    with pytest.raises(ModelError, match="summing to 1"):
        MarkovPseudoGame([1], lin, [[0.5]], 0.9)
    with pytest.raises(ModelError, match="discount"):
        MarkovPseudoGame([1], lin, [[1.0]], 1.0)
    with pytest.raises(ModelError, match="NaN"):
        MarkovPseudoGame([1], np.full((1, 1, 1), np.nan), [[1.0]], 0.9)
    with pytest.raises(ModelError, match="homogeneous"):
        one_state(("cobb_douglas", [[0.2, 0.3]]), [[1.0, 1.0]])
    with pytest.raises(ModelError, match="NaN"):
        one_state(("linear", [[1.0, 1.0]]), [[np.nan, 1.0]])
    with pytest.raises(ModelError, match="gda"):
        one_state(("linear", [[1.0, 1.0]]), [[1.0, 1.0]]).solve(method="gda")
    with pytest.raises(ModelError, match="empty|cannot all hold"):
        game = MarkovPseudoGame([1, 1], np.zeros((2, 1, 2)), [[1.0]], 0.5, lower=0.0, upper=1.0,
                                shared_matrix=np.ones((1, 1, 2)), shared_rhs=np.full((1, 1), -1.0))
        game.solve(iteration_limit=1)


# --- instance files ------------------------------------------------------------------------------
def test_sample_instance_reads_and_solves():
    from helpers import REPO

    from solvopt.core.family import get_family
    from solvopt.io import read_instance
    inst = read_instance(str(REPO / "instances/games/markov_exchange_economy.json"))
    econ = get_family("games").build_model(inst)
    assert isinstance(econ, MarkovExchangeEconomy) and econ.n_assets == 1
    result = econ.solve("markov-tatonnement", iteration_limit=50, check_every=25)
    assert result.objective >= 0 and result.stats["metrics"]["budget_violation"] <= 1e-9


def test_markov_game_instance_and_bad_files(tmp_path):
    import json

    from solvopt.core.errors import InstanceFormatError
    from solvopt.core.family import get_family
    from solvopt.io import read_instance
    game = {"kind": "markov_pseudo_game", "action_sizes": [1], "linear": [[[1.0], [2.0]]],
            "quadratic": [[[[-1.0]], [[-1.0]]]], "lower": 0, "upper": [[1], [None]],
            "transitions": [[0.5, 0.5], [0.5, 0.5]], "discount": 0.5}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(game))
    model = get_family("games").build_model(read_instance(str(path)))
    assert model.upper[1, 0] == np.inf and model.upper[0, 0] == 1.0
    # atol relative to the value scale 4
    assert np.allclose(model.solve(tolerance=1e-12).solution["policy"], [[1.0], [2.0]], atol=1e-6)
    for change, field in ((dict(discount=1.5), "discount"), (dict(transitions=[[0.5, 0.6], [0.5, 0.5]]), None),
                          (dict(quadratic=[[[[1.0]], [[1.0]]]]), None), (dict(extra=1), "top level")):
        path.write_text(json.dumps({**game, **change}))
        with pytest.raises(InstanceFormatError, match=str(path.name)) as info:
            get_family("games").build_model(read_instance(str(path)))
        assert field is None or field in str(info.value)


def test_ctrl_c_returns_the_best_certified_iterate():
    from solvopt.core.interrupt import request_stop
    game, _ = coupled_game()
    result = game.solve(log=lambda line: request_stop())          # the first log line asks to stop
    assert result.termination is Termination.INTERRUPTED and result.solution_status is SolutionStatus.FEASIBLE
    assert result.objective == pytest.approx(mk.exploitability(game, result.solution["policy"]).value)
    econ = ec.random_economy(3, 3, 1, 2, "leontief", seed=4)
    result = econ.solve(log=lambda line: request_stop())
    assert result.termination is Termination.INTERRUPTED and result.solution["prices"].shape == (2 + 4, 3)


def test_box_halfspace_projection_matches_the_qp():
    from solvopt.games.projection import Polyhedron
    rng = np.random.default_rng(11)
    for _ in range(25):
        n = int(rng.integers(1, 5))
        lb = rng.uniform(-2, 0, n)
        ub = lb + rng.uniform(0.1, 3, n)
        a = rng.normal(size=n)
        X = Polyhedron(lb, ub, a[None, :], None, [a @ lb + rng.uniform(0.05, 1) * (np.abs(a) @ (ub - lb))])
        z = rng.normal(scale=3, size=n)
        fast, qp = mk.project(X, z), X.project(z)
        assert X.violation(fast) <= 1e-9
        assert np.linalg.norm(fast - z) <= np.linalg.norm(qp - z) + 1e-7
        assert np.allclose(fast, qp, atol=1e-6)


def test_certified_holdings_are_affordable():
    econ = ec.random_economy(4, 3, 3, 2, "cobb_douglas", seed=6, borrowing_limit=5.0, holding_limit=5.0)
    chain = ec.pair_chain(econ)
    prof = ec.initial_profile(econ, chain)
    q, y = ec.clear_assets(econ, chain, prof.prices, prof.portfolio)
    assert np.any(ec.wealth(econ, chain, prof.prices, q, y) < 0)         # the clearing alone overspends
    y = ec.affordable(econ, chain, prof.prices, q, y)
    assert np.all(ec.wealth(econ, chain, prof.prices, q, y) >= -1e-9)
    assert np.all(y >= -5.0 - 1e-12) and np.all(y <= 5.0 + 1e-12)
