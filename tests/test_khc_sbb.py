"""k-HC2 spatial branch-and-bound ("sbb"), the published MINLP in the DSL, and its SCIP/Gurobi methods.

References: brute force over all assignments (cluster cost = smallest eigenvalue of the centred
scatter, computed here independently of solvopt.khc.geometry), SCIP on the very same model.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from khc_reference import brute_force

from solvopt.core.errors import ModelError
from solvopt.core.options import SolveOptions
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import Termination
from solvopt.dsl.hyperplane_data import data_big_m, parse_norms
from solvopt.dsl.hyperplane_formulation import khc_minlp
from solvopt.khc import relaxation as rx
from solvopt.khc.sbb import SpatialBranchAndBound

scip_installed = get_solver("khc", "scip").available() is Availability.AVAILABLE
gurobi_installed = get_solver("khc", "gurobi").available() is Availability.AVAILABLE


def khc(points, k, norms=None, big_m=None):
    return SimpleNamespace(points=np.asarray(points, dtype=float), k=k, norms=norms, big_m=big_m,
                           symmetry_breaking=True)


def sbb(points, k, norms="2,inf", **options):
    extra = {key: options.pop(key) for key in ("assignment_bound", "restarts") if key in options}
    return get_solver("khc", "sbb").run(khc(points, k), norms=norms, **extra, **options)


def read_points(path):
    from solvopt.io import read_instance
    inst = read_instance(path)
    return inst.data["points"], inst.data["k"]


# --- relaxation pieces ---------------------------------------------------------------------
def test_secant_overestimates_squares_on_the_box():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lo = rng.uniform(-1, 1, 3)
        hi = lo + rng.uniform(0, 1, 3)
        w = rng.uniform(lo, hi)
        assert np.all(rx.secant_gap(w, lo, hi) >= -1e-12)
        coef, rhs = rx.secant(lo, hi)
        if np.sum(w * w) >= 1:
            assert coef @ w >= rhs - 1e-12


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=3), st.lists(st.floats(0, 1), min_size=3, max_size=3),
       st.integers(0, 2**31 - 1))
def test_fbbt_keeps_every_unit_vector_of_the_box(lo, width, seed):
    lo = np.array(lo)
    hi = np.minimum(lo + np.array(width), 1.0)
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(400, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    inside = v[np.all((v >= lo) & (v <= hi), axis=1)]
    new_lo, new_hi = lo.copy(), hi.copy()
    feasible = rx.tighten_unit_box(new_lo, new_hi)
    if not feasible:
        assert inside.shape[0] == 0
    else:
        assert np.all(inside >= new_lo - 1e-9) and np.all(inside <= new_hi + 1e-9)


def test_fixed_assignment_bound_is_the_cost_of_the_decided_points():
    rng = np.random.default_rng(1)
    pts = rng.uniform(0, 10, (6, 2))
    allowed = np.zeros((6, 2), dtype=bool)
    allowed[:4, 0] = True
    allowed[4:, :] = True
    centred = pts[:4] - pts[:4].mean(axis=0)
    assert rx.fixed_assignment_bound(pts, allowed) == pytest.approx(np.linalg.eigvalsh(centred.T @ centred)[0])


def test_data_big_m_is_the_diameter():
    pts = np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]])
    assert data_big_m(pts) == pytest.approx(5.0)


# --- sbb against brute force ---------------------------------------------------------------
@pytest.mark.parametrize("norms", ["2", "2,inf", "2,1", "2,1,inf"])
@pytest.mark.parametrize("seed,m,k", [(0, 6, 2), (1, 7, 2), (2, 6, 3)])
def test_sbb_matches_brute_force(norms, seed, m, k):
    pts = np.random.default_rng(seed).uniform(0, 10, (m, 2))
    ref = brute_force(pts, k)
    res = sbb(pts, k, norms=norms, restarts=0)
    assert res.termination is Termination.OPTIMAL
    assert res.objective == pytest.approx(ref, rel=1e-6, abs=1e-9)
    assert res.bound <= ref + 1e-7 * max(1.0, ref)
    assert res.solution["cluster_costs"].sum() == pytest.approx(res.objective)
    assert res.stats["nodes"] >= 1


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(4, 6), st.sampled_from([2, 3]))
def test_sbb_without_the_assignment_bound_still_proves_optimality(seed, m, k):
    """The LP alone (secants, orthant/bisection branching) must close the gap: no eigenvalue help."""
    pts = np.random.default_rng(seed).uniform(0, 10, (m, 2))
    ref = brute_force(pts, k)
    res = sbb(pts, k, norms="2,inf", assignment_bound=False, restarts=0, rel_gap=1e-4)
    # stopped at the user's gap 1e-4: OPTIMAL only when the proven gap is within 1e-6 relative or 1e-9
    # absolute in k-HC's working scale (costs there are the user's divided by unit_scale**2)
    unit_cost = res.stats.get("unit_scale", 1.0) ** 2
    proven = res.gap <= 1e-6 or (res.objective - res.bound) / unit_cost <= 1e-9
    assert res.termination is (Termination.OPTIMAL if proven else Termination.FEASIBLE_WITHIN_GAP)
    assert res.gap <= 1e-4 + 1e-12
    assert res.bound <= ref + 1e-6 * max(1.0, ref)
    assert res.objective <= ref * (1 + 1e-4) + 1e-7


def test_root_relaxation_of_the_plain_two_norm_model_is_zero():
    """Why multi-norm strengthening: without any branching the LP bound is 0."""
    pts = np.random.default_rng(3).uniform(0, 10, (7, 2))
    res = sbb(pts, 2, norms="2", node_limit=1, restarts=0, assignment_bound=False)
    assert res.stats["root_lp_bound"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("p", ["inf", "1"])
def test_p_norm_bounds_are_below_the_two_norm_optimum(p):
    for seed in range(3):
        pts = np.random.default_rng(10 + seed).uniform(0, 10, (7, 2))
        ref = brute_force(pts, 2)
        res = sbb(pts, 2, norms=p)
        lb_p = res.stats["p_norm_bound"]
        assert lb_p <= ref + 1e-7
        assert res.bound == pytest.approx(lb_p)
        assert res.stats["p_norm_solution_cost"] >= ref - 1e-7   # rescaled p-solution is k-HC2 feasible
        assert res.objective >= ref - 1e-7


def test_time_and_node_limits_return_incumbent_and_valid_bound():
    pts = np.random.default_rng(5).uniform(0, 10, (7, 3))
    ref = brute_force(pts, 2)
    for limits in ({"node_limit": 3}, {"time_limit": 0.05}):
        res = sbb(pts, 2, **limits)
        assert res.termination in (Termination.ITERATION_LIMIT, Termination.TIME_LIMIT, Termination.OPTIMAL)
        assert res.ok
        assert res.bound <= ref + 1e-7 <= res.objective + 2e-7
        assert res.gap == pytest.approx(max(0.0, res.objective - res.bound) / max(res.objective, 1e-10))


def test_progress_lines_go_to_the_log():
    lines = []
    pts = np.random.default_rng(6).uniform(0, 10, (6, 2))
    sbb(pts, 2, progress=False, log=lines.append)
    assert lines and "incumbent" in lines[-1] and "bound" in lines[-1]


def test_bad_input_is_a_model_error():
    with pytest.raises(ModelError):
        parse_norms("2,3")
    with pytest.raises(ModelError):
        sbb(np.zeros((4, 2)), 2, norms=("1", "2", "5"))
    with pytest.raises(ModelError):
        sbb([[0.0, np.nan], [1.0, 1.0]], 1)
    with pytest.raises(ModelError):
        sbb(np.zeros((3, 2)), 4)
    with pytest.raises(ModelError):
        sbb(np.zeros((3, 2)), 1, bogus=1)


def test_perfect_fit_has_zero_cost():
    pts = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 5.0], [1.0, 5.0], [3.0, 5.0]])
    res = sbb(pts, 2)
    assert res.objective == pytest.approx(0.0, abs=1e-9)
    assert res.termination is Termination.OPTIMAL


def test_sbb_engine_direct_use_matches_registry():
    pts = np.random.default_rng(8).uniform(0, 10, (6, 2))
    engine = SpatialBranchAndBound(pts, 2, parse_norms("2,1"), SolveOptions(), restarts=0)
    assert engine.solve().objective == pytest.approx(sbb(pts, 2, norms="2,1").objective)


# --- the DSL model and the external solvers -------------------------------------------------
@pytest.mark.parametrize("norms", ["2", "2,inf", "2,1,inf", "inf", "1"])
def test_model_contents(norms):
    pts = np.random.default_rng(2).uniform(0, 10, (5, 2))
    model, handles = khc_minlp(pts, 2, parse_norms(norms))
    sf = model.compile()
    assert len(sf.quad_constraints) == (2 if "2" in norms else 0)
    assert ("u" in handles) == ("inf" in norms) and ("s" in handles) == ("1" in norms)
    # symmetry breaking: x_ij fixed to 0 for j > i
    xcols = handles["x"].columns.reshape(5, 2)
    assert sf.col_upper[xcols[0, 1]] == 0.0 and sf.col_upper[xcols[1, 1]] == 1.0


@pytest.mark.skipif(not scip_installed, reason="pyscipopt not installed")
@pytest.mark.parametrize("norms", ["2,inf", "inf"])
def test_scip_on_the_exported_model_matches_sbb(norms):
    pts = np.random.default_rng(4).uniform(0, 10, (7, 2))
    ours = sbb(pts, 2, norms=norms)
    theirs = get_solver("khc", "scip").run(khc(pts, 2), norms=norms, time_limit=60)
    assert theirs.bound == pytest.approx(ours.bound, rel=1e-4, abs=1e-6)
    if "2" in norms:
        assert theirs.termination is Termination.OPTIMAL
        assert theirs.objective == pytest.approx(ours.objective, rel=1e-6)
    else:   # the p-norm relaxation solved: its bound LB_p is below the k-HC2 objective, so not OPTIMAL
        assert theirs.termination is ours.termination is Termination.FEASIBLE_WITHIN_GAP
        assert theirs.bound < theirs.objective


@pytest.mark.skipif(not scip_installed, reason="pyscipopt not installed")
@pytest.mark.parametrize("name", ["sr_10_2_2_1022", "sr_12_2_2_1222"])
def test_scip_and_sbb_agree_on_the_smallest_shipped_instances(shared_instances, name):
    """SCIP on the published model (the paper's M = sqrt(n) * 100) against our sbb (data-derived M)."""
    pts, k = read_points(shared_instances / "khc" / f"{name}.dat")
    ours = sbb(pts, k)
    paper_m = math.sqrt(pts.shape[1]) * 100
    theirs = get_solver("khc", "scip").run(khc(pts, k, big_m=paper_m), norms="2,inf", time_limit=120)
    assert ours.termination is Termination.OPTIMAL and theirs.termination is Termination.OPTIMAL
    assert ours.objective == pytest.approx(theirs.objective, rel=1e-6)
    assert theirs.bound <= ours.objective * (1 + 1e-6)


@pytest.mark.skipif(not gurobi_installed, reason="gurobipy not installed")
def test_gurobi_on_the_exported_model_matches_sbb():
    pts = np.random.default_rng(9).uniform(0, 10, (7, 2))
    ours = sbb(pts, 2)
    theirs = get_solver("khc", "gurobi").run(khc(pts, 2), norms="2,inf", time_limit=60, threads=1)
    assert theirs.termination is Termination.OPTIMAL
    assert theirs.objective == pytest.approx(ours.objective, rel=1e-6)


def test_family_model_exports_the_same_minlp_to_pyomo():
    pytest.importorskip("pyomo")
    from solvopt.dsl.hyperplane import HyperplaneClustering
    hc = HyperplaneClustering(np.random.default_rng(11).uniform(0, 10, (6, 2)), 2, norms=("2", "1", "inf"))
    names = {c.name for c in hc.to_pyomo().component_objects()}
    assert {"x", "w", "gamma", "d", "u", "p", "q", "s", "unit_0", "unit_1", "inf_norm", "one_norm"} <= names
    assert hc.solve("sbb").objective == pytest.approx(brute_force(np.asarray(hc.points), 2), rel=1e-6)


def test_sbb_after_another_highs_solve_in_the_process():
    """A MILP solved first starts HiGHS' process-wide scheduler; sbb's node LPs must still run."""
    from solvopt.dsl import Model
    m = Model()
    y = m.add_var(shape=3, vtype="binary", name="y")
    m.add(y.sum() <= 2)
    m.maximize(y.sum())
    assert m.solve(threads=2).objective == pytest.approx(2.0)
    pts = np.random.default_rng(0).uniform(0, 10, (6, 2))
    res = sbb(pts, 2, norms="2", restarts=0, node_limit=5000)
    assert res.termination is Termination.OPTIMAL
    assert res.objective == pytest.approx(brute_force(pts, 2), rel=1e-6)
