"""The spine's scale property: every family's status and objective hold in any units.

Each family registers ``scale_cases`` in its descriptor (see :mod:`solvopt.core.scaling`):
small models built with their data multiplied by a factor, and the law the objective follows.
For every case and every listed method, the termination at factor 10^k (k in [-12, 12]) must be
the one at factor 1, and the objective must follow the law.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.core.family import families, load_object


def _cases():
    out = []
    for fam in families():
        if fam.scale_cases is None:
            continue
        for case in load_object(fam.scale_cases)():
            for method in case.methods:
                out.append(pytest.param(case, method, id=f"{fam.name}-{case.name}-{method}"))
    return out


CASES = _cases()


def test_every_family_registers_scale_cases():
    missing = sorted(f.name for f in families() if f.scale_cases is None)
    assert not missing, f"families without scale cases: {missing}"


def _solve(case, method, factor):
    return case.build(factor).solve(method=method, **case.options)


@pytest.mark.parametrize("case,method", CASES)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.sampled_from([-12, -8, -3, 3, 8, 12]))
def test_status_and_objective_follow_the_scale(case, method, k):
    base = _solve(case, method, 1.0)
    factor = 10.0 ** k
    scaled = _solve(case, method, factor)
    assert scaled.termination == base.termination, (k, base.summary(), scaled.summary())
    if base.objective is not None and math.isfinite(base.objective):
        expected = case.objective_law(base.objective, factor)
        assert scaled.objective == pytest.approx(expected, rel=case.rtol, abs=0.0), (
            k, base.summary(), scaled.summary())
