"""Fuzzing the DSL constructors: hostile data is refused with one clear error, never a crash.

Each family model is built from arrays a hypothesis strategy draws with awkward shapes and
values (NaN, +-inf, values near the float limits, negatives, complex numbers, booleans, empty
arrays, wrong ranks). A constructor may accept the data or refuse it with a
:class:`~solvopt.core.errors.SolvoptError` (a ``ModelError`` naming what is wrong); any other
exception (TypeError, ValueError, IndexError, OverflowError, ...) is a defect.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.core.errors import SolvoptError
from solvopt.dsl import (
    ArrowDebreuMarket,
    FisherMarket,
    HyperplaneClustering,
    LayeredDP,
    Model,
    Split,
    StochasticSplit,
    Transitions,
    Transport,
)
from solvopt.dsl.utilities import CES, FORMS

SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 1e300, -1e300, 1.7e308, np.inf, -np.inf, np.nan, 5e-324]
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def arrays(draw, max_rank=2, max_side=4, allow_complex=True):
    """An array of awkward shape, dtype and values (sometimes a nested ragged list)."""
    kind = draw(st.sampled_from(["float", "int", "bool", "complex", "ragged", "empty", "scalar", "text"]
                                if allow_complex else ["float", "int", "bool", "ragged", "empty", "scalar"]))
    if kind == "scalar":
        return draw(st.sampled_from(SPECIAL))
    if kind == "empty":
        return np.zeros((0,) * draw(st.integers(1, max_rank)))
    if kind == "ragged":
        return [[1.0, 2.0], [3.0]]
    if kind == "text":
        return np.array([["a", "b"], ["c", "d"]])
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.integers(1, max_side)) for _ in range(rank))
    size = int(np.prod(shape))
    values = draw(st.lists(st.one_of(st.sampled_from(SPECIAL), st.floats(-10, 10)), min_size=size, max_size=size))
    arr = np.array(values, dtype=float).reshape(shape)
    if kind == "int":
        return np.nan_to_num(arr, nan=0, posinf=5, neginf=-5).clip(-1e9, 1e9).astype(np.int64)
    if kind == "bool":
        return arr > 0
    if kind == "complex":
        return arr + 1j * draw(st.sampled_from([0.0, 1.0]))
    return arr


def _build_or_refuse(build, *args, **kwargs):
    """Build; a SolvoptError is a clean refusal; anything else fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            build(*args, **kwargs)
        except SolvoptError as exc:
            message = str(exc)
            assert message.strip(), "a refusal must say what is wrong"
        except Exception as exc:
            pytest.fail(f"{getattr(build, '__name__', build)} raised {type(exc).__name__}: {exc}")


@FUZZ
@given(points=arrays(), k=st.one_of(st.integers(-3, 6), st.sampled_from([1.5, np.nan, "2", None])))
def test_hyperplane_clustering(points, k):
    _build_or_refuse(HyperplaneClustering, points, k)


@FUZZ
@given(x=arrays(), y=arrays(), a=st.one_of(st.none(), arrays(max_rank=1)), b=st.one_of(st.none(), arrays(max_rank=1)),
       p=st.sampled_from([1, 2, 0.5, 0, -1, np.inf, np.nan, 1e308, "2", 1000]))
def test_transport_points(x, y, a, b, p):
    _build_or_refuse(Transport, x, y, a=a, b=b, p=p)


@FUZZ
@given(matrix=arrays(), p=st.sampled_from([1, 2, np.inf, 0.5]), which=st.sampled_from(["cost", "distance"]))
def test_transport_matrix(matrix, p, which):
    _build_or_refuse(Transport, p=p, **{which: matrix})


@FUZZ
@given(distances=arrays(), demands=arrays(max_rank=1),
       capacity=st.sampled_from([10, 0, -1, 1e308, np.nan, np.inf, 2.5]),
       tour=st.one_of(st.none(), st.lists(st.integers(-2, 6), max_size=6)))
def test_split(distances, demands, capacity, tour):
    _build_or_refuse(Split, distances, demands, capacity, tour)


@FUZZ
@given(distances=arrays(), demands=arrays(max_rank=1), capacity=st.sampled_from([10, 0, -1, np.nan]),
       scenarios=st.sampled_from([1, 0, -5, 10, 2.5, None]))
def test_stochastic_split(distances, demands, capacity, scenarios):
    _build_or_refuse(StochasticSplit, distances, demands, capacity, scenarios=scenarios)


@FUZZ
@given(costs=arrays(), mask=st.one_of(st.none(), arrays()), states=st.lists(st.integers(-1, 4), min_size=0, max_size=3),
       initial=st.one_of(st.sampled_from([0.0, np.nan, np.inf]), arrays(max_rank=1)))
def test_layered_dp(costs, mask, states, initial):
    def build():
        transitions = [Transitions(costs=costs, mask=mask)] * max(len(states) - 1, 0)
        return LayeredDP(states, transitions, initial=initial)
    build.__name__ = "LayeredDP"
    _build_or_refuse(build)


@FUZZ
@given(kind=st.sampled_from(sorted(FORMS)), weights=arrays(), rho=st.sampled_from([0.5, -1.0, 1.0, 0.0, np.nan, 2.0]),
       budgets=arrays(max_rank=1), supplies=st.one_of(st.none(), arrays(max_rank=1)))
def test_fisher_market(kind, weights, rho, budgets, supplies):
    def build():
        utility = CES(weights, rho) if kind == "ces" else FORMS[kind](weights)
        return FisherMarket(utility, budgets, supplies)
    build.__name__ = "FisherMarket"
    _build_or_refuse(build)


@FUZZ
@given(kind=st.sampled_from(["linear", "cobb_douglas", "leontief", "log"]), weights=arrays(), endowments=arrays())
def test_arrow_debreu_market(kind, weights, endowments):
    def build():
        return ArrowDebreuMarket(FORMS[kind](weights), endowments)
    build.__name__ = "ArrowDebreuMarket"
    _build_or_refuse(build)


@FUZZ
@given(shape=st.one_of(st.integers(-2, 3), st.tuples(st.integers(-1, 3), st.integers(0, 2))),
       lb=st.one_of(st.sampled_from(SPECIAL), arrays(max_rank=1)),
       ub=st.one_of(st.sampled_from(SPECIAL), arrays(max_rank=1)),
       coef=arrays(max_rank=1))
def test_model_variables_and_constraints(shape, lb, ub, coef):
    def build():
        m = Model()
        x = m.add_var(shape=shape, lb=lb, ub=ub, name="x")
        m.add(coef @ x <= 1)
        m.minimize(coef @ x)
        return m
    build.__name__ = "Model"
    _build_or_refuse(build)
