"""Compare giant tours (or route lists, or PyVRP solutions) under the same demand scenarios.

:func:`compare_tours` splits every candidate under the same scenarios (common random numbers:
the sampled demand of customer c in scenario w depends on (seed, w, c) only, so every tour
sees the same demands; a demand matrix is shared as is) and reports each tour's expected-cost
estimate and its *paired* difference against the best one::

    from solvopt.cvrp.compare import compare_tours
    table = compare_tours(inst, {"file order": None, "pyvrp": solution, "mine": my_routes},
                          scenarios=10_000, seed=1)
    print(table)                    # one line per tour, differences with 95% intervals
    table.to_frame()                # a pandas DataFrame (when pandas is installed)

Pairing is what makes the comparison sharp: the cost of two similar tours moves together from
scenario to scenario, so the standard error of the mean of the per-scenario differences is
usually far below the unpaired ``sqrt(se_a^2 + se_b^2)`` (both are in the table).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from solvopt.core.chunks import Z95
from solvopt.core.errors import ModelError
from solvopt.core.result import require_pandas
from solvopt.dsl.split import StochasticSplit, route_lists, tour_from_routes, validate_tour

COLUMNS = ("tour", "mean", "std_error", "ci95_low", "ci95_high", "diff", "diff_std_error", "diff_ci95_low",
           "diff_ci95_high", "unpaired_std_error", "best", "deterministic")


class TourComparison(list):
    """One record (a dict, keys :data:`COLUMNS`) per tour, in the order given; ``__str__`` is a table.

    ``diff`` is the tour's mean minus the best tour's over the same scenarios, ``diff_std_error``
    the standard error of the per-scenario differences (paired), ``diff_ci95_low/high`` its 95%
    interval (normal, ``Z95``); ``unpaired_std_error`` is what the interval would use without
    common random numbers. ``deterministic``: the split at the mean demands (None when infeasible).
    Attributes: ``best`` (the name of the least mean), ``best_index``, ``tours`` (the giant tours),
    ``costs`` ((tours, scenarios) per-scenario costs, inf = infeasible), ``scenarios``,
    ``feasible_scenarios`` (those all tours share), ``seed``, ``results`` (each tour's Result).
    """

    def __init__(self, records, *, best_index, tours, costs, seed, results):
        super().__init__(records)
        self.best_index = best_index
        self.best = records[best_index]["tour"]
        self.tours = tours
        self.costs = costs
        self.scenarios = int(costs.shape[1])
        self.feasible_scenarios = int(np.all(np.isfinite(costs), axis=0).sum())
        self.seed = seed
        self.results = results

    @property
    def best_tour(self) -> np.ndarray:
        return self.tours[self.best_index]

    def to_frame(self):
        """The records as a pandas DataFrame indexed by tour name (needs pandas)."""
        return require_pandas("TourComparison.to_frame").DataFrame(list(self), columns=COLUMNS).set_index("tour")

    def __str__(self) -> str:
        def num(x, sign=False):
            if x is None:
                return "-"
            return f"{x:+.6g}" if sign else f"{x:.6g}"
        header = ["tour", "mean", "+-95%", "diff vs best", "+-95% paired", "+-95% unpaired", "deterministic"]
        rows = []
        for r in self:
            half = None if r["std_error"] is None else Z95 * r["std_error"]
            dhalf = None if r["diff_std_error"] is None else Z95 * r["diff_std_error"]
            uhalf = None if r["unpaired_std_error"] is None else Z95 * r["unpaired_std_error"]
            rows.append([str(r["tour"]) + (" *" if r["best"] else ""), num(r["mean"]), num(half),
                         "0 (best)" if r["best"] else num(r["diff"], sign=True), num(dhalf), num(uhalf),
                         num(r["deterministic"])])
        widths = [max(len(x[i]) for x in [header] + rows) for i in range(len(header))]
        lines = [f"{len(self)} tours, the same {self.scenarios:,} scenarios (seed {self.seed}; "
                 f"{self.feasible_scenarios:,} feasible for every tour); * = least mean; differences paired"]
        for row in [header] + rows:
            lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<TourComparison of {len(self)} tours, best {self.best!r}>\n{self}"


def _is_routes(item) -> bool:
    """A route list (a sequence of sequences), a PyVRP Solution, a read .sol or a split's Result."""
    if callable(getattr(item, "routes", None)):
        return True
    if isinstance(getattr(item, "data", None), dict) and "routes" in item.data:
        return True
    if isinstance(getattr(item, "solution", None), dict) and "routes" in item.solution:
        return True
    if isinstance(item, (str, bytes, np.ndarray)) or not hasattr(item, "__iter__"):
        return False
    items = list(item)
    return bool(items) and all(hasattr(r, "__iter__") and not isinstance(r, (str, bytes)) for r in items)


def giant_tour(item, n_nodes: int) -> np.ndarray:
    """A candidate as a giant tour: None / "identity" (file order), a tour, routes, or a PyVRP Solution."""
    if item is None or (isinstance(item, str) and item == "identity"):
        return np.arange(1, n_nodes, dtype=np.int64)
    if _is_routes(item):
        return tour_from_routes(route_lists(item), n_nodes)
    return validate_tour(item, n_nodes)


def _stats(values: np.ndarray):
    """Mean, standard error (None with fewer than two values)."""
    n = values.shape[0]
    mean = float(values.mean()) if n else None
    se = float(values.std(ddof=1) / math.sqrt(n)) if n >= 2 else None
    return mean, se


def compare_tours(instance, tours, *, scenarios=None, seed: int = 0, policy: str | None = None,
                  penalty: float | None = None, method: str | None = None, **options) -> TourComparison:
    """Each tour's expected split cost under the same scenarios, and its paired difference to the best.

    ``instance``: a CVRP instance (:func:`solvopt.io.read_instance`) or its data dict, or a
    :class:`~solvopt.dsl.split.StochasticSplit` whose data, scenarios, policy and penalty are
    reused. ``tours``: a mapping name -> candidate, or a sequence of candidates (named ``tour 0``,
    ``tour 1``, ...); a candidate is a giant tour (customer ids), a list of routes (VRPLIB
    numbering, depot 0), a PyVRP ``Solution`` (``.routes()`` of ``.visits()``), a CVRPLIB
    solution read by ``read_instance``, or None (file order). ``scenarios``: a count of Poisson
    scenarios (default 10,000) or an (S, N-1) demand matrix. ``seed``: the one seed every tour
    is solved with (that is what makes the scenarios common). ``options`` go to every solve
    (``threads``, ``chunk``, ``device``, ...).

    Every tour's per-scenario costs are kept (``keep_costs``): memory is 8 bytes x tours x S.
    Statistics are over the scenarios feasible for every tour (with ``policy="infeasible"`` a
    scenario is infeasible when one customer's demand exceeds the capacity, whatever the tour).
    """
    if isinstance(instance, StochasticSplit):
        if scenarios is not None or policy is not None or penalty is not None:
            raise ModelError("compare_tours: scenarios, policy and penalty come from the StochasticSplit given; "
                             "pass an instance to set them here")
        base = instance
    else:
        kwargs = {k: v for k, v in (("policy", policy), ("penalty", penalty)) if v is not None}
        base = StochasticSplit.from_instance(instance, scenarios=10_000 if scenarios is None else scenarios,
                                             **kwargs)
    if "keep_costs" in options:
        raise ModelError("compare_tours keeps every scenario's cost itself (option keep_costs is not taken)")
    if isinstance(tours, Mapping):
        names, items = [str(k) for k in tours], list(tours.values())
    elif isinstance(tours, (str, bytes)) or not hasattr(tours, "__iter__"):
        raise ModelError("tours must be a list of candidates or a mapping name -> candidate, "
                         f"got {type(tours).__name__}")
    else:
        items = list(tours)
        names = [f"tour {i}" for i in range(len(items))]
    if not items:
        raise ModelError("compare_tours needs at least one tour")
    n_nodes = base.distances.shape[0]
    giant = []
    for name, item in zip(names, items):
        try:
            giant.append(giant_tour(item, n_nodes))
        except ModelError as exc:
            raise ModelError(f"compare_tours: {name}: {exc}") from None

    results, runs = [], []
    for tour in giant:
        result = base.with_tour(tour).solve(method, seed=seed, keep_costs=True, **options)
        results.append(result)
        runs.append(np.asarray(result.solution.get("scenario_costs", np.zeros(0)), dtype=np.float64))
    done = min(c.shape[0] for c in runs)           # a time limit may stop runs early: the common prefix
    costs = np.stack([c[:done] for c in runs])
    common = np.all(np.isfinite(costs), axis=0)
    if not np.any(common):
        raise ModelError("compare_tours: no scenario is feasible (a customer's demand exceeds the capacity in every "
                         "scenario; use policy='penalty')")
    feasible = costs[:, common]
    stats = [_stats(row) for row in feasible]
    best = int(np.argmin([m for m, _ in stats]))
    records = []
    for i, (name, (mean, se)) in enumerate(zip(names, stats)):
        dmean, dse = _stats(feasible[i] - feasible[best])
        if i == best:
            dmean, dse = 0.0, (0.0 if se is not None else None)
        unpaired = None if se is None else (0.0 if i == best else math.sqrt(se ** 2 + stats[best][1] ** 2))
        records.append({
            "tour": name, "mean": mean, "std_error": se,
            "ci95_low": None if se is None else mean - Z95 * se,
            "ci95_high": None if se is None else mean + Z95 * se,
            "diff": dmean, "diff_std_error": dse,
            "diff_ci95_low": None if dse is None else dmean - Z95 * dse,
            "diff_ci95_high": None if dse is None else dmean + Z95 * dse,
            "unpaired_std_error": unpaired, "best": i == best,
            "deterministic": results[i].solution.get("deterministic_objective")})
    return TourComparison(records, best_index=best, tours=giant, costs=costs, seed=seed, results=results)
