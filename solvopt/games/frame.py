"""The unit frame of a static pseudo-game: actions measured in their own ranges, payoffs near 1.

A user's game comes in any units: actions in metres or micrometres, payoffs in euros or
millions. Every absolute test inside the methods (a row counted as feasible within 1e-9, a
projection's accuracy, a step size) must see the same numbers whatever the units, or a status
changes with them. So the methods solve the game in its unit frame:

- each action a_j is measured in its width w_j: the range ub_j - lb_j where both bounds are
  finite, else the largest finite bound's magnitude, else the start's |a_j|, else 1 (an action
  with no finite bound and a zero start has no scale of its own: its user units are kept);
- each linear row is divided by its largest coefficient in that frame;
- every payoff is divided by the payoff scale S (:func:`payoff_scale`, measured in that frame at
  the start).

For library forms and callables S is a gradient, so a start near a singularity (a price
S^(-1/gamma) near S = 0) inflates it. The iterations keep the start's frame, but the status of a
returned point is settled on :meth:`UnitFrame.status_scale`: the smaller of the start's scale and
the scale measured at that point, which no start can inflate.

The change of variables a = w * z maps equilibria to equilibria, and the exploitability and the
VE gap (payoffs) are the same numbers in both frames up to the factor S, which the methods
multiply back. Multiplying the actions' units or the payoffs' units by 10^k leaves the frame's
game, the iterates and the status unchanged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import ModelError

from .exploitability import Exploitability


def action_widths(game, a) -> np.ndarray:
    """w_j > 0 per action: the finite range, else the largest finite bound, else |a_j|, else 1."""
    lb, ub = np.asarray(game.lb, dtype=float), np.asarray(game.ub, dtype=float)
    finite_lb, finite_ub = np.isfinite(lb), np.isfinite(ub)
    w = np.where(finite_lb & finite_ub, ub - lb, 0.0)
    bound = np.maximum(np.where(finite_lb, np.abs(lb), 0.0), np.where(finite_ub, np.abs(ub), 0.0))
    w = np.where(w > 0, w, bound)
    w = np.where(w > 0, w, np.abs(np.asarray(a, dtype=float)))
    return np.where(np.isfinite(w) & (w > 0), w, 1.0)


def payoff_scale(game, a) -> float:
    """The game's own payoff scale S > 0: what its exploitability and statuses are measured against.

    The largest magnitude among the quadratic utilities' coefficients (|Q|, |c|) and, for library
    forms and callables, the largest gradient entry at ``a`` (their value there if every gradient
    vanishes; 1 if that is 0 too). The methods take it in the unit frame (actions in their widths),
    where it is the largest change of a payoff along one action's range: multiplying every utility
    by f multiplies S by f, and changing the actions' units leaves it as it is.
    """
    top = 0.0
    for u in game.utilities:
        if u.quadratic:
            top = max(top, float(np.abs(u.Q.data).max(initial=0.0)), float(np.abs(u.c).max(initial=0.0)))
        else:
            top = max(top, float(np.abs(u.gradient(a)).max(initial=0.0)))
    if not (np.isfinite(top) and top > 0.0):
        top = max((abs(u.value(a)) for u in game.utilities), default=0.0)
    return top if np.isfinite(top) and top > 0.0 else 1.0


class _Framed:
    """A library-form or callable utility in the unit frame: u(w * z) * f, gradient w * grad u(w * z) * f."""

    quadratic = False

    def __init__(self, u: Any, widths: np.ndarray, factor: float):
        self.u, self.widths, self.factor = u, widths, factor

    def value(self, z):
        return self.u.value(self.widths * z) * self.factor

    def gradient(self, z):
        return self.u.gradient(self.widths * z) * self.widths * self.factor


def _framed_utilities(game, widths: np.ndarray, factor: float) -> list:
    from solvopt.dsl.games import QuadraticUtility
    W = sp.diags(widths)
    return [QuadraticUtility(sp.csr_matrix(W @ u.Q @ W) * factor, u.c * widths * factor, u.k * factor)
            if u.quadratic else _Framed(u, widths, factor) for u in game.utilities]


@dataclass
class UnitFrame:
    """A game in its unit frame (``game``), with the maps between the frames and the payoff scale."""

    game: Any
    widths: np.ndarray
    scale: float

    @classmethod
    def of(cls, user, a) -> UnitFrame:
        """The unit frame of ``user`` (its GameData), with widths and payoff scale measured at start ``a``."""
        widths = action_widths(user, a)
        A = sp.csr_matrix(user.A @ sp.diags(widths)) if user.A.shape[0] else sp.csr_matrix(user.A, dtype=float)
        rows = np.abs(A).max(axis=1).toarray().ravel() if A.shape[0] else np.zeros(0)
        rows = np.where(np.isfinite(rows) & (rows > 0), rows, 1.0)
        A = sp.csr_matrix(sp.diags(1.0 / rows) @ A) if A.shape[0] else A
        unscaled = dataclasses.replace(user, utilities=_framed_utilities(user, widths, 1.0),
                                       lb=user.lb / widths, ub=user.ub / widths, A=A,
                                       lo=user.lo / rows, hi=user.hi / rows)
        scale = payoff_scale(unscaled, a / widths)
        game = dataclasses.replace(unscaled, utilities=_framed_utilities(user, widths, 1.0 / scale))
        return cls(game, widths, scale)

    def status_scale(self, z) -> float:
        """The scale a point ``z`` of the frame is judged against: min(S at the start, S at z), in the user's
        payoff units. Both scale with the payoffs and ignore the actions' units, and so does the minimum;
        a point where S cannot be measured (a utility undefined there) keeps the start's."""
        try:
            here = payoff_scale(self.game, np.asarray(z, dtype=float))     # S(z) / S(start): the frame is divided by S
        except (ArithmeticError, ValueError, ModelError):
            return self.scale
        return self.scale * min(1.0, here) if np.isfinite(here) and here > 0.0 else self.scale

    def to_unit(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(a, dtype=float) / self.widths

    def to_user(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(z, dtype=float) * self.widths

    def in_user_units(self, e: Exploitability) -> Exploitability:
        """A certified exploitability of the frame's game, back in the user's payoff units (the
        best responses back in the user's action units)."""
        responses = [r * self.widths[cols] for r, cols in zip(e.responses, self.game.blocks)] \
            if e.responses is not None and len(e.responses) == len(self.game.blocks) else e.responses
        return Exploitability(e.value * self.scale, e.lower * self.scale, e.per_player * self.scale, responses,
                              e.violation)
