"""The library's economies with production A.10a-e, satiable quadratic consumers and their JSON files.

Every equilibrium is checked from outside: each consumer's, firm's and the price player's best
response at our point computed by scipy (SLSQP, HiGHS), never by solvopt's own demands.
"""
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize

from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl import ProductionEconomy
from solvopt.dsl.quadratic_utility import Quadratic, box_qp, budget_qp
from solvopt.games.production import production_exploitability, satiable_money_gains
from solvopt.games.production_library import PROBLEMS
from solvopt.games.production_reader import economy_to_json
from solvopt.io import read_instance

FOLDER = Path(__file__).resolve().parent.parent / "instances" / "games" / "production"


def consumer_utility(u, k):
    """Consumer k's utility and its gradient as plain functions (quadratic or shifted logarithm)."""
    if u.kind == "quadratic":
        Q, b = u.matrices[k], u.weights[k]
        return (lambda v: b @ v - 0.5 * v @ Q @ v), (lambda v: b - Q @ v)
    w, c = u.weights[k], u.shift[k]
    return (lambda v: np.sum(w * np.log(c + v))), (lambda v: w / (c + v))


def slsqp_max(f, grad, x0s, p, budget):
    """The best value of f over {x >= 0, p.x <= budget} SLSQP finds from the starts (feasible results only)."""
    m = len(p)
    best = -np.inf
    for x0 in x0s:
        res = minimize(lambda x: -f(x), x0, jac=lambda x: -grad(x), method="SLSQP", bounds=[(0, None)] * m,
                       constraints=[{"type": "ineq", "fun": lambda x: budget - p @ x, "jac": lambda x: -p}],
                       options={"ftol": 1e-15, "maxiter": 1000})
        if p @ res.x <= budget + 1e-9 and np.all(res.x >= -1e-9):
            best = max(best, f(res.x))
    return best


def random_pd(rng, m):
    A = rng.normal(size=(m, m))
    return A @ A.T + 0.2 * np.eye(m)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10 ** 6))
def test_quadratic_demand_matches_scipy(m, seed):
    rng = np.random.default_rng(seed)
    Q, b = random_pd(rng, m), rng.normal(size=m) * 5
    p = rng.random(m) * (rng.random(m) < 0.8)              # some goods free
    budget = float(rng.uniform(0, 4))
    x, lam = budget_qp(Q, b, p, budget)
    assert np.all(x >= 0) and p @ x <= budget * (1 + 1e-12) + 1e-15 and lam >= 0
    g = b - Q @ x - lam * p                                 # KKT: g <= 0, = 0 on the support, lam (B - p.x) = 0
    assert np.all(g <= 1e-9 * (1 + np.abs(b).max())) and np.all(np.abs(g[x > 0]) <= 1e-9 * (1 + np.abs(b).max()))
    assert lam * (budget - p @ x) <= 1e-9
    u = lambda v: b @ v - 0.5 * v @ Q @ v                  # noqa: E731
    ref = slsqp_max(u, lambda v: b - Q @ v, (np.zeros(m), x + 0.1, np.full(m, 0.5)), p, budget)
    assert u(x) >= ref - 1e-8 * (1 + abs(ref))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 10 ** 6))
def test_box_qp_is_the_lcp_solution(m, seed):
    rng = np.random.default_rng(seed)
    Q, c = random_pd(rng, m), rng.normal(size=m) * 3
    x = box_qp(Q, c)
    w = Q @ x - c
    assert np.all(x >= 0) and np.all(w >= -1e-10) and abs(x @ w) <= 1e-10


def test_quadratic_utility_refuses_bad_input():
    with pytest.raises(ModelError, match="positive definite"):
        Quadratic([[[1.0, 2.0], [2.0, 1.0]]], [[1.0, 1.0]])
    with pytest.raises(ModelError, match="symmetric"):
        Quadratic([[[1.0, 0.5], [0.0, 1.0]]], [[1.0, 1.0]])
    with pytest.raises(ModelError, match="shape|takes"):
        Quadratic(np.eye(2), [[1.0, 1.0]])
    with pytest.raises(ModelError, match="NaN"):
        Quadratic([[[1.0, 0.0], [0.0, np.nan]]], [[1.0, 1.0]])
    with pytest.raises(ModelError, match="prices"):
        Quadratic([np.eye(2)], [[1.0, 1.0]]).demand([-1.0, 1.0], [1.0])


