"""Problem A.10e of the Facchinei-Kanzow GNEP test library: an Arrow-Debreu economy with production.

F. Facchinei, C. Kanzow, "Penalty methods for the solution of generalized Nash equilibrium
problems", SIAM J. Optim. 20 (2010), appendix, problem A.10 (after Arrow and Debreu): F firms,
C consumers and a price player over P goods. Firm f (f = 1..F) maximises p.y_f over
{y >= 0, ||y||^2 <= 10 f}; consumer i maximises a shifted logarithmic utility
sum_j w_ij log(x_j + c_ij) over {x >= 0, p.x <= p.xi_i}; the price player maximises
p.(sum x - sum y - sum xi) over the simplex. A.10e has F = 7, C = 40, P = 12: consumers
i = 1..20 have w_ij = a_j + i + F, c_ij = b_j + 2 (i + F) and endowment xi^1, consumers
i = 21..40 have w_ij = c_j + i + F, c_ij = d_j + i + F and endowment xi^2. Firms' profits are
paid to no one (the consumers' budgets are their endowments' values), so at the equilibrium every
good has the same excess supply, equal to the total profit.

A.10a-d (quadratic utilities, which satiate) are not here. No published equilibrium point of A.10e
was at hand to compare with: the checks are the certified exploitability and, in the tests, every
player's best response computed independently by scipy.
"""
from __future__ import annotations

import numpy as np

from solvopt.dsl.production import ProductionEconomy
from solvopt.dsl.utilities import Logarithmic

_A = np.array([1, 2, 4, 6, 8, 7, 8, 10, 1, 5, 2, 4], dtype=float)
_B = np.array([50, 60, 70, 60, 60, 50, 50, 80, 60, 70, 70, 80], dtype=float)
_C = np.array([10, 6, 4, 10, 1, 2, 6, 4, 9, 4, 5, 1], dtype=float)
_D = np.array([50, 60, 50, 70, 70, 60, 50, 50, 80, 50, 60, 70], dtype=float)
_XI1 = np.array([2, 3, 4, 1, 6, 1, 3, 6, 2, 10, 3, 4], dtype=float)
_XI2 = np.array([6, 5, 4, 3, 2, 8, 4, 6, 2, 0, 6, 0], dtype=float)


def a10e() -> ProductionEconomy:
    """A.10e: 7 firms, 40 consumers, a price player, 12 goods (see the module docstring)."""
    firms, consumers = 7, 40
    half = consumers // 2
    i1 = np.arange(1, half + 1, dtype=float)[:, None]
    i2 = np.arange(half + 1, consumers + 1, dtype=float)[:, None]
    weights = np.vstack([_A + i1 + firms, _C + i2 + firms])
    shifts = np.vstack([_B + 2 * (i1 + firms), _D + i2 + firms])
    endowments = np.vstack([np.tile(_XI1, (half, 1)), np.tile(_XI2, (half, 1))])
    radii = np.sqrt(10.0 * np.arange(1, firms + 1))
    return ProductionEconomy(Logarithmic(weights, shifts), endowments, radii, name="A.10e")
