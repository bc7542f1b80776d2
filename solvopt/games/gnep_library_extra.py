"""Problem A.2 of the Facchinei-Kanzow GNEP test library: players whose costs are not convex.

F. Facchinei, C. Kanzow, "Penalty methods for the solution of generalized Nash equilibrium
problems", SIAM J. Optim. 20 (2010), appendix, problem A.2 (a variant of the internet switching
model of Kesselman et al., A.1 and A.14). Ten players choose one number each and minimise

    theta_i(x) = -(x_i / S) (1 - S / B)^k_i,   S = x_1 + ... + x_10,  B = 1,

with k_i = 2 for players 2-5 and k_i = 1 for the others, over x_1 in [0.3, 0.5], x_i in [0.01, 1]
(i = 2..8), x_9 in [0.01, 0.06], x_10 in [0.01, 0.05]; players 2-10 are bound by S <= B and
players 5 and 6 also by S >= 0.99 (player 1 by neither): player-specific rows, a GNEP proper.
Player i's utility (S - s)(1 - S)^k / S (s the others' sum) is not concave in x_i where k = 2
(x (a - x)^2 is convex beyond 2a/3): a KKT point need not be a best response, so the equilibrium
is proven with global best responses (:mod:`solvopt.games.scalar_equilibrium`).

The equilibria: player 1's utility falls on [0.3, 0.5] once S >= 0.99 - 0.3 + 0.3, so x_1 = 0.3;
players 2-4 and 7-10 sit at their lower bound 0.01 (their utility falls on their interval); players
5 and 6 both want less but are held by S >= 0.99, which binds both: every split x_5 + x_6 = 0.62
with x_5, x_6 >= 0.01 is a GNE (a segment; no equilibrium is unique). The published point (the
penalty method's approximate solution) lies on that segment up to the method's accuracy: x_1 is
3.7e-4 below its bound 0.3 and the players at 0.01 are up to 2.2e-5 below it.

:func:`a2` gives the problem in the data layout of :mod:`solvopt.games.gnep_problem` (its
``GNEP``, registered in :mod:`solvopt.games.gnep_library` as ``NONCONCAVE``; its file is a
``scalar_game`` whose enclosures come from the cost trees by interval arithmetic); :func:`a2_game`
the :class:`~solvopt.dsl.ScalarGame` with hand-derived derivative enclosures (an independent statement
the tests compare).
"""
from __future__ import annotations

import numpy as np

from .gnep_problem import GNEP, Rows

B = 1.0
POWERS = np.array([1, 2, 2, 2, 2, 1, 1, 1, 1, 1])
PUBLISHED = np.array([0.29962894677774, 0.00997828224734, 0.00997828224734, 0.00997828224734, 0.59852469355630,
                      0.02187270661760, 0.00999093169361, 0.00999093169361, 0.00999093169361, 0.00999093169361])
PUBLISHED_SECOND = np.array([0.29962898846513, 0.00997828313762, 0.00997828313762, 0.00997828313762,
                             0.59745624992082, 0.02220301920403, 0.01013441012117, 0.01013441012117,
                             0.01013441012117, 0.01013441012117])


def _cost(x, i):
    S = x.sum()
    return -(x[i] / S) * (1.0 - S / B) ** POWERS[i]


def _gradient(x, i):
    S, k = x.sum(), POWERS[i]
    g = (1.0 - S / B) ** k
    dg = -k / B * (1.0 - S / B) ** (k - 1)
    out = np.full(x.size, x[i] / S ** 2 * g - (x[i] / S) * dg)
    out[i] -= g / S
    return out


def _expression(i: int) -> dict:
    """theta_i as an expression tree: -x_i S^-1 (1 - S / B)^k_i (what the instance file states)."""
    n = POWERS.size
    return {"op": "mul", "args": [-1.0, {"var": i}, {"op": "pow", "args": [{"linear": [1.0] * n}, -1.0]},
                                  {"op": "pow", "args": [{"linear": [-1.0 / B] * n, "constant": 1.0},
                                                         float(POWERS[i])]}]}


def _rows() -> list[Rows]:
    n = 10
    ones = np.ones((1, n))
    rows = [Rows(ones, np.array([-np.inf]), np.array([B]), owner) for owner in range(1, n)]
    rows += [Rows(ones, np.array([0.99]), np.array([np.inf]), owner) for owner in (4, 5)]
    return rows


