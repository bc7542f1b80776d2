"""Method ``sparse-exact`` on tie-heavy clouds of different shapes (pixel colours): repeated points
merged, finer coarse grids on thin sets, and the pricing's growing spread; checked against HiGHS
(scipy linprog) on the full LP and against method ``exact``."""
from unittest.mock import patch

import numpy as np
import pytest
from helpers import transport_lp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import solvopt.transport.dual as dual
import solvopt.transport.sparse_exact as se
from solvopt.core.result import Termination
from solvopt.dsl import Transport


def colour_like(rng, n, shape):
    """n points of a thin 3-d set with repeats: a curve ('curve') or a flat sheet ('sheet'), 40 levels an axis."""
    t = rng.uniform(size=n)
    if shape == "curve":
        pts = np.column_stack([t, t ** 2, 0.5 + 0.3 * np.sin(6 * t)])
    else:
        s = rng.uniform(size=n)
        pts = np.column_stack([t, s, 0.2 + 0.5 * t * s])
    return np.round(pts * 40) / 40


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 12), st.integers(2, 12), st.sampled_from([1.0, 2.0, 3.0]),
       st.sampled_from(["euclidean", "cityblock", "chebyshev"]))
def test_merged_repeats_equal_the_full_lp(seed, n, m, p, metric):
    """Few distinct points repeated, zero masses among them: the expanded plan has the original
    marginals and the full LP's cost."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 3, size=(5, 2)).astype(float)
    x, y = pool[rng.integers(0, 5, n)], pool[rng.integers(0, 5, m)]
    a, b = rng.uniform(0.1, 2.0, n), rng.uniform(0.1, 2.0, m)
    a[0] = 0.0
    b *= a.sum() / b.sum()
    r = Transport(x, y, a=a, b=b, p=p, metric=metric).solve(method="sparse-exact")
    assert r.termination is Termination.OPTIMAL
    reference = max(transport_lp(cdist(x, y, metric) ** p, a, b), 0.0) ** (1.0 / p)
    assert r.objective == pytest.approx(reference, rel=1e-6, abs=1e-9)
    assert r.bound <= reference * (1 + 1e-7) + 1e-12
    plan = r.solution["plan"]
    assert plan.shape == (n, m)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), a, atol=1e-9)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), b, atol=1e-9)


def test_a_thin_set_gets_a_finer_coarse_grid():
    """Points on a curve fill few cells of the grid sized for a full cube: the coarse level is
    refined until it holds about the aimed number of cells."""
    rng = np.random.default_rng(1)
    x = colour_like(rng, 4000, "curve") + rng.normal(scale=1e-3, size=(4000, 3))
    model = Transport(x, x[::-1].copy(), p=1)
    small = se.clusters(model)[0]
    target = 4000 / se.POINTS_PER_CELL
    assert small.n >= 0.5 * target
    with patch.object(se, "FINER_TRIES", 0):
        assert se.clusters(model)[0].n < 0.5 * target


@pytest.mark.parametrize("p", [1, 2])
def test_clouds_of_different_shapes(p):
    """A curve against a sheet (the nearest neighbours miss most optimal pairs), large enough for
    the multiscale start: OPTIMAL at method exact's value, with the spread growing or fixed."""
    rng = np.random.default_rng(10 + p)
    x, y = colour_like(rng, 1500, "curve"), colour_like(rng, 1300, "sheet")
    model = Transport(x, y, p=p)
    reference = model.solve(method="exact").objective
    for most in (se.MAX_SPREAD, se.SPREAD):
        with patch.object(se, "MAX_SPREAD", most):
            r = model.solve(method="sparse-exact")
        assert r.termination is Termination.OPTIMAL
        assert r.objective == pytest.approx(reference, rel=1e-7)
        assert r.bound <= reference * (1 + 1e-7)
        assert "merged_points" in r.stats


def test_the_spread_doubles_after_a_round_that_stops_closing_in():
    """Rounds that keep adding many pairs grow the spread: more pairs join a round than at a fixed spread."""
    rng = np.random.default_rng(5)
    x, y = rng.uniform(size=(400, 2)), rng.uniform(size=(400, 2)) ** 3
    model = Transport(x, y, p=2)
    start = se.neighbour_pairs(model, 1)
    keys = np.concatenate([start[0] * 400 + start[1], np.arange(400) * 401])

    def sizes(most):
        with patch.object(dual, "STALL_SHARE", 0.0):
            return [len(step.rows) for _, step in zip(range(4), dual.pricing_rounds(
                model, keys, 1.0, engine="simplex", spread=1, max_spread=most))]
    fixed, grown = sizes(1), sizes(16)
    assert fixed[:2] == grown[:2] and grown[3] > fixed[3]


def test_a_stop_on_a_merged_problem():
    rng = np.random.default_rng(2)
    x, y = colour_like(rng, 3000, "curve"), colour_like(rng, 3000, "sheet")
    r = Transport(x, y, p=2).solve(method="sparse-exact", time_limit=1e-6)
    assert r.termination is Termination.TIME_LIMIT
    assert r.solution is None or r.solution["plan"].shape == (3000, 3000)
