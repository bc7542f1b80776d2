"""Fast certificates of static games against the generic path and scipy, on random instances.

- the 1-D concave maximisation (single-variable players) against a dense grid and scipy's bounded
  scalar minimiser: its value is attained, its bound is at least the true maximum, both within
  rounding of it;
- the closed-form projection onto a box with one row against the generic QP (HiGHS, polished);
- the separable VE gap (one coupling row, a Lagrangian dual bound) against SLSQP on the joint
  problem, and the single-variable exploitability against the generic projected-ascent path;
- Newton on the active face against the equilibrium the extragradient alone reaches.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import LinearConstraint, minimize, minimize_scalar

from solvopt.core.errors import ModelError
from solvopt.dsl.games import PseudoGame
from solvopt.games import exploitability as ex
from solvopt.games.face_newton import face_newton
from solvopt.games.projection import Polyhedron, project_box_row
from solvopt.games.scalar import concave_max_1d, interval

SEEDS = st.integers(0, 2 ** 31 - 1)


def _concave(rng):
    """phi(t) = -p (t - c)^2 + q log(t + s) - r exp(w t) + k t on t > -s: concave, exact derivative."""
    p, q, r = rng.uniform(0, 2), rng.uniform(0, 2), rng.uniform(0, 0.5)
    c, s, w, k = rng.normal(0, 2), rng.uniform(0.5, 3), rng.uniform(-1, 1), rng.normal(0, 1)

    def fg(t):
        return (-p * (t - c) ** 2 + q * np.log(t + s) - r * np.exp(w * t) + k * t,
                -2 * p * (t - c) + q / (t + s) - r * w * np.exp(w * t) + k)
    return fg, -s


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS)
def test_1d_maximum_and_bound_bracket_the_true_maximum(seed):
    rng = np.random.default_rng(seed)
    fg, floor = _concave(rng)
    l = floor + rng.uniform(0.05, 2)
    h = l + rng.uniform(1e-3, 6)
    t, value, top = concave_max_1d(fg, l, h, rng.uniform(l, h))
    grid = np.linspace(l, h, 20001)
    ref = max(np.max(fg(grid)[0]), -minimize_scalar(lambda x: -fg(x)[0], bounds=(l, h), method="bounded",
                                                    options={"xatol": 1e-12}).fun)
    assert l <= t <= h and value == fg(t)[0]
    assert top >= ref - 1e-12 * (1 + abs(ref))            # a bound: never below what scipy or the grid find
    assert value >= ref - 1e-11 * (1 + abs(ref))          # and attained to rounding
    assert top - value <= 1e-11 * (1 + abs(ref))


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS)
def test_1d_maximum_on_unbounded_intervals(seed):
    rng = np.random.default_rng(seed)
    p, c, k = rng.uniform(0.1, 3), rng.normal(0, 5), rng.normal(0, 3)
    fg = lambda t: (-p * (t - c) ** 2 + k * t, -2 * p * (t - c) + k)        # noqa: E731
    t, value, top = concave_max_1d(fg, -np.inf, np.inf, rng.normal(0, 10))
    best = c + k / (2 * p)
    assert t == pytest.approx(best, abs=1e-9 * (1 + abs(best)))
    assert top >= fg(best)[0] - 1e-12 * (1 + abs(value)) and top - value <= 1e-11 * (1 + abs(value))


def test_1d_end_points_are_exact_and_unbounded_is_refused():
    fg = lambda t: (2.0 * t, 2.0)                                           # noqa: E731
    assert concave_max_1d(fg, -1.0, 3.0, 0.0) == (3.0, 6.0, 6.0)
    with pytest.raises(ModelError, match="unbounded"):
        concave_max_1d(fg, 0.0, np.inf, 0.0)
    with pytest.raises(ModelError, match="empty"):
        interval(0.0, 1.0, [1.0], [2.0], [3.0])
    assert interval(0.0, 5.0, [0.0, 2.0, -1.0], [-1.0, -np.inf, -np.inf], [1.0, 3.0, 0.5]) == (0.0, 1.5)


def test_1d_refuses_a_convex_function():
    fg = lambda t: (t * t, 2 * t)                                           # noqa: E731

    def check(fx, gx, fy, d):
        ex.check_concave(fx, gx, fy, d, "phi")
    with pytest.raises(ModelError, match="not concave"):
        concave_max_1d(fg, -1.0, 2.0, 0.5, check)


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, n=st.integers(1, 12))
@example(seed=3102, n=6)      # HiGHS 1.16's QP ends with "Solve error" there; its point names the face
def test_box_row_projection_matches_the_generic_qp(seed, n):
    rng = np.random.default_rng(seed)
    lb = rng.uniform(-3, 0, n)
    ub = lb + rng.uniform(0.1, 4, n)
    if rng.uniform() < 0.3:
        lb[rng.integers(n)] = -np.inf
    if rng.uniform() < 0.3:
        ub[rng.integers(n)] = np.inf
    row = rng.normal(0, 1, n) * (rng.uniform(size=n) < 0.8)
    x = np.clip(rng.normal(0, 1, n), lb, ub)                  # a feasible point fixes a feasible row range
    mid = float(row @ x)
    lo = mid - rng.uniform(0, 2) if rng.uniform() < 0.7 else -np.inf
    hi = mid + rng.uniform(0, 2) if rng.uniform() < 0.7 else np.inf
    if rng.uniform() < 0.2:
        lo = hi = mid
    z = rng.normal(0, 4, n)
    got = project_box_row(z, lb, ub, row, lo, hi)
    P = Polyhedron(lb, ub, row[None, :], [lo], [hi])
    ref = P.minimize_qp(sp.identity(n, format="csc"), -z)    # the generic path (HiGHS, then polished)
    assert P.violation(got) <= 1e-9 * (1 + np.abs(z).max())
    assert np.abs(got - ref).max() <= 1e-6 * (1 + np.abs(z).max())
    assert np.sum((got - z) ** 2) <= np.sum((ref - z) ** 2) + 1e-9


def _scalar_game(rng, n, coupled=True):
    """n one-variable players, u_i = -p_i b_i^2 + (c_i - sum_j M_ij a_j) b_i + q_i log(1 + b_i), b_i in [0, ub_i],
    and (optionally) one shared row w.b <= cap; callables, so the fast path sees library-like utilities."""
    p, c, q = 0.25 * n + rng.uniform(0.1, 2, n), rng.uniform(0, 5, n), rng.uniform(0, 2, n)   # strongly monotone
    M = rng.uniform(0, 0.5, (n, n))
    np.fill_diagonal(M, 0.0)
    ub = rng.uniform(1, 5, n)
    w = rng.uniform(0.5, 2, n)
    cap = float(rng.uniform(0.2, 0.9) * (w @ ub))
    g = PseudoGame("random")
    xs = [g.player(f"x{i}", lb=0, ub=ub[i]) for i in range(n)]
    for i in range(n):
        def u(a, i=i):
            return -p[i] * a[i] ** 2 + (c[i] - M[i] @ a) * a[i] + q[i] * np.log1p(a[i])

        def grad(a, i=i):
            out = -M[i] * a[i]
            out[i] = -2 * p[i] * a[i] + c[i] - M[i] @ a + q[i] / (1 + a[i])
            return out
        g.utility(xs[i], u, grad)
    if coupled:
        g.share(sum(w[i] * xs[i] for i in range(n)) <= cap)
    return g, ub, w, cap


@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, n=st.integers(2, 6))
def test_separable_ve_gap_matches_slsqp(seed, n):
    rng = np.random.default_rng(seed)
    g, ub, w, cap = _scalar_game(rng, n)
    data = g.data()
    a = rng.uniform(0, 1, n) * ub
    a *= min(1.0, cap / float(w @ a))
    here = sum(u.value(a) for u in data.utilities)

    def psi(b):
        return sum(data.utilities[i].value(np.where(np.arange(n) == i, b[i], a)) for i in range(n))
    best = -np.inf
    for y0 in (a, 0.5 * a):
        res = minimize(lambda b: -psi(b), y0, bounds=list(zip(np.zeros(n), ub)), method="SLSQP",
                       constraints=[LinearConstraint(w[None, :], -np.inf, cap)],
                       options={"ftol": 1e-14, "maxiter": 500})
        if w @ res.x <= cap + 1e-9 and np.all(res.x >= -1e-9) and np.all(res.x <= ub + 1e-9):
            best = max(best, psi(res.x))
    e = ex.ve_gap(data, a)
    assert ex.scalar_structure(data) is not None
    assert e.value >= best - here - 1e-7 * (1 + abs(here))                # a bound (SLSQP's rows hold to 1e-9)
    assert e.value <= max(best - here, 0.0) + 1e-8 * (1 + abs(here))     # tight to the dual's accuracy
    b = e.responses[0]
    assert w @ b <= cap + 1e-9 and np.all(b >= 0) and np.all(b <= ub)


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, n=st.integers(2, 5), alpha=st.sampled_from([0.5, 2.0]))
def test_regularised_joint_response_matches_slsqp(seed, n, alpha):
    """nested's inner maximiser (alpha > 0: strongly concave, unique) from the separable dual path."""
    from solvopt.games.scalar import separable_response
    rng = np.random.default_rng(seed)
    g, ub, w, cap = _scalar_game(rng, n)
    data = g.data()
    a = rng.uniform(0, 1, n) * ub
    a *= min(1.0, cap / float(w @ a))

    def obj(b):
        return sum(data.utilities[i].value(np.where(np.arange(n) == i, b[i], a)) for i in range(n)) \
            - 0.5 * alpha * float((b - a) @ (b - a))
    res = minimize(lambda b: -obj(b), a, bounds=list(zip(np.zeros(n), ub)), method="SLSQP",
                   constraints=[LinearConstraint(w[None, :], -np.inf, cap)], options={"ftol": 1e-15, "maxiter": 500})
    b, value, top = separable_response(data, ex.scalar_structure(data), a, alpha)
    assert w @ b <= cap + 1e-9 and value == pytest.approx(obj(b), abs=1e-12)
    assert top >= -res.fun - 1e-7 and value >= -res.fun - 1e-8
    np.testing.assert_allclose(b, ex.joint_response(data, ex.joint_polyhedron(data), a, alpha), atol=0)
    np.testing.assert_allclose(b, res.x, atol=1e-4)


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, n=st.integers(2, 5))
def test_scalar_exploitability_matches_the_generic_path(seed, n):
    rng = np.random.default_rng(seed)
    g, ub, w, cap = _scalar_game(rng, n)
    data = g.data()
    a = rng.uniform(0, 1, n) * ub
    a *= min(1.0, cap / float(w @ a))
    fast = ex.static_exploitability(data, a)
    # the generic path: projected ascent per player; on these 1-D players it settles within 1e-15 of
    # its 2000-step value by step 100 (it oscillates at the optimum and never meets its 1e-14 stop)
    for i, cols in enumerate(data.blocks):
        P = ex.player_polyhedron(data, i, a)
        u = data.utilities[i]
        b = ex._projected_ascent(lambda y, u=u, cols=cols: u.value(ex.with_block(a, cols, y)),
                                 lambda y, u=u, cols=cols: u.gradient(ex.with_block(a, cols, y))[cols],
                                 P, P.project(a[cols]), 200)
        slow = u.value(ex.with_block(a, cols, b)) - u.value(a)
        assert fast.per_player[i] >= slow - 1e-12 * (1 + abs(u.value(a)))
        assert fast.per_player[i] <= max(slow, 0.0) + 1e-9 * (1 + abs(u.value(a)))


