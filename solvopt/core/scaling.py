"""What a family registers with the spine's scale and stop property tests.

A status must not depend on the data's units, and every stop must be honoured. The spine
cannot know how to rescale a family's data, nor which instance of it is slow, so each family
says so once, in its descriptor (:class:`solvopt.core.family.Family`):

- ``scale_cases = "module:function"``: ``function() -> list[ScaleCase]``. A case builds the
  family's model with its data multiplied by ``factor`` (in the way the family's docs state) and
  says how the objective moves (``objective_law``). The spine's test
  (``tests/test_scale_property.py``) solves each case for every listed method at factors
  10^k, k in [-12, 12], and checks the termination is the one at factor 1 and the objective
  follows the law.
- ``stop_cases = "module:function"``: ``function(folder) -> list[StopCase]``. A case writes a
  slow instance file into ``folder`` and names the CLI arguments that solve it; the spine's
  test (``tests/test_stop_property.py``) sends SIGINT after 1 s and checks the process exits
  within 1 s more with code 130 and its result row, and that ``--time-limit 1`` returns
  within 1.5 s.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScaleCase:
    """One small instance of a family and how it behaves under a change of units.

    ``build(factor)`` returns the model (with a ``.solve(method=..., **options)``) for the data
    scaled by ``factor``; ``objective_law(objective, factor)`` is the objective at ``factor``
    predicted from the objective at 1 (``lambda v, f: v * f`` for a linear law,
    ``lambda v, f: v`` when the objective is scale-free); ``methods`` are the methods to run
    (every method of the family that accepts this model); ``options`` go to ``solve``.
    """

    name: str
    build: Callable[[float], Any]
    objective_law: Callable[[float, float], float]
    methods: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    rtol: float = 1e-6                 # relative tolerance of the objective law


@dataclass(frozen=True)
class StopCase:
    """A slow instance for the stop test: ``write(folder)`` writes it and returns the CLI
    arguments after ``solvopt solve`` (the file path and any family flags); ``methods`` are
    the methods to run on it (each gets ``--method``)."""

    name: str
    write: Callable[[Any], list[str]]
    methods: tuple[str, ...]


def linear(objective: float, factor: float) -> float:
    """Objective law of a family whose objective is linear in the data."""
    return objective * factor


def invariant(objective: float, factor: float) -> float:
    """Objective law of a family whose objective does not depend on the data's scale."""
    return objective
