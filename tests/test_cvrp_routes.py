"""Routes in (Split.from_routes, PyVRP solutions), decisions out (compare_tours under common scenarios).

References: the concatenation of the routes written out by hand; the paired statistics computed
with NumPy from each tour's per-scenario costs (the ``keep_costs`` path); and, for a demand
matrix, each scenario's cost from a deterministic split (``split-numpy``) with that scenario's
demands, independent of the scenario kernels.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from solvopt.core.chunks import Z95
from solvopt.core.errors import ModelError
from solvopt.cvrp.compare import COLUMNS, compare_tours
from solvopt.dsl import Split, StochasticSplit
from solvopt.io import read_instance


class _Route:          # PyVRP's Route, as far as from_routes looks: visits() -> client ids
    def __init__(self, visits):
        self._visits = visits

    def visits(self):
        return list(self._visits)


class _Solution:       # PyVRP's Solution: routes() -> routes
    def __init__(self, routes):
        self._routes = [_Route(r) for r in routes]

    def routes(self):
        return self._routes


class _Activity:     # PyVRP 0.14's ScheduledActivity: is_depot(), is_client(), idx (the client's index, 0-based)
    def __init__(self, location):
        self.idx = max(location - 1, 0)
        self._depot = location == 0

    def is_depot(self):
        return self._depot

    def is_client(self):
        return not self._depot


class _Solution14:     # PyVRP 0.14: routes iterate over activities, depot first and last
    def __init__(self, routes):
        self._routes = [[_Activity(0)] + [_Activity(c) for c in r] + [_Activity(0)] for r in routes]

    def routes(self):
        return self._routes


def _small(n=8, seed=0, capacity=10):
    rng = np.random.default_rng(seed)
    coords = rng.integers(0, 100, (n + 1, 2)).astype(float)
    d = np.floor(np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1)) + 0.5)
    demands = np.concatenate([[0], rng.integers(1, 5, n)])
    return {"distances": d, "demands": demands, "capacity": capacity}


def _routes_cost(d, routes):
    return sum(d[0, r[0]] + sum(d[a, b] for a, b in zip(r, r[1:])) + d[r[-1], 0] for r in routes)


# --- routes in ---------------------------------------------------------------------------------------
def test_from_routes_joins_the_routes_and_splits_no_worse_than_them():
    data = _small()
    routes = [[3, 1], [0, 5, 2, 8, 0], [7, 0, 6, 4], []]     # the depot 0 separates routes; empty ones go
    model = Split.from_routes(data, routes)
    np.testing.assert_array_equal(model.tour, [3, 1, 5, 2, 8, 7, 6, 4])
    assert model.given_routes == [[3, 1], [5, 2, 8], [7], [6, 4]]
    loads = [sum(data["demands"][c] for c in r) for r in model.given_routes]
    r = model.solve()
    assert r.solution["optimised"] == "split of the given tour" and "split of the given tour" in r.guarantee
    if max(loads) <= data["capacity"]:                         # the given cut is one of the split's options
        assert r.objective <= _routes_cost(data["distances"], model.given_routes) + 1e-9


def test_a_pyvrp_solution_a_sol_file_and_a_split_result_give_the_same_tour(tmp_path, samples):
    inst = read_instance(samples / "cvrp/X-n101-k25.vrp")
    result = Split.from_instance(inst, tour=np.arange(100, 0, -1)).solve()
    routes = [list(map(int, r)) for r in result.solution["routes"]]
    expected = np.concatenate(routes)
    sol = tmp_path / "x.sol"
    sol.write_text("".join(f"Route #{i + 1}: {' '.join(map(str, r))}\n" for i, r in enumerate(routes)) + "Cost 1\n")
    for given in (routes, _Solution(routes), _Solution14(routes), read_instance(sol), result):
        np.testing.assert_array_equal(Split.from_routes(inst, given).tour, expected)
    stochastic = StochasticSplit.from_routes(inst, _Solution(routes), scenarios=50)
    np.testing.assert_array_equal(stochastic.tour, expected)
    assert stochastic.scenarios == 50 and stochastic.given_routes == routes
    assert stochastic.with_tour(None).given_routes is None     # another tour: no longer those routes


def test_a_real_pyvrp_solution_costs_the_same_with_the_same_rounding(samples):
    pyvrp = pytest.importorskip("pyvrp")
    from pyvrp.stop import MaxIterations
    path = samples / "cvrp/X-n101-k25.vrp"
    solution = pyvrp.solve(pyvrp.read(str(path)), stop=MaxIterations(20), seed=1, display=False).best
    truncated = read_instance(path, rounding="floor")       # PyVRP's reader truncates by default
    model = Split.from_routes(truncated, solution)
    assert _routes_cost(truncated.data["distances"], model.given_routes) == solution.distance()
    assert model.solve().objective <= solution.distance()   # the split may only improve the given cut
    nint = read_instance(path).data["distances"]
    assert _routes_cost(nint, model.given_routes) > solution.distance()


@pytest.mark.parametrize("routes, words", [
    ([[1, 2, 3], [3, 4, 5, 6, 7, 8]], "customer 3 twice (routes 0 and 1)"),
    ([[1, 2, 3], [4, 5, 6, 7]], "1 customer(s) on no route: [8]"),
    ([[1, 2, 3, 9], [4, 5, 6, 7, 8]], "route 0: id 9 outside the customers 1..8"),
    ([[1, 2, 3, -1], [4, 5, 6, 7, 8]], "route 0: id -1 outside"),
    ([[1, 2, 3.5], [4, 5, 6, 7, 8]], "customer ids must be integers"),
    ([1, 2, 3, 4, 5, 6, 7, 8], "pass tour= instead"),
    ("1 2 3", "routes must be a list of routes"),
])
def test_bad_routes_are_one_clear_error(routes, words):
    with pytest.raises(ModelError) as err:
        Split.from_routes(_small(), routes)
    assert words in str(err.value)


# --- decisions out: compare_tours ------------------------------------------------------------------
def _by_hand(costs):
    """Paired statistics with NumPy: means, se, best, differences and their se (costs: tours x S)."""
    ok = np.all(np.isfinite(costs), axis=0)
    c = costs[:, ok]
    n = c.shape[1]
    means = c.mean(axis=1)
    se = c.std(axis=1, ddof=1) / math.sqrt(n)
    best = int(np.argmin(means))
    diff = c - c[best]
    return means, se, best, diff.mean(axis=1), diff.std(axis=1, ddof=1) / math.sqrt(n)


def test_compare_tours_against_keep_costs_and_numpy(samples):
    inst = read_instance(samples / "cvrp/X-n101-k25.vrp")
    rng = np.random.default_rng(4)
    ident = np.arange(1, 101)
    tours = {"file order": None, "rolled": np.roll(ident, 7), "random": rng.permutation(ident),
             "as routes": _Solution([ident[:50][::-1].tolist(), ident[50:].tolist()])}
    table = compare_tours(inst, tours, scenarios=300, seed=3)
    base = StochasticSplit.from_instance(inst, scenarios=300)
    giant = [ident, np.roll(ident, 7), tours["random"], np.concatenate([ident[:50][::-1], ident[50:]])]
    costs = np.stack([base.with_tour(t).solve(seed=3, keep_costs=True).solution["scenario_costs"] for t in giant])
    means, se, best, dmean, dse = _by_hand(costs)
    assert [r["tour"] for r in table] == list(tours) and table.best == list(tours)[best]
    np.testing.assert_allclose([r["mean"] for r in table], means, rtol=1e-12)
    np.testing.assert_allclose([r["std_error"] for r in table], se, rtol=1e-9)
    np.testing.assert_allclose([r["diff"] for r in table], dmean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([r["diff_std_error"] for r in table], dse, rtol=1e-9, atol=1e-9)
    for r, m, s, d, e in zip(table, means, se, dmean, dse):
        assert r["ci95_low"] == pytest.approx(m - Z95 * s) and r["diff_ci95_high"] == pytest.approx(d + Z95 * e)
        assert r["unpaired_std_error"] == pytest.approx(0.0 if r["best"] else math.hypot(s, se[best]))
    np.testing.assert_array_equal(table.costs, costs)
    # the estimate is the solver's own: the same mean as a plain solve of that tour
    assert table[0]["mean"] == pytest.approx(base.with_tour(ident).solve(seed=3).objective, rel=1e-12)
    # pairing pays off for two tours that share most of their routes
    assert table[1]["diff_std_error"] < table[1]["unpaired_std_error"] or table[1]["best"]


def test_compare_tours_on_a_demand_matrix_against_deterministic_splits():
    data = _small(n=7, seed=5, capacity=9)
    rng = np.random.default_rng(6)
    matrix = np.minimum(rng.poisson(data["demands"][1:], (40, 7)), data["capacity"])
    tours = [np.arange(1, 8), np.array([7, 6, 5, 4, 3, 2, 1]), rng.permutation(np.arange(1, 8))]
    table = compare_tours(data, tours, scenarios=matrix, seed=0)
    costs = np.array([[Split(data["distances"], np.concatenate([[0], row]), data["capacity"], tour=t)
                       .solve("split-numpy").objective for row in matrix] for t in tours])
    np.testing.assert_allclose(table.costs, costs, rtol=1e-12)
    means, se, best, dmean, dse = _by_hand(costs)
    assert table.best_index == best and table[best]["best"] and table.scenarios == 40
    np.testing.assert_allclose([r["diff"] for r in table], dmean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([r["diff_std_error"] for r in table], dse, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(table.best_tour, tours[best])


def test_infeasible_scenarios_are_left_out_for_every_tour_alike():
    data = _small(n=6, seed=2, capacity=6)
    matrix = np.full((10, 6), 2)
    matrix[[1, 4], 2] = 7                                   # a customer alone over the capacity: infeasible
    table = compare_tours(data, [None, np.arange(6, 0, -1)], scenarios=matrix)
    assert table.feasible_scenarios == 8 and np.isinf(table.costs[:, [1, 4]]).all()
    keep = np.ones(10, bool)
    keep[[1, 4]] = False
    np.testing.assert_allclose([r["mean"] for r in table], table.costs[:, keep].mean(axis=1))


def test_the_table_prints_and_becomes_a_frame():
    table = compare_tours(_small(), {"a": None, "b": [2, 1, 4, 3, 6, 5, 8, 7]}, scenarios=30, seed=1,
                          policy="penalty", penalty=10.0)
    text = str(table)
    assert "the same 30 scenarios (seed 1; 30 feasible for every tour)" in text
    assert "0 (best)" in text and f"{table.best} *" in text
    pd = pytest.importorskip("pandas")
    frame = table.to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.index) == ["a", "b"]
    assert list(frame.columns) == list(COLUMNS[1:])


@pytest.mark.parametrize("tours, kwargs, words", [
    ([], {}, "at least one tour"),
    ({"mine": [1, 2, 2, 3, 4, 5, 6, 7]}, {}, "mine: tour must be a permutation"),
    ({"routes": [[1, 2], [2, 3, 4, 5, 6, 7, 8]]}, {}, "routes: routes must visit every customer"),
    ([None], {"keep_costs": True}, "keep_costs"),
    (3, {}, "tours must be a list"),
])
def test_compare_tours_refuses_bad_input_with_one_error(tours, kwargs, words):
    with pytest.raises(ModelError) as err:
        compare_tours(_small(), tours, scenarios=5, **kwargs)
    assert words in str(err.value)


def test_a_stochastic_split_brings_its_own_scenarios():
    model = StochasticSplit(**_small(), scenarios=20, policy="penalty", penalty=5.0)
    table = compare_tours(model, [None], seed=2)
    assert table.scenarios == 20 and table[0]["diff"] == 0 and table[0]["diff_std_error"] == 0
    with pytest.raises(ModelError, match="come from the StochasticSplit"):
        compare_tours(model, [None], scenarios=10)


def test_the_table_says_a_split_is_optimal_for_the_given_tour(samples):
    """An optimal split is the optimal split of the tour, not a CVRP optimum: the summary says so."""
    import contextlib
    import io

    from solvopt.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["solve", str(samples / "cvrp/X-n101-k25.vrp")]) == 0
    assert "optimal (split of the given tour)" in out.getvalue()
