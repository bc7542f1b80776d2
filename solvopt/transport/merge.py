"""Repeated points merged into one: an exact reduction of a transport problem on point clouds.

Sources at the same location have the same distance to every target, so any plan can move mass
freely between them at no cost: the problem with every group of identical sources replaced by
one source carrying the group's total mass (and the same for targets) has the same W_p for every
p and metric, and any plan of it splits back into a plan of the original with the same cost
(:func:`expand_plan`). Pixel colours, rounded measurements and grids repeat points a lot; besides
the smaller problem, the merge removes the zero-distance ties that leave nearest-neighbour graphs
in separate pieces (every neighbour of a repeated point is its own copy).

Points are identical here when their coordinates are bit for bit equal (a metric gives them
distance 0 to each other and the same distance to every other point: the reduction is exact).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvopt.core.result import Termination

from .result import transport_result

# Merge only when it removes at least this share of the points (else the copies cost more than they save).
MIN_SHARE = 0.02
# The terminations of a stopped run, carried over when a merged problem's result is expanded.
STOPS = (Termination.TIME_LIMIT, Termination.INTERRUPTED)


def unique_points(x: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct points, their summed masses, the group of every point) of ``x`` (count x dim)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    rows = x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()   # one bytes key a point
    _, first, group = np.unique(rows, return_index=True, return_inverse=True)
    group = group.ravel()
    return x[first], np.bincount(group, weights=mass, minlength=len(first)), group


def merged(model, min_share: float = MIN_SHARE):
    """(the merged model, source groups, target groups) when merging removes at least
    ``min_share`` of the points of ``model`` (points with a metric), else None."""
    if model.cost is not None or model.x is None:
        return None
    ux, ua, gx = unique_points(model.x, model.a)
    uy, ub, gy = unique_points(model.y, model.b)
    if len(ux) + len(uy) > (1.0 - min_share) * (model.n + model.m):
        return None
    small = type(model)(ux, uy, a=ua, b=ub, p=model.p, metric=model.metric)
    return small, gx, gy


def solve_merged(model, solve, guarantee):
    """``solve(model)``, or, when merging repeated points pays (:func:`merged`), ``solve`` of the
    merged problem with its plan split back onto ``model``'s points (:func:`expand_plan`): the same
    bound, a stop carried over, ``stats["merged_points"]`` the merged sizes and the guarantee
    ``guarantee(merged result)``."""
    reduced = merged(model)
    if reduced is None:
        return solve(model)
    small, gx, gy = reduced
    result = solve(small)
    plan = None if result.solution is None else expand_plan(result.solution["plan"], model, gx, gy)
    stats = dict(result.stats, merged_points=(small.n, small.m))
    stopped = result.termination if result.termination in STOPS else None
    return transport_result(model, plan, guarantee=guarantee(result), bound=result.bound, stopped=stopped,
                            stats=stats)


def expand_plan(plan, model, gx: np.ndarray, gy: np.ndarray):
    """A plan of ``model`` (CSR) from a plan of its merged problem, at the same cost: each merged
    entry's mass is split among the group's copies (north-west corner, sources then targets); at
    most (entries + n + m) entries."""
    coo = plan.tocoo()
    keep = coo.data > 0
    big_r, big_c, mass = coo.row[keep], coo.col[keep], coo.data[keep]
    # sources: the entries leaving each merged source, split among its copies by their masses
    src, entry, piece = _split(gx, model.a, big_r, mass)
    # targets: those pieces arriving at each merged target, split among its copies
    tgt, which, final = _split(gy, model.b, big_c[entry], piece)
    return sp.csr_matrix((final, (src[which], tgt)), shape=(model.n, model.m))


def _split(group: np.ndarray, weight: np.ndarray, item_group: np.ndarray, item_mass: np.ndarray):
    """The north-west corner, within every group, between its members (``weight``) and the items
    (``item_mass``) in it, the items rescaled to the members' total. Returns (member, item, mass)
    of every piece with positive mass."""
    n_groups = int(max(group.max(initial=-1), item_group.max(initial=-1))) + 1
    total = np.bincount(group, weights=weight, minlength=n_groups)
    held = np.bincount(item_group, weights=item_mass, minlength=n_groups)
    scale = np.divide(total, held, out=np.zeros(n_groups), where=held > 0)
    members = np.argsort(group, kind="stable")
    items = np.argsort(item_group, kind="stable")
    pos_m = _local_cumsum(group[members], weight[members], total)
    pos_i = _local_cumsum(item_group[items], item_mass[items] * scale[item_group[items]], total)
    g = np.concatenate([group[members], item_group[items]])
    pos = np.concatenate([pos_m, pos_i])
    is_member = np.concatenate([np.ones(len(members), bool), np.zeros(len(items), bool)])
    ident = np.concatenate([members, items])
    order = np.lexsort((pos, g))
    g, pos, is_member, ident = g[order], pos[order], is_member[order], ident[order]
    # the piece ending at breakpoint k spans (pos[k - 1], pos[k]] within its group; it belongs to
    # the first member and the first item whose breakpoints are at or after k
    start = np.concatenate(([0.0], pos[:-1]))
    start[np.concatenate(([True], g[1:] != g[:-1]))] = 0.0
    piece = pos - start
    member = _next_of(is_member, ident)
    item = _next_of(~is_member, ident)
    ok = (piece > 0) & (member >= 0) & (item >= 0)
    ok[ok] &= (group[member[ok]] == g[ok]) & (item_group[item[ok]] == g[ok])     # never across groups
    return member[ok], item[ok], piece[ok]


def _local_cumsum(g: np.ndarray, w: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Cumulative sums of ``w`` restarting at every group of the sorted labels ``g``, each group's
    last one set to its ``total`` exactly and all clipped to [0, total] (rounding never leaves a group)."""
    if not len(g):
        return np.zeros(0)
    run = np.cumsum(w)
    first = np.concatenate(([True], g[1:] != g[:-1]))
    at = np.maximum.accumulate(np.where(first, np.arange(len(g)), 0))     # the start of each one's group
    local = run - (run - w)[at]
    last = np.concatenate((g[1:] != g[:-1], [True]))
    local[last] = total[g[last]]
    return np.clip(local, 0.0, total[g])


def _next_of(flag: np.ndarray, ident: np.ndarray) -> np.ndarray:
    """For every position k, ident at the first position >= k where ``flag`` holds (-1 if none)."""
    where = np.where(flag, np.arange(len(flag)), len(flag))
    nxt = np.minimum.accumulate(where[::-1])[::-1]
    return np.where(nxt < len(flag), np.append(ident, -1)[np.minimum(nxt, len(flag))], -1)


__all__ = ["expand_plan", "merged", "solve_merged", "unique_points"]
