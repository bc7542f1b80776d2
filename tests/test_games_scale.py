"""Games statuses and points that hold in any units, and stops that reach every inner call.

Each test is one defect that was found: a status that depended on the data's units (an absolute
tolerance in the user's units), OPTIMAL without the VE gap, a time limit that a HiGHS call in
the VE-gap certificate ignored, a step that could send an iterate to 1e11.
"""
from __future__ import annotations

import pathlib
import time

import numpy as np
import pytest

from solvopt.core.result import Termination
from solvopt.dsl import FisherMarket
from solvopt.dsl.utilities import Linear
from solvopt.games import scaling
from solvopt.games.exploitability import market_exploitability


@pytest.mark.parametrize("factor", [1e-12, 1e-8, 1e-6, 1.0, 1e12])
@pytest.mark.parametrize("method", ["extragradient", "nested"])
def test_harker_at_any_scale_is_optimal_at_its_ve(factor, method):
    # before: 1e-12 gave optimal at (0, 0) after 0 iterations, 1e-8 optimal at (7.48, 7.27)
    r = scaling.harker(factor).solve(method=method)
    assert r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(r.solution["actions"], [5.0, 9.0], atol=5e-3)
    assert r.stats["iterations"] > 0
    assert r.stats["payoff_scale"] == pytest.approx(340.0 * factor)   # 34 along the range of 10
    assert r.objective / r.stats["payoff_scale"] <= 1e-9


@pytest.mark.parametrize("factor", [1e-12, 1e-6, 1e6, 1e12])
@pytest.mark.parametrize("method", ["extragradient", "nested", "gnep-kkt"])
def test_harker_in_any_action_units_is_optimal_at_its_ve(factor, method):
    # before: actions in units 1e-6 gave optimal at the start (0, 0) with exploitability 382.5,
    # since the payoff scale was the largest coefficient (1e12 there) rather than a payoff's range
    r = scaling.harker_in_units(factor).solve(method=method)
    assert r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(np.asarray(r.solution["actions"]) / factor, [5.0, 9.0], atol=5e-3)
    assert r.stats["iterations"] > 0
    assert r.stats["payoff_scale"] == pytest.approx(340.0, rel=1e-9)
    assert r.objective <= 1e-9 * 340.0


def test_optimal_needs_the_ve_gap_too():
    # before: a GNE off the VE (exploitability 0, VE gap 0.125) was reported optimal
    r = scaling.harker(1.0).solve(start=[9.5, 5.5], iteration_limit=1)
    assert r.stats["ve_gap"] > 1e-3
    assert r.termination is Termination.ITERATION_LIMIT


@pytest.mark.parametrize("values,budgets", [(1e-12, 1.0), (1.0, 1e12), (1e12, 1.0), (1.0, 1e-12)])
def test_linear_fisher_market_at_any_scale(values, budgets):
    # before: values x 1e-12 optimal at the wrong allocation, budgets x 1e12 feasible_within_gap there
    rng = np.random.default_rng(0)
    v, B = rng.random((6, 5)), rng.random(6) + 0.5
    base = FisherMarket(Linear(v), budgets=B).solve()
    r = FisherMarket(Linear(v * values), budgets=B * budgets).solve()
    assert base.termination is r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(r.solution["prices"], base.solution["prices"] * budgets, rtol=1e-7)
    np.testing.assert_allclose(r.solution["allocation"], base.solution["allocation"], atol=1e-7)
    # the certificate of the user's market agrees (independent evaluation at the user's numbers)
    e = market_exploitability(Linear(v * values), B * budgets, np.ones(5),
                              r.solution["allocation"], r.solution["prices"])
    assert e.value <= 1e-9 * B.sum() * budgets


def test_market_exploitability_is_in_money_and_invariant_in_the_values():
    rng = np.random.default_rng(1)
    v, B = rng.random((4, 3)), rng.random(4) + 0.5
    x = rng.random((4, 3))
    x *= (B / (x @ np.ones(3)))[:, None] / 2                       # within budget at p = 1
    p = np.full(3, B.sum() / 3)
    a = market_exploitability(Linear(v), B, np.ones(3), x, p)
    b = market_exploitability(Linear(v * 1e-9), B, np.ones(3), x, p)
    c = market_exploitability(Linear(v), B * 1e6, np.ones(3), x, p * 1e6)
    assert a.value > 0
    assert b.value == pytest.approx(a.value, rel=1e-9) and c.value == pytest.approx(a.value * 1e6, rel=1e-9)
    # a buyer's term: the budget it wastes, B_i (1 - u_i(x_i) / v_i(p, B_i))
    best = B * np.max(v / p, axis=1)
    np.testing.assert_allclose(a.per_player[:4], B * (1 - (v * x).sum(axis=1) / best))


