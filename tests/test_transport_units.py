"""The integer unit of the masses: the limited denominator against the standard library's."""
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.transport.flow_types import integer_units, limited_denominator


@settings(max_examples=400, deadline=None)
@given(x=st.one_of(st.floats(0.0, 1.0), st.floats(0.0, 1e6),
                   st.builds(lambda i, j: i / j, st.integers(0, 10**9), st.integers(1, 10**9))),
       limit=st.one_of(st.integers(1, 50), st.just(10**7), st.integers(1, 10**12)))
def test_limited_denominator_is_the_standard_librarys(x, limit):
    assert limited_denominator(x, limit) == Fraction(x).limit_denominator(limit).denominator


def test_limited_denominator_on_ties_and_tiny_values():
    for x in (0.5, 0.25, 1 / 3, 2 / 3, 1e-300, 5e-324, 0.0, 1.0, 0.1, 0.7, 123.456):
        for limit in (1, 2, 3, 7, 10, 10**7):
            assert limited_denominator(x, limit) == Fraction(x).limit_denominator(limit).denominator


def test_integer_units_of_uniform_and_drawn_masses():
    assert integer_units(np.concatenate([np.full(3, 1 / 3), -np.full(4, 1 / 4)])) == (1 / 3) / 4
    rng = np.random.default_rng(0)
    a = rng.random(20)
    assert integer_units(np.concatenate([a / a.sum(), -a / a.sum()])) is None
