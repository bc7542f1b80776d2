"""k-HC2: one gap rule for every method, typed options, honoured common options, the family's one declaration.

The expected status is computed here from the reported objective and bound (OPTIMAL exactly
when the proven gap is within 1e-6 relative or 1e-9 absolute), independently of
solvopt.core.status; objectives are checked against brute force.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from khc_reference import brute_force

from solvopt.core.errors import ModelError
from solvopt.core.family import get_family
from solvopt.core.registry import Availability, get_solver, solvers
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import HyperplaneClustering

KHC_METHODS = ("bnb", "heuristic", "brute-force", "sbb", "scip", "gurobi")
scip_installed = get_solver("khc", "scip").available() is Availability.AVAILABLE
EXACT = ["bnb", "sbb"] + (["scip"] if scip_installed else [])


def expected_termination(objective: float, bound: float) -> Termination:
    diff = objective - bound
    return (Termination.OPTIMAL if diff <= 1e-9 or diff / max(abs(objective), 1e-10) <= 1e-6
            else Termination.FEASIBLE_WITHIN_GAP)


INSTANCES = [(seed, m) for seed, m in ((0, 7), (1, 8), (2, 8))]


@pytest.mark.parametrize("seed,m", INSTANCES)
@pytest.mark.parametrize("rel_gap", [None, 0.3])
def test_the_gap_rule_is_the_same_for_bnb_sbb_and_scip(seed, m, rel_gap):
    pts = np.random.default_rng(seed).uniform(0, 10, (m, 2))
    optimum = brute_force(pts, 2)
    model = HyperplaneClustering(pts, 2)
    options = {} if rel_gap is None else {"rel_gap": rel_gap}
    for method in EXACT:
        extra = {"time_limit": 120} if method == "scip" else {}
        r = model.solve(method, **options, **extra)
        assert r.bound <= optimum * (1 + 1e-6) + 1e-9 <= r.objective * (1 + 1e-6) + 2e-9, method
        assert r.termination is expected_termination(r.objective, r.bound), (method, r.objective, r.bound)
        assert (r.solution_status is SolutionStatus.OPTIMAL) == (r.termination is Termination.OPTIMAL), method
        assert r.gap == pytest.approx(max(0.0, r.objective - r.bound) / max(abs(r.objective), 1e-10), abs=1e-15)
        if rel_gap is None:
            assert r.termination is Termination.OPTIMAL, method
        else:
            assert r.gap <= rel_gap + 1e-12, method


def test_a_loose_gap_is_reported_as_feasible_within_gap():
    """bnb and sbb searches stopped by rel_gap=0.3 on harder instances: proven gaps above 1e-6."""
    pts = np.random.default_rng(1).uniform(0, 10, (40, 3))
    model = HyperplaneClustering(pts, 3)
    loose = model.solve("bnb", rel_gap=0.3)
    assert loose.termination is Termination.FEASIBLE_WITHIN_GAP
    assert loose.solution_status is SolutionStatus.FEASIBLE and 1e-6 < loose.gap <= 0.3
    sbb = HyperplaneClustering(np.random.default_rng(0).uniform(0, 10, (14, 2)), 2).solve("sbb", rel_gap=0.3)
    assert sbb.termination is Termination.FEASIBLE_WITHIN_GAP
    assert sbb.solution_status is SolutionStatus.FEASIBLE and 1e-6 < sbb.gap <= 0.3


def test_heuristic_status_follows_the_rule_with_the_trivial_bound():
    pts = np.random.default_rng(3).normal(size=(12, 2))
    r = HyperplaneClustering(pts, 2).solve("heuristic", restarts=2)
    assert r.bound == 0.0 and r.termination is Termination.ITERATION_LIMIT
    assert r.solution_status is SolutionStatus.FEASIBLE
    # a perfect fit is proven by the trivial bound 0
    t = np.linspace(0, 1, 6)
    lines = np.vstack([np.column_stack([t, 0 * t]), np.column_stack([t, 0 * t + 1])])
    r = HyperplaneClustering(lines, 2).solve("heuristic", restarts=2)
    assert r.objective <= 1e-9 and r.termination is Termination.OPTIMAL


@pytest.mark.skipif(not scip_installed, reason="pyscipopt not installed")
def test_scip_p_norm_relaxation_is_not_called_optimal_for_k_hc2():
    pts = np.random.default_rng(4).uniform(0, 10, (7, 2))
    r = get_solver("khc", "scip").run(HyperplaneClustering(pts, 2), norms="inf", time_limit=60)
    assert r.bound <= brute_force(pts, 2) + 1e-7
    assert r.termination is expected_termination(r.objective, r.bound)


# --- options ------------------------------------------------------------------------------------
def test_every_khc_method_declares_typed_options_and_honours():
    names = {s.name for s in solvers("khc")}
    assert set(KHC_METHODS) <= names
    for s in solvers("khc"):
        assert isinstance(s.honours, frozenset), s.name
        assert not hasattr(s, "extra_options") or not s.extra_options, s.name
        for o in s.options:
            assert o.type is not None and o.help, (s.name, o.name)
    honours = {s.name: s.honours for s in solvers("khc")}
    assert honours["heuristic"] == frozenset() and honours["brute-force"] == frozenset()
    assert {"rel_gap", "abs_gap", "node_limit"} <= honours["bnb"]
    assert {"rel_gap", "abs_gap", "node_limit"} <= honours["sbb"]
    assert {"rel_gap", "abs_gap"} <= honours["scip"] and {"rel_gap", "abs_gap", "threads"} <= honours["gurobi"]
    assert get_solver("khc", "scip").backend_packages == ("pyscipopt",)
    assert get_solver("khc", "gurobi").backend_packages == ("gurobipy",)


def test_external_methods_honour_only_what_their_lp_backend_honours():
    for name in ("scip", "gurobi"):
        inner = get_solver("lp", name)
        assert get_solver("khc", name).honours <= inner.honours, name


def test_restarts_means_the_same_on_every_method_that_takes_it():
    takers = {s.name: s.option("restarts") for s in solvers("khc") if s.option("restarts") is not None}
    assert set(takers) == {"bnb", "heuristic", "sbb", "partition-bound"}
    assert {o.default for o in takers.values()} == {10}
    pts = np.random.default_rng(0).normal(size=(9, 2))
    model = HyperplaneClustering(pts, 2)
    optimum = brute_force(pts, 2)
    for method in ("bnb", "sbb"):     # 0: a trivial first incumbent; the search still proves the optimum
        r = model.solve(method, restarts=0)
        assert r.objective == pytest.approx(optimum, rel=1e-7, abs=1e-9) and r.termination is Termination.OPTIMAL
    with pytest.raises(ModelError, match="restarts"):
        model.solve("heuristic", restarts=0)
    with pytest.raises(ModelError, match="restarts"):
        model.solve("bnb", restarts=2.5)
    with pytest.raises(ModelError, match="restarts"):
        model.solve("sbb", restarts=True)
    with pytest.raises(ModelError, match="norms"):
        model.solve("sbb", norms="2,3")
    with pytest.raises(ModelError, match="order"):
        model.solve("bnb", order="sideways")


def test_an_option_a_method_does_not_honour_names_the_methods_that_do():
    model = HyperplaneClustering(np.random.default_rng(0).normal(size=(8, 2)), 2)
    with pytest.raises(ModelError, match=r"'rel_gap' does not apply to method khc/heuristic.*bnb"):
        model.solve("heuristic", rel_gap=0.1)
    with pytest.raises(ModelError, match=r"'threads' does not apply to method khc/sbb.*bnb.*gurobi"):
        model.solve("sbb", threads=2)
    with pytest.raises(ModelError, match="'device' does not apply"):
        model.solve("sbb", device="gpu")
    with pytest.raises(ModelError, match="'node_limit' does not apply to method khc/brute-force"):
        model.solve("brute-force", node_limit=3)


def test_result_records_options_and_versions():
    r = HyperplaneClustering(np.random.default_rng(0).normal(size=(8, 2)), 2).solve("sbb", restarts=2)
    assert r.options["restarts"] == 2 and r.options["norms"] is None
    assert r.versions["highspy"] and r.versions["solvopt"]


# --- the family's one declaration and the direction of imports -----------------------------------
def test_descriptor_builds_the_model_from_an_instance(samples):
    from solvopt.io import read_instance
    fam = get_family("khc")
    inst = read_instance(samples / "khc" / "sr_10_2_2_1022.dat")
    model = fam.build_model(inst, k=3)
    assert isinstance(model, HyperplaneClustering) and model.k == 3
    assert {p.name: p.target for p in fam.params} == {
        "k": "model", "norms": "solver", "restarts": "solver", "extra_restarts": "solver", "order": "solver",
        "suffix_bounds": "solver", "charge_bound": "solver", "pursuit": "solver", "group_size": "solver",
        "group_seconds": "solver",
        "partitions": "solver"}


def test_the_dsl_model_imports_no_solver_and_no_numba():
    code = ("import sys, solvopt.dsl, solvopt.dsl.hyperplane_formulation; "
            "bad = [m for m in sys.modules if m == 'numba' or m.startswith('solvopt.khc')]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