def a2() -> GNEP:
    """Problem A.2 (see the module docstring) in the library's data layout."""
    lb = np.full(10, 0.01)
    ub = np.full(10, 1.0)
    lb[0], ub[0] = 0.3, 0.5
    ub[8], ub[9] = 0.06, 0.05
    return GNEP("A.2", "Internet switching model with nonconvex costs (players 2-5), N = 10, B = 1", [1] * 10, lb, ub,
                _rows(), [(lambda x, i=i: _cost(x, i)) for i in range(10)],
                [(lambda x, i=i: _gradient(x, i)) for i in range(10)], PUBLISHED.copy(), start=np.full(10, 0.1),
                expressions=[_expression(i) for i in range(10)], concept="GNE", unique=False, nonconcave=True,
                notes="players 2-5 have costs that are not convex in their own action; the GNEs are x1 = 0.3, "
                      "x2..x4 = x7..x10 = 0.01 and every split x5 + x6 = 0.62 (x5, x6 >= 0.01): S >= 0.99 binds "
                      "players 5 and 6; the published point has x1 3.7e-4 below its bound 0.3 and the players at "
                      "0.01 up to 2.2e-5 below it")


# --- interval arithmetic for the derivative enclosures ----------------------------------------
def _mul(a, b):
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)


def _power(a, k):
    out = (1.0, 1.0)
    for _ in range(int(k)):
        out = _mul(out, a)
    if k % 2 == 0 and a[0] < 0 < a[1]:
        out = (0.0, out[1])
    return out


def switching_derivative_range(x, i, lo, hi, k):
    """An enclosure of d/dx_i of (x_i / S)(1 - S / B)^k over x_i in [lo, hi] (the others at x):
    with s the others' sum and S = s + x_i > 0 it is (s / S^2)(1 - S/B)^k - (k/B)(1 - s/S)(1 - S/B)^(k-1),
    each factor enclosed over S in [s + lo, s + hi]."""
    s = float(np.sum(x) - x[i])
    S = (s + lo, s + hi)
    if S[0] <= 0:
        return -np.inf, np.inf
    first = _mul((s / S[1] ** 2, s / S[0] ** 2), _power((1.0 - S[1] / B, 1.0 - S[0] / B), k))
    second = _mul((k / B * (1.0 - s / S[0]), k / B * (1.0 - s / S[1])), _power((1.0 - S[1] / B, 1.0 - S[0] / B), k - 1))
    return first[0] - second[1], first[1] - second[0]


def scalar_game(problem: GNEP, derivative_range):
    """A library problem of one-variable players as a :class:`~solvopt.dsl.ScalarGame`: utilities -theta_i,
    derivatives -d theta_i / dx_i, ``derivative_range(x, i, lo, hi)`` an enclosure of the latter over
    x_i in [lo, hi]; each row binds its owner (a shared row, every player)."""
    from solvopt.core.errors import ModelError
    from solvopt.dsl.scalar_game import ScalarGame
    if any(size != 1 for size in problem.sizes):
        raise ModelError(f"problem {problem.name}: a ScalarGame needs one-variable players")
    game = ScalarGame(problem.file_stem)
    def player(i: int) -> None:
        def utility(x: np.ndarray) -> float:
            return -problem.cost(i, x)

        def derivative(x: np.ndarray) -> float:
            return -float(problem.cost_gradient(i, x)[i])

        def enclosure(x: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
            low, high = derivative_range(np.asarray(x, dtype=float), i, lo, hi)
            return float(low), float(high)
        game.player(problem.names[i], problem.lb[i], problem.ub[i], utility, derivative, derivative_range=enclosure)

    for i in range(len(problem.sizes)):
        player(i)
    everyone = list(range(len(problem.sizes)))
    for r in problem.rows:
        for a, lo, hi in zip(r.A, r.lo, r.hi):
            game.constrain(r.owner if r.owner >= 0 else everyone, a, lo, hi)
    return game


def a2_game():
    """A.2 as a :class:`~solvopt.dsl.ScalarGame` (the default method ``scalar-global`` proves its GNE)."""
    def enclose(x, i, lo, hi):                    # the utility (x_i / S)(1 - S / B)^k_i = -theta_i
        return switching_derivative_range(x, i, lo, hi, POWERS[i])
    return scalar_game(a2(), enclose)

