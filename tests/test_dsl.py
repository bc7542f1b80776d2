"""The algebraic DSL against independent references: linprog, brute force, closed forms, SCIP/Gurobi."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from solvopt.core import ModelError, Termination
from solvopt.core.registry import Availability, get_solver
from solvopt.dsl import Model, Param, QuadExpr


def _needs(method):
    if get_solver("lp", method).available() is not Availability.AVAILABLE:
        pytest.skip(f"{method} is not installed")


# --- expressions evaluate like the NumPy arrays they describe ---------------------------------
def test_expression_algebra_matches_numpy():
    rng = np.random.default_rng(0)
    m = Model()
    x = m.add_var(shape=(3, 4), lb=-5, name="x")
    y = m.add_var(shape=4, name="y")
    xv, yv = rng.normal(size=(3, 4)), rng.normal(size=4)
    full = np.concatenate([xv.ravel(), yv])
    A = rng.normal(size=(2, 3))
    cases = {
        "broadcast add": (x + y, xv + yv),
        "scale and shift": (2.5 * x - 1 + y / 2, 2.5 * xv - 1 + yv / 2),
        "array product": (x * np.arange(4.0), xv * np.arange(4.0)),
        "matmul 2-D": (A @ x, A @ xv),
        "matmul 1-D": (A[0] @ x[:, 1], A[0] @ xv[:, 1]),
        "expr @ matrix": (x[:, 0] @ A.T, xv[:, 0] @ A.T),
        "sparse matmul": (sp.csr_matrix(A) @ x[:, 2], A @ xv[:, 2]),
        "sum axis 0": (x.sum(axis=0), xv.sum(axis=0)),
        "sum axis 1": (x.sum(axis=1), xv.sum(axis=1)),
        "sum all": (x.sum(), xv.sum()),
        "fancy index": (x[[0, 2], 1:3], xv[[0, 2], 1:3]),
        "transpose": (x.T - y[:, None], xv.T - yv[:, None]),
        "reversed ops": (np.ones((3, 4)) - x, 1 - xv),
        "reshape": (x.reshape(4, 3), xv.reshape(4, 3)),
    }
    for name, (expr, expected) in cases.items():
        np.testing.assert_allclose(expr.evaluate(full), expected, err_msg=name, atol=1e-12)


def test_quadratic_expressions_match_numpy():
    rng = np.random.default_rng(1)
    m = Model()
    x = m.add_var(shape=(2, 3), name="x")
    y = m.add_var(shape=3, name="y")
    xv, yv = rng.normal(size=(2, 3)), rng.normal(size=3)
    full = np.concatenate([xv.ravel(), yv])
    A = rng.normal(size=(2, 2))
    cases = {
        "square": (x ** 2, xv ** 2),
        "product broadcast": (x * (y + 1), xv * (yv + 1)),
        "affine square sum": (((A @ x[:, 0] - 3) ** 2).sum(), ((A @ xv[:, 0] - 3) ** 2).sum()),
        "sum axis": ((x * x).sum(axis=1) + 2 * x.sum(axis=1), (xv * xv).sum(axis=1) + 2 * xv.sum(axis=1)),
        "quad plus quad": ((x ** 2) * 3 - x * y, 3 * xv ** 2 - xv * yv),
        "broadcast quad": (y ** 2 + x, yv ** 2 + xv),
    }
    for name, (expr, expected) in cases.items():
        assert isinstance(expr, QuadExpr), name
        np.testing.assert_allclose(expr.evaluate(full), expected, err_msg=name, atol=1e-12)


def test_objective_hessian_is_symmetric_and_halved():
    m = Model()
    x = m.add_var(shape=2, lb=-10, name="x")
    m.minimize(x[0] * x[1] + 3 * x[0] ** 2)
    sf = m.compile()
    v = np.array([1.5, -2.0])
    assert sf.objective_value(v) == pytest.approx(1.5 * -2.0 + 3 * 1.5 ** 2)
    assert (sf.Q != sf.Q.T).nnz == 0


# --- solves against independent references ------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_random_lp_matches_linprog(seed):
    rng = np.random.default_rng(seed)
    n, k = 6, 4
    A = rng.uniform(0, 1, size=(k, n))
    b = rng.uniform(1, 5, size=k)
    c = -rng.uniform(0.1, 1, size=n)
    ub = rng.uniform(1, 3, size=n)
    m = Model()
    x = m.add_var(shape=n, lb=0, ub=ub, name="x")
    cons = m.add(A @ x <= b)
    m.minimize(c @ x)
    r = m.solve()
    ref = linprog(c, A_ub=A, b_ub=b, bounds=list(zip([0] * n, ub)), method="highs")
    assert r.termination is Termination.OPTIMAL
    assert r.objective == pytest.approx(ref.fun, abs=1e-7)
    assert np.all(A @ x.value <= b + 1e-7)
    # LP duality: the duals price the objective
    assert cons.dual is not None and cons.dual.shape == (k,)
    np.testing.assert_allclose(cons.dual, ref.ineqlin.marginals, atol=1e-6)


def test_knapsack_milp_matches_brute_force():
    rng = np.random.default_rng(7)
    w, v = rng.integers(1, 10, size=10).astype(float), rng.integers(1, 20, size=10).astype(float)
    cap = 0.4 * w.sum()
    best = max(np.dot(v, s) for s in itertools.product([0, 1], repeat=10) if np.dot(w, s) <= cap)
    m = Model()
    y = m.add_var(shape=10, vtype="binary", name="y")
    m.add(w @ y <= cap)
    m.maximize(v @ y)
    r = m.solve()
    assert r.termination is Termination.OPTIMAL and r.objective == pytest.approx(best)
    assert r.bound == pytest.approx(best) and r.gap == pytest.approx(0, abs=1e-9)
    assert np.dot(w, np.round(y.value)) <= cap and r.solution["y"].shape == (10,)


def test_integer_variables_and_equalities():
    m = Model()
    z = m.add_var(shape=2, vtype="integer", lb=0, ub=10, name="z")
    m.add(3 * z[0] + 5 * z[1] == 17)
    m.minimize(z.sum())
    r = m.solve()
    # 3a + 5b = 17 over non-negative integers: (4, 1) is the only solution
    assert r.termination is Termination.OPTIMAL and np.allclose(z.value, [4, 1])


def test_infeasible_and_unbounded_terminations():
    m = Model()
    x = m.add_var(shape=2, lb=0, name="x")
    m.add(x.sum() >= 5)
    m.add(x.sum() <= 3)
    m.minimize(x.sum())
    r = m.solve()
    assert r.termination is Termination.INFEASIBLE and not r.ok
    m = Model()
    x = m.add_var(shape=2, lb=0, name="x")
    m.add(x[0] - x[1] <= 1)
    m.maximize(x.sum())
    r = m.solve()
    assert r.termination is Termination.UNBOUNDED


def test_convex_qp_matches_closed_form():
    # min ||x - t||^2 subject to sum(x) == 1: projection onto the hyperplane
    t = np.array([0.3, 1.2, -0.4, 2.0])
    m = Model()
    x = m.add_var(shape=4, lb=-10, name="x")
    m.add(x.sum() == 1)
    m.minimize(((x - t) ** 2).sum())
    r = m.solve()
    proj = t - (t.sum() - 1) / 4
    assert r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(x.value, proj, atol=1e-6)
    assert r.objective == pytest.approx(((proj - t) ** 2).sum(), abs=1e-7)


@pytest.mark.parametrize("method", ["scip", "gurobi"])
def test_nonconvex_quadratic_constraint_matches_hand_optimum(method):
    """min (x-0.2)^2 + (y-0.1)^2 with x^2 + y^2 >= 1 in a box: the unit circle's nearest point."""
    _needs(method)
    m = Model()
    z = m.add_var(shape=2, lb=-2, ub=2, name="z")
    m.add((z ** 2).sum() >= 1)
    target = np.array([0.2, 0.1])
    m.minimize(((z - target) ** 2).sum())
    r = m.solve(method=method, rel_gap=1e-8)
    expected = (1 - np.linalg.norm(target)) ** 2
    assert r.termination is Termination.OPTIMAL
    assert r.objective == pytest.approx(expected, rel=1e-4, abs=1e-7)
    np.testing.assert_allclose(z.value, target / np.linalg.norm(target), atol=2e-3)