def scipy_check(econ, x, y, p, tol):
    """Every player's best response computed by scipy gains at most ``tol`` (relative) over its own payoff."""
    budgets = econ.budgets(p, y)
    u = econ.utility
    n, F, m = econ.shape
    for k in range(n):
        assert p @ x[k] <= budgets[k] * (1 + 1e-12) + 1e-12
        f, g = consumer_utility(u, k)
        starts = (x[k], np.full(m, budgets[k] / max(p.sum(), 1e-9) / m), np.zeros(m))
        best = slsqp_max(f, g, starts, p, budgets[k])
        assert best <= f(x[k]) + tol * (1 + abs(f(x[k])))
    for f_, r in enumerate(econ.radii):
        res = minimize(lambda v: -p @ v, np.full(m, 0.1), jac=lambda v: -p, method="SLSQP", bounds=[(0, None)] * m,
                       constraints=[{"type": "ineq", "fun": lambda v, r=r: r * r - v @ v, "jac": lambda v: -2 * v}],
                       options={"ftol": 1e-15})
        assert -res.fun <= p @ y[f_] + tol
        assert np.linalg.norm(y[f_]) <= r * (1 + 1e-12) and np.all(y[f_] >= 0)
    z = x.sum(0) - y.sum(0) - econ.endowments.sum(0)
    lp = linprog(-z, A_eq=np.ones((1, m)), b_eq=[1.0], bounds=[(0, None)] * m, method="highs")
    assert -lp.fun <= p @ z + tol * (1 + np.abs(z).max())


@pytest.mark.parametrize("name", ["A.10a", "A.10b", "A.10c", "A.10d", "A.10e"])
def test_library_economies_certified_and_checked_by_scipy(name):
    econ = PROBLEMS[name]()
    result = econ.solve()
    assert result.termination.value == "optimal" and result.objective <= 1e-9
    x, y, p = (result.solution[k] for k in ("allocation", "production", "prices"))
    e = production_exploitability(econ, x, y, p)
    assert e.certified and e.value == pytest.approx(result.objective, abs=1e-15) and e.violation <= 1e-12
    scipy_check(econ, x, y, p, 1e-8)
    z = x.sum(0) - y.sum(0) - econ.endowments.sum(0)
    # the unpaid profit plus the money satiated consumers leave unspent: the priced goods' common excess supply
    idle = float((y @ p).sum() + (econ.budgets(p, y) - x @ p).sum())
    priced = p > 0
    assert np.allclose(z[priced], -idle, atol=1e-8 * (1 + idle))
    assert np.all(z[~priced] <= -idle + 1e-9)


def test_a10c_has_a_free_good_and_satiated_consumers():
    econ = PROBLEMS["A.10c"]()
    assert econ.shape == (30, 6, 6)
    p = econ.solve().solution["prices"]
    assert p[0] == 0.0 and np.all(p[1:] > 0.05)
    _, lam = econ.utility.demand_multipliers(p, econ.budgets(p, econ.supply(p)))
    assert np.sum(lam == 0) >= 5 and np.sum(lam > 0) >= 5


def scipy_expenditure(Q, b, p, level):
    """min p.x over {x >= 0, b.x - 0.5 x'Qx >= level} by SLSQP (from the bliss point and a scaled one)."""
    m = len(b)
    bliss = box_qp(Q, b)
    best = np.inf
    for x0 in (bliss, 0.9 * bliss, bliss + 0.1):
        res = minimize(lambda v: p @ v, x0, jac=lambda v: p, method="SLSQP", bounds=[(0, None)] * m,
                       constraints=[{"type": "ineq", "fun": lambda v: b @ v - 0.5 * v @ Q @ v - level,
                                     "jac": lambda v: b - Q @ v}], options={"ftol": 1e-15, "maxiter": 1000})
        if b @ res.x - 0.5 * res.x @ Q @ res.x >= level - 1e-9 and np.all(res.x >= -1e-9):
            best = min(best, res.fun)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_satiable_money_gain_bounds_the_expenditure_difference(seed):
    """Our money bound >= e(p, V) - e(p, u(x)) computed by scipy, for satiated and budget-bound consumers
    alike, and 0 at the best response."""
    rng = np.random.default_rng(seed)
    m = 3
    Q = random_pd(rng, m)
    b = rng.uniform(1, 4, m)
    p = rng.dirichlet(np.ones(m))
    bliss = box_qp(Q, b)
    budget = float(p @ bliss) * (1.5 if seed % 2 else 0.5)   # satiated / budget binds
    u = Quadratic(Q[None], b[None])
    best, lam = u.demand_multipliers(p, [budget])
    assert (lam[0] == 0) == bool(seed % 2)
    assert satiable_money_gains(u, best, p, np.array([budget]))[0] == 0.0
    x = np.maximum(best[0] * rng.uniform(0.6, 1.0, m), 0)
    bound = satiable_money_gains(u, x[None], p, np.array([budget]))[0]
    value = lambda v: b @ v - 0.5 * v @ Q @ v                # noqa: E731
    truth = scipy_expenditure(Q, b, p, value(best[0])) - scipy_expenditure(Q, b, p, value(x))
    assert bound >= truth - 1e-7 and bound > 0
    assert bound <= 10 * truth + 1e-6                       # not a vacuous bound


