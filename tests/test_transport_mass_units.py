"""Masses rounded to multiples of one unit and the leftovers sent back (``mass_units``), and
``approx`` with ``graph="multiscale"`` on masses that are not multiples of one unit: the plan's
marginals exact, the bound certified with the true masses (below HiGHS's optimum), uniform masses
on the path they took before."""
from fractions import Fraction
from unittest.mock import patch

import numpy as np
import pytest
from helpers import solve_stopped_at_the_fine_level, transport_lp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import solvopt.transport.approx_multiscale as ams
import solvopt.transport.mass_units as mu
import solvopt.transport.sparse_exact as se
from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.flow_types import dyadic_unit, integer_data


def drawn(n, m, d, seed, low=0.1, zeros=0):
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, d)), rng.random((m, d))
    a, b = rng.uniform(low, low + 1.0, n), rng.uniform(low, low + 1.0, m)
    a[:zeros] = 0.0
    b *= a.sum() / b.sum()
    return x, y, a, b


def check_marginals(model, plan):
    assert plan.min() >= 0
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), model.a, rtol=1e-12, atol=1e-15 * model.mass)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), model.b, rtol=1e-12, atol=1e-15 * model.mass)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 60), m=st.integers(1, 60), bits=st.integers(20, 49),
       scale=st.sampled_from([1e-200, 1e-3, 1.0, 7.0, 1e250]), zeros=st.integers(0, 3))
