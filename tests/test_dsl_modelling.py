"""Modelling friction (issue 9): NumPy's matmul rules, NumPy functions, constraints by name, the Pyomo
round trip, no negative zeros. References: NumPy on the same numbers, linprog, HiGHS through Pyomo."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from solvopt.core import ModelError, Termination
from solvopt.dsl import Model


def _point(m, seed=0):
    return np.random.default_rng(seed).normal(size=m.num_vars)


def test_matmul_follows_numpy_for_vectors_and_matrices():
    m = Model()
    Y = m.add_var(shape=(3, 4), lb=-5, name="Y")
    z = m.add_var(shape=4, lb=-5, name="z")
    full = _point(m)
    Yv, zv = full[:12].reshape(3, 4), full[12:]
    w3, w4 = np.array([1.0, -2.0, 0.5]), np.arange(1.0, 5.0)
    M = np.random.default_rng(1).normal(size=(4, 2))
    L = np.random.default_rng(2).normal(size=(5, 3))
    cases = {
        "w @ Y": (w3 @ Y, w3 @ Yv),
        "Y.T @ w": (Y.T @ w3, Yv.T @ w3),
        "Y @ v": (Y @ w4, Yv @ w4),
        "w[None] @ Y": (w3[None] @ Y, w3[None] @ Yv),
        "Y @ M": (Y @ M, Yv @ M),
        "L @ Y": (L @ Y, L @ Yv),
        "Y.T @ L.T": (Y.T @ L.T, Yv.T @ L.T),
        "list @ z": ([1.0, 2.0, 3.0, 4.0] @ z, w4 @ zv),
        "z @ M": (z @ M, zv @ M),
    }
    for name, (expr, expected) in cases.items():
        assert expr.shape == np.shape(expected), name
        np.testing.assert_allclose(expr.evaluate(full), expected, atol=1e-12, err_msg=name)


def test_matmul_shape_errors_name_the_shapes():
    m = Model()
    Y = m.add_var(shape=(3, 4), name="Y")
    with pytest.raises(ModelError, match=r"\(4,\).*\(3, 4\)|\(3, 4\).*\(4,\)"):
        np.ones(4) @ Y
    with pytest.raises(ModelError, match="matmul"):
        Y @ np.ones(3)
    with pytest.raises(ModelError, match="dimension"):
        2.0 @ Y


def test_weighted_columns_constraint_solves_like_linprog():
    # max sum(Y) s.t. w @ Y <= cap (one row per column of Y), 0 <= Y <= 1
    w = np.array([1.0, 2.0, 3.0])
    cap = np.array([2.0, 3.5, 1.0, 6.0])
    m = Model()
    Y = m.add_var(shape=(3, 4), lb=0, ub=1, name="Y")
    m.add(w @ Y <= cap, name="cap")
    m.maximize(Y.sum())
    r = m.solve()
    A = np.kron(w, np.eye(4))       # row j: sum_i w_i Y[i, j]
    ref = linprog(-np.ones(12), A_ub=A, b_ub=cap, bounds=(0, 1), method="highs")
    assert r.objective == pytest.approx(-ref.fun)
    assert np.all(w @ Y.value <= cap + 1e-9)


def test_numpy_functions_on_expressions():
    m = Model()
    x = m.add_var(shape=(2, 3), lb=-1, name="x")
    full = _point(m, 3)
    xv = full.reshape(2, 3)
    c = np.array([1.0, -1.0, 2.0])
    cases = {
        "np.sum": (np.sum(x), np.sum(xv)),
        "np.sum axis": (np.sum(x, axis=0), np.sum(xv, axis=0)),
        "np.dot vector": (np.dot(x, c), np.dot(xv, c)),
        "np.dot(c, x[0])": (np.dot(c, x[0]), np.dot(c, xv[0])),
        "np.transpose": (np.transpose(x), xv.T),
        "np.reshape": (np.reshape(x, (3, 2)), xv.reshape(3, 2)),
        "np.ravel": (np.ravel(x), xv.ravel()),
    }
    for name, (expr, expected) in cases.items():
        np.testing.assert_allclose(expr.evaluate(full), expected, atol=1e-12, err_msg=name)
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6


def test_unsupported_numpy_functions_say_what_to_use():
    m = Model()
    x = m.add_var(shape=3, name="x")
    with pytest.raises(ModelError, match=r"numpy\.mean.*\.sum"):
        np.mean(x)
    with pytest.raises(ModelError, match="only `axis`"):
        np.sum(x, keepdims=True)
    q = x ** 2
    assert np.sum(q).shape == ()
    with pytest.raises(ModelError, match=r"\.sum"):
        np.ones(3) @ q
    with pytest.raises(ModelError, match="linear expression"):
        np.transpose(q)


def test_constraints_and_variables_by_name():
    m = Model()
    x = m.add_var(shape=(2, 3), lb=0, name="x")
    supply = m.add(x.sum(axis=1) <= np.array([3.0, 4.0]), name="supply")
    demand = m.add(x.sum(axis=0) >= np.array([1.0, 2.0, 3.0]), name="demand")
    unnamed = m.add(x[0, 0] <= 10)
    m.minimize((np.arange(6.0).reshape(2, 3) * x).sum())
    assert m.constraints["supply"] is supply and m.constraints["demand"] is demand
    assert m.constraints[2] is unnamed and m.constraints[unnamed.name] is unnamed
    assert "supply" in m.constraints and m.constraints.names() == ["supply", "demand", unnamed.name]
    assert m.vars["x"] is x
    with pytest.raises(ModelError, match="no constraint named 'supplies'.*'supply'"):
        m.constraints["supplies"]
    with pytest.raises(ModelError, match="already exists"):
        m.add(x.sum() <= 100, name="supply")
    m.solve()
    assert m.constraints["demand"].dual.shape == (3,)


def test_automatic_names_do_not_collide_with_given_ones():
    m = Model()
    x = m.add_var(shape=2, name="x")
    m.add(x[0] <= 1, name="c1")
    second = m.add(x[1] <= 1)
    assert second.name != "c1"
    assert len(set(m.constraints.names())) == 2


def test_no_negative_zero_in_values_duals_and_objective():
    # HiGHS returns -0.0 in duals of non-binding rows and in values of variables at 0 with a
    # negative cost direction; the DSL reports +0.0
    m = Model()
    x = m.add_var(shape=2, lb=-3, ub=3, name="x")
    m.add(x[0] - x[1] <= 1, name="loose")
    m.add(x.sum() == 0, name="tie")
    m.minimize(0 * x.sum())
    r = m.solve()
    arrays = [x.value, m.constraints["loose"].dual, m.constraints["tie"].dual, r.solution["reduced_cost"],
              r.solution["row_dual"]]
    for a in arrays:
        assert not np.any(np.signbit(a) & (a == 0)), a
    assert not math.copysign(1.0, r.objective) < 0


# --- the Pyomo round trip ---------------------------------------------------------------------------
def _appsi_highs():
    pyo = pytest.importorskip("pyomo.environ")
    opt = pyo.SolverFactory("appsi_highs")
    if not opt.available(exception_flag=False):
        pytest.skip("Pyomo's appsi HiGHS interface is not available")
    return pyo, opt


def _transport():
    m = Model("transport")
    x = m.add_var(shape=(2, 3), lb=0, name="x")
    m.add(x.sum(axis=1) <= np.array([5.0, 6.0]), name="supply")
    m.add(x.sum(axis=0) >= np.array([2.0, 3.0, 4.0]), name="name")      # a name Pyomo reserves
    m.add(x[0, 0] + x[1, 2] >= 1.0, name="objective")                    # clashes with the objective's default
    m.minimize((np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 2.5]]) * x).sum())
    return m, x


def test_pyomo_export_keeps_shapes_and_reserved_names():
    pyo = pytest.importorskip("pyomo.environ")
    m, x = _transport()
    pm = m.to_pyomo()
    supply = getattr(pm, pm.solvopt_names[("constraint", "supply")])
    name = getattr(pm, pm.solvopt_names[("constraint", "name")])
    assert pm.solvopt_names[("constraint", "name")] == "name_"
    assert pm.name == "transport"
    assert sorted(supply.keys()) == [0, 1] and sorted(name.keys()) == [0, 1, 2]
    assert sorted(pm.x.keys()) == [(i, j) for i in range(2) for j in range(3)]
    # the body of supply[1] is exactly the second row of x
    assert {str(v) for v in pyo.expr.identify_variables(supply[1].body)} == {"x[1,0]", "x[1,1]", "x[1,2]"}
    objectives = list(pm.component_objects(pyo.Objective))
    assert len(objectives) == 1


def test_pyomo_solution_loads_back_into_the_model():
    pyo, opt = _appsi_highs()
    m, x = _transport()
    ref = m.solve()
    ref_x, ref_duals = x.value.copy(), {c.name: c.dual.copy() for c in m.constraints}
    m2, x2 = _transport()
    pm = m2.to_pyomo()
    pm.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    res = opt.solve(pm)
    assert res.solver.termination_condition == pyo.TerminationCondition.optimal
    assert x2.value is None
    m2.load_pyomo_solution(pm)
    np.testing.assert_allclose(x2.value, ref_x, atol=1e-7)
    assert float((np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 2.5]]) * x2.value).sum()) == pytest.approx(ref.objective)
    for con in m2.constraints:
        np.testing.assert_allclose(con.dual, ref_duals[con.name], atol=1e-7, err_msg=con.name)
    assert ref.termination is Termination.OPTIMAL


def test_loading_an_unsolved_or_foreign_pyomo_model_is_an_error():
    pyo = pytest.importorskip("pyomo.environ")
    m, x = _transport()
    with pytest.raises(ModelError, match="no values"):
        m.load_pyomo_solution(m.to_pyomo())
    with pytest.raises(ModelError, match="to_pyomo"):
        m.load_pyomo_solution(pyo.ConcreteModel())


# --- the vectorised internals against NumPy on random shapes ------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_sums_gathers_and_products_match_numpy_on_random_shapes(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng.integers(1, 5, size=3))
    m = Model()
    x = m.add_var(shape=shape, lb=-3, name="x")
    y = m.add_var(shape=shape[1:], lb=-3, name="y")
    full = rng.normal(size=m.num_vars)
    xv, yv = full[:x.size].reshape(shape), full[x.size:].reshape(shape[1:])
    # terms met twice in one row (x + 2x), permuted rows (transpose), mixed variables (+ y)
    e = x + 2 * x.transpose(0, 1, 2) - y + 1.5
    ev = 3 * xv - yv + 1.5
    for axis in (None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2)):
        np.testing.assert_allclose(e.sum(axis=axis).evaluate(full), ev.sum(axis=axis), atol=1e-12,
                                   err_msg=str(axis))
    t = e.transpose(2, 0, 1)
    np.testing.assert_allclose(t.evaluate(full), ev.transpose(2, 0, 1), atol=1e-12)
    np.testing.assert_allclose(t[..., ::-1].sum(axis=1).evaluate(full), ev.transpose(2, 0, 1)[..., ::-1].sum(axis=1),
                               atol=1e-12)
    M = rng.normal(size=(3, shape[2]))
    flat = e[0]                                       # 2-D (shape[1], shape[2])
    np.testing.assert_allclose((M @ flat.T).evaluate(full), M @ ev[0].T, atol=1e-12)
    np.testing.assert_allclose((flat @ M.T).evaluate(full), ev[0] @ M.T, atol=1e-12)
    # compiling the same expressions as constraints: A x + const reproduces them row by row
    m.add(e.sum(axis=1) <= 5, name="s1")
    m.add(M @ x[0, 0] + x[0, 0][::-1] @ M.T @ np.ones(3) >= -5, name="mm")
    sf = m.compile()
    rows = sf.A @ full
    body = np.concatenate([c.body.evaluate(full).ravel() for c in m.constraints])
    const = np.concatenate([c.body.const for c in m.constraints])
    np.testing.assert_allclose(rows + const, body, atol=1e-10)
    assert sf.A.has_canonical_format
