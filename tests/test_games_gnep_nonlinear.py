"""Convex nonlinear constraints in pseudo-games: the model, gnep-kkt, the certificates, A.6 and A.9a/b.

The references are independent of solvopt's solvers: each player's best response by scipy
(SLSQP over the original bounds, rows and nonlinear constraints, plain NumPy costs and
gradients: :meth:`solvopt.games.gnep_library.GNEP.scipy_regrets`), central finite differences for
the gradients, second differences for convexity, closed forms for the small games.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl import PseudoGame
from solvopt.games.exploitability import static_exploitability
from solvopt.games.expressions import convex_constraint
from solvopt.games.gnep_library import NONLINEAR, problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDER = ROOT / "instances" / "games" / "gnep"


def _points(p, count, rng, width=5.0):
    hi = np.minimum(p.ub, p.lb + width)
    return [p.lb + (hi - p.lb) * rng.uniform(0.02, 1.0, p.n) for _ in range(count)]


def _feasible(p, x, tol=1e-7) -> bool:
    if np.any(x < p.lb - tol) or np.any(x > p.ub + tol):
        return False
    rows = all(np.all(r.A @ x >= r.lo - tol) and np.all(r.A @ x <= r.hi + tol) for r in p.rows)
    return rows and all(c.fn(x) <= tol for c in p.nonlinear)


# --- the library's statements ------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NONLINEAR))
def test_constraint_gradients_expressions_and_convexity(name):
    """Hand-written gradients = central differences; the JSON trees = the NumPy functions; convex in own action."""
    p = problem(name)
    rng = np.random.default_rng(1)
    for c in p.nonlinear:
        tree = convex_constraint(c.json(), p.n, p.blocks[c.owner], ("c",), p.lb, p.ub)
        for x in _points(p, 3, rng):
            h = 1e-6
            fd = np.array([(c.fn(x + h * e) - c.fn(x - h * e)) / (2 * h) for e in np.eye(p.n)])
            np.testing.assert_allclose(c.grad(x), fd, rtol=1e-5, atol=1e-6)
            assert tree.value(x) == pytest.approx(c.fn(x), rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(tree.gradient(x), c.grad(x), rtol=1e-12, atol=1e-12)
            d = np.zeros(p.n)
            d[p.blocks[c.owner]] = rng.normal(size=len(p.blocks[c.owner]))
            t = 1e-2
            assert c.fn(x + t * d) + c.fn(x - t * d) - 2 * c.fn(x) >= -1e-9


@pytest.mark.parametrize("name", list(NONLINEAR))
def test_default_method_solves_to_a_verified_gne(name):
    p = problem(name)
    model = p.model()
    assert model.data().concept == "GNE" and model.default_method == "gnep-kkt"
    r = model.solve(time_limit=60.0)
    assert r.termination.value == "optimal"
    x = np.asarray(r.solution["actions"], dtype=float)
    assert _feasible(p, x)
    assert r.objective <= 1e-6 * r.stats["payoff_scale"]
    regrets = p.scipy_regrets(x)
    assert regrets.sum() <= r.objective + 1e-9 * r.stats["payoff_scale"]      # the certificate bounds them
    assert np.all(regrets <= 1e-6)


@pytest.mark.parametrize("name", list(NONLINEAR))
def test_certificate_bounds_scipy_regrets_away_from_equilibrium(name):
    """At feasible points away from equilibrium (random ones, the GNE's powers scaled up: every rate grows),
    each player's certified bound is at least scipy's regret."""
    p = problem(name)
    model = p.model()
    data = model.data()
    rng = np.random.default_rng(5)
    tried = 0
    gne = np.asarray(model.solve().solution["actions"])
    for x in _points(p, 400, rng, width=1.0) + [1.5 * gne, 3.0 * gne]:
        if not _feasible(p, x):
            continue
        e = static_exploitability(data, x)
        regrets = p.scipy_regrets(x)
        assert np.all(regrets <= e.per_player + 1e-7 * (1.0 + np.abs(regrets)))
        assert e.lower <= e.value + 1e-12
        tried += 1
        if tried == 2:
            break
    assert tried


@pytest.mark.parametrize("stem", sorted(problem(n).file_stem for n in NONLINEAR))
def test_files_solve_optimal_from_the_cli(stem, capsys):
    path = FOLDER / f"{stem}.json"
    code = main(["solve", str(path), "--json", "--time-limit", "120"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["termination"] == "optimal" and result["method"] == "gnep-kkt"
    assert result["stats"]["equilibrium"] == "GNE"
    p = next(problem(n) for n in NONLINEAR if problem(n).file_stem == stem)
    x = np.asarray(result["solution"]["actions"], dtype=float)
    assert _feasible(p, x) and np.all(p.scipy_regrets(x) <= 1e-6)


def test_a6_published_point_is_not_a_gne_of_the_stated_problem():
    """What the notes say: player 1 gains by lowering x12 at the published point (scipy, not solvopt)."""
    p = problem("A.6")
    regrets = p.scipy_regrets(p.published)
    assert regrets[0] > 1.0 and "not a GNE" in p.notes


# --- the model -------------------------------------------------------------------------------------
def _disc_game():
    """x (2 goods) wants (2, 2) inside x1^2 + x2^2 + y <= 4; y wants 2. GNE: x = (1, 1), y = 2."""
    g = PseudoGame()
    x = g.player("x", 2, lb=0, ub=3)
    y = g.player("y", lb=0, ub=3)
    g.minimize(x, (x[0] - 2) * (x[0] - 2) + (x[1] - 2) * (x[1] - 2))
    g.minimize(y, (y - 2) * (y - 2))
    return g, x, y


def test_quadratic_dsl_constraint_of_one_player():
    g, x, y = _disc_game()
    g.constrain(x, x[0] * x[0] + x[1] * x[1] + y <= 4)
    d = g.data()
    assert d.concept == "GNE" and g.default_method == "gnep-kkt" and d.nonlinear[0].convexity == "proven"
    r = g.solve()
    assert r.termination == "optimal"
    np.testing.assert_allclose(r.solution["actions"], [1, 1, 2], atol=1e-8)


def test_callable_constraint_equals_the_quadratic_one():
    g, x, y = _disc_game()
    g.constrain_convex(x, lambda a: a[0] ** 2 + a[1] ** 2 + a[2] - 4, lambda a: np.array([2 * a[0], 2 * a[1], 1.0]))
    assert g.data().nonlinear[0].convexity == "vouched"
    r = g.solve()
    assert r.termination == "optimal"
    np.testing.assert_allclose(r.solution["actions"], [1, 1, 2], atol=1e-8)


def _shared_disc_game():
    """min (x - 2)^2 and min (y - 2)^2 on [-5, 5], sharing x^2 + y^2 <= 2: the GNEs are the arc, the VE (1, 1)."""
    g = PseudoGame()
    x = g.player("x", lb=-5, ub=5)
    y = g.player("y", lb=-5, ub=5)
    g.minimize(x, (x - 2) * (x - 2))
    g.minimize(y, (y - 2) * (y - 2))
    g.share(x * x + y * y <= 2)
    return g


def test_shared_jointly_convex_constraint_gives_the_variational_equilibrium():
    """min (x - 2)^2, min (y - 2)^2, shared x^2 + y^2 <= 2: the GNEs are the arc, the VE (one multiplier) (1, 1)."""
    g = _shared_disc_game()
    assert g.data().concept == "VE" and g.default_method == "gnep-kkt"
    r = g.solve(start=[0.3, -1.0])
    assert r.termination == "optimal" and "variational" in r.guarantee
    np.testing.assert_allclose(r.solution["actions"], [1, 1], atol=1e-8)


def test_variational_methods_refuse_nonlinear_constraints():
    g, x, y = _disc_game()
    g.constrain(x, x[0] * x[0] + y <= 4)
    for method in ("extragradient", "nested"):
        with pytest.raises(ModelError, match="gnep-kkt"):
            g.solve(method=method)


def test_nonconvex_and_equality_quadratic_constraints_are_refused():
    g, x, y = _disc_game()
    g.constrain(x, x[0] * x[0] - x[1] * x[1] <= 1)
    with pytest.raises(ModelError, match="not convex in the player's own action"):
        g.data()
    g, x, y = _disc_game()
    g.constrain(x, x[0] * y >= 1)           # bilinear, but affine in x's own action: accepted
    g.data()
    g, x, y = _disc_game()
    g.share(x[0] * y <= 1)                  # not jointly convex
    with pytest.raises(ModelError, match="jointly convex"):
        g.data()
    g, x, y = _disc_game()
    with pytest.raises(ModelError, match="quadratic equality"):
        g.constrain(x, x[0] * x[0] == 1)


def test_a_callable_that_is_not_convex_is_caught_by_the_certificate():
    """g = 1 - x^2 (concave) states the nonconvex set |x| >= 1: the tangent checks refuse it."""
    g = PseudoGame()
    x = g.player("x", lb=-2, ub=2)
    y = g.player("y", lb=0, ub=1)
    g.minimize(x, (x - 0.2) * (x - 0.2))
    g.minimize(y, y * y)
    g.constrain_convex(x, lambda a: 1.0 - a[0] ** 2, lambda a: np.array([-2 * a[0], 0.0]))
    with pytest.raises(ModelError, match="not convex"):
        g.solve(start=[1.5, 0.0])


def test_bad_callable_outputs_are_one_line_errors():
    g, x, y = _disc_game()
    g.constrain_convex(x, lambda a: [1.0, 2.0], lambda a: np.zeros(3))
    with pytest.raises(ModelError, match="must return one number"):
        g.solve()
    with pytest.raises(ModelError, match="two callables"):
        g.constrain_convex(x, 1.0, None)


# --- instance files ----------------------------------------------------------------------------------
def _tiny(constraint, key="nonlinear_constraints"):
    data = {"kind": "pseudo_game", "name": "tiny",
            "players": [{"name": "x", "size": 1, "lb": 0, "ub": 3, "cost": {"Q": [[2, 0], [0, 0]], "c": [-4, 0]}},
                        {"name": "y", "size": 1, "lb": 0, "ub": 3, "cost": {"Q": [[0, 0], [0, 2]], "c": [0, -4]}}]}
    if key == "nonlinear_constraints":
        data["players"][0][key] = [constraint]
    else:
        data[key] = [constraint]
    return data


def _write(tmp_path, data):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    return path


def test_json_nonlinear_constraint_solves(tmp_path, capsys):
    """x's own x^2 + y^2 / 4 <= 2 (GNE (1, 2): y is free), then x^2 + y^2 <= 2 shared (the VE (1, 1))."""
    def disc(w):
        square = [{"op": "pow", "args": [{"var": j}, 2]} for j in (0, 1)]
        return {"expression": {"op": "add", "args": [square[0], {"op": "mul", "args": [w, square[1]]}]},
                "sense": "<=", "rhs": 2}

    for key, w, expected in (("nonlinear_constraints", 0.25, [1, 2]), ("shared_nonlinear_constraints", 1.0, [1, 1])):
        path = _write(tmp_path, _tiny(disc(w), key))
        assert main(["solve", str(path), "--json"]) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert result["termination"] == "optimal"
        np.testing.assert_allclose(result["solution"]["actions"], expected, atol=1e-8)


@pytest.mark.parametrize("constraint, where, message", [
    ({"expression": {"op": "log", "args": [{"var": 0}]}, "sense": "<=", "rhs": 1},
     "players[0].nonlinear_constraints[0]", "not proven convex"),
    ({"expression": {"op": "pow", "args": [{"var": 7}, 2]}, "sense": "<="},
     "players[0].nonlinear_constraints[0].expression.args[0].var", "index into the joint action"),
    ({"expression": {"var": 0}, "sense": "=="}, "players[0].nonlinear_constraints[0].sense", ""),
    ({"expression": {"var": 0}, "sense": "<=", "extra": 1}, "players[0].nonlinear_constraints[0]", ""),
])
def test_json_errors_name_the_file_and_field(tmp_path, constraint, where, message):
    from solvopt.games.instance import model_from_instance
    from solvopt.io import read_instance
    path = _write(tmp_path, _tiny(constraint))
    with pytest.raises(InstanceFormatError) as err:
        model_from_instance(read_instance(str(path))).data()
    text = str(err.value)
    assert "tiny.json" in text and where in text and message in text and "\n" not in text


# --- small random convex GNEPs ---------------------------------------------------------------------
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 31 - 1))
def test_random_convex_gneps_are_solved_and_certified(seed):
    """Two players, two goods each in [0, 1], strongly convex quadratic costs coupled through the others, each
    with a disc constraint moved by the other's action (x_i = 0 always feasible); scipy checks the answer."""
    from solvopt.games.gnep_library import GNEP, Convex, _quadratic
    rng = np.random.default_rng(seed)
    n, blocks = 4, [np.arange(0, 2), np.arange(2, 4)]
    Qs, cs = [], []
    for cols in blocks:
        M = rng.normal(size=(2, 2))
        Q = np.zeros((n, n))
        Q[np.ix_(cols, cols)] = M @ M.T + np.eye(2)
        others = np.setdiff1d(np.arange(n), cols)
        B = 0.3 * rng.normal(size=(2, 2))
        Q[np.ix_(cols, others)] = B
        Q[np.ix_(others, cols)] = B.T
        Qs.append(Q)
        cs.append(np.where(np.isin(np.arange(n), cols), -rng.uniform(1, 4, n), 0.0))
    costs, grads, quad = _quadratic(Qs, cs)
    curved = []
    for i, cols in enumerate(blocks):
        w = rng.uniform(0, 0.3, n)
        w[cols] = 0.0
        r = 0.3 + rng.uniform(0, 0.5) + w.sum()
        curved.append(Convex(i, lambda x, cols=cols, w=w, r=r: float(x[cols] @ x[cols] + w @ x - r),
                             lambda x, cols=cols, w=w: 2 * x * np.isin(np.arange(n), cols) + w, {}))
    p = GNEP("random", "random", [2, 2], np.zeros(n), np.ones(n), [], costs, grads, None, quadratic=quad,
             nonlinear=curved, concept="GNE", unique=False)
    r = p.model().solve(time_limit=30.0)
    assert "actions" in r.solution
    x = np.asarray(r.solution["actions"])
    assert _feasible(p, x)
    regrets = p.scipy_regrets(x)
    assert regrets.sum() <= r.objective + 1e-8 * r.stats["payoff_scale"]
    if r.termination.value == "optimal":
        assert np.all(regrets <= 1e-6 * r.stats["payoff_scale"])
    else:
        assert r.termination.value in ("numerical_error", "time_limit")