@pytest.mark.parametrize("method", ["scip", "gurobi"])
def test_other_backends_agree_with_highs_on_milp(method):
    _needs(method)
    rng = np.random.default_rng(3)
    A = rng.integers(1, 6, size=(3, 6)).astype(float)
    m = Model()
    x = m.add_var(shape=6, vtype="integer", lb=0, ub=4, name="x")
    m.add(A @ x <= 12)
    m.add(x[0] + x[1] >= 1)
    m.maximize(np.arange(1.0, 7.0) @ x)
    ref = m.solve()
    r = m.solve(method=method)
    assert r.termination is Termination.OPTIMAL and r.objective == pytest.approx(ref.objective)


def test_highs_refuses_quadratic_constraints_with_a_pointer():
    m = Model()
    z = m.add_var(shape=2, lb=-1, ub=1, name="z")
    m.add((z ** 2).sum() >= 1)
    m.minimize(z.sum())
    with pytest.raises(ModelError, match="scip"):
        m.solve()


def test_pyomo_export_solves_to_the_same_optimum():
    pyo = pytest.importorskip("pyomo.environ")
    from pyomo.contrib.appsi.solvers import Highs as AppsiHighs
    if not AppsiHighs().available():
        pytest.skip("Pyomo's appsi HiGHS interface is not available")
    rng = np.random.default_rng(5)
    A = rng.uniform(0, 1, size=(3, 4))
    m = Model("export")
    x = m.add_var(shape=(2, 2), lb=0, ub=3, name="x")
    b = m.add_var(shape=2, vtype="binary", name="b")
    m.add(A @ x.ravel() <= 2)
    m.add(x.sum(axis=1) <= 3 * b)
    m.maximize(x.sum() - 0.5 * b.sum())
    ours = m.solve()
    pm = m.to_pyomo()
    assert hasattr(pm, "x") and hasattr(pm, "b")
    AppsiHighs().solve(pm)
    assert pyo.value(pm.objective) == pytest.approx(ours.objective, abs=1e-7)


