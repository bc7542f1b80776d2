"""Exact W_p on the line by the quantile formula (method ``1d``).

For points on the line (dimension 1, any named metric: all are |x - y| there) and every
p in [1, inf], the monotone (north-west corner on sorted points) coupling is optimal, since
|x - y|^p is convex in x - y (p >= 1):

    W_p^p = integral over t in (0, M) of |F^-1(t) - G^-1(t)|^p dt,
    W_inf = the largest |F^-1(t) - G^-1(t)| over t in (0, M),

F and G the cumulative masses of a and b (total M). The method builds that coupling (at most
n + m - 1 entries) from the merged cumulative masses in O((n + m) log(n + m)) and reports it
as proven optimal: no flow, no matrix, no bound search.

The method ``auto`` (:mod:`solvopt.transport.auto`) runs it for every input on the line.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.registry import Solver, register

from .result import transport_result


def on_the_line(model) -> bool:
    """Points of dimension 1 under a named metric (every named metric is |x - y| on the line)."""
    return model.cost is None and model.dimension == 1 and not callable(model.metric)


def monotone_plan(x: np.ndarray, a: np.ndarray, y: np.ndarray, b: np.ndarray):
    """The monotone coupling of (x, a) and (y, b) on the line as an n x m CSR matrix.

    x, y: 1-D coordinates; a, b: masses with equal totals. Each interval of the merged
    cumulative masses sends its length from the source to the target whose quantile it is.
    """
    import scipy.sparse as sp
    n, m = len(x), len(y)
    ox, oy = np.argsort(x, kind="stable"), np.argsort(y, kind="stable")
    ca, cb = np.cumsum(a[ox]), np.cumsum(b[oy])
    total = ca[-1]
    cb = cb * (total / cb[-1]) if cb[-1] > 0 else cb
    cb[-1] = total
    t = np.unique(np.concatenate([ca, cb, [0.0]]))
    t = t[t <= total]
    lengths = np.diff(t)
    middle = t[:-1] + lengths / 2
    keep = lengths > 0
    lengths, middle = lengths[keep], middle[keep]
    i = np.minimum(np.searchsorted(ca, middle, side="right"), n - 1)
    j = np.minimum(np.searchsorted(cb, middle, side="right"), m - 1)
    return sp.csr_matrix((lengths, (ox[i], oy[j])), shape=(n, m))


@register
class OneDTransport(Solver):
    family = "transport"
    name = "1d"
    description = ("exact W_p for points on the line (dimension 1), every p including inf: the quantile formula "
                   "(the monotone coupling of the sorted points), O((n + m) log(n + m))")
    options = ()

    def solve(self, model, options):
        if not on_the_line(model):
            what = ("a matrix input" if model.cost is not None else "a callable metric" if callable(model.metric)
                    else f"points of dimension {model.dimension}")
            raise ModelError(f"method '1d' is for points on the line (dimension 1, a named metric), got {what}; "
                             "use method 'auto', 'exact' or 'approx'")
        plan = monotone_plan(model.x[:, 0], model.a, model.y[:, 0], model.b)
        return transport_result(model, plan, guarantee=1.0, proven_optimal=True,
                                stats={"engine": "quantile formula"})


