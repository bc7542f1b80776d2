"""Markov games with a continuous state component and affine policies (affine-gda).

Independent references: feedback Nash equilibria of linear-quadratic games from COUPLED RICCATI
equations solved here by a plain fixed-point iteration (no Lyapunov solve, no code under test);
closed-form scalar values for the exploitability; the tabular Markov game code
(:mod:`solvopt.games.markov`, certified) when z does not matter; finite differences (an oracle for
the gradients only).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solvopt.core.errors import ModelError
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import LinearQuadraticMarkovGame, MarkovPseudoGame
from solvopt.games import markov as mk
from solvopt.games import parametric as pm
from solvopt.games import parametric_sampled as ps


# --- the reference: coupled Riccati equations by fixed-point iteration -----------------------
def coupled_riccati(A, B, Qc, Rc, P, gamma, rounds=20000):
    """Feedback Nash gains K_i(s) (u_i = -K_i(s) z) of the discounted game where player i minimises
    sum_t gamma^t (z' Qc_i z + u_i' Rc_i u_i), z' = A(s) z + sum_j B_j(s) u_j, s' ~ P(s, .).
    A (S, c, c), B list of (S, c, d_j), Qc list of (c, c), Rc list of (d_i, d_i)."""
    S, c = A.shape[0], A.shape[1]
    N = len(B)
    K = [np.zeros((S, B[i].shape[2], c)) for i in range(N)]
    V = [np.zeros((S, c, c)) for _ in range(N)]
    for _ in range(rounds):
        newK = []
        for i in range(N):
            Vbar = np.einsum("st,tab->sab", P, V[i])
            Ki = np.empty_like(K[i])
            for s in range(S):
                others = A[s] - sum(B[j][s] @ K[j][s] for j in range(N) if j != i)
                Ki[s] = np.linalg.solve(Rc[i] + gamma * B[i][s].T @ Vbar[s] @ B[i][s],
                                        gamma * B[i][s].T @ Vbar[s] @ others)
            newK.append(Ki)
        newV = []
        for i in range(N):
            Vbar = np.einsum("st,tab->sab", P, V[i])
            Vi = np.empty_like(V[i])
            for s in range(S):
                closed = A[s] - sum(B[j][s] @ newK[j][s] for j in range(N))
                Vi[s] = Qc[i] + newK[i][s].T @ Rc[i] @ newK[i][s] + gamma * closed.T @ Vbar[s] @ closed
            newV.append(Vi)
        change = max(np.abs(a - b).max() for a, b in zip(newK + newV, K + V))
        K, V = newK, newV
        if change < 1e-14:
            break
    return K


def lq_game(A, B, Qc, Rc, P, gamma, **extra):
    """The same game as a LinearQuadraticMarkovGame (rewards are the negated costs)."""
    S, c = A.shape[0], A.shape[1]
    sizes = [b.shape[2] for b in B]
    D = sum(sizes)
    N = len(B)
    off = np.concatenate([[0], np.cumsum(sizes)])
    quad = np.zeros((N, S, D, D))
    for i in range(N):
        quad[i, :, off[i]:off[i + 1], off[i]:off[i + 1]] = -2 * Rc[i]
    Z = np.stack([np.broadcast_to(-2 * Qc[i], (S, c, c)) for i in range(N)])
    return LinearQuadraticMarkovGame(sizes, np.zeros((N, S, D)), P, gamma, A, np.concatenate(B, axis=2),
                                     quadratic=quad, state_quadratic=Z, **extra)


def scalar_game(a=1.02, b=(1.0, 0.6), q=(1.0, 2.0), r=(0.5, 1.0), gamma=0.9, **extra):
    A = np.array([[[a]]])
    B = [np.array([[[b[0]]]]), np.array([[[b[1]]]])]
    Qc = [np.array([[q[0]]]), np.array([[q[1]]])]
    Rc = [np.array([[r[0]]]), np.array([[r[1]]])]
    return A, B, Qc, Rc, np.array([[1.0]]), gamma, extra


def two_state_planar():
    A = np.array([[[0.9, 0.3], [0.0, 0.8]], [[1.0, -0.2], [0.1, 0.7]]])
    B = [np.array([[[1.0], [0.2]], [[0.5], [0.0]]]), np.array([[[0.0], [1.0]], [[0.3], [0.8]]])]
    Qc = [np.array([[1.0, 0.2], [0.2, 0.5]]), np.array([[0.4, 0.0], [0.0, 1.5]])]
    Rc = [np.array([[0.7]]), np.array([[1.2]])]
    P = np.array([[0.7, 0.3], [0.4, 0.6]])
    return A, B, Qc, Rc, P, 0.95, {"initial_cov": np.eye(2), "noise_cov": 0.05 * np.stack([np.eye(2)] * 2)}


@pytest.mark.parametrize("case", [scalar_game, two_state_planar])
def test_gda_reaches_the_coupled_riccati_gains(case):
    A, B, Qc, Rc, P, gamma, extra = case()
    K = coupled_riccati(A, B, Qc, Rc, P, gamma)
    game = lq_game(A, B, Qc, Rc, P, gamma, **extra)
    result = game.solve(iteration_limit=400)
    assert result.method == "affine-gda" and result.stats["exploitability_kind"] == "exact"
    assert result.termination is Termination.OPTIMAL and result.objective <= 1e-9
    G = result.solution["gains"]
    expected = -np.concatenate(K, axis=1)
    np.testing.assert_allclose(G[:, :, 1:], expected, atol=1e-5)
    np.testing.assert_allclose(G[:, :, 0], 0.0, atol=1e-8)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(a=st.floats(0.3, 1.0), b1=st.floats(0.3, 1.5), b2=st.floats(-1.5, -0.3), q1=st.floats(0.1, 3.0),
       q2=st.floats(0.1, 3.0), r1=st.floats(0.2, 2.0), r2=st.floats(0.2, 2.0), gamma=st.floats(0.3, 0.9))
def test_random_scalar_games_reach_the_coupled_riccati_gains(a, b1, b2, q1, q2, r1, r2, gamma):
    A, B, Qc, Rc, P, gamma, _ = scalar_game(a, (b1, b2), (q1, q2), (r1, r2), gamma)
    K = coupled_riccati(A, B, Qc, Rc, P, gamma)
    assume(all(np.all(np.isfinite(k)) for k in K))
    closed = a - b1 * K[0][0, 0, 0] - b2 * K[1][0, 0, 0]
    assume(gamma * closed ** 2 < 0.95)                       # the reference iteration settled on a stable point
    result = lq_game(A, B, Qc, Rc, P, gamma, initial_cov=[[1.0]]).solve(iteration_limit=3000)
    assert result.termination is Termination.OPTIMAL
    np.testing.assert_allclose(result.solution["gains"][0, :, 1], [-K[0][0, 0, 0], -K[1][0, 0, 0]], atol=1e-5)


def test_exploitability_zero_at_riccati_and_matches_scalar_closed_form_elsewhere():
    A, B, Qc, Rc, P, gamma, _ = scalar_game()
    K = coupled_riccati(A, B, Qc, Rc, P, gamma)
    game = lq_game(A, B, Qc, Rc, P, gamma, initial_cov=[[1.0]])
    data = pm.lq_data(game)
    G = np.zeros((1, 2, 2))
    G[0, :, 1] = [-K[0][0, 0, 0], -K[1][0, 0, 0]]
    assert pm.exploitability(data, G).value <= 1e-10
    # elsewhere: sum_i [cost_i(profile) - cost_i(best response)], scalar closed forms, z_0 ~ N(0, 1)
    k = np.array([0.3, 0.5])
    G[0, :, 1] = -k
    a, b, q, r = A[0, 0, 0], [B[0][0, 0, 0], B[1][0, 0, 0]], [1.0, 2.0], [0.5, 1.0]
    expected = 0.0
    for i in range(2):
        closed = a - b[0] * k[0] - b[1] * k[1]
        cost = (q[i] + r[i] * k[i] ** 2) / (1 - gamma * closed ** 2)
        others = a - b[1 - i] * k[1 - i]
        p = 0.0
        for _ in range(20000):                 # scalar Riccati iteration for player i alone
            p = q[i] + gamma * others ** 2 * p - (gamma * others * b[i] * p) ** 2 / (r[i] + gamma * b[i] ** 2 * p)
        expected += cost - p
    value = pm.exploitability(data, G).value
    assert value > 0.01
    assert value == pytest.approx(expected, rel=1e-9)


def test_z_irrelevant_reduces_to_the_tabular_game():
    rng = np.random.default_rng(3)
    S = 2
    lin = rng.normal(size=(2, S, 2)) * 3
    quad = np.zeros((2, S, 2, 2))
    quad[0, :, 0, 0], quad[1, :, 1, 1] = -2.0, -1.5
    quad[0, :, 0, 1] = quad[0, :, 1, 0] = 0.4
    quad[1, :, 0, 1] = quad[1, :, 1, 0] = -0.3
    P = np.array([[0.6, 0.4], [0.3, 0.7]])
    A = np.stack([np.eye(2) * 0.5] * S)
    Bm = rng.normal(size=(S, 2, 2))
    game = LinearQuadraticMarkovGame([1, 1], lin, P, 0.8, A, Bm, quadratic=quad, noise_cov=np.stack([np.eye(2)] * S),
                                     initial_cov=np.eye(2))
    result = game.solve()
    k = result.solution["gains"][:, :, 0]
    np.testing.assert_allclose(result.solution["gains"][:, :, 1:], 0.0, atol=1e-8)
    tabular = MarkovPseudoGame([1, 1], lin, P, 0.8, quadratic=quad, lower=-100.0, upper=100.0)   # interior
    assert mk.exploitability(tabular, k).value <= 1e-8            # certified by the tabular code
    reference = tabular.solve(method="gda", tolerance=1e-9, iteration_limit=2000)
    np.testing.assert_allclose(k, reference.solution["policy"], atol=1e-4)


def z_irrelevant_pair(lin, quad, P, gamma, lower, upper):
    """A tabular game and the same game with a noisy z that enters no reward (bounded actions)."""
    S = P.shape[0]
    tabular = MarkovPseudoGame([1, 1], lin, P, gamma, quadratic=quad, lower=lower, upper=upper)
    game = LinearQuadraticMarkovGame([1, 1], lin, P, gamma, np.full((S, 1, 1), 0.5), np.zeros((S, 1, 2)),
                                     quadratic=quad, lower=lower, upper=upper, noise_cov=np.ones((S, 1, 1)))
    return tabular, game


def test_z_irrelevant_with_action_bounds_matches_the_tabular_game():
    lin = np.array([[[2.0, 0.0], [-1.0, 0.0]], [[0.0, 1.0], [0.0, 3.0]]])
    quad = np.zeros((2, 2, 2, 2))
    quad[0, :, 0, 0], quad[1, :, 1, 1] = -2.0, -1.5
    quad[0, :, 0, 1] = quad[0, :, 1, 0] = 0.4
    quad[1, :, 0, 1] = quad[1, :, 1, 0] = -0.3
    P = np.array([[0.6, 0.4], [0.3, 0.7]])
    tabular, game = z_irrelevant_pair(lin, quad, P, 0.5, -5.0, 5.0)
    reference = tabular.solve(method="gda", tolerance=1e-9, iteration_limit=2000).solution["policy"]
    result = game.solve(samples=8, iteration_limit=40, check_every=20, seed=1)
    assert result.stats["exploitability_kind"] == "estimate" and result.objective is None and result.bound is None
    assert result.termination is not Termination.OPTIMAL and result.solution_status is SolutionStatus.FEASIBLE
    G = result.solution["gains"]
    np.testing.assert_allclose(G[:, :, 0], reference, atol=1e-4)
    np.testing.assert_allclose(G[:, :, 1:], 0.0, atol=1e-4)
    assert mk.exploitability(tabular, G[:, :, 0]).value <= 1e-6
    assert abs(result.stats["exploitability_estimate"]) <= 1e-6


def test_estimate_vanishes_at_a_tabular_equilibrium_on_the_bounds_and_not_elsewhere():
    lin = np.array([[[34.0, 0.0], [30.0, 0.0]], [[0.0, 24.25], [0.0, 20.0]]])      # Harker-like, bounds bind
    quad = np.zeros((2, 2, 2, 2))
    quad[0, :, 0, 0], quad[1, :, 1, 1] = -2.0, -2.0
    quad[0, :, 0, 1] = quad[0, :, 1, 0] = -8 / 3
    quad[1, :, 0, 1] = quad[1, :, 1, 0] = -5 / 4
    tabular, game = z_irrelevant_pair(lin, quad, np.array([[0.5, 0.5], [0.2, 0.8]]), 0.5, 0.0, [6.0, 8.0])
    policy = tabular.solve(method="gda", tolerance=1e-9, iteration_limit=2000).solution["policy"]
    T = ps.default_horizon(game)
    engine = ps.SampledEngine(game, ps.draw_batch(game, 16, T, seed=1))
    G = np.zeros((2, 2, 2))
    G[:, :, 0] = policy
    at_equilibrium = ps.estimate(engine, G)
    assert abs(at_equilibrium.value) <= 1e-6
    G[1, 1, 0] -= 1.0
    G[0, 0, 1] = 0.5
    away = ps.estimate(engine, G)
    assert away.value > 0.1 and away.value > 3 * away.stderr


def random_game(bounds=False, seed=0, slopes=False):
    rng = np.random.default_rng(seed)
    S, c, N = 2, 2, 2
    D = 3
    sizes = [1, 2]
    lin = rng.normal(size=(N, S, D))
    quad = np.zeros((N, S, D, D))
    for i, sl in enumerate([slice(0, 1), slice(1, 3)]):
        M = rng.normal(size=(S, D, D)) * 0.3
        quad[i] = M + np.swapaxes(M, -1, -2)
        d = sl.stop - sl.start
        quad[i][:, sl, sl] = -(2.0 * np.eye(d) + 0.1 * np.ones((d, d)))
    Zm = rng.normal(size=(N, S, c, c)) * 0.2
    extra = dict(quadratic=quad, state_linear=rng.normal(size=(N, S, c)),
                 state_quadratic=-np.eye(c) + 0.5 * (Zm + np.swapaxes(Zm, -1, -2)) * 0.3,
                 cross=rng.normal(size=(N, S, D, c)) * 0.3, state_offset=rng.normal(size=(S, c)) * 0.2,
                 noise_cov=np.stack([0.1 * np.eye(c)] * S), initial_state=[0.5, -0.3], initial_cov=0.2 * np.eye(c))
    if bounds:
        extra.update(lower=-0.8, upper=0.9)
    if slopes:                              # bounds that move with z (they cross only for |z| > 5)
        extra.update(lower_slope=rng.normal(size=(S, D, c)) * 0.1, upper_slope=rng.normal(size=(S, D, c)) * 0.1)
    A = rng.normal(size=(S, c, c)) * 0.3
    B = rng.normal(size=(S, c, D)) * 0.5
    return LinearQuadraticMarkovGame(sizes, lin, [[0.8, 0.2], [0.3, 0.7]], 0.8, A, B, **extra)


def finite_difference(f, G, h=1e-6):
    grad = np.zeros_like(G)
    for idx in np.ndindex(G.shape):
        up, down = G.copy(), G.copy()
        up[idx] += h
        down[idx] -= h
        grad[idx] = (f(up) - f(down)) / (2 * h)
    return grad


def test_exact_gradients_match_finite_differences():
    game = random_game()
    data = pm.lq_data(game)
    G = np.random.default_rng(5).normal(size=(2, 3, 3)) * 0.2
    grad = pm.policy_gradients(data, pm.evaluate(data, G))
    for i in range(2):
        fd = finite_difference(lambda H, i=i: pm.evaluate(data, H).J[i], G)
        np.testing.assert_allclose(grad[i], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("slopes", [False, True])
def test_sampled_gradients_match_finite_differences_and_exact_values_without_bounds(slopes):
    game = random_game(bounds=True, slopes=slopes)
    engine = ps.SampledEngine(game, ps.draw_batch(game, 16, 40, seed=2), kernel="numpy")
    G = np.random.default_rng(6).normal(size=(2, 3, 3)) * 0.5
    weights = np.array([0.3, 1.0])
    grad = engine.raw_gradient(engine.evaluate(G), weights)
    fd = finite_difference(lambda H: weights @ engine.evaluate(H).J, G, h=1e-7)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    # without bounds, many long rollouts estimate the exact (Lyapunov) value
    free = random_game(bounds=False)
    exact = pm.evaluate(pm.lq_data(free), G).J
    big = ps.SampledEngine(free, ps.draw_batch(free, 4000, 90, seed=3))
    ro = big.evaluate(G)
    stderr = ro.returns.std(axis=0) / np.sqrt(4000)
    assert np.all(np.abs(ro.J - exact) <= 5 * stderr + 1e-6)


@pytest.mark.parametrize("slopes", [False, True])
def test_numba_rollouts_match_the_numpy_reference(slopes):
    pytest.importorskip("numba")
    game = random_game(bounds=True, seed=4, slopes=slopes)
    engine = ps.SampledEngine(game, ps.draw_batch(game, 12, 30, seed=5), kernel="numba")
    G = np.random.default_rng(7).normal(size=(2, 3, 3)) * 0.6
    fast, ref = engine.evaluate(G), engine.evaluate_numpy(G)
    for name in ("z", "actions", "inside", "above", "returns", "Y"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=1e-12, atol=1e-12, err_msg=name)
    weights = np.array([1.0, -0.5])
    np.testing.assert_allclose(engine.raw_gradient(fast, weights), engine.raw_gradient_numpy(ref, weights),
                               rtol=1e-12, atol=1e-12)


def test_state_dependent_bounds_hold_and_crossing_bounds_are_refused():
    """A harvest at most the stock: 0 <= a <= z, kept on every rollout step (z' = z - (a_1 + a_2) / 2 + 1/2
    stays >= 1/2 from z_0 > 0); bounds that cross are a ModelError."""
    game = LinearQuadraticMarkovGame([1, 1], np.full((2, 1, 2), 2.0), [[1.0]], 0.8, [[[1.0]]], [[[-0.5, -0.5]]],
                                     quadratic=np.stack([np.diag([-2.0, 0.0]), np.diag([0.0, -2.0])])[:, None],
                                     state_offset=[[0.5]], initial_state=[1.0], initial_cov=[[0.1]],
                                     lower=0.0, upper=0.0, upper_slope=np.ones((1, 2, 1)))
    result = game.solve(samples=8, iteration_limit=20, seed=0)
    engine = ps.SampledEngine(game, ps.draw_batch(game, 32, 40, seed=9))
    ro = engine.evaluate(result.solution["gains"])
    z = ro.z[:-1, :, 0]
    assert np.all(ro.actions >= -1e-12) and np.all(ro.actions <= z[..., None] + 1e-12)
    assert np.any(ro.above > 0)                        # the stock bound is active somewhere
    assert np.all(np.isfinite(ro.returns))
    crossing = LinearQuadraticMarkovGame([1, 1], np.full((2, 1, 2), 2.0), [[1.0]], 0.8, [[[1.0]]], [[[-0.5, -0.5]]],
                                         quadratic=np.stack([np.diag([-2.0, 0.0]), np.diag([0.0, -2.0])])[:, None],
                                         initial_state=[-1.0], lower=0.0, upper=0.0, upper_slope=np.ones((1, 2, 1)))
    with pytest.raises(ModelError, match="cross"):
        crossing.solve(samples=4, horizon=5, iteration_limit=2)
    with pytest.raises(ModelError, match="infinite"):
        LinearQuadraticMarkovGame([1, 1], np.zeros((2, 1, 2)), [[1.0]], 0.8, [[[0.5]]], np.zeros((1, 1, 2)),
                                  quadratic=-np.stack([np.eye(2)] * 2)[:, None], lower_slope=np.ones((1, 2, 1)))


def test_sampled_solve_is_reproducible_for_a_seed():
    game = random_game(bounds=True)
    runs = [game.solve(samples=8, horizon=20, iteration_limit=4, check_every=2, seed=7) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].solution["gains"], runs[1].solution["gains"])
    assert runs[0].stats["exploitability_estimate"] == runs[1].stats["exploitability_estimate"]
    assert runs[0].stats["exploitability_stderr"] >= 0


def test_bad_inputs_are_one_line_model_errors():
    A, B, Qc, Rc, P, gamma, _ = scalar_game()
    with pytest.raises(ModelError, match="concave"):
        lq_game(A, B, Qc, [Rc[0], -Rc[1]], P, gamma)
    bad = np.array([[[np.nan]]])
    with pytest.raises(ModelError, match="NaN|non-finite"):
        lq_game(bad, B, Qc, Rc, P, gamma)
    with pytest.raises(ModelError, match="shape"):
        LinearQuadraticMarkovGame([1, 1], np.zeros((2, 1, 2)), P, gamma, A, np.zeros((1, 2, 2)))
    with pytest.raises(ModelError, match="positive semidefinite"):
        lq_game(A, B, Qc, Rc, P, gamma, noise_cov=[[[-1.0]]])
    unstable = lq_game(np.array([[[1.2]]]), B, Qc, Rc, P, gamma)         # gamma a^2 > 1 under a = 0
    with pytest.raises(ModelError, match="not mean-square stable") as err:
        unstable.solve()
    assert "\n" not in str(err.value)
    with pytest.raises(ModelError, match="start gains"):
        lq_game(A, B, Qc, Rc, P, gamma).solve(start=np.zeros((1, 2, 3)))
    stabilised = unstable.solve(start=np.array([[[0.0, -0.5], [0.0, -0.5]]]))   # a stabilising start works
    assert stabilised.objective <= 1e-9
    with pytest.raises(ModelError, match="decay"):
        lq_game(A, B, Qc, Rc, P, gamma).solve(decay=-1.0)
    with pytest.raises(ModelError, match="policy"):
        lq_game(A, B, Qc, Rc, P, gamma).solve(policy="neural")
    with pytest.raises(ModelError, match="exact evaluation"):
        lq_game(A, B, Qc, Rc, P, gamma, lower=-1.0, upper=1.0).solve(evaluation="exact")


def test_limits_and_ctrl_c_return_the_best_iterate():
    from solvopt.core.interrupt import request_stop
    A, B, Qc, Rc, P, gamma, extra = two_state_planar()
    game = lq_game(A, B, Qc, Rc, P, gamma, **extra)
    limited = game.solve(iteration_limit=3, check_every=1)
    assert limited.termination is Termination.ITERATION_LIMIT and limited.solution_status is SolutionStatus.FEASIBLE
    best = min(h[2] for h in limited.stats["history"])
    assert limited.objective == best > 0
    timed = game.solve(time_limit=1e-3)
    assert timed.termination is Termination.TIME_LIMIT and timed.solution["gains"].shape == (2, 2, 3)
    stopped = game.solve(log=lambda line: request_stop())
    assert stopped.termination is Termination.INTERRUPTED and stopped.solution["gains"].shape == (2, 2, 3)
    sampled = lq_game(A, B, Qc, Rc, P, gamma, lower=-1.0, upper=1.0, **extra)
    cut = sampled.solve(samples=4, horizon=10, log=lambda line: request_stop())
    assert cut.termination is Termination.INTERRUPTED and cut.solution["gains"].shape == (2, 2, 3)
    assert cut.bound is None and cut.termination is not Termination.OPTIMAL


def test_gda_converges_where_iterated_best_responses_diverge():
    """Best-response slopes -3/2 each (product 9/4 > 1): iterating best responses diverges, GDA's
    exploitability descent does not. Nash from the first-order conditions 10 - 2a_1 - 3a_2 = 0,
    5 - 2a_2 - 3a_1 = 0: (-1, 4); z (noise) enters no reward."""
    lin = np.array([[[10.0, 0.0]], [[0.0, 5.0]]])
    quad = np.zeros((2, 1, 2, 2))
    quad[0, 0, 0, 0] = quad[1, 0, 1, 1] = -2.0
    quad[:, 0, 0, 1] = quad[:, 0, 1, 0] = -3.0
    game = LinearQuadraticMarkovGame([1, 1], lin, [[1.0]], 0.5, [[[0.5]]], np.zeros((1, 1, 2)), quadratic=quad,
                                     noise_cov=[[[1.0]]], initial_cov=[[1.0]])
    result = game.solve(iteration_limit=2000)
    assert result.termination is Termination.OPTIMAL
    np.testing.assert_allclose(result.solution["gains"][0], [[-1.0, 0.0], [4.0, 0.0]], atol=1e-6)
    data = pm.lq_data(game)
    G = pm.zero_policy(game)
    values = []
    for _ in range(6):
        rows = [pm.best_response(data, G, i).gains for i in range(2)]
        G = np.concatenate(rows, axis=1)
        values.append(pm.exploitability(data, G).value)
    assert all(b > 2 * a for a, b in zip(values, values[1:]))
