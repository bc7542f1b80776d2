"""Model checks users can rely on: bad callables, complex data, convex utilities and wrong gradients.

Each is one line (ModelError), never a TypeError, a silently dropped imaginary part or an
"optimal" equilibrium that is not one.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvopt.core.errors import ModelError
from solvopt.dsl import ArrowDebreuMarket, FisherMarket, PseudoGame
from solvopt.dsl.utilities import CES, Linear


def one_player(value, gradient, lb=-1.0, ub=1.0):
    g = PseudoGame("one")
    x = g.player("x", lb=lb, ub=ub)
    g.utility(x, value, gradient)
    return g


@pytest.mark.parametrize("value,gradient,match", [
    (lambda a: np.array([1.0, 2.0]), lambda a: -2 * a, "one number"),          # before: TypeError
    (lambda a: -a[0] ** 2, lambda a: np.ones(3), "1 numbers"),
    (lambda a: float("nan"), lambda a: -2 * a, "NaN"),
    (lambda a: -a[0] ** 2, lambda a: np.array([np.nan]), "NaN"),
    (lambda a: -a[0] ** 2 + 0j, lambda a: -2 * a, "real"),
    (lambda a: -a[0] ** 2, lambda a: -2 * a + 1j, "real"),                     # before: imaginary part cut
    (lambda a: "x", lambda a: -2 * a, "real"),
])
def test_bad_callables_are_one_model_error(value, gradient, match):
    with pytest.raises(ModelError, match=match):
        one_player(value, gradient).solve()


@pytest.mark.parametrize("build", [
    lambda: Linear([[1 + 1j, 2.0]]),
    lambda: CES([[1.0, 2.0]], 0.5 + 0.1j),
    lambda: FisherMarket(Linear([[1.0, 2.0]]), budgets=[1 + 1j]),
    lambda: FisherMarket(Linear([[1.0, 2.0]]), budgets=[1.0], supplies=np.array([1, 1]) * (1 + 0j)),
    lambda: ArrowDebreuMarket(Linear([[2.0, 1.0], [1.0, 2.0]]), endowments=np.eye(2) + 1j),   # before: cut
])
def test_complex_arrays_are_refused(build):
    with pytest.raises(ModelError, match="real"):
        build()


@pytest.mark.parametrize("start", [None, [0.5], [-0.3]])
def test_convex_utility_is_refused(start):
    # u(x) = x^2 on [-1, 1]: the gradient vanishes at 0, yet the regret there is 1 (before: optimal)
    g = one_player(lambda a: a[0] ** 2, lambda a: 2 * a)
    with pytest.raises(ModelError, match="not concave"):
        g.solve(start=start)


def test_wrong_gradient_sign_is_refused():
    # u(x) = -(x - 1)^2 on [0, 2] with the gradient's sign flipped (before: optimal at 0, regret 1)
    g = one_player(lambda a: -(a[0] - 1) ** 2, lambda a: 2 * (a - 1), lb=0.0, ub=2.0)
    with pytest.raises(ModelError, match="gradient is wrong"):
        g.solve()


def test_concave_callable_still_solves():
    g = one_player(lambda a: -(a[0] - 0.25) ** 2, lambda a: -2 * (a - 0.25))
    r = g.solve()
    assert r.ok and abs(r.solution["actions"][0] - 0.25) < 1e-4


def test_complex_starts_are_refused():
    from solvopt.games import scaling
    with pytest.raises(ModelError, match="real"):
        scaling.harker(1.0).solve(start=[1 + 1j, 2.0])
    with pytest.raises(ModelError, match="real"):
        scaling.markov_game(1.0).solve(start=np.ones((2, 2)) * 1j)
