"""One gap rule for every backend: what OPTIMAL, FEASIBLE_WITHIN_GAP and the limits mean.

A solver reports its incumbent objective, its certified bound and why it stopped; :func:`settle`
turns that into the termination and solution status, the same way for HiGHS, SCIP, Gurobi, bnb
and sbb:

- OPTIMAL only when the proven gap is within the default tolerance (relative
  :data:`~solvopt.core.options.DEFAULT_REL_GAP` = 1e-6 or absolute
  :data:`~solvopt.core.options.DEFAULT_ABS_GAP` = 1e-9), whatever looser ``rel_gap`` the user
  asked to stop at;
- FEASIBLE_WITHIN_GAP when the search stopped because the user's (looser) gap was reached;
- TIME_LIMIT / ITERATION_LIMIT / INTERRUPTED when stopped for that reason, with the incumbent
  (solution status FEASIBLE) if there is one — unless the gap is closed anyway, then OPTIMAL;
- INFEASIBLE / UNBOUNDED: solution status NONE (an unbounded model holds no optimal point to
  report; the objective is +-inf).

**Scale.** Both tolerances are applied in the family's normalised frame: a family passes
``scale``, the data's own scale of the objective (k-HC: its unit cost; transport: total mass
times the distance scale to the p; games: the payoff scale), and the rule is applied to
``objective / scale`` and ``bound / scale``. Multiplying the data by 10^k then multiplies
``scale`` and the objective alike and leaves the status unchanged.
"""
from __future__ import annotations

import math
from typing import overload

from .options import DEFAULT_ABS_GAP, DEFAULT_REL_GAP
from .result import SolutionStatus, Termination, relative_gap

STOP_REASONS = (Termination.TIME_LIMIT, Termination.ITERATION_LIMIT, Termination.INTERRUPTED)


@overload
def normalise(value: float, scale: float) -> float: ...
@overload
def normalise(value: float | None, scale: float) -> float | None: ...
def normalise(value: float | None, scale: float) -> float | None:
    """``value / scale`` (None stays None); the frame in which a status is settled."""
    check_scale(scale)
    return None if value is None else value / scale


def check_scale(scale: float) -> None:
    """A family's objective scale must be a positive finite number."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"a status scale must be positive and finite, got {scale!r}")


def within_default_tolerance(objective: float | None, bound: float | None, sense: int = 1,
                             scale: float = 1.0) -> bool:
    """True when the proven gap is within the default tolerance (relative or absolute).

    ``scale`` is the data's own scale of the objective: the rule is applied to
    ``objective / scale`` and ``bound / scale`` (see the module docstring).
    """
    if objective is None or bound is None or not (math.isfinite(objective) and math.isfinite(bound)):
        return False
    obj, bnd = normalise(objective, scale), normalise(bound, scale)
    if not (math.isfinite(obj) and math.isfinite(bnd)):
        return False
    diff = max(0.0, sense * (obj - bnd))
    return diff <= DEFAULT_ABS_GAP or relative_gap(obj, bnd, sense) <= DEFAULT_REL_GAP


def settle(objective: float | None, bound: float | None, *, has_solution: bool, stopped: Termination | None = None,
           sense: int = 1, scale: float = 1.0) -> tuple[Termination, SolutionStatus, float | None]:
    """(termination, solution status, gap) from the incumbent, the certified bound and the stop reason.

    ``stopped`` is None when the search finished by its own criterion (the gap target, or
    the tree exhausted), or the reason it was cut short (TIME_LIMIT, ITERATION_LIMIT,
    INTERRUPTED), or INFEASIBLE / UNBOUNDED / NUMERICAL_ERROR / ERROR as found.
    """
    if stopped in (Termination.INFEASIBLE, Termination.NUMERICAL_ERROR, Termination.ERROR):
        feasible = has_solution and stopped is not Termination.INFEASIBLE
        status = SolutionStatus.FEASIBLE if feasible else SolutionStatus.NONE
        return stopped, status, None
    if stopped is Termination.UNBOUNDED:
        return Termination.UNBOUNDED, SolutionStatus.NONE, None
    gap = relative_gap(normalise(objective, scale), normalise(bound, scale), sense) if has_solution else None
    if has_solution and within_default_tolerance(objective, bound, sense, scale):
        return Termination.OPTIMAL, SolutionStatus.OPTIMAL, gap
    if stopped in STOP_REASONS:
        return stopped, SolutionStatus.FEASIBLE if has_solution else SolutionStatus.NONE, gap
    if not has_solution:
        # finished without a point and without proving infeasibility: say so, do not guess
        return Termination.ERROR, SolutionStatus.NONE, None
    return Termination.FEASIBLE_WITHIN_GAP, SolutionStatus.FEASIBLE, gap
