"""Games of one-variable players whose utilities need not be concave in their own action.

A :class:`ScalarGame` has players that each choose one number x_i in [lb_i, ub_i] and maximise a
utility u_i(x) of the joint action x, subject to linear rows lo <= a.x <= hi that bind some of the
players (each binding player's own coefficient must be nonzero; the others' actions enter as
data). Player i's feasible set given the others is then an interval [L_i(x_-i), U_i(x_-i)], and a
generalized Nash equilibrium in the proper sense needs each x_i to be a *global* maximiser of u_i
over it: with utilities that are not concave in the own action, first-order (KKT) conditions do
not say that. The default method ``scalar-global`` proves global best responses by branch and
bound on the interval (:mod:`solvopt.games.scalar_global`), for which every player states how its
utility's derivative in its own action can be bounded on a subinterval: ``derivative_range(x, l,
r)`` returning an enclosure (d_lo, d_hi) of du_i/dx_i over x_i in [l, r] (the others at x), or
``curvature(x, l, r)``, a bound on |d^2 u_i / dx_i^2| there (with the exact ``derivative``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvopt.core.errors import ModelError

from .family import FamilyModel


@dataclass
class ScalarPlayer:
    name: str
    lb: float
    ub: float
    utility: Callable[[np.ndarray], float]
    derivative: Callable[[np.ndarray], float]
    derivative_range: Callable[[np.ndarray, float, float], tuple[float, float]] | None = None
    curvature: Callable[[np.ndarray, float, float], float] | None = None


@dataclass
class ScalarRow:
    coefficients: np.ndarray
    lo: float
    hi: float
    players: tuple[int, ...]


class ScalarGame(FamilyModel):
    """One-variable players with utilities of the joint action, not necessarily concave (see the module doc)."""

    family = "games"
    default_method = "scalar-global"

    def __init__(self, name: str = "scalar_game"):
        self.name = name
        self.players: list[ScalarPlayer] = []
        self.rows: list[ScalarRow] = []

    @property
    def n(self) -> int:
        return len(self.players)

    def player(self, name: str, lb: float, ub: float, utility: Callable[[np.ndarray], float],
               derivative: Callable[[np.ndarray], float], *,
               derivative_range: Callable[[np.ndarray, float, float], tuple[float, float]] | None = None,
               curvature: Callable[[np.ndarray, float, float], float] | None = None) -> int:
        """Add a player choosing x_i in [lb, ub] (finite) to maximise ``utility(x)``; returns its index."""
        lb, ub = float(lb), float(ub)
        if not (np.isfinite(lb) and np.isfinite(ub)) or lb > ub:
            raise ModelError(f"player {name!r}: bounds must be finite with lb <= ub, got [{lb}, {ub}]")
        if not (callable(utility) and callable(derivative)):
            raise ModelError(f"player {name!r}: utility and derivative must be callables of the joint action")
        if (derivative_range is None) == (curvature is None):
            raise ModelError(f"player {name!r}: give exactly one of derivative_range and curvature (what bounds "
                             "its utility between sample points, so that its best response is proven global)")
        if any(p.name == name for p in self.players):
            raise ModelError(f"player {name!r} is already in the game")
        self.players.append(ScalarPlayer(name, lb, ub, utility, derivative, derivative_range, curvature))
        return self.n - 1

    def constrain(self, players: int | list[int] | tuple[int, ...], coefficients: Any, lo: float = -np.inf,
                  hi: float = np.inf) -> None:
        """lo <= coefficients . x <= hi, binding ``players`` (an index or a list; each needs a nonzero
        coefficient); the coefficients span every player added so far and later ones get 0."""
        a = np.asarray(coefficients, dtype=float).ravel()
        owners: tuple[int, ...] = (int(players),) if isinstance(players, (int, np.integer)) \
            else tuple(int(i) for i in players)
        if a.size != self.n or not np.all(np.isfinite(a)):
            raise ModelError(f"a row needs {self.n} finite coefficients (one per player), got {a.size}")
        lo, hi = float(lo), float(hi)
        if np.isnan(lo) or np.isnan(hi) or lo > hi or lo == np.inf or hi == -np.inf:
            raise ModelError(f"a row needs lo <= hi, got [{lo}, {hi}]")
        for i in owners:
            if not 0 <= i < self.n:
                raise ModelError(f"no player {i} (the game has {self.n})")
            if a[i] == 0:
                raise ModelError(f"player {self.players[i].name!r} has coefficient 0 in a row that binds it")
        self.rows.append(ScalarRow(a, lo, hi, owners))

    def coefficients(self, row: ScalarRow) -> np.ndarray:
        """The row's coefficients padded to the current number of players."""
        return np.concatenate([row.coefficients, np.zeros(self.n - row.coefficients.size)])

    def interval(self, i: int, x: Any) -> tuple[float, float]:
        """Player i's feasible interval [L, U] given the others' actions in x (L > U: empty)."""
        x = np.asarray(x, dtype=float)
        lo, hi = self.players[i].lb, self.players[i].ub
        for row in self.rows:
            if i not in row.players:
                continue
            a = self.coefficients(row)
            rest = float(a @ x - a[i] * x[i])
            ends = sorted(((row.lo - rest) / a[i], (row.hi - rest) / a[i]))
            lo, hi = max(lo, ends[0]), min(hi, ends[1])
        return lo, hi

    def start(self) -> np.ndarray:
        """The midpoints of the bounds."""
        return np.array([0.5 * (p.lb + p.ub) for p in self.players])