@settings(max_examples=15, deadline=None)
@given(seed=SEEDS, n=st.integers(2, 5))
def test_polish_finds_the_equilibrium_the_extragradient_approaches(seed, n):
    """With and without the polish, extragradient ends at the same (unique: strongly monotone) VE."""
    rng = np.random.default_rng(seed)
    g, *_ = _scalar_game(rng, n)
    fast = g.solve(time_limit=60)
    slow = g.solve(polish=False, time_limit=60, tolerance=1e-11)
    assert fast.termination.value == "optimal"
    np.testing.assert_allclose(fast.solution["actions"], slow.solution["actions"], atol=1e-4)


def test_face_newton_refuses_a_wrong_face():
    """At a point on a face that holds no equilibrium (wrong multiplier sign), the polish gives None."""
    g = PseudoGame("pull")
    x = g.player("x", lb=0, ub=1)
    y = g.player("y", lb=0, ub=1)
    g.minimize(x, (x - 0.75) * (x - 0.75))
    g.minimize(y, (y - 0.25) * (y - 0.25))
    g.share(x + y <= 2)
    data = g.data()
    K = ex.joint_polyhedron(data)
    assert face_newton(data, K, np.array([0.0, 0.25])) is None                 # x at its lower bound: pulled up
    np.testing.assert_allclose(face_newton(data, K, np.array([0.7, 0.3])), [0.75, 0.25])


