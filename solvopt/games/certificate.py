"""What every certificate of an equilibrium shares: the Exploitability record, the concavity check, joint deviations.

:mod:`solvopt.games.exploitability` (best responses) and :mod:`solvopt.games.convex_constraints`
(Lagrangian bounds under nonlinear constraints) both build on these; this module imports neither.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvopt.core.errors import ModelError

from .projection import FEAS_TOL

CONCAVITY_TOL = 1e-9     # relative slack of the concavity (supergradient) check below
CONCAVITY_FLOOR = 1e-11  # absolute slack: rounding inside u where its terms cancel (payoffs are ~1 in the
                         # solvers' normalised frame, so this is relative to the payoff scale there)


def check_concave(fx: float, gx, fy: float, d, who: str = "a utility") -> None:
    """Refuse a utility that breaks its own linearisation: concavity means u(y) <= u(x) + g(x).(y - x).

    ``d = y - x``. Checked along the iterates of the best responses (every accepted step and the
    certificate's points): a convex utility, or a gradient with the wrong sign, fails it at the
    first move, and the certificates (which rely on concavity) would otherwise be wrong. The slack
    is 1e-9 of the magnitudes involved plus 1e-11; the solvers call it on the game divided by its
    payoff scale, so there it does not depend on the payoffs' units.
    """
    lin = float(np.dot(gx, d))
    excess = fy - fx - lin
    if excess > CONCAVITY_TOL * (abs(fx) + abs(fy) + abs(lin)) + CONCAVITY_FLOOR:
        raise ModelError(f"{who} is not concave in its own action, or its gradient is wrong: u(y) exceeds "
                         f"u(x) + grad u(x).(y - x) by {excess:.3g} (concavity and exact gradients are required)")


@dataclass
class Exploitability:
    """A certified exploitability: ``value`` (upper bound) >= phi(a) >= ``lower``, per player too."""

    value: float
    lower: float
    per_player: np.ndarray
    responses: list = field(default_factory=list)
    violation: float = 0.0         # how far a is outside its own feasible set (0: feasible)

    @property
    def certified(self) -> bool:
        return self.violation <= FEAS_TOL


def with_block(a, cols, b):
    """A copy of the joint action ``a`` with the entries ``cols`` replaced by ``b`` (one player's deviation)."""
    out = a.copy()
    out[cols] = b
    return out


def joint_value(game, a, b) -> float:
    """sum_i u_i(b_i, a_-i)."""
    return sum(u.value(with_block(a, cols, b[cols])) for cols, u in zip(game.blocks, game.utilities))


def joint_gradient(game, a, b) -> np.ndarray:
    """(grad_{b_i} u_i(b_i, a_-i))_i."""
    out = np.empty(game.n)
    for cols, u in zip(game.blocks, game.utilities):
        out[cols] = u.gradient(with_block(a, cols, b[cols]))[cols]
    return out
