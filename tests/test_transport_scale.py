"""Transport statuses do not depend on the data's units (settled in units of D M^(1/p)).

Each test failed before the statuses were settled in the normalised frame: ``approx`` on points
times 1e-20 (or masses of 1e-300) came back ``optimal`` with an objective 2.4 times its bound,
because the absolute gap tolerance 1e-9 was applied in the user's units.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.result import status_scale


def _points(seed=0, n=30, m=24):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, 2)), rng.uniform(size=(m, 2))


@pytest.mark.parametrize("factor", [1e-20, 1e-12, 1e12])
def test_approx_on_tiny_or_huge_points_keeps_its_status(factor):
    # the factor bound alone (certificate="factor") is where a status in user units lied
    x, y = _points()
    base = Transport(x, y, p=2).solve("approx", certificate="factor")
    scaled = Transport(x * factor, y * factor, p=2).solve("approx", certificate="factor")
    assert base.termination is Termination.FEASIBLE_WITHIN_GAP
    assert scaled.termination is base.termination, scaled.summary()
    assert scaled.objective == pytest.approx(base.objective * factor, rel=1e-9)
    assert scaled.bound == pytest.approx(base.bound * factor, rel=1e-9)
    assert scaled.gap == pytest.approx(base.gap, rel=1e-6)
    # with the default dual certificate too: the same status at every scale
    base = Transport(x, y, p=2).solve("approx")
    scaled = Transport(x * factor, y * factor, p=2).solve("approx")
    assert scaled.termination is base.termination, (base.summary(), scaled.summary())
    assert scaled.objective == pytest.approx(base.objective * factor, rel=1e-9)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_approx_on_masses_of_1e_minus_300_keeps_its_status(p):
    x, y = _points(1)
    tiny = Transport(x, y, a=np.full(len(x), 1e-300), b=np.full(len(y), 1e-300 * len(x) / len(y)), p=p)
    for certificate in ("factor", "dual"):
        base = Transport(x, y, p=p).solve("approx", certificate=certificate)
        scaled = tiny.solve("approx", certificate=certificate)
        assert scaled.termination is base.termination, (base.summary(), scaled.summary())
        if certificate == "factor":
            assert base.termination is Termination.FEASIBLE_WITHIN_GAP
        # W_p^p = sum pi d^p is linear in the masses: W_p moves by (total mass)^(1/p)
        assert scaled.objective == pytest.approx(base.objective * (1e-300 * len(x)) ** (1.0 / p), rel=1e-9)


def test_exact_methods_stay_optimal_in_any_units():
    x, y = _points(2, 20, 16)
    for factor in (1e-20, 1.0, 1e20):
        for method in ("exact", "bottleneck"):
            model = Transport(x * factor, y * factor, p="inf" if method == "bottleneck" else 2)
            assert model.solve(method).termination is Termination.OPTIMAL


def test_status_scale_is_distance_scale_times_mass_to_the_one_over_p():
    x, y = _points(3, 10, 10)
    a = np.random.default_rng(0).uniform(1, 2, 10)
    model = Transport(x, y, a=a, p=3)
    extent = np.maximum(x.max(0), y.max(0)) - np.minimum(x.min(0), y.min(0))
    assert model.distance_scale() == pytest.approx(float(np.hypot(*extent)))
    assert status_scale(model) == pytest.approx(model.distance_scale() * a.sum() ** (1 / 3))
    assert status_scale(Transport(x, y, a=a, p="inf")) == pytest.approx(model.distance_scale())
    cost = np.abs(x[:, None, 0] - y[None, :, 0])
    assert Transport(distance=cost).distance_scale() == cost.max()
    # a callable metric has no data scale: the objective's own size is used
    metric = lambda u, v: np.abs(u[:, None, 0] - v[None, :, 0])   # noqa: E731
    assert status_scale(Transport(x, y, metric=metric), 0.25) == 0.25


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.integers(-12, 12), p=st.sampled_from([1.0, 2.0, 2.5, math.inf]),
       mass_power=st.integers(-100, 100))
def test_units_of_points_and_masses_change_no_termination(seed, k, p, mass_power):
    rng = np.random.default_rng(seed)
    n, m = rng.integers(3, 12), rng.integers(3, 12)
    x, y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
    a, b = rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m)
    b *= a.sum() / b.sum()
    f, g = 10.0 ** k, 10.0 ** mass_power
    law = f * (1.0 if math.isinf(p) else g ** (1.0 / p))
    for method in ("approx", "exact"):
        base = Transport(x, y, a=a, b=b, p=p).solve(method)
        moved = Transport(x * f, y * f, a=a * g, b=b * g, p=p).solve(method)
        assert moved.termination is base.termination, (method, base.summary(), moved.summary())
        assert moved.objective == pytest.approx(base.objective * law, rel=1e-6)