# --- validation ----------------------------------------------------------------------------
def test_bad_models_raise_model_error():
    m = Model()
    x = m.add_var(shape=3, name="x")
    with pytest.raises(ModelError, match="finite"):
        m.add(x <= np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ModelError, match="broadcast"):
        m.add(x <= np.ones(4))
    with pytest.raises(ModelError, match="scalar"):
        m.minimize(x)
    with pytest.raises(ModelError, match="already exists"):
        m.add_var(shape=2, name="x")
    with pytest.raises(ModelError, match="lower bound above"):
        m.add_var(shape=2, lb=3, ub=1, name="bad")
    with pytest.raises(ModelError, match="vtype"):
        m.add_var(vtype="real", name="r")
    with pytest.raises(ModelError, match="degree"):
        (x * x) * x
    with pytest.raises(ModelError, match="different models"):
        m.add(Model().add_var(shape=3, name="x") <= x)
    with pytest.raises(TypeError, match="truth value"):
        bool(x[0] <= 1)
    with pytest.raises(ModelError, match="unknown option"):
        m.minimize(x.sum())
        m.solve(tim_limit=3)


def test_python_lists_are_constants_and_enums_print_plainly():
    m = Model()
    x = m.add_var(shape=3, lb=0, name="x")
    m.add(np.array([[1, 1, 1], [2, 1, 0]]) @ x <= [10, 8])
    m.add([0.5, 0, 0] <= x)
    m.maximize(x @ np.array([3.0, 2.0, 4.0]))
    r = m.solve()
    assert str(r.termination) == "optimal" and str(r.solution_status) == "optimal"
    np.testing.assert_allclose(x.value, [0.5, 0, 9.5], atol=1e-9)