@pytest.mark.parametrize("k", [-6, 0, 6])
def test_units_of_payoffs_and_actions_do_not_change_the_answer(k):
    """Costs times 10^k and actions in units 10^-k smaller (the constraint rewritten in them): same status,
    the GNE times 10^k, the exploitability times 10^k (the unit frame, constraints divided by their scale)."""
    f, s = 10.0 ** k, 10.0 ** -k                   # payoff factor; an action in the new units is a / s
    g = PseudoGame()
    x = g.player("x", 2, lb=0, ub=3 / s)
    y = g.player("y", lb=0, ub=3 / s)
    g.minimize(x, f * ((s * x[0] - 2) * (s * x[0] - 2) + (s * x[1] - 2) * (s * x[1] - 2)))
    g.minimize(y, f * (s * y - 2) * (s * y - 2))
    g.constrain(x, (s * x[0]) * (s * x[0]) + (s * x[1]) * (s * x[1]) + s * y <= 4)
    r = g.solve()
    assert r.termination == "optimal"
    np.testing.assert_allclose(np.asarray(r.solution["actions"]) * s, [1, 1, 2], rtol=1e-8)
    assert r.objective <= 1e-9 * r.stats["payoff_scale"]


@pytest.mark.parametrize("name", ["A.6", "A.9a"])
def test_iteration_limit_stops_with_an_honest_status(name):
    p = problem(name)
    r = p.model().solve(iteration_limit=2)
    assert r.termination.value in ("iteration_limit", "optimal")
    if "actions" in r.solution:                      # a certified point: feasible, its bound above scipy's regrets
        x = np.asarray(r.solution["actions"])
        assert _feasible(p, x)
        assert p.scipy_regrets(x).sum() <= r.objective + 1e-8 * r.stats["payoff_scale"]


