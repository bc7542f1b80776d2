"""Problems A.10a-e of the Facchinei-Kanzow GNEP test library: Arrow-Debreu economies with production.

F. Facchinei, C. Kanzow, "Penalty methods for the solution of generalized Nash equilibrium
problems", SIAM J. Optim. 20 (2010), appendix, problem A.10 (after Arrow and Debreu): F firms,
C consumers and a price player over P goods. Firm f (f = 1..F) maximises p.y_f over
{y >= 0, ||y||^2 <= 10 f} (a ball technology of radius sqrt(10 f)); consumer i maximises its
utility over {x >= 0, p.x <= p.xi_i}; the price player maximises p.(sum x - sum y - sum xi) over
the simplex. Firms' profits are paid to no one (the consumers' budgets are their endowments'
values), so at the equilibrium every priced good has the same excess supply, equal to the total
profit. The consumers come in two halves (i is the consumer's index, 1..C):

- A.10a (F = 2, C = 5, P = 3) and A.10c (F = 6, C = 30, P = 6): quadratic utilities
  b_i.x - 0.5 x'Q_i x (they satiate): the first half has Q^1, b_i = beta^1 + i + F and endowment
  xi^1, the second half Q^2, b_i = beta^2 + 2 (i + F) and xi^2 (A.10a's halves are consumers 1-2
  and 3-5); at A.10c's equilibrium good 1 is free and in excess supply, and some consumers are
  satiated;
- A.10b (F = 4, C = 20, P = 5), A.10d (F = 6, C = 30, P = 10) and A.10e (F = 7, C = 40, P = 12):
  shifted logarithms sum_j w_ij log(x_j + c_ij), the first half with w_ij = a_j + i + F,
  c_ij = b_j + 2 (i + F) and xi^1, the second half with w_ij = c_j + i + F, c_ij = d_j + i + F
  and xi^2 (a, b, c, d, xi^1, xi^2: the first P entries of A.10e's 12-vectors, except A.10b's
  b = (20, 30, 30, 40, 50) and d = (50, 40, 30, 20, 20)).

The data are those of the public Python port of the library, read where it contradicts itself:
its market and budget functions reshape the concatenated consumer (and firm) vectors
goods-major, which mixes consumers and goods, while its utilities read consumer i's own block, as
the appendix states (we use the blocks); its bounded A.10a squares the sum of a firm's outputs in
the technology while its gradient and the unbounded file use the sum of squares (we use the ball);
and its A.10c gives the second half's matrix Q^2 and linear terms but selects them by i <= C,
which never holds for the second half (we use Q^2 for consumers C/2 + 1..C, as A.10a does).

No published equilibrium point of A.10a-e was at hand: the checks are the certified
exploitability and, in the tests, every player's best response computed independently by scipy.
"""
from __future__ import annotations

import numpy as np

from solvopt.dsl.production import ProductionEconomy
from solvopt.dsl.quadratic_utility import Quadratic
from solvopt.dsl.utilities import Logarithmic

_A = np.array([1, 2, 4, 6, 8, 7, 8, 10, 1, 5, 2, 4], dtype=float)
_B = np.array([50, 60, 70, 60, 60, 50, 50, 80, 60, 70, 70, 80], dtype=float)
_C = np.array([10, 6, 4, 10, 1, 2, 6, 4, 9, 4, 5, 1], dtype=float)
_D = np.array([50, 60, 50, 70, 70, 60, 50, 50, 80, 50, 60, 70], dtype=float)
_XI1 = np.array([2, 3, 4, 1, 6, 1, 3, 6, 2, 10, 3, 4], dtype=float)
_XI2 = np.array([6, 5, 4, 3, 2, 8, 4, 6, 2, 0, 6, 0], dtype=float)


_Q_A10A = (np.array([[6, -2, 5], [-2, 6, -7], [5, -7, 20]], dtype=float),
           np.array([[6, 1, 0], [1, 7, -5], [0, -5, 7]], dtype=float))
