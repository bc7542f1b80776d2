"""Exact W_p on the line by the quantile formula (method ``1d``), and the ``auto`` method.

``1d``: for points on the line (dimension 1, any named metric: all are |x - y| there) and every
p in [1, inf], the monotone (north-west corner on sorted points) coupling is optimal, since
|x - y|^p is convex in x - y (p >= 1):

    W_p^p = integral over t in (0, M) of |F^-1(t) - G^-1(t)|^p dt,
    W_inf = the largest |F^-1(t) - G^-1(t)| over t in (0, M),

F and G the cumulative masses of a and b (total M). The method builds that coupling (at most
n + m - 1 entries) from the merged cumulative masses in O((n + m) log(n + m)) and reports it
as proven optimal: no flow, no matrix, no bound search.

``auto``: picks by measured cost: ``1d`` on the line, ``exact`` on the full matrix where it is
about as cheap as ``approx`` or cheaper (n x m up to :data:`ASSIGNMENT_PAIRS` when n = m with
uniform masses, an assignment; up to :data:`EXACT_PAIRS` otherwise, a min-cost flow), ``approx``
beyond. The choice is in ``stats["auto_method"]``.
"""
from __future__ import annotations

import math

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.registry import Solver, get_solver, register

from .result import transport_result

# Largest n x m for which ``auto`` runs ``exact``: measured on the shared 2-core machine (2-D
# uniform points, p = 2, n = m, medians of 3; approx was 4-9% above the optimum throughout):
#   uniform masses (assignment): n = 300: exact 0.03 s, approx 0.21 s; 700: 0.09 / 0.21 s;
#                                1000: 0.31 / 0.25 s; 1400: 0.88 / 0.36 s;
#   random masses (flow):        n = 300: 0.12 / 0.16 s; 700: 0.35 / 0.28 s; 1000: 0.66 / 0.32 s.
ASSIGNMENT_PAIRS = 900 * 900
EXACT_PAIRS = 700 * 700


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


def auto_choice(model) -> str:
    """The method ``auto`` runs for ``model`` (see the module's docstring)."""
    if on_the_line(model):
        return "1d"
    from .exact import uniform_square
    limit = ASSIGNMENT_PAIRS if uniform_square(model) else EXACT_PAIRS
    if model.n * model.m <= limit:
        return "exact"
    return "approx"


@register
class AutoTransport(Solver):
    family = "transport"
    name = "auto"
    description = (f"picks by measured cost: '1d' on the line, 'exact' up to {EXACT_PAIRS:,} pairs "
                   f"({ASSIGNMENT_PAIRS:,} for n = m with uniform masses), 'approx' beyond "
                   "(stats['auto_method'] says which)")
    options = ()

    def solve(self, model, options):
        name = auto_choice(model)
        solver = get_solver("transport", name)
        compiled = solver.compile(model)
        extra = {o.name: o.default for o in solver.options}
        options.extra = {**extra, **{k: v for k, v in options.extra.items() if k in extra}}
        result = solver().solve(compiled, options)
        result.stats["auto_method"] = name
        return result