def test_rounded_masses_are_exact_units_below_the_masses(seed, n, m, bits, scale, zeros):
    """alpha U <= a and beta U <= b, each side exactly 2^bits units, each entry less than two
    units short of its mass (where the points are more than the units taken off), and the level's
    supplies (masses over their total) read back as those integers by the integer engines' unit
    search."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.0, 1.0, n) * scale, rng.uniform(0.0, 1.0, m) * scale
    a[: min(zeros, n - 1)] = 0.0
    b *= a.sum() / b.sum()
    r = mu.rounded_masses(a, b, bits)
    for mass, count in ((a, r.alpha), (b, r.beta)):
        assert np.all(count == np.floor(count)) and count.min() >= 0
        assert int(count.sum()) == 2**bits
        assert np.all(count * r.unit <= mass)
        # floors lose less than one unit a point, the trimming one more a point where it can
        spare = max(np.count_nonzero(a), np.count_nonzero(b)) + 2
        assert np.sum(mass - count * r.unit) < (np.count_nonzero(mass) + spare + 1) * r.unit
        if np.count_nonzero(mass) >= spare:
            assert np.all(mass - count * r.unit < 2.0 * r.unit)
        assert np.all(count[mass == 0] == 0)
    supplies = np.concatenate([r.alpha, -r.beta]) / float(r.alpha.sum())
    unit, ints, _ = integer_data(supplies, None)
    assert np.all(ints * unit == supplies)
    assert np.all(ints * (unit * 2.0**bits) == np.concatenate([r.alpha, -r.beta]))


def test_total_bits_keeps_the_kernel_supplies_in_int32():
    rng = np.random.default_rng(1)
    a = rng.uniform(0.1, 1.1, 1000)
    for levels in (0, 1, 3):
        bits = mu.total_bits(a, a, levels)
        assert bits is not None and mu.FEWEST_BITS <= bits <= mu.MOST_BITS
        r = mu.rounded_masses(a, a, bits)
        assert r.alpha.max() <= mu.INT32
        # the levels' cells: 4^levels points' mass on average, the crowding margin times that fits too
        assert levels == 0 or mu.CROWDING * 4**levels * 2**bits / 1000 <= mu.INT32
    assert mu.total_bits(np.array([1.0, 1e-12]), np.array([1.0, 1e-12])) is not None   # bits 30
    assert mu.total_bits(np.full(10**6, 1.0), np.full(10**6, 1.0)) == mu.MOST_BITS


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 12), m=st.integers(1, 12), grid=st.booleans())
def test_corner_plan_is_the_north_west_corner_rule(seed, n, m, grid):
    """Against the rule step by step (exact fractions): fill (k, l), move down the side that runs
    out first."""
    rng = np.random.default_rng(seed)
    if grid:        # ties of the cumulative sums (both sides run out at once)
        ra, rb = rng.integers(1, 4, n).astype(float), rng.integers(1, 4, m).astype(float)
        rb[-1] += ra.sum() - rb.sum()
        if rb[-1] <= 0:
            return
    else:
        ra, rb = rng.random(n), rng.random(m)
        rb *= ra.sum() / rb.sum()
    rows, cols = rng.permutation(n), rng.permutation(m)
    plan = mu.corner_plan(rows, cols, ra[rows], rb[cols], (n, m)).toarray()
    want = np.zeros((n, m))
    left_r, left_c = [Fraction(v) for v in ra[rows]], [Fraction(v) for v in rb[cols]]
    k = ell = 0
    while k < n and ell < m:
        move = min(left_r[k], left_c[ell])
        want[rows[k], cols[ell]] += float(move)
        left_r[k] -= move
        left_c[ell] -= move
        if left_r[k] == 0:
            k += 1
        else:
            ell += 1
    np.testing.assert_allclose(plan, want, rtol=1e-9, atol=1e-12 * ra.sum())
    np.testing.assert_allclose(plan.sum(axis=1), ra, rtol=1e-12, atol=1e-14 * ra.sum())


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 50), m=st.integers(1, 50), d=st.integers(1, 3))
def test_leftover_plan_carries_the_leftovers(seed, n, m, d):
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, d)), rng.random((m, d))
    ra, rb = rng.random(n) * (rng.random(n) < 0.7), rng.random(m) * (rng.random(m) < 0.7)
    if ra.sum() == 0 or rb.sum() == 0:
        assert mu.leftover_plan(x, y, ra, rb).nnz == 0
        return
    rb *= ra.sum() / rb.sum()
    plan = mu.leftover_plan(x, y, ra, rb)
    assert plan.shape == (n, m) and plan.min() >= 0
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), ra, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), rb, rtol=1e-9, atol=1e-14)


@settings(max_examples=60, deadline=None)
@given(ks=st.lists(st.integers(1, 2**40), min_size=1, max_size=30), e=st.integers(-1000, 900))
def test_dyadic_unit_is_the_largest_power_of_two_dividing_all(ks, e):
    values = np.ldexp(np.array(ks, dtype=np.float64), e)
    unit = dyadic_unit(values)
    low = min((k & -k).bit_length() - 1 for k in ks)
    if e + low < -1074 or sum(ks) / 2**low > 2**50:
        assert unit is None
    else:
        assert unit == 2.0 ** (e + low)


def test_drawn_masses_have_no_dyadic_unit():
    rng = np.random.default_rng(0)
    for n in (20, 300, 5000):
        a = rng.uniform(0.1, 1.1, n)
        assert dyadic_unit(a / a.sum()) is None
        assert integer_data(np.concatenate([a, -a]) / a.sum(), None) is None


@pytest.mark.parametrize("d,p,metric", [(2, 2.0, "euclidean"), (3, 1.0, "euclidean"), (2, 1.5, "cityblock"),
                                        (2, 1.0, "chebyshev")])
@pytest.mark.parametrize("seed", [0, 1])
def test_drawn_masses_by_warm_cost_scaling(d, p, metric, seed):
    """Forced through the multiscale path with every level by warm cost scaling: the masses are
    rounded (stats), the plan has the true marginals, W_p(plan) >= OPT >= bound, within the target."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(80, 160)), int(rng.integers(80, 160))
    x, y, a, b = drawn(n, m, d, seed, zeros=2)
    model = Transport(x, y, a=a, b=b, p=p, metric=metric)
    with patch.object(se, "COARSEST", 40):         # coarse levels at this size too
        r = model.solve("approx", graph="multiscale", engine="costscaling")
    assert r.stats["engine"] == "costscaling" and r.stats["mass_unit"] > 0 and r.stats["levels"]
    check_marginals(model, r.solution["plan"])
    opt = max(transport_lp(cdist(x, y, metric) ** p, model.a, model.b), 0.0) ** (1.0 / p)
    assert r.objective >= opt * (1 - 1e-9)
    assert r.bound <= opt * (1 + 1e-9)
    assert r.objective <= 1.02 * r.bound
    assert r.termination in (Termination.OPTIMAL, Termination.FEASIBLE_WITHIN_GAP)


