"""k-HC2: geometry, heuristics, the exact assignment branch-and-bound, the model, the CLI.

References are independent of the code under test: a plain itertools enumeration of all
assignments costed with numpy.linalg.eigvalsh, closed forms (k = 1, m <= k n), and invariances.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from solvopt.cli import main
from solvopt.core.errors import ModelError
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.io import read_instance
from solvopt.khc import bnb as bnb_module
from solvopt.khc.bnb import solve_bnb
from solvopt.khc.bnb_kernel import _smallest_eigenvalue
from solvopt.khc.geometry import assignment_cost, cluster_plane, fit_planes, khc_solution, point_distances
from solvopt.khc.heuristics import ClusterStats, kplane, local_search


# --- the independent reference ----------------------------------------------------------------
def reference_cluster_cost(points: np.ndarray) -> float:
    if len(points) <= 1:
        return 0.0
    centred = points - points.mean(axis=0)
    return max(0.0, float(np.linalg.eigvalsh(centred.T @ centred)[0]))


def reference_optimum(points: np.ndarray, k: int) -> float:
    """Minimum over all k^m labelled assignments (tiny instances only)."""
    best = np.inf
    for labels in itertools.product(range(k), repeat=len(points)):
        labels = np.array(labels)
        best = min(best, sum(reference_cluster_cost(points[labels == j]) for j in range(k)))
    return best


def close(a: float, b: float, rel: float = 1e-7) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


# --- geometry --------------------------------------------------------------------------------------
def test_cluster_plane_is_the_smallest_eigenpair():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(15, 3)) @ np.diag([3.0, 2.0, 0.1]) + 5.0
    cost, normal, offset = cluster_plane(pts)
    assert close(cost, reference_cluster_cost(pts))
    assert np.isclose(np.linalg.norm(normal), 1.0)
    assert normal[np.flatnonzero(np.abs(normal) > 1e-12)[0]] > 0
    assert np.isclose(offset, normal @ pts.mean(axis=0))
    assert close(cost, float(point_distances(pts, normal[None], [offset]).sum()))
    # no other unit normal through the centroid does better
    for w in rng.normal(size=(50, 3)):
        w /= np.linalg.norm(w)
        assert cost <= float((((pts - pts.mean(axis=0)) @ w) ** 2).sum()) + 1e-12


@pytest.mark.parametrize("pts", [np.zeros((0, 2)), np.array([[1.0, 2.0]]), np.array([[1.0, 2.0], [3.0, -1.0]]),
                                 np.ones((4, 3)), np.array([[0.0, 0, 0], [1, 2, 3], [4, 0, 1]])])
def test_cluster_plane_degenerate_clusters_cost_zero(pts):
    cost, normal, offset = cluster_plane(pts)
    assert cost == pytest.approx(0.0, abs=1e-20)
    assert np.isclose(np.linalg.norm(normal), 1.0)
    if len(pts):
        assert np.allclose(pts @ normal, offset)


def test_fit_planes_and_solution_are_consistent():
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(20, 2))
    labels = rng.integers(0, 3, size=20)
    labels[labels == 2] = 1  # cluster 2 empty
    normals, offsets, costs = fit_planes(pts, labels, 3)
    assert costs[2] == 0 and np.isclose(np.linalg.norm(normals[2]), 1)
    for j in range(2):
        assert close(costs[j], reference_cluster_cost(pts[labels == j]))
    sol = khc_solution(pts, labels, 3)
    assert sol["assignment"].dtype == np.int64 and sol["distances"].shape == (20,)
    assert close(sol["distances"].sum(), sol["cluster_costs"].sum())
    assert close(assignment_cost(pts, labels, 3), costs.sum())


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_kernel_smallest_eigenvalue_matches_numpy(n):
    rng = np.random.default_rng(n)
    for trial in range(200):
        pts = rng.normal(size=(n + 2, n))
        if trial % 3 == 0:  # near-degenerate spectra: points close to a line / plane
            pts[:, 1:] *= 1e-4
        if trial % 5 == 0 and n >= 2:  # (near-)double eigenvalues
            pts = np.vstack([np.eye(n), -np.eye(n)]) + 1e-9 * rng.normal(size=(2 * n, n))
        centred = pts - pts.mean(axis=0)
        S = centred.T @ centred
        if trial % 7 == 0:  # a random spectrum over many scales in a random basis
            q, _ = np.linalg.qr(rng.normal(size=(n, n)))
            S = (q * 10.0 ** rng.uniform(-12, 0, size=n)) @ q.T
            S = 0.5 * (S + S.T)
        expected = np.linalg.eigvalsh(S)[0]
        assert abs(_smallest_eigenvalue(S, n) - expected) <= 1e-9 * max(1.0, np.abs(S).max())


# --- exact methods against the reference --------------------------------------------------------
TINY = [(m, n, k, seed) for seed, (m, n, k) in enumerate(
    [(5, 2, 2), (6, 2, 2), (7, 2, 3), (8, 2, 3), (9, 2, 2), (6, 3, 2), (8, 3, 2), (9, 3, 3), (7, 3, 3), (9, 2, 3)])]


@pytest.mark.parametrize("m,n,k,seed", TINY)
def test_bnb_and_brute_force_match_the_reference(m, n, k, seed):
    pts = np.random.default_rng(seed).normal(size=(m, n))
    optimum = reference_optimum(pts, k)
    model = HyperplaneClustering(pts, k)
    runs = {"bnb": {}, "bnb with suffix bounds": {"suffix_bounds": True}, "bnb dynamic": {"order": "dynamic"},
            "brute-force": {}}
    for method, options in runs.items():
        r = model.solve(method.split()[0], **options)
        assert r.termination is Termination.OPTIMAL and r.solution_status is SolutionStatus.OPTIMAL
        assert close(r.objective, optimum), method
        assert r.bound <= r.objective and close(r.bound, optimum)
        assert close(assignment_cost(pts, r.solution["assignment"], k), r.objective)


@settings(max_examples=25, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(3, 7), st.integers(2, 3)),
              elements=st.integers(-5, 5).map(float)),
       st.integers(1, 3), st.sampled_from(bnb_module.ORDERS), st.booleans())
def test_bnb_matches_the_reference_on_generated_points(pts, k, order, suffix_bounds):
    k = min(k, len(pts))
    out = solve_bnb(pts, k, order=order, restarts=2, suffix_bounds=suffix_bounds)
    optimum = reference_optimum(pts, k)
    assert out.complete
    assert abs(out.objective - optimum) <= 1e-7 * max(1.0, optimum)
    assert out.bound <= out.objective + 1e-12


def test_bnb_on_shipped_instances_matches_brute_force(samples):
    for name in ("sr_10_2_2_1022.dat", "sr_12_3_2_1232.dat"):
        inst = read_instance(samples / "khc" / name)
        model = HyperplaneClustering.from_instance(inst)
        exact = model.solve("bnb")
        reference = model.solve("brute-force")
        assert exact.termination is Termination.OPTIMAL
        assert close(exact.objective, reference.objective)


def test_bnb_on_shared_sr_10_instances_matches_brute_force(shared_instances):
    for path in sorted((shared_instances / "khc").glob("sr_10_*.dat")):
        model = HyperplaneClustering.from_instance(read_instance(path))
        assert close(model.solve("bnb").objective, model.solve("brute-force").objective), path.name


# --- invariances and degenerate inputs ------------------------------------------------------------
def test_optimum_is_invariant_under_translation_and_rotation():
    rng = np.random.default_rng(7)
    pts = rng.normal(size=(12, 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    base = solve_bnb(pts, 2).objective
    assert close(solve_bnb(pts + np.array([100.0, -50.0, 7.0]), 2).objective, base, 1e-6)
    assert close(solve_bnb(pts @ q.T, 2).objective, base, 1e-6)


def test_degenerate_inputs():
    rng = np.random.default_rng(3)
    # k = 1: the smallest eigenvalue of the whole set, for every method
    pts = rng.normal(size=(10, 3))
    for method in ("bnb", "heuristic", "brute-force"):
        assert close(HyperplaneClustering(pts, 1).solve(method).objective, reference_cluster_cost(pts))
    # m = k and m <= k n: cost 0, proven
    r = HyperplaneClustering(pts[:4], 4).solve("bnb")
    assert r.objective == pytest.approx(0, abs=1e-18) and r.termination is Termination.OPTIMAL
    r = HyperplaneClustering(pts[:6], 2).solve("bnb")
    assert r.objective == pytest.approx(0, abs=1e-18) and r.bound == 0
    # collinear points in the plane: one line fits them
    t = np.linspace(-1, 1, 9)
    line = np.column_stack([t, 2 * t + 1])
    assert HyperplaneClustering(line, 1).solve("bnb").objective == pytest.approx(0, abs=1e-12)
    # duplicates: two distinct lines, every point doubled
    two_lines = np.vstack([line, np.column_stack([t, -t + 3])])
    doubled = np.vstack([two_lines, two_lines])
    assert HyperplaneClustering(doubled, 2).solve("bnb").objective == pytest.approx(0, abs=1e-10)
    same = np.ones((7, 2))
    assert HyperplaneClustering(same, 2).solve("bnb").objective == pytest.approx(0, abs=1e-18)


@pytest.mark.parametrize("points,k,kwargs", [
    ([[0.0, np.nan], [1, 2]], 1, {}),
    ([[0.0, np.inf], [1, 2]], 1, {}),
    ([[0.0, 1.0], [1, 2]], 3, {}),
    ([[0.0, 1.0], [1, 2]], 0, {}),
    ([[0.0, 1.0], [1, 2]], 1.5, {}),
    ([0.0, 1.0, 2.0], 1, {}),
    (np.zeros((0, 2)), 1, {}),
    ([["a", "b"]], 1, {}),
    ([[0.0, 1.0], [1, 2]], 1, {"norms": ("inf",)}),
    ([[0.0, 1.0], [1, 2]], 1, {"norms": ("2", "3")}),
    ([[0.0, 1.0], [1, 2]], 1, {"big_m": -1.0}),
    ([[0.0, 1.0], [1, 2]], 1, {"big_m": float("nan")}),
])
def test_bad_model_data_is_a_model_error(points, k, kwargs):
    with pytest.raises(ModelError):
        HyperplaneClustering(points, k, **kwargs)


def test_bad_options_are_model_errors():
    model = HyperplaneClustering(np.random.default_rng(0).normal(size=(8, 2)), 2)
    with pytest.raises(ModelError, match="unknown option"):
        model.solve("bnb", norms="2,inf")
    with pytest.raises(ModelError):
        model.solve("bnb", order="sideways")
    with pytest.raises(ModelError, match="static branching order"):
        model.solve("bnb", order="dynamic", charge_bound=True)
    with pytest.raises(ModelError):
        model.solve("heuristic", restarts=0)
    with pytest.raises(ModelError, match="brute force refuses"):
        HyperplaneClustering(np.random.default_rng(0).normal(size=(40, 2)), 3).solve("brute-force")


def test_model_attributes_and_big_m_is_valid():
    rng = np.random.default_rng(5)
    pts = rng.normal(size=(14, 2))
    model = HyperplaneClustering(pts, 3, norms="inf,2")
    assert (model.m, model.n, model.k, model.norms) == (14, 2, 3, ("2", "inf"))
    r = model.solve("bnb")
    normals, offsets = r.solution["normals"], r.solution["offsets"]
    assert np.sqrt(point_distances(pts, normals, offsets)).max() <= model.big_m + 1e-12
    assert HyperplaneClustering(pts, 3, big_m=2.5).big_m == 2.5


# --- heuristics ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_heuristic_is_feasible_and_not_below_the_optimum(seed):
    pts = np.random.default_rng(100 + seed).normal(size=(9, 2))
    labels, cost = kplane(pts, 3, restarts=3, seed=seed)
    assert labels.dtype == np.int64 and labels.min() >= 0 and labels.max() < 3
    assert close(cost, assignment_cost(pts, labels, 3))
    assert cost >= reference_optimum(pts, 3) - 1e-9
    r = HyperplaneClustering(pts, 3).solve("heuristic", restarts=3, seed=seed)
    assert r.bound == 0.0 and r.objective >= r.bound and r.termination is Termination.ITERATION_LIMIT


def test_heuristic_recovers_planted_planes_on_larger_data():
    rng = np.random.default_rng(11)
    m, n, k = 3000, 4, 3
    truth = rng.integers(0, k, size=m)
    normals = rng.normal(size=(k, n))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    pts = rng.normal(size=(m, n))
    pts -= (np.einsum("mn,mn->m", pts, normals[truth]) - np.arange(k)[truth])[:, None] * normals[truth]
    labels, cost = kplane(pts, k, restarts=10, seed=0)
    assert cost <= 1e-8 * m  # the planted planes fit exactly
    assert close(cost, assignment_cost(pts, labels, k), 1e-6)


def test_local_search_moves_are_improvements():
    rng = np.random.default_rng(4)
    pts = rng.normal(size=(40, 3))
    labels = rng.integers(0, 3, size=40)
    before = assignment_cost(pts, labels, 3)
    for exact in (False, True):
        improved = local_search(pts, labels, 3, exact=exact)
        assert assignment_cost(pts, improved, 3) <= before + 1e-12
    # a screened gain is a guaranteed decrease of the exact (refitted) cost
    stats = ClusterStats(pts, labels, 3)
    gains = stats.screened_gains(pts, labels)
    exact_gains = stats.exact_gains(pts, labels)
    assert np.all(exact_gains >= gains - 1e-9)
    i, b = np.unravel_index(np.argmax(exact_gains), exact_gains.shape)
    moved = labels.copy()
    moved[i] = b
    assert close(before - assignment_cost(pts, moved, 3), exact_gains[i, b], 1e-6)


# --- stopped runs return an incumbent and a valid bound ------------------------------------------------
@pytest.mark.parametrize("node_limit", [1, 20, 50, 400, 3000])
@pytest.mark.parametrize("options", [{}, {"suffix_bounds": True}, {"order": "dynamic"}])
def test_node_limited_bnb_returns_incumbent_and_valid_bound(node_limit, options):
    pts = np.random.default_rng(21).normal(size=(9, 2))
    optimum = reference_optimum(pts, 3)
    r = HyperplaneClustering(pts, 3).solve("bnb", node_limit=node_limit, **options)
    assert r.ok and r.bound <= optimum + 1e-9 <= r.objective + 2e-9
    assert close(assignment_cost(pts, r.solution["assignment"], 3), r.objective)
    if r.termination is not Termination.OPTIMAL:
        assert r.termination is Termination.ITERATION_LIMIT and r.solution_status is SolutionStatus.FEASIBLE


def test_time_limited_bnb_returns_incumbent_and_valid_bound():
    rng = np.random.default_rng(8)
    pts = rng.normal(size=(60, 3))
    r = HyperplaneClustering(pts, 4).solve("bnb", time_limit=0.5, restarts=2)
    assert r.ok and 0 <= r.bound <= r.objective
    assert close(assignment_cost(pts, r.solution["assignment"], 4), r.objective)
    assert r.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)


# --- CLI -------------------------------------------------------------------------------------------------
def test_cli_solves_a_shipped_instance_as_json(samples, capsys):
    path = samples / "khc" / "sr_10_2_2_1022.dat"
    assert main(["solve", str(path), "--json", "--restarts", "3"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["family"] == "khc" and record["method"] == "bnb" and record["termination"] == "optimal"
    reference = HyperplaneClustering.from_instance(read_instance(path)).solve("brute-force").objective
    assert close(record["objective"], reference)
    assert len(record["solution"]["assignment"]) == 10


def test_cli_rejects_flags_the_method_does_not_take(samples, capsys):
    path = str(samples / "khc" / "sr_10_2_2_1022.dat")
    assert main(["solve", path, "--norms", "2,inf"]) == 1
    assert "--norms does not apply to method 'bnb'" in capsys.readouterr().err
    assert main(["solve", path, "--method", "brute-force", "--restarts", "2"]) == 1


def test_cli_on_shared_instance_with_k_override(shared_instances, capsys):
    path = shared_instances / "khc" / "sr_10_2_2_1022.dat"
    assert main(["solve", str(path), "--json", "--k", "3", "--method", "heuristic"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["method"] == "heuristic" and max(record["solution"]["assignment"]) <= 2


def test_heuristic_init_is_used_and_never_worsened():
    pts = np.random.default_rng(31).normal(size=(9, 2))
    optimum = reference_optimum(pts, 3)
    best = HyperplaneClustering(pts, 3).solve("bnb").solution["assignment"]
    labels, cost = kplane(pts, 3, restarts=1, seed=5, init=best)
    assert close(cost, optimum)
    with pytest.raises(ModelError):
        kplane(pts, 3, init=np.zeros(4, dtype=int))


def test_bnb_progress_lines_go_to_stderr(capsys):
    pts = np.random.default_rng(2).normal(size=(10, 2))
    HyperplaneClustering(pts, 2).solve("bnb", progress=True)
    err = capsys.readouterr().err
    assert "bnb nodes" in err and "incumbent" in err and "bound" in err and "gap" in err