def test_param_is_a_named_constant():
    p = Param([1.0, 2.0, 3.0], name="price")
    assert p.name == "price" and (p * 2).sum() == 12
    m = Model()
    x = m.add_var(shape=3, lb=0, ub=1, name="x")
    m.maximize(p @ x)
    assert m.solve().objective == pytest.approx(6.0)
    with pytest.raises(ModelError, match="finite"):
        Param([1.0, math.inf], name="bad")


def test_large_vectorised_build_is_compact():
    """10^5 variables, a transportation structure: the compiled matrix has exactly the expected nonzeros."""
    n1, n2 = 200, 500
    m = Model()
    x = m.add_var(shape=(n1, n2), lb=0, name="x")
    m.add(x.sum(axis=1) <= 5.0)
    m.add(x.sum(axis=0) >= 1.0)
    m.minimize((np.random.default_rng(0).uniform(size=(n1, n2)) * x).sum())
    sf = m.compile()
    assert sf.A.shape == (n1 + n2, n1 * n2) and sf.A.nnz == 2 * n1 * n2
    r = m.solve()
    assert r.termination is Termination.OPTIMAL
    assert np.all(x.value.sum(axis=0) >= 1 - 1e-7)


def test_thread_count_can_change_between_solves():
    """HiGHS sizes one process-wide scheduler at its first run; a later threads= must still solve."""
    m = Model()
    y = m.add_var(shape=4, vtype="binary", name="y")
    m.add(y.sum() <= 2)
    m.maximize(y @ np.array([1.0, 2.0, 3.0, 4.0]))
    assert m.solve().objective == pytest.approx(7.0)
    for threads in (1, 2, 1):
        r = m.solve(threads=threads)
        assert r.termination is Termination.OPTIMAL and r.objective == pytest.approx(7.0)


@pytest.mark.parametrize("method", ["highs", "scip", "gurobi"])
def test_unbounded_is_never_reported_infeasible(method):
    _needs(method)
    for vtype in ("continuous", "integer"):
        m = Model()
        y = m.add_var(lb=0, vtype=vtype, name="y")
        m.add(y >= 1)
        m.maximize(y)
        r = m.solve(method=method)
        assert r.termination is Termination.UNBOUNDED and r.objective == math.inf, (method, vtype)


def test_nonconvex_qp_on_highs_raises_with_a_pointer():
    from solvopt.core import SolverError
    m = Model()
    x = m.add_var(shape=2, lb=-1, ub=1, name="x")
    m.minimize(-(x * x).sum())
    with pytest.raises(SolverError, match="convex"):
        m.solve()


def test_objective_of_another_model_and_bad_bounds_are_errors():
    a = Model().add_var(shape=2, name="a")
    m = Model()
    m.add_var(shape=2, name="b")
    with pytest.raises(ModelError, match="another model"):
        m.maximize(a.sum())
    with pytest.raises(ModelError, match="broadcast"):
        m.add_var(shape=3, lb=[0, 0], name="c")
    with pytest.raises(ModelError, match=r"\+inf"):
        m.add_var(shape=2, lb=np.inf, name="d")
    with pytest.raises(ModelError, match="reserved"):
        m.add_var(shape=2, name="row_dual")


def test_values_of_variables_added_after_a_solve_are_none():
    m = Model()
    x = m.add_var(shape=2, lb=0, ub=2, name="x")
    con = m.add(x <= np.array([0.5, 1.0]))
    m.maximize(x.sum())
    m.solve()
    np.testing.assert_allclose(con.dual, [1.0, 1.0])
    z = m.add_var(shape=2, name="z")
    assert z.value is None and (x + z).value is None and x.value is not None
