"""Numba passes over a transport plan and its small arrays: build the plan's CSR arrays from
pairs, check and repair them, its cost, the dual bound's best partners (and, for the small
exact solves, the matrix of (d / s)^p of two point sets).

They run on every result (:func:`solvopt.transport.result.clean_plan`,
:func:`~solvopt.transport.result.pair_plan`, :func:`~solvopt.transport.result.plan_cost`,
:func:`~solvopt.transport.result.dual_bound` on a held matrix); on a few hundred entries NumPy
spends most of its time making temporaries (tens of microseconds a call against one pass here).
The checks are the same: a non-finite or negative entry beyond noise is reported, noise is
zeroed, and the marginal error is the largest row or column sum off its target.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def csr_from_pairs(n, m, rows, cols, mass):
    """(indptr, indices, data) of the n x m CSR matrix with ``mass[k]`` at (rows[k], cols[k])
    (distinct pairs; entries of mass 0 left out), columns sorted within each row."""
    indptr = np.zeros(n + 1, np.int32)
    for k in range(len(rows)):
        if mass[k] != 0:
            indptr[rows[k] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    nnz = indptr[n]
    # pairs by column (a counting sort), then scattered to their rows in that order: sorted columns
    start = np.zeros(m + 1, np.int64)
    for k in range(len(rows)):
        if mass[k] != 0:
            start[cols[k] + 1] += 1
    for j in range(m):
        start[j + 1] += start[j]
    by_col = np.empty(nnz, np.int64)
    for k in range(len(rows)):
        if mass[k] != 0:
            by_col[start[cols[k]]] = k
            start[cols[k]] += 1
    indices = np.empty(nnz, np.int32)
    data = np.empty(nnz, np.float64)
    fill = indptr[:n].copy()
    for t in range(nnz):
        k = by_col[t]
        indices[fill[rows[k]]] = cols[k]
        data[fill[rows[k]]] = mass[k]
        fill[rows[k]] += 1
    return indptr, indices, data


@njit(cache=True, nogil=True)
def check_entries(data, noise):
    """(0, lowest entry, entries zeroed) after zeroing entries at or below ``noise`` in place;
    (1, ., .) when an entry is not finite; (2, lowest, .) when one is below -``noise`` (nothing zeroed)."""
    low = np.inf
    for k in range(len(data)):
        v = data[k]
        if not np.isfinite(v):
            return 1, v, 0
        if v < low:
            low = v
    if len(data) == 0:
        low = 0.0
    if low < -noise:
        return 2, low, 0
    zeroed = 0
    if low <= noise:
        for k in range(len(data)):
            if data[k] <= noise:
                data[k] = 0.0
                zeroed += 1
    return 0, low, zeroed


@njit(cache=True, nogil=True)
def marginal_error(indptr, indices, data, a, b):
    """The largest |row sum - a_i| and |column sum - b_j| of a CSR plan."""
    n, m = len(a), len(b)
    col = np.zeros(m)
    error = 0.0
    for i in range(n):
        s = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            s += data[t]
            col[indices[t]] += data[t]
        error = max(error, abs(s - a[i]))
    for j in range(m):
        error = max(error, abs(col[j] - b[j]))
    return error


@njit(cache=True, nogil=True)
def checked_error(indptr, indices, data, a, b, noise):
    """:func:`check_entries` then, when they pass (code 0), :func:`marginal_error`, in one call:
    (code, lowest entry, entries zeroed, marginal error or inf)."""
    code, low, zeroed = check_entries(data, noise)
    if code != 0:
        return code, low, zeroed, np.inf
    return code, low, zeroed, marginal_error(indptr, indices, data, a, b)


@njit(cache=True, nogil=True)
def rescale(indptr, indices, data, a, b):
    """Scale each nonempty row onto a_i, then each nonempty column onto b_j, in place."""
    n, m = len(a), len(b)
    for i in range(n):
        s = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            s += data[t]
        if s > 0:
            f = a[i] / s
            for t in range(indptr[i], indptr[i + 1]):
                data[t] *= f
    col = np.zeros(m)
    for t in range(len(data)):
        col[indices[t]] += data[t]
    for t in range(len(data)):
        s = col[indices[t]]
        if s > 0:
            data[t] *= b[indices[t]] / s


@njit(cache=True, nogil=True)
def power_sum(mass, d, p):
    """(t, sum_k mass_k (d_k / t)^p) with t the largest d_k where mass_k > 0 (t = 0: sum 0); the
    largest distance factored out so that no power overflows."""
    top = 0.0
    for k in range(len(d)):
        if mass[k] > 0 and d[k] > top:
            top = d[k]
    if top == 0.0:
        return 0.0, 0.0
    total = 0.0
    for k in range(len(d)):
        if mass[k] != 0:
            total += mass[k] * (d[k] / top) ** p
    return top, total


@njit(cache=True, nogil=True)
def best_partners(costs, pot, axis):
    """axis 0: v_j = min_i (c_ij - pot_i); axis 1: u_i = min_j (c_ij - pot_j)."""
    n, m = costs.shape
    if axis == 0:
        out = np.full(m, np.inf)
        for i in range(n):
            for j in range(m):
                r = costs[i, j] - pot[i]
                if r < out[j]:
                    out[j] = r
        return out
    out = np.full(n, np.inf)
    for i in range(n):
        best = np.inf
        for j in range(m):
            r = costs[i, j] - pot[j]
            if r < best:
                best = r
        out[i] = best
    return out


@njit(cache=True, nogil=True)
def two_values(values, split):
    """True when values[:split] are all equal and values[split:] too."""
    for k in range(1, split):
        if values[k] != values[0]:
            return False
    for k in range(split + 1, len(values)):
        if values[k] != values[split]:
            return False
    return True


@njit(cache=True, nogil=True)
def uniform_ints(supplies, k, max_units):
    """(unit, integer supplies, found) of :func:`solvopt.transport.exact.uniform_units`: when the first
    ``k`` supplies are equal (> 0) and the others too (< 0), unit 1 / lcm(k, l) and the supplies in
    units of it, checked to 1e-12 of the largest; found False otherwise (or beyond ``max_units``)."""
    l = len(supplies) - k
    none = np.empty(0, np.int64)
    if k == 0 or l == 0:
        return 1.0, none, False
    first, last = supplies[0], supplies[k]
    if not (first > 0 and last < 0 and two_values(supplies, k)):
        return 1.0, none, False
    x, y = k, l
    while y:
        x, y = y, x % y
    if k // x > max_units // (2 * l):          # 2 lcm(k, l) > max_units (without overflow)
        return 1.0, none, False
    total = k // x * l
    unit = 1.0 / total
    top = max(first, -last)
    if abs(total // k * unit - first) > 1e-12 * top or abs(total // l * unit + last) > 1e-12 * top:
        return 1.0, none, False
    ints = np.empty(k + l, np.int64)
    ints[:k] = total // k
    ints[k:] = -(total // l)
    return unit, ints, True


@njit(cache=True, nogil=True)
def mass_supplies(a, b, rows, cols, mass, max_units):
    """The supplies of a transport flow, (a[rows], -b[cols]) / mass, with :func:`uniform_ints` of
    them: (supplies, unit, integer supplies, found)."""
    k, l = len(rows), len(cols)
    supplies = np.empty(k + l)
    for i in range(k):
        supplies[i] = a[rows[i]] / mass
    for j in range(l):
        supplies[k + j] = -b[cols[j]] / mass
    unit, ints, found = uniform_ints(supplies, k, max_units)
    return supplies, unit, ints, found


@njit(cache=True, nogil=True)
def tree_plan(n, m, rows, cols, r, c, flow, unit, mass, costs):
    """A flow on the pairs (rows[r[k]], cols[c[k]]) of a sub-matrix, in integer units, as a plan:
    flow scaled by ``unit`` in place; returns (indptr, indices, data) of the n x m CSR plan
    holding flow x ``mass``, the flow's cost sum flow_k costs[r_k, c_k] and its total."""
    cost = 0.0
    total = 0.0
    pr = np.empty(len(r), np.int64)
    pc = np.empty(len(r), np.int64)
    pm = np.empty(len(r), np.float64)
    for k in range(len(r)):
        f = flow[k] * unit
        flow[k] = f
        cost += f * costs[r[k], c[k]]
        total += f
        pr[k] = rows[r[k]]
        pc[k] = cols[c[k]]
        pm[k] = f * mass
    indptr, indices, data = csr_from_pairs(n, m, pr, pc, pm)
    return indptr, indices, data, cost, total