def test_exploitability_sees_deviations_of_satiable_consumers():
    econ = PROBLEMS["A.10c"]()
    x, y, p = (econ.solve().solution[k] for k in ("allocation", "production", "prices"))
    per = production_exploitability(econ, 0.98 * x, y, p).per_player[:30]
    assert np.all(per > 0)


def test_instance_files_are_the_factories_and_the_cli_solves_them(capsys):
    from solvopt.cli import main
    for name, make in PROBLEMS.items():
        path = FOLDER / f"fk_{name.replace('.', '').lower()}.json"
        data = json.loads(path.read_text())
        assert data["kind"] == "production_economy"
        econ = make()
        assert {k: v for k, v in economy_to_json(econ, data["name"]).items() if k not in ("description",)} == \
            {k: v for k, v in data.items() if k not in ("description", "reference")}
        inst = read_instance(str(path))
        assert inst.format == "production_json" and inst.family == "games"
    code = main(["solve", str(FOLDER / "fk_a10a.json"), "--json"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and out["termination"] == "optimal" and out["method"] == "production-root"
    assert out["stats"]["equilibrium"] == "GNE"     # budgets move with the prices: a GNE of the pseudo-game


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["utility"]["Q"][1][0].__setitem__(0, float("nan")), "field utility.Q[1][0][0]: NaN"),
    (lambda d: d.__setitem__("radii", "three"), "field radii"),
    (lambda d: d["utility"].__setitem__("Q", [[[1.0, 2.0, 0], [2.0, 1.0, 0], [0, 0, 1]]] * 5),
     "not positive definite"),
    (lambda d: d.__setitem__("endowments", [[1.0, 2.0]]), "endowments must have shape"),
    (lambda d: d.__setitem__("extra", 1), "Additional properties"),
])
def test_bad_files_are_one_line_naming_the_file_and_field(tmp_path, edit, message):
    data = json.loads((FOLDER / "fk_a10a.json").read_text())
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    from solvopt.core.family import get_family
    with pytest.raises(InstanceFormatError) as info:
        get_family("games").build_model(read_instance(str(path)))
    text = str(info.value)
    assert "bad.json" in text and message in text and "\n" not in text


def test_quadratic_economy_status_does_not_depend_on_units():
    """Goods in other units (endowments, radii times s; Q / s^2, b / s for the same preferences) and
    utilities times a factor: same status, prices and allocations scaled."""
    base = PROBLEMS["A.10a"]()
    r0 = base.solve()
    s, k = 1e3, 1e-4
    u = base.utility
    scaled = ProductionEconomy(Quadratic(k * u.matrices / s ** 2, k * u.weights / s), base.endowments * s,
                               base.radii * s)
    r1 = scaled.solve()
    assert r1.termination == r0.termination
    assert np.allclose(r1.solution["prices"], r0.solution["prices"], rtol=1e-8)
    assert np.allclose(r1.solution["allocation"], s * r0.solution["allocation"], rtol=1e-8)


def test_time_limit_returns_a_certified_point():
    result = PROBLEMS["A.10c"]().solve(time_limit=0.05)
    assert result.termination.value in ("time_limit", "optimal")
    assert result.solution["prices"].shape == (6,) and result.objective is not None
    assert result.stats["equilibrium"] == "GNE"
    early = PROBLEMS["A.10c"]().solve(time_limit=1e-9)      # stopped before the first certificate, or at it
    assert early.termination.value in ("time_limit", "optimal") and early.stats["equilibrium"] == "GNE"
