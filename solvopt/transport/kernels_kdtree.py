"""The c-transform by branch and bound in a k-d tree whose nodes carry their largest potential.

min_i ((d(src_i, y) / unit)^p - pot_i) for every target y, exactly: a node (the box around its
sources) is skipped when (d(y, box) / unit)^p - (its largest potential) cannot beat the best value
found, and the nearer child is searched first. The tree is implicit (node k has children 2k + 1
and 2k + 2; every level splits each node's sources at the median of its widest axis, found by
selection in O(n) a level), so a query costs O(log n) plus the sources it cannot rule out, for
every named metric and every p (the cost grows with the distance). Float rounding cannot wrongly
prune: each axis gap to a box is at most the same axis difference to a point inside, and every
later step is monotone.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernels_numba import _best_source, _box_lower

# Sources per leaf of the tree (between half and all of it).
LEAF_SIZE = 16
# Deepest tree the query stack holds (2^48 leaves: never reached).
MAX_DEPTH = 48


class PotentialTree:
    """The sources sorted into an implicit k-d tree, with each node's box and largest potential."""

    def __init__(self, src: np.ndarray, pot: np.ndarray):
        n, dim = src.shape
        depth = 0
        while (n >> (depth + 1)) >= LEAF_SIZE // 2 and depth < MAX_DEPTH - 1:
            depth += 1
        order, begin, end = split_order(src, depth)
        self.order = order
        self.src = np.ascontiguousarray(src[order])
        self.pot = np.ascontiguousarray(pot[order])
        n_leaves = len(begin)
        self.first_leaf = n_leaves - 1
        n_nodes = 2 * n_leaves - 1
        self.lo = np.empty((n_nodes, dim))
        self.hi = np.empty((n_nodes, dim))
        self.top = np.empty(n_nodes)
        self.begin = np.empty(n_nodes, dtype=np.int64)
        self.end = np.empty(n_nodes, dtype=np.int64)
        leaves = slice(self.first_leaf, n_nodes)
        self.lo[leaves] = np.minimum.reduceat(self.src, begin, axis=0)
        self.hi[leaves] = np.maximum.reduceat(self.src, begin, axis=0)
        self.top[leaves] = np.maximum.reduceat(self.pot, begin)
        self.begin[leaves], self.end[leaves] = begin, end
        level_first = self.first_leaf
        while level_first > 0:                    # parents from their children, one level at a time
            parents = np.arange((level_first - 1) // 2, level_first)
            left, right = 2 * parents + 1, 2 * parents + 2
            self.lo[parents] = np.minimum(self.lo[left], self.lo[right])
            self.hi[parents] = np.maximum(self.hi[left], self.hi[right])
            self.top[parents] = np.maximum(self.top[left], self.top[right])
            self.begin[parents], self.end[parents] = self.begin[left], self.end[right]
            level_first = (level_first - 1) // 2

    def transform(self, dst, unit, p, metric, start, stop, out, arg):
        """out, arg for targets [start, stop) (arg: indices into the caller's sources)."""
        c_transform_kdtree(self.src, self.pot, self.lo, self.hi, self.top, self.begin, self.end,
                           self.first_leaf, dst, float(unit), float(p), metric, start, stop, out, arg)
        arg[:] = self.order[arg]


@njit(cache=True, nogil=True)
def split_order(src, depth):
    """(order, begin, end): the sources' order and the 2^depth leaves' ranges in it, each level
    splitting every node's range at its middle along the node's widest axis (a selection, not a
    sort: O(n) a level)."""
    order = np.arange(len(src))
    begin = np.zeros(1, dtype=np.int64)
    end = np.full(1, len(src), dtype=np.int64)
    for _ in range(depth):
        below_begin = np.empty(2 * len(begin), dtype=np.int64)
        below_end = np.empty(2 * len(begin), dtype=np.int64)
        _split_level(src, order, begin, end, below_begin, below_end)
        begin, end = below_begin, below_end
    return order, begin, end


@njit(cache=True, parallel=True, nogil=True)
def _split_level(src, order, begin, end, below_begin, below_end):
    """One level of :func:`split_order`: node k's range [begin[k], end[k]) into its children's."""
    dim = src.shape[1]
    for k in prange(len(begin)):
        lo, hi = begin[k], end[k]
        axis, widest = 0, -1.0
        for a in range(dim):
            least, most = np.inf, -np.inf
            for i in range(lo, hi):
                v = src[order[i], a]
                least = min(least, v)
                most = max(most, v)
            if most - least > widest:
                axis, widest = a, most - least
        mid = (lo + hi) // 2
        _select(order, src, axis, lo, hi, mid)
        below_begin[2 * k], below_end[2 * k] = lo, mid
        below_begin[2 * k + 1], below_end[2 * k + 1] = mid, hi


@njit(cache=True, nogil=True)
def _select(order, src, axis, lo, hi, kth):
    """Reorder order[lo:hi] so that the source at kth has no larger coordinate ``axis`` before it
    and no smaller one after it (Hoare's selection, pivot the median of three)."""
    hi -= 1
    while hi - lo > 16:
        mid = (lo + hi) // 2
        a, b, c = src[order[lo], axis], src[order[mid], axis], src[order[hi], axis]
        pivot = max(min(a, b), min(max(a, b), c))
        i, j = lo, hi
        while i <= j:
            while src[order[i], axis] < pivot:
                i += 1
            while src[order[j], axis] > pivot:
                j -= 1
            if i <= j:
                order[i], order[j] = order[j], order[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return
    for i in range(lo + 1, hi + 1):          # a short range: insertion sort
        item = order[i]
        key = src[item, axis]
        j = i - 1
        while j >= lo and src[order[j], axis] > key:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = item


@njit(cache=True, parallel=True, nogil=True)
def c_transform_kdtree(src, pot, lo, hi, top, begin, end, first_leaf, dst, unit, p, metric, start, stop, out, arg):
    """out[k - start] = min_i ((d(src_i, dst_k) / unit)^p - pot_i), arg the i (sorted order), for k in [start, stop)."""
    for kk in prange(stop - start):
        k = start + kk
        stack = np.empty(2 * MAX_DEPTH + 2, dtype=np.int64)
        bound = np.empty(2 * MAX_DEPTH + 2)
        stack[0] = 0
        bound[0] = _box_lower(lo, hi, top, 0, dst, k, unit, p, metric)
        size = 1
        best, at = np.inf, 0
        while size > 0:
            size -= 1
            node = stack[size]
            if bound[size] >= best:
                continue
            if node >= first_leaf:
                best, at = _best_source(src, pot, dst, k, unit, p, metric, begin[node], end[node], best, at)
                continue
            left, right = 2 * node + 1, 2 * node + 2
            low_l = _box_lower(lo, hi, top, left, dst, k, unit, p, metric)
            low_r = _box_lower(lo, hi, top, right, dst, k, unit, p, metric)
            if low_l > low_r:             # the nearer (lower) child goes on top of the stack
                left, right, low_l, low_r = right, left, low_r, low_l
            if low_r < best:
                stack[size], bound[size] = right, low_r
                size += 1
            if low_l < best:
                stack[size], bound[size] = left, low_l
                size += 1
        out[kk] = best
        arg[kk] = at
