"""The NumPy reference of the stochastic split: the oracle the Numba and CUDA kernels are tested against.

Signature shared by the three kernels (NumPy here, Numba in :mod:`solvopt.cvrp.kernels_numba`,
CUDA in ``solvopt.gpu.cvrp``)::

    scenario_costs(first, demands, key, cdf, cdf_start, guide, guide_start,
                   tour0, entry, exit_, capacity, penalty, penalise, out) -> None

- ``out`` (count,) float64 receives, for scenarios ``first .. first + count - 1``, the optimal
  split cost of the tour under that scenario's demands, ``+inf`` when the scenario has no
  feasible split (a customer over the capacity under the "infeasible" policy);
- ``demands``: the (count, n_customers) int32 demands of those scenarios (columns: customers in
  instance order), or an empty ``(0, 0)`` array: then the demands are sampled from the Poisson
  tables ``cdf, cdf_start, guide, guide_start`` (see :class:`~solvopt.cvrp.sampling.PoissonTables`)
  with the Philox key ``key = (k0, k1)``, scenario ``w`` from counter ``w`` (so ``first`` places
  the chunk in the stream; the tables may be empty when a matrix is given);
- ``tour0`` (n,) int64: the tour as 0-based customer indices; ``entry`` (n,), ``exit_`` (n+1,)
  float64: the tour geometry (:class:`~solvopt.dsl.split.TourGeometry`);
- ``capacity``: the integer capacity Q; ``penalise``: the "penalty" policy (a customer whose
  demand alone exceeds Q gets its own route paying ``penalty * (q - Q)``), else "infeasible".

The recursion, per scenario: ``value[0] = entry[0]``; for i = 1..n, ``best`` = the minimum of
``value[p]`` over the predecessors p < i whose route p+1..i fits (the one-customer route
p = i-1 by the policy), then ``value[i] = best + (entry[i] + exit[i])`` and finally
``J(n) = best + exit[n]``. All three kernels evaluate exactly these operations in this order,
so their costs agree to the bit on the CPU (the CUDA kernel avoids fused multiply-adds for
the same reason).
"""
from __future__ import annotations

import numpy as np

from .sampling import sample_from_tables


def scenario_costs(first, demands, key, cdf, cdf_start, guide, guide_start, tour0, entry, exit_, capacity, penalty,
                   penalise, out) -> None:
    """Per-scenario optimal split costs (+inf = infeasible) into ``out``; vectorised over scenarios."""
    count = out.shape[0]
    if demands.size == 0:
        demands = sample_from_tables(int(first), count, key, cdf, cdf_start)
    q = np.asarray(demands, dtype=np.int64)[:, tour0]          # (S, n) in tour order
    n = q.shape[1]
    cap = int(capacity)
    prefix = np.zeros((count, n + 1), dtype=np.int64)
    prefix[:, 1:] = np.cumsum(q, axis=1)
    over = q > cap
    bad = np.zeros(count, dtype=bool) if penalise else over.any(axis=1)
    value = np.empty((count, n + 1))                 # value[:, p] = J(p) + entry[p]
    value[:, 0] = entry[0]
    last = np.zeros(count)
    for i in range(1, n + 1):
        qi = q[:, i - 1]
        if penalise:
            best = value[:, i - 1] + penalty * np.maximum(qi - cap, 0)
        else:
            best = np.where(over[:, i - 1], np.inf, value[:, i - 1])
        for p in range(i - 2, -1, -1):
            fits = prefix[:, i] - prefix[:, p] <= cap
            if not fits.any():
                break
            best = np.where(fits, np.minimum(best, value[:, p]), best)
        if i < n:
            value[:, i] = best + (entry[i] + exit_[i])
        else:
            last = best + exit_[i]
    out[:] = np.where(bad, np.inf, last)
