"""Exact Hessians of expression-tree constraints, and the KKT Newton matrix built from them.

The Newton matrix of ``gnep-kkt`` needs sum_k nu_k grad^2 g_k. For constraints given as JSON
expression trees it is exact (second-order forward mode over the tree); the reference here is
central differences of the exact gradients, and the Newton matrix's forward differences.
"""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.errors import ModelError
from solvopt.core.family import get_family
from solvopt.games.convex_constraints import FramedConstraint
from solvopt.games.expressions import ConvexExpression, parse
from solvopt.games.gnep_kkt import KKTSystem
from solvopt.io import read_instance

N = 3
FOLDER = pathlib.Path(__file__).resolve().parents[1] / "instances" / "games" / "gnep"


def _positive_linear():
    """A linear form with nonnegative weights and a positive constant: positive on the box [0.5, 2]^N."""
    return st.builds(lambda w, b: {"linear": w, "constant": b},
                     st.lists(st.floats(0.0, 2.0), min_size=N, max_size=N), st.floats(0.1, 2.0))


def _positive_tree():
    """Trees whose every node is positive on [0.5, 2]^N (so powers and logs of them are defined)."""
    leaves = st.one_of(st.integers(0, N - 1).map(lambda k: {"var": k}), _positive_linear(), st.floats(0.5, 3.0))

    def extend(kids):
        return st.one_of(
            st.lists(kids, min_size=1, max_size=3).map(lambda a: {"op": "add", "args": a}),
            st.lists(kids, min_size=1, max_size=3).map(lambda a: {"op": "mul", "args": a}),
            st.tuples(kids, st.sampled_from([-1.5, -1.0, 0.5, 1.0, 1.5, 2.0, 3.0])).map(
                lambda t: {"op": "pow", "args": [t[0], t[1]]}),
        )
    return st.recursive(leaves, extend, max_leaves=6)


def _differences(f, x, h=1e-6):
    """Central differences of the gradient f, column by column."""
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]).T


@settings(max_examples=60, deadline=None)
@given(tree=_positive_tree(), log=st.booleans(), x=st.lists(st.floats(0.5, 2.0), min_size=N, max_size=N))
def test_the_hessian_of_a_tree_is_the_derivative_of_its_gradient(tree, log, x):
    if log:
        tree = {"op": "log", "args": [tree]}
    c = ConvexExpression(parse(tree, N), "<=", 0.0)
    x = np.array(x)
    H = c.hessian(x)
    reference = _differences(c.gradient, x)
    assert np.allclose(H, H.T, rtol=1e-9, atol=1e-9 * (1 + np.abs(H).max()))
    assert np.allclose(H, reference, rtol=1e-4, atol=1e-5 * (1 + np.abs(reference).max()))


def test_a_sense_flips_the_hessian_and_a_singular_point_is_an_error():
    tree = {"op": "pow", "args": [{"var": 0}, 1.5]}
    x = np.array([2.0, 1.0])
    upper = ConvexExpression(parse(tree, 2), "<=", 0.0).hessian(x)
    lower = ConvexExpression(parse(tree, 2), ">=", 0.0).hessian(x)
    assert upper[0, 0] == pytest.approx(0.75 / np.sqrt(2.0)) and np.array_equal(lower, -upper)
    with pytest.raises(ModelError, match="second derivative"):
        ConvexExpression(parse(tree, 2), "<=", 0.0).hessian(np.array([0.0, 1.0]))


class _GradientOnly:
    """A constraint without a Hessian: the Newton matrix falls back to differences of its gradient."""

    def __init__(self, c):
        self.c, self.owner, self.n, self.name, self.convexity = c, c.owner, c.n, c.name, c.convexity

    def value(self, z):
        return self.c.value(z)

    def gradient(self, z):
        return self.c.gradient(z)


@pytest.mark.parametrize("stem", ["fk_a9b", "fk_a6"])
def test_the_newton_matrix_curvature_agrees_with_differences(stem):
    data = get_family("games").build_model(read_instance(str(FOLDER / f"{stem}.json"))).data()
    rng = np.random.default_rng(0)
    lb = np.where(np.isfinite(data.lb), data.lb, 0.0)
    ub = np.where(np.isfinite(data.ub), data.ub, lb + 10.0)
    x = lb + (ub - lb) * rng.uniform(0.2, 0.8, data.n)
    widths = np.ones(data.n)
    exact = dataclasses.replace(data, nonlinear=[FramedConstraint(c, widths, x) for c in data.nonlinear])
    plain = dataclasses.replace(exact, nonlinear=[_GradientOnly(c) for c in exact.nonlinear])
    assert all(c.hessian(x) is not None for c in exact.nonlinear)
    a, b = KKTSystem(exact), KKTSystem(plain)
    nu = rng.uniform(0.5, 2.0, a.q)
    H, reference = a._curvature(x, nu), b._curvature(x, nu)
    assert np.abs(H).max() > 0
    assert np.allclose(H, reference, rtol=1e-4, atol=1e-5 * np.abs(reference).max())
