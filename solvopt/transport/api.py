"""Transport in one call, the way POT users write it: :func:`wasserstein`, :func:`emd2` and :func:`emd`.

- ``wasserstein(x, y, p=2)`` is W_p itself (the p-th root taken), between point sets;
- ``emd2(a, b, M)`` is POT's ``ot.emd2(a, b, M)``: the optimal cost min <P, M> over the plans P
  with marginals a and b, M a ready cost matrix (not raised to any power): for M = squared
  euclidean distances it is W_2 squared;
- ``emd(a, b, M)`` is POT's ``ot.emd(a, b, M)``: an optimal plan itself, as a dense array.

All three build a :class:`~solvopt.dsl.transport.Transport` model and solve it; ``return_result=True``
also gives the :class:`~solvopt.core.result.Result` (its status, bound, plan and stats).
"""
from __future__ import annotations

import numpy as np

from solvopt.dsl.transport import Transport


def _masses(w):
    """None for a missing or empty weight vector (POT's ``[]``: uniform)."""
    if w is None:
        return None
    arr = np.asarray(w)
    return None if arr.size == 0 else w


def wasserstein(x, y, p=2, a=None, b=None, method: str = "auto", metric="euclidean",
                return_result: bool = False, **options):
    """W_p between the points x (n, d) and y (m, d) with masses a, b (uniform when None).

    ``p`` in [1, inf] (``"inf"``: the bottleneck distance); ``method`` "auto" (the default: the
    exact quantile formula on the line, ``exact`` up to the measured crossover, ``approx`` beyond,
    see ``solvopt methods --family transport``) or any transport method; ``options`` go to
    ``solve``. Returns W_p as a float (the objective of the returned plan: the optimum when the
    status is optimal, within the stated factor otherwise), or (W_p, Result) with
    ``return_result=True``. Small inputs that ``auto`` (or ``exact``) solves exactly, with no option
    and no Result asked for, skip the model, the Result and the registry
    (:mod:`solvopt.transport.small`: one kernel call where the input is plainly valid); their value is
    still the certified optimum, and anything else falls back to the full solve.

    POT's ``ot.emd2(a, b, ot.dist(x, y))`` is ``wasserstein(x, y, 2, a, b) ** 2`` (for masses of
    total 1); ``ot.wasserstein_1d(x, y, a, b, p)`` is ``wasserstein(x, y, p, a, b) ** p``.
    """
    if method in ("auto", "exact") and not return_result and not options:
        from solvopt.transport.small import certified_points
        found = certified_points(x, y, a, b, p, metric)      # small plain inputs: one kernel call
        if found is not None:
            return found[0]
    model = Transport(x, y, a=_masses(a), b=_masses(b), p=p, metric=metric)
    if method == "auto" and not return_result and not options:
        value = _small_exact(model)
        if value is not None:
            return value
    result = model.solve(method, **options)
    return (result.objective, result) if return_result else result.objective


def _small_exact(model) -> float | None:
    """The value-only path for small inputs that ``auto`` solves by ``exact``: the proven optimum
    without a Result (:func:`solvopt.transport.exact.certified_value`), None where it does not apply."""
    from solvopt.transport.auto import auto_choice
    from solvopt.transport.exact import INLINE_PAIRS, certified_value
    if model.n * model.m > INLINE_PAIRS or auto_choice(model) != "exact":     # (before auto's memory check)
        return None
    return certified_value(model)


def emd2(a, b, M, method: str = "exact", return_result: bool = False, **options):
    """POT's ``ot.emd2(a, b, M)``: min over plans P >= 0 with marginals a, b of <P, M>.

    ``a`` (n,), ``b`` (m,): masses with equal totals (an empty list: uniform, as in POT); ``M``
    (n, m): the ready cost (any finite real entries: a constant shift, which changes no optimal
    plan, takes negative entries). ``method`` "exact" (the default: proven optimal) or another
    transport method. Returns the optimal cost as a float, or (cost, Result) with
    ``return_result=True`` (the Result's objective is W_1 over the shifted costs; its plan is
    ``result.solution["plan"]``, what :func:`emd` returns dense). Small matrices with no option and
    no Result asked for take the value-only path of :func:`wasserstein`.
    """
    if method == "exact" and not return_result and not options:
        from solvopt.transport.small import certified_matrix
        found = certified_matrix(a, b, M)                     # small plain inputs: one kernel call
        if found is not None:
            return found[0]
    model, shift = _cost_model(a, b, M)
    if method == "exact" and not return_result and not options:
        from solvopt.transport.exact import certified_value
        optimum = certified_value(model)          # small matrices: the proven optimum without a Result
        if optimum is not None:
            return optimum + shift * model.mass
    result = model.solve(method, **options)
    value = None if result.objective is None else result.objective + shift * model.mass
    return (value, result) if return_result else value


def emd(a, b, M, method: str = "exact", return_result: bool = False, **options):
    """POT's ``ot.emd(a, b, M)``: an optimal plan P (n, m), a dense array, of min <P, M> over the
    plans P >= 0 with marginals a and b.

    The arguments are :func:`emd2`'s. Returns P, or (P, Result) with ``return_result=True`` (its
    status says whether P is proven optimal; ``result.solution["plan"]`` is P as a SciPy sparse
    matrix, at most n + m - 1 entries, which is what to keep when n x m is large). With
    ``method="exact"`` (the default) P is proven optimal or an error is raised; another method
    gives that method's plan. Small matrices with no option and no Result asked for skip the
    Result, as :func:`emd2` does: P is returned only when its certified bound proves it optimal,
    and anything else goes to the full solve.
    """
    value_only = method == "exact" and not return_result and not options
    if value_only:
        from solvopt.transport.small import certified_matrix, dense_plan
        found = certified_matrix(a, b, M)                     # small plain inputs: one kernel call
        if found is not None:
            return dense_plan(*M.shape, *found[1])
    model, _ = _cost_model(a, b, M)
    if value_only:
        from solvopt.transport.exact import certified_plan
        found = certified_plan(model)             # small matrices: the proven optimum without a Result
        if found is not None:
            return dense_plan(model.n, model.m, *found[1])
    result = model.solve(method, **options)
    sparse = result.solution.get("plan") if isinstance(result.solution, dict) else None
    if sparse is None:
        from solvopt.core.errors import SolverError
        raise SolverError(f"method {method!r} returned no plan ({result.termination.value}): {result.message}")
    return (sparse.toarray(), result) if return_result else sparse.toarray()


def _cost_model(a, b, M):
    """(the Transport model of :func:`emd2` and :func:`emd`, the shift): the model's cost is ``M``
    less its smallest entry where that is negative (no optimal plan changes), else ``M``."""
    from solvopt.core.errors import ModelError
    from solvopt.dsl.arrays import real_array
    costs = real_array(M, "'M'")
    if costs.ndim != 2:
        raise ModelError(f"'M' must be a 2-D (n, m) cost matrix, got shape {costs.shape}")
    shift = float(costs.min()) if costs.size and costs.min() < 0 else 0.0
    return Transport(cost=costs - shift if shift else costs, a=_masses(a), b=_masses(b), p=1), shift