@njit(cache=True, nogil=True, inline="always")
def pair_distance(x, y, i, j, metric):
    """The distance between x[i] and y[j] under ``metric`` (0 euclidean, 1 cityblock, 2 chebyshev):
    the same sums, in the same order, as SciPy's ``cdist``."""
    s = 0.0
    for k in range(x.shape[1]):
        diff = abs(x[i, k] - y[j, k])
        if metric == 0:
            s += diff * diff
        elif metric == 1:
            s += diff
        elif diff > s:
            s = diff
    return np.sqrt(s) if metric == 0 else s


@njit(cache=True, nogil=True)
def plan_power_sum(indptr, indices, data, x, y, metric, p):
    """:func:`power_sum` over the entries of a CSR plan, each at the distance of its pair: between
    the points x[i] and y[j] (``metric`` 0: euclidean, 1: cityblock, 2: chebyshev; coordinates in
    index order, as SciPy's ``cdist``), or, ``metric`` -1, the entry x[i, j] of a distance matrix."""
    d = np.empty(len(indices))
    for i in range(len(indptr) - 1):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if metric < 0:
                d[t] = x[i, j]
                continue
            d[t] = pair_distance(x, y, i, j, metric)
    return power_sum(data, d, p)


@njit(cache=True, nogil=True)
def point_costs(x, y, metric, p):
    """((d / s)^p, s) for every pair of the points x (n, dim) and y (m, dim), s the largest distance
    d (1 when all are 0), ``metric`` numbered as in :func:`plan_power_sum`: in one pass for the
    distances (the same sums as SciPy's ``cdist``) and one for the powers, as
    :func:`solvopt.transport.exact.scaled_costs` takes them (p = 2: a product)."""
    n, m = x.shape[0], y.shape[0]
    out = np.empty((n, m))
    top = 0.0
    for i in range(n):
        for j in range(m):
            s = pair_distance(x, y, i, j, metric)
            out[i, j] = s
            if s > top:
                top = s
    scale = top if top > 0 else 1.0
    for i in range(n):
        for j in range(m):
            c = out[i, j] / scale
            if p == 2.0:
                c = c * c
            elif p != 1.0:
                c = c ** p
            out[i, j] = c
    return out, scale
