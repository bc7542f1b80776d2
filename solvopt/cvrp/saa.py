"""First-stage use of the stochastic split: pick the best of many giant tours by SAA.

Every candidate tour is evaluated under the same scenarios (common random numbers: the
sampled demand of customer c in scenario w depends on (seed, w, c) only, not on the tour;
a demand matrix is shared as is), so differences between tours are not blurred by different
samples. Embed it in a tour-improvement loop::

    from solvopt.cvrp.saa import evaluate_tours
    inst = read_instance("X-n101-k25.vrp")
    tours = [np.arange(1, 101), rng.permutation(np.arange(1, 101)), ...]
    best = evaluate_tours(inst, tours, scenarios=100_000, seed=1)
    best.best_tour, best.estimates[best.best_index]["ci95"]
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dsl.split import StochasticSplit


@dataclass
class TourEvaluation:
    """SAA estimates of candidate tours under common scenarios, and the best one (least mean)."""

    estimates: list[dict]
    best_index: int
    best_tour: np.ndarray
    results: list = field(default_factory=list)

    @property
    def means(self) -> np.ndarray:
        return np.array([e.get("mean", np.inf) for e in self.estimates])


def evaluate_tours(instance_or_model, tours, *, scenarios=10_000, method: str | None = None,
                   **options) -> TourEvaluation:
    """Evaluate each giant tour in ``tours`` under the same demand scenarios; keep the best.

    ``instance_or_model``: a CVRP :class:`~solvopt.io.base.Instance` (or its data dict), or a
    :class:`~solvopt.dsl.split.StochasticSplit` whose data, scenarios, policy and penalty are
    reused. ``scenarios`` (a count or an (S, n) matrix) applies to an instance only.
    ``options`` go to every solve (``seed``, ``threads``, ``device``, ...); the same seed for
    every tour is what makes the numbers common.
    """
    if isinstance(instance_or_model, StochasticSplit):
        base = instance_or_model
    else:
        base = StochasticSplit.from_instance(instance_or_model, scenarios=scenarios)
    tours = list(tours)
    if not tours:
        raise ModelError("evaluate_tours needs at least one tour")
    results, estimates = [], []
    for tour in tours:
        result = base.with_tour(tour).solve(method, **options)
        results.append(result)
        estimates.append(dict(result.solution, termination=result.termination.value))
    means = np.array([e.get("mean", np.inf) for e in estimates])
    if not np.any(np.isfinite(means)):
        raise ModelError("no candidate tour has a feasible scenario")
    best = int(np.argmin(means))
    return TourEvaluation(estimates=estimates, best_index=best, best_tour=np.asarray(estimates[best]["tour"]),
                          results=results)