@pytest.mark.parametrize("factor", [1e-12, 1.0, 1e12])
def test_markov_pseudo_game_at_any_scale(factor):
    # before: x 1e-12 was optimal at its starting policy
    base = scaling.markov_game(1.0).solve(iteration_limit=400)
    r = scaling.markov_game(factor).solve(iteration_limit=400)
    assert r.termination is base.termination is Termination.OPTIMAL
    assert r.stats["iterations"] == base.stats["iterations"] > 0
    np.testing.assert_allclose(r.solution["policy"], base.solution["policy"], atol=1e-6)


def test_harker_small_scale_honours_the_time_limit():
    # before: costs x 1e-6 with a time limit never returned (HiGHS in the VE-gap certificate, no limit)
    t = time.perf_counter()
    r = scaling.harker(1e-6).solve(time_limit=1.0, tolerance=1e-300, check_every=1)
    assert time.perf_counter() - t < 10.0
    assert r.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)


def test_time_limit_reaches_the_projections_of_a_slow_game(tmp_path):
    import json

    from solvopt.games.instance import game_from_json
    game = game_from_json(json.load(open(scaling.write_slow_game(tmp_path))))
    t = time.perf_counter()
    r = game.solve(method="extragradient", time_limit=0.5, tolerance=1e-15)
    assert time.perf_counter() - t < 5.0                     # generous: the machine may be loaded
    assert r.termination is Termination.TIME_LIMIT and r.ok


def test_nested_steps_stay_near_the_iterate():
    # before: without positive curvature the step was 1e10 (an iterate of norm 1e11 handed to HiGHS)
    from solvopt.games.static import _step_cap
    a, g = np.array([1.0, -2.0]), np.array([1e-9, 3.0])
    cap = _step_cap(a, g)
    assert np.max(np.abs(cap * g)) <= 1e6 * (1 + 2.0) * (1 + 1e-12)


A16A_FILE = pathlib.Path(__file__).resolve().parents[1] / "instances" / "games" / "gnep" / "fk_a16a.json"


def _a16a_scale_at(x):
    """The payoff scale at x from the library's callables (not the file's expression trees): the largest
    gradient entry times the action's range (0 to 75)."""
    from solvopt.games.gnep_library import problem
    data = problem("A.16a").model().data()
    x = np.asarray(x, dtype=float)
    return max(float(np.abs(u.gradient(x) * (data.ub - data.lb)).max()) for u in data.utilities)


def test_a16a_from_its_file_is_judged_at_its_equilibrium_scale():
    # before: the default start (near S = 0, where the price's gradient is huge) set the payoff scale to
    # 1.49e6, so optimal accepted an exploitability of 1.5e-3 where the profits are 360-770
    from solvopt.core.family import get_family
    from solvopt.io import read_instance
    r = get_family("games").build_model(read_instance(str(A16A_FILE))).solve()
    assert r.termination is Termination.OPTIMAL and r.stats["equilibrium"] == "VE"
    assert r.stats["start_payoff_scale"] > 1e6
    scale = _a16a_scale_at(r.solution["actions"])
    assert 1e3 < scale < 1e4
    assert r.stats["payoff_scale"] == pytest.approx(scale, rel=1e-9)
    assert r.stats["tolerance"] == pytest.approx(1e-9 * scale, rel=1e-9)
    assert r.objective <= 1e-9 * scale and r.stats["ve_gap"] <= 1e-9 * scale


@pytest.mark.parametrize("method", ["extragradient", "nested"])
def test_a_singular_start_does_not_loosen_the_stop(method):
    # before: without the polish, tolerance 1e-6 stopped extragradient at a VE gap of 2.3e-3 > 1e-6 * 2095
    from solvopt.core.family import get_family
    from solvopt.io import read_instance
    r = get_family("games").build_model(read_instance(str(A16A_FILE))).solve(method=method, tolerance=1e-6,
                                                                             polish=False)
    assert r.termination in (Termination.OPTIMAL, Termination.FEASIBLE_WITHIN_GAP)
    scale = _a16a_scale_at(r.solution["actions"])
    assert r.stats["payoff_scale"] == pytest.approx(scale, rel=1e-9)
    assert max(r.objective, r.stats["ve_gap"]) <= 1e-6 * scale
