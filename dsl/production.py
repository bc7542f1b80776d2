"""Arrow-Debreu economies with production: consumers, firms and a price player.

A :class:`ProductionEconomy` is the pseudo-game of

- n consumers: consumer k maximises u_k(x_k) over {x_k >= 0, p.x_k <= p.e_k + sum_f theta_kf p.y_f}
  (its endowment's value plus its shares of the firms' profits);
- F firms: firm f maximises its profit p.y_f over its technology {y >= 0, ||y||_2 <= r_f} (a ball
  technology: convex, strictly so on its boundary, so supply is single-valued: y_f = r_f p / ||p||);
- a price player: prices p on the simplex {p >= 0, sum p = 1} maximise the value of excess demand
  p.(sum_k x_k - sum_f y_f - sum_k e_k).

The equilibrium sought is a generalized Nash equilibrium of these n + F + 1 players (the consumers'
budget sets move with the prices and, through the shares, with the firms' outputs). ``profit_shares``
theta (n x F, each firm's column summing to at most 1) says who receives the profits; its default,
no one (theta = 0), is the reading of the Facchinei-Kanzow test library (problem A.10). Where
profits are not fully paid out, the consumers spend less than the economy's total value, so at an
equilibrium every good (all are priced: the utilities are strictly increasing) has the same excess
supply, equal to the unpaid profit; with theta's columns summing to 1 markets clear exactly.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from solvopt.core.errors import ModelError

from .arrays import FloatArray
from .family import FamilyModel
from .games import _endowments, _positive_vector, _real
from .utilities import UtilityForm


class ProductionEconomy(FamilyModel):
    """Consumers (a utility form with one row per consumer, endowments e (n, m)), firms with ball
    technologies of radii r (F,) and profit shares theta (n, F); see the module docstring."""

    family = "games"
    default_method = "production-root"

    def __init__(self, utility: UtilityForm, endowments: Any, radii: Any, profit_shares: Any = None,
                 name: str = "production_economy"):
        if not isinstance(utility, UtilityForm) or len(utility.shape) != 2:
            raise ModelError("an economy's utility is a library form with parameters of shape (consumers, goods)")
        if utility.kind == "linear":
            raise ModelError("linear utilities have set-valued demands; production-root needs single-valued ones")
        e = _endowments(endowments, utility)
        if np.any(e.sum(axis=1) <= 0):
            raise ModelError("every consumer needs a positive endowment")
        r = _positive_vector(np.atleast_1d(_real(radii, "firm radii")), "firm radii", allow_zero=True)
        n = utility.shape[0]
        if profit_shares is None:
            theta: FloatArray = np.zeros((n, r.size))
        else:
            theta = _real(profit_shares, "profit shares")
            if theta.shape != (n, r.size):
                raise ModelError(f"profit shares must have shape {(n, r.size)}, got {theta.shape}")
            if not np.all(np.isfinite(theta)) or np.any(theta < 0):
                raise ModelError("profit shares must be finite and >= 0")
            if np.any(theta.sum(axis=0) > 1.0 + 1e-12):
                raise ModelError("each firm's profit shares must sum to at most 1")
        self.utility, self.endowments, self.radii, self.profit_shares, self.name = utility, e, r, theta, name

    @property
    def shape(self) -> tuple[int, int, int]:
        """(consumers, firms, goods)."""
        n, m = self.utility.shape
        return n, self.radii.size, m

    def supply(self, p: Any) -> FloatArray:
        """The firms' exact best responses at prices p >= 0, p != 0: y_f = r_f p / ||p|| (F, m)."""
        p = np.asarray(p, dtype=float)
        y: FloatArray = np.outer(self.radii, p / np.linalg.norm(p))
        return y

    def budgets(self, p: Any, y: Any) -> FloatArray:
        """The consumers' budgets p.e_k + sum_f theta_kf p.y_f at prices p and outputs y (F, m)."""
        p = np.asarray(p, dtype=float)
        b: FloatArray = self.endowments @ p + self.profit_shares @ (np.asarray(y, dtype=float) @ p)
        return b
