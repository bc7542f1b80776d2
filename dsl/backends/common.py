"""The ending every backend shares: solver numbers into one Result, infinities and statuses alike."""
from __future__ import annotations

import math

from solvopt.core.result import Result, SolutionStatus, Termination, relative_gap

from ..standard_form import StandardForm


def backend_result(sf: StandardForm, termination: Termination, *, holds_point: bool, objective, bound,
                   solution: dict, stats: dict, message: str, infinity: float = math.inf) -> Result:
    """Build the Result of a solve of ``sf``.

    A bound at or beyond the backend's ``infinity`` becomes -inf (+inf when maximising), an
    unbounded model's objective becomes -inf (+inf), and the solution status says whether a
    point is held (``holds_point``) or proven optimal.
    """
    if bound is not None and abs(bound) >= infinity:
        bound = -math.inf * sf.sense
    if termination is Termination.UNBOUNDED:
        objective = -math.inf * sf.sense   # whatever point the backend holds, the objective is unbounded
    if termination is Termination.OPTIMAL:
        status = SolutionStatus.OPTIMAL
    elif holds_point:
        status = SolutionStatus.FEASIBLE
    else:
        status = SolutionStatus.NONE
    return Result(termination, status, objective=objective, bound=bound,
                  gap=relative_gap(objective, bound, sf.sense), solution=solution, stats=stats, message=message)