@settings(max_examples=10, deadline=None)
@given(seed=SEEDS)
def test_polish_on_quadratic_games_with_several_variables(seed):
    """Two players x two variables, boxes and two shared rows, strongly monotone quadratic costs: the
    polished run and the plain one end at the same VE (exact Jacobian, HiGHS projections)."""
    rng = np.random.default_rng(seed)
    g = PseudoGame("quad")
    xs = [g.player(f"p{i}", (2,), lb=0, ub=rng.uniform(1, 4, 2)) for i in range(2)]
    for i, x in enumerate(xs):
        other = xs[1 - i]
        d = rng.uniform(1, 3, 2)
        cross = rng.uniform(-0.4, 0.4, 2)
        g.minimize(x, sum(d[k] * x[k] * x[k] + cross[k] * x[k] * other[k] - rng.uniform(0, 6) * x[k] for k in range(2)))
    for _ in range(2):
        w = rng.uniform(0.2, 1, 4)
        g.share(w[0] * xs[0][0] + w[1] * xs[0][1] + w[2] * xs[1][0] + w[3] * xs[1][1] <= rng.uniform(1, 4))
    fast = g.solve(time_limit=60)
    slow = g.solve(polish=False, tolerance=1e-12, time_limit=60)
    assert fast.termination.value == "optimal"
    np.testing.assert_allclose(fast.solution["actions"], slow.solution["actions"], atol=1e-5)