_Q_A10C = (np.array([
    [68.22249416536778, 12.12481199690621, -8.35496210217478, -6.81177486915109, -4.66752803051747, 3.64100170417482],
    [12.12481199690621, 53.51450780426463, -21.77618227261339, -15.00376305863444, -0.11788350473544, 2.0335470940072],
    [-8.35496210217478, -21.77618227261339, 35.44033408387684, 4.35160649036518, 19.17472558234163, -3.4009074272916],
    [-6.81177486915109, -15.00376305863444, 4.35160649036518, 52.25155022199242, -5.99490328518247, 20.40443259092577],
    [-4.66752803051747, -0.11788350473544, 19.17472558234163, -5.99490328518247, 23.3279856135807, -3.58535668529727],
    [3.64100170417482, 2.0335470940072, -3.4009074272916, 20.40443259092577, -3.58535668529727, 10.21258119890765]]),
           np.array([
    [61.74633559943146, -23.8300622509138, 16.78581949473039, 14.420739008605, -2.75188745616575, 13.44307656650567],
    [-23.8300622509138, 37.64246654306209, -3.76510322128227, 16.32022449045404, -39.90743633716275, 11.38657250296817],
    [16.78581949473039, -3.76510322128227, 53.3484366584831, 4.60388415537161, -23.04611587657949, -25.31392346426841],
    [14.420739008605, 16.32022449045404, 4.60388415537161, 40.69699687713468, -30.78019133996427, 17.08866411420883],
    [-2.75188745616575, -39.90743633716275, -23.04611587657949, -30.78019133996427, 66.22678445157413,
     -12.28091080313848],
    [13.44307656650567, 11.38657250296817, -25.31392346426841, 17.08866411420883, -12.28091080313848,
     41.37849544246254]]))
_BETA_A10C = (np.array([50, 60, 70, 60, 60, 50], dtype=float), np.array([50, 60, 50, 70, 70, 60], dtype=float))


def _radii(firms: int) -> np.ndarray:
    return np.sqrt(10.0 * np.arange(1, firms + 1))


def _quadratic(name, firms, first, Qs, betas, xis) -> ProductionEconomy:
    """Consumers 1..first with (Q^1, beta^1 + i + F, xi^1), the others with (Q^2, beta^2 + 2 (i + F), xi^2)."""
    i = np.arange(1, first + len(xis[1]) + 1, dtype=float)[:, None]
    half = i <= first
    b = np.where(half, betas[0] + i + firms, betas[1] + 2 * (i + firms))
    Q = np.array([Qs[0] if h else Qs[1] for h in half[:, 0]])
    endowments = np.vstack([xis[0], xis[1]])
    return ProductionEconomy(Quadratic(Q, b), endowments, _radii(firms), name=name)


def _logarithmic(name, firms, consumers, goods, shifts=None) -> ProductionEconomy:
    """``shifts``: the (b, d) of this problem where they are not the first entries of A.10e's."""
    half = consumers // 2
    i1 = np.arange(1, half + 1, dtype=float)[:, None]
    i2 = np.arange(half + 1, consumers + 1, dtype=float)[:, None]
    a, b, c, d = (v[:goods] for v in (_A, _B, _C, _D))
    if shifts is not None:
        b, d = (np.asarray(v, dtype=float) for v in shifts)
    weights = np.vstack([a + i1 + firms, c + i2 + firms])
    shifts = np.vstack([b + 2 * (i1 + firms), d + i2 + firms])
    endowments = np.vstack([np.tile(_XI1[:goods], (half, 1)), np.tile(_XI2[:goods], (half, 1))])
    return ProductionEconomy(Logarithmic(weights, shifts), endowments, _radii(firms), name=name)


def a10a() -> ProductionEconomy:
    """A.10a: 2 firms, 5 quadratic consumers, a price player, 3 goods (see the module docstring)."""
    xi1, xi2 = np.tile([2.0, 3.0, 4.0], (2, 1)), np.tile([6.0, 5.0, 4.0], (3, 1))
    return _quadratic("A.10a", 2, 2, _Q_A10A, (np.full(3, 30.0), np.full(3, 30.0)), (xi1, xi2))


def a10b() -> ProductionEconomy:
    """A.10b: 4 firms, 20 shifted-log consumers, a price player, 5 goods (see the module docstring)."""
    return _logarithmic("A.10b", 4, 20, 5, shifts=([20, 30, 30, 40, 50], [50, 40, 30, 20, 20]))


def a10c() -> ProductionEconomy:
    """A.10c: 6 firms, 30 quadratic consumers, a price player, 6 goods (see the module docstring)."""
    xi1, xi2 = np.tile(_XI1[:6], (15, 1)), np.tile(_XI2[:6], (15, 1))
    return _quadratic("A.10c", 6, 15, _Q_A10C, _BETA_A10C, (xi1, xi2))


def a10d() -> ProductionEconomy:
    """A.10d: 6 firms, 30 shifted-log consumers, a price player, 10 goods (see the module docstring)."""
    return _logarithmic("A.10d", 6, 30, 10)


def a10e() -> ProductionEconomy:
    """A.10e: 7 firms, 40 consumers, a price player, 12 goods (see the module docstring)."""
    return _logarithmic("A.10e", 7, 40, 12)


PROBLEMS = {"A.10a": a10a, "A.10b": a10b, "A.10c": a10c, "A.10d": a10d, "A.10e": a10e}
"""The library's economies with production by name."""