def test_a_coarse_unit_still_certifies_the_true_masses(monkeypatch):
    """With few units (about 2^20 in all, leftovers of a share ~10^-4), the bound is certified with
    the true masses: still below the optimum, the plan still exact."""
    monkeypatch.setattr(mu, "MOST_BITS", 20)
    x, y, a, b = drawn(150, 130, 2, 5)
    model = Transport(x, y, a=a, b=b, p=2)
    r = model.solve("approx", graph="multiscale", engine="costscaling")
    assert r.stats["mass_units"] == 2.0**20 and r.stats["leftover_mass"] > 1e-5
    check_marginals(model, r.solution["plan"])
    exact = model.solve("exact").objective
    assert r.bound <= exact * (1 + 1e-9) <= r.objective * (1 + 1e-9)


def test_uniform_and_unit_masses_take_the_path_they_took():
    """Masses that are integer multiples of one unit are not rounded (no mass_unit in stats), and
    give the same answer as before; small levels of drawn masses keep the simplex on real masses."""
    x, y, _, _ = drawn(300, 300, 2, 3)
    uniform = Transport(x, y, p=2)
    counts = np.arange(300) % 4 + 1.0
    counts = Transport(x, y, a=counts, b=counts[::-1].copy(), p=2)
    for model in (uniform, counts):
        for engine in ("auto", "costscaling"):
            r = model.solve("approx", graph="multiscale", engine=engine)
            assert "mass_unit" not in r.stats
    _, _, a, b = drawn(300, 300, 2, 3)
    r = Transport(x, y, a=a, b=b, p=2).solve("approx", graph="multiscale")       # 600 points: the simplex
    assert "mass_unit" not in r.stats and r.stats["engine"] == "simplex"
    assert ams.rounded_problem(Transport(x, y, a=a, b=b, p=2), se.SCALING_FROM) is None
    assert ams.rounded_problem(Transport(x, y, a=a, b=b, p=2), 0) is not None


def test_a_stop_in_the_first_fine_round_gives_the_refined_plan_with_true_marginals():
    x, y, a, b = drawn(1500, 1500, 2, 8)
    model = Transport(x, y, a=a, b=b, p=2)
    r, fine = solve_stopped_at_the_fine_level(model, engine="costscaling")
    assert r.termination is Termination.TIME_LIMIT and fine
    check_marginals(model, r.solution["plan"])
    assert r.bound is None        # the rounded problem's bounds are not for these masses: none certified


def test_a_time_limit_with_drawn_masses_returns_a_feasible_plan():
    x, y, a, b = drawn(2000, 2000, 2, 1)
    model = Transport(x, y, a=a, b=b, p=2)
    r = model.solve("approx", graph="multiscale", engine="costscaling", time_limit=1e-4)
    assert r.termination is Termination.TIME_LIMIT
    check_marginals(model, r.solution["plan"])
    assert r.bound is None or r.bound <= r.objective


@pytest.mark.parametrize("factor", [1e-12, 1e12])
def test_drawn_masses_give_the_same_answer_in_any_units(factor):
    """Points or drawn masses scaled by 10^-12 or 10^12: the same status, W_p and its bound moved by
    the law up to the flow's resolution, and both certified intervals hold the same optimum (the
    rounding is relative to the total mass)."""
    x, y, a, b = drawn(900, 800, 2, 11)
    base = Transport(x, y, a=a, b=b, p=2).solve("approx", graph="multiscale", engine="costscaling")
    assert base.stats["mass_unit"] > 0
    for points, masses in ((factor, 1.0), (1.0, factor)):
        r = Transport(x * points, y * points, a=a * masses, b=b * masses, p=2).solve(
            "approx", graph="multiscale", engine="costscaling")
        law = points * masses ** 0.5
        assert r.termination == base.termination
        assert r.stats["mass_units"] == base.stats["mass_units"]
        assert r.objective == pytest.approx(base.objective * law, rel=3 * se.SCALING_SHARE)
        assert r.bound <= base.objective * law * (1 + 1e-9) and base.bound * law <= r.objective * (1 + 1e-9)