# --- the VE gap with shared nonlinear constraints ------------------------------------------------------
def _shared_game(rng, bounded=True):
    """Two players, two goods each, u_i = c_i . x_i - x_i' H_i x / 2 (strongly concave in x_i, coupled through
    the others), a shared ellipse sum_j w_j (x_j - s_j)^2 <= r (jointly convex) and a shared row, the actions in
    [-3, 3] or free: (game, blocks, utilities and constraint as plain NumPy functions for scipy, row, bounds)."""
    n, blocks = 4, [np.arange(0, 2), np.arange(2, 4)]
    utils = []
    for cols in blocks:
        M = rng.normal(size=(2, 2))
        H = np.zeros((2, n))
        H[:, cols] = M @ M.T + np.eye(2)
        H[:, np.setdiff1d(np.arange(n), cols)] = 0.4 * rng.normal(size=(2, 2))
        c = rng.uniform(1.0, 4.0, 2)

        def value(x, H=H, c=c, cols=cols):
            return float(c @ x[cols] - 0.5 * x[cols] @ (H @ x))

        def gradient(x, H=H, c=c, cols=cols):
            out = -0.5 * H.T @ x[cols]
            out[cols] += c - 0.5 * H @ x
            return out
        utils.append((value, gradient))
    w, s, r = rng.uniform(0.5, 2.0, n), rng.uniform(-0.3, 0.3, n), rng.uniform(0.5, 1.5)
    g = (lambda x: float(w @ (x - s) ** 2 - r), lambda x: 2 * w * (x - s))
    row = rng.uniform(0.2, 1.0, n)
    game = PseudoGame()
    players = [game.player(f"p{i}", 2, **(dict(lb=-3, ub=3) if bounded else {})) for i in range(2)]
    for p, (f, df) in zip(players, utils):
        game.utility(p, f, df)
    game.share_convex(*g)
    game.share(sum(float(row[j]) * players[j // 2][j % 2] for j in range(n)) <= 1.0)
    return game, blocks, utils, g, row, ((-3.0, 3.0) if bounded else (None, None))


def _scipy_ve_gap(blocks, utils, g, row, box, a, starts):
    """max over b in K ∩ {g <= 0} of sum_i [u_i(b_i, a_-i) - u_i(a)] by SLSQP from several starts (the reference)."""
    from scipy.optimize import LinearConstraint, NonlinearConstraint, minimize

    def joint(b, cols):
        z = a.copy()
        z[cols] = b[cols]
        return z

    def value(b):
        return sum(f(joint(b, cols)) for (f, _), cols in zip(utils, blocks))

    def grad(b):
        out = np.zeros(b.size)
        for (_, df), cols in zip(utils, blocks):
            out[cols] = df(joint(b, cols))[cols]
        return out

    cons = [NonlinearConstraint(g[0], -np.inf, 0.0, jac=lambda b: np.atleast_2d(g[1](b))),
            LinearConstraint(row[None, :], -np.inf, 1.0)]
    lo, hi = box
    best = -np.inf
    for b0 in starts:
        res = minimize(lambda b: -value(b), b0, jac=lambda b: -grad(b), bounds=[box] * a.size, constraints=cons,
                       method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
        x = res.x
        inside = (lo is None or np.all(x >= lo)) and (hi is None or np.all(x <= hi))
        if g[0](x) <= 1e-9 and row @ x <= 1.0 + 1e-9 and inside:
            best = max(best, value(x))
    return best - value(a)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 31 - 1), st.booleans())
def test_ve_gap_with_a_shared_convex_constraint_matches_scipy(seed, bounded):
    """The certified VE gap bounds scipy's best joint deviation from above and is tight (the bound comes from
    Lagrangian cutting planes, also where the actions have no bounds), at random points in and out of K (the gap
    is clipped at 0 there, as everywhere)."""
    from solvopt.games.exploitability import ve_gap
    rng = np.random.default_rng(seed)
    game, blocks, utils, g, row, box = _shared_game(rng, bounded)
    data = game.data()
    assert data.concept == "VE"
    for _ in range(3):
        a = rng.uniform(-1.5, 1.5, 4)
        e = ve_gap(data, a)
        ref = max(0.0, _scipy_ve_gap(blocks, utils, g, row, box, a, [a, np.zeros(4), rng.uniform(-0.5, 0.5, 4)]))
        scale = 1.0 + abs(ref)
        assert e.lower <= e.value + 1e-12 * scale
        assert ref <= e.value + 1e-8 * scale
        assert e.value <= ref + 1e-6 * scale


def test_ve_gap_separates_the_variational_equilibrium_from_the_other_gnes():
    """Shared disc x^2 + y^2 <= 2, costs (x - 2)^2 and (y - 2)^2: on the arc every point is a GNE, the VE gap
    there is |a - (2, 2)|^2 - 2 (the joint deviation goes to (1, 1)), zero only at the VE (1, 1)."""
    from solvopt.games.exploitability import ve_gap
    g = _shared_disc_game()
    data = g.data()
    for t in (0.2, 0.5, np.pi / 4, 1.2):
        a = np.sqrt(2) * np.array([np.cos(t), np.sin(t)])
        assert static_exploitability(data, a).value <= 1e-9
        gap = ve_gap(data, a)
        assert abs(gap.value - (float((a - 2) @ (a - 2)) - 2.0)) <= 1e-9
        assert gap.lower <= gap.value


@pytest.mark.parametrize("bounded", [True, False])
def test_gnep_kkt_certifies_the_variational_equilibrium(bounded):
    """gnep-kkt on an all-shared game: stats say VE, the certified VE gap is within the tolerance, and scipy's
    best joint deviation at the answer gains nothing."""
    rng = np.random.default_rng(7)
    game, blocks, utils, g, row, box = _shared_game(rng, bounded)
    r = game.solve(time_limit=60.0)
    assert r.termination == "optimal" and r.stats["equilibrium"] == "VE"
    assert r.stats["ve_gap"] <= 1e-9 * r.stats["payoff_scale"]
    a = np.asarray(r.solution["actions"])
    ref = _scipy_ve_gap(blocks, utils, g, row, box, a, [a, np.zeros(4)])
    assert ref <= 1e-7 * r.stats["payoff_scale"]
