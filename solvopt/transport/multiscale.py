"""A warm start for the fine level of a multiscale transport solve: the coarse optimum's tree, refined.

A coarse optimum of the network simplex is a forest of coarse pairs (I, J) (source cell I, target
cell J) with positive flow. Its refinement to the points is a forest too, and it carries a
feasible plan of the fine problem:

1. within every source cell, the north-west corner between the cell's points (their masses) and
   the cell's coarse pairs (their flows, in a fixed order): every point sends a run of
   consecutive pieces, two points share at most one pair (the staircase is a path);
2. within every target cell, the north-west corner between the pieces arriving there and the
   cell's points: each fine pair (source of the piece, target point) with positive mass.

Contracting each cell's staircase gives back the coarse forest, so the fine support has no cycle
(and this is checked: edges = nodes - components). Hanging each component on the simplex's root by
an artificial arc of flow 0 makes a primal feasible spanning tree, from which the network simplex
starts instead of from the artificial tree: at 10^5 points it needs a fraction of the pivots of a
cold start (the coarse optimum is already close).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .merge import _split

UP, DOWN = 1, -1


def refined_plan(coarse_plan, sx, sy, rows, cols, model):
    """The coarse plan (CSR, source cells x target cells) refined to a plan of ``model`` (CSR, its
    marginals; its support a forest when the coarse one is): the points with mass ``rows`` /
    ``cols`` lie in cells ``sx`` / ``sy``. None when the coarse plan is empty."""
    coo = coarse_plan.tocoo()
    keep = coo.data > 0
    big_i, big_j, flow = coo.row[keep], coo.col[keep], coo.data[keep]
    if not len(flow):
        return None
    # every order below runs along one line (the first principal axis of the targets)
    axis = _principal_axis(model.y[cols])
    at_x, at_y = model.x[rows] @ axis, model.y[cols] @ axis
    ox, oy = np.argsort(at_x, kind="stable"), np.argsort(at_y, kind="stable")
    centre_j = np.bincount(sy, weights=at_y) / np.maximum(np.bincount(sy), 1)
    oe = np.argsort(centre_j[big_j], kind="stable")
    big_i, big_j, flow = big_i[oe], big_j[oe], flow[oe]
    # sources: pieces (member of the source cell, coarse pair, mass), north-west within each cell
    src, entry, piece = _split(sx[ox], model.a[rows[ox]], big_i, flow)
    src = ox[src]
    # targets: those pieces arriving at each target cell against the cell's points
    op = np.argsort(at_x[src], kind="stable")
    tgt, which, mass = _split(sy[oy], model.b[cols[oy]], big_j[entry[op]], piece[op])
    return sp.csr_matrix((mass, (rows[src[op[which]]], cols[oy[tgt]])), shape=(model.n, model.m))


def refined_tree(plan, model):
    """A starting spanning tree for the network simplex from a plan of ``model`` whose support is a
    forest (:func:`refined_plan`'s). Returns (keys, (parent, pred, pred_dir)) with ``keys`` the
    sorted pairs i * m + j of the support and ``pred`` indexing them (``len(keys) + u``: node u's
    artificial arc), as :func:`solvopt.transport.dual.pricing_rounds` takes it; None when the
    support has a cycle or is empty."""
    if plan is None:
        return None
    n, m = model.n, model.m
    coo = plan.tocoo()
    keep = coo.data > 0
    fine_r, fine_c = coo.row[keep], coo.col[keep]
    if not len(fine_r):
        return None
    keys = np.unique(fine_r.astype(np.int64) * m + fine_c)
    r, c = np.divmod(keys, m)
    nodes = n + m
    graph = sp.coo_matrix((np.ones(len(keys)), (r, c + n)), shape=(nodes, nodes)).tocsr()
    count, label = sp.csgraph.connected_components(graph, directed=False)
    if len(keys) != nodes - count:       # a cycle: no tree (the start would be refused anyway)
        return None
    # one representative per component hangs on a virtual node (index nodes); a search from it
    # gives every node its parent
    first = np.full(count, -1, np.int64)
    first[label[::-1]] = np.arange(nodes)[::-1]
    hub = sp.coo_matrix((np.ones(count), (np.full(count, nodes), first)), shape=(nodes + 1, nodes + 1))
    full = sp.bmat([[sp.coo_matrix(graph, shape=(nodes, nodes)), None], [None, sp.coo_matrix((1, 1))]]) + hub
    _, up = sp.csgraph.breadth_first_order(full.tocsr(), nodes, directed=False, return_predecessors=True)
    up = up[:nodes].astype(np.int64)
    parent = np.where(up == nodes, nodes, up)          # the virtual node is the simplex's root (index nodes)
    pred = np.empty(nodes, np.int64)
    pred_dir = np.full(nodes, UP, np.int64)
    hung = up == nodes
    pred[hung] = len(keys) + np.flatnonzero(hung)       # artificial arcs, flow 0, pointing up
    inner = np.flatnonzero(~hung)
    is_source = inner < n
    i = np.where(is_source, inner, parent[inner])
    j = np.where(is_source, parent[inner], inner) - n
    pred[inner] = np.searchsorted(keys, i * m + j)
    pred_dir[inner] = np.where(is_source, UP, DOWN)     # arcs run source -> target
    return keys, (parent, pred, pred_dir)


def morton_codes(index: np.ndarray, bits: int) -> np.ndarray:
    """The Z-curve code (bits interleaved, int64) of integer grid coordinates ``index`` (n, dim),
    each in [0, 2^bits), bits * dim <= 63: cells near in space get near codes."""
    n, dim = index.shape
    grid = index.astype(np.uint64)
    code = np.zeros(n, np.uint64)
    for bit in range(bits):
        for axis in range(dim):
            code |= ((grid[:, axis] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(bit * dim + axis)
    return code.astype(np.int64)


def spatial_order(pts: np.ndarray, bits: int = 16) -> np.ndarray:
    """An order of the points along a Z curve (Morton codes of a grid of 2^bits cells an axis over
    their bounding box, at most 63 bits in all): points near in space come near in the order, so
    the flow kernels' memory reads on candidate pairs stay local."""
    dim = pts.shape[1]
    bits = max(1, min(bits, 63 // max(dim, 1)))
    low, high = pts.min(axis=0, initial=np.inf), pts.max(axis=0, initial=-np.inf)
    span = np.where(high > low, high - low, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        grid = np.clip((pts - low) / span * ((1 << bits) - 1), 0, (1 << bits) - 1).astype(np.int64)
    return np.argsort(morton_codes(grid, bits), kind="stable")


def unordered(plan, ox: np.ndarray, oy: np.ndarray):
    """A plan (CSR) of the points taken in the orders ``ox`` / ``oy``, back on the points as given."""
    coo = plan.tocoo()
    return sp.csr_matrix((coo.data, (ox[coo.row], oy[coo.col])), shape=plan.shape)


def _principal_axis(pts: np.ndarray) -> np.ndarray:
    """The unit direction of largest spread of ``pts`` (the first axis when it is one point)."""
    axis = np.zeros(pts.shape[1])
    axis[0] = 1.0
    if len(pts) > 1:
        centred = pts[:: max(1, len(pts) // 4096)] - pts.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        axis = vt[0]
    return axis


__all__ = ["morton_codes", "refined_plan", "refined_tree", "spatial_order", "unordered"]
