"""The Numba search kernel of k-HC2 branch-and-bound (:mod:`solvopt.khc.bnb` drives it).

The hot loop is a Numba kernel over a resumable depth-first search (children visited in order
of their bounds: best-first flavour); per-cluster counts, means and centred scatters are
updated by rank-one formulas, smallest eigenvalues for n <= 3 come in closed form (the cyclic
Jacobi method near a double eigenvalue and for n > 3). For n = 3 the dynamic order saves the
closed form's acos and cos where it can (section 10 of benchmarks/results/khc_bnb_scale.md: the
final doll of m = 100 in 257.7 s instead of 318.2 s, the same nodes): a child's smallest
eigenvalue comes by Newton's method from the pick's estimate, a lower bound
(:func:`_smallest_from_below`), and the picker's spectrum reuses the cluster's known smallest
eigenvalue (:func:`_spectrum_from_smallest`). The kernel runs in node batches so Python can
check the time limit and print progress. At every moment the global bound is the minimum of the
incumbent, the unexplored children's bounds and the bounds of the nodes pruned within the gap
tolerance, so a stopped run still returns a valid bound. With ``threads`` > 1 the same kernel
searches subtrees of one tree on several threads (:mod:`solvopt.khc.parallel`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .bounds import (
    MARGIN,
    MU_STEPS,
    charge_bound,
    jacobi_diagonalise,
    placement_increase,
    smallest_vector_3,
    spectrum,
    trig_eigenvalues_3,
)

PRODUCT_FLOOR = 0.05              # dynamic order's pick: prod_j (d_j + f s), s the node's slack
LOOKAHEAD = 3                    # dynamic order: points whose joint increase bounds each node
                                 # (3: fewest seconds at m = 60)

# kernel return codes
_DONE, _BUDGET = 0, 1


# --- smallest eigenvalue of a small symmetric matrix -------------------------------------------
# Compile time matters as much as run time: the first solve after an install compiles these
# kernels (later runs load them from Numba's cache), and it used to spend ~90% of its time there.
# What keeps it short (tests/test_khc_compile.py checks the properties):
# * one signature per kernel and run: float64 C-order arrays and int64 scalars, all allocated by
#   DollSearch; nothing allocates inside the kernels (the scratch tmp_S and work come in);
# * a flat call tree: Numba compiles each jitted callee on its own and then re-optimises and
#   re-emits its code inside every caller, so each level of calls costs its whole subtree again.
#   The search loop, the rank-one update and the children's bounds are one function; the
#   smallest eigenvalue is one function (closed forms; the Jacobi sweeps of bounds.py);
# * compile only what the run needs: ``work`` is None for n <= 2 and ``dynamic`` is None for the
#   static order, and Numba prunes the branches those guard at compile time (no Jacobi code for
#   n <= 2, no _pick_point for a static order);
# * the dynamic order's picker (_pick_point, _cluster_increases) is inlined into the kernel
#   (inline="always": Numba's own inlining, no extra compile measured): a call passing a dozen
#   arrays cost reference counts that were ~6% of a node;
# * no LAPACK: np.linalg.eigvalsh alone compiled for ~0.7 s; the plain-loop Jacobi method in
#   its place compiles quickly, allocates nothing and is faster at these sizes.
@njit(cache=True)
def _smallest_eigenvalue(S, n):
    """lambda_min of the symmetric n x n matrix S (allocates its scratch; the kernels pass theirs)."""
    return _smallest_eigenvalue_work(S, n, np.empty((n, n)))


@njit(cache=True)
def _smallest_eigenvalue_work(S, n, work):
    """lambda_min of the symmetric n x n matrix S: closed form for n <= 3, Jacobi above.

    n = 3 uses the trigonometric (Smith) formula phi = acos(r) / 3
    (:func:`solvopt.khc.bounds.trig_eigenvalues_3`, shared with the spectra of the dynamic order
    and the charge), accurate to a few
    eps ||S|| / sqrt(1 - r^2); near |r| = 1 (a double eigenvalue) acos loses half the digits
    (errors ~ sqrt(eps) ||S||), which could overstate a lower bound, so there (and for n > 3)
    the cyclic Jacobi method (:func:`solvopt.khc.bounds.jacobi_diagonalise`) runs on the copy
    ``work`` (n x n scratch; S is not changed): backward stable like LAPACK's symmetric
    eigensolvers (eigenvalue errors a few eps ||S||), a handful of sweeps at the sizes
    branch-and-bound meets; it allocates nothing and compiles far faster than np.linalg.eigvalsh.
    The n <= 2 closed forms stay in this function (a flat call tree compiles faster: each level of
    jitted calls re-optimises its callees' code); the 3 x 3 formula and the Jacobi sweeps are
    leaf calls shared with bounds.py's spectra.
    """
    if n == 1:
        return S[0, 0]
    if n == 2:
        half_sum = 0.5 * (S[0, 0] + S[1, 1])
        half_diff = 0.5 * (S[0, 0] - S[1, 1])
        return half_sum - math.sqrt(half_diff * half_diff + S[0, 1] * S[0, 1])
    if work is None:  # the n <= 2 specialisation: Numba prunes the rest at compile time
        return math.nan
    if n == 3:
        smallest, _, resolved = trig_eigenvalues_3(S)
        if resolved:
            return smallest
    A = work
    for i in range(n):
        for j in range(n):
            A[i, j] = S[i, j]
    jacobi_diagonalise(A, n, A, n < 0)  # no vectors; a computed False (a literal would compile apart)
    smallest = A[0, 0]
    for i in range(1, n):
        if A[i, i] < smallest:
            smallest = A[i, i]
    return smallest


@njit(cache=True, error_model="numpy", inline="always")
def _smallest_from_below(S, start):
    """(lambda_min of the symmetric 3 x 3 ``S``, converged) by Newton's method on
    q(y) = det(S - (start + y) I) from y = 0, for ``start`` <= lambda_min.

    Left of its smallest root q is positive, decreasing and convex (q = prod_i (lambda_i - x)),
    so the iterates rise monotonically to lambda_min, quadratically once near: no acos or cos
    (the closed form's cost). Not converged (the caller then uses the closed form): ``start``
    above the root by rounding (q(0) < 0), q' >= 0, or 12 steps without the step falling below
    eps times the trace.
    """
    a, b, c = S[0, 0] - start, S[1, 1] - start, S[2, 2] - start
    d, e, f = S[0, 1], S[0, 2], S[1, 2]
    c2 = a + b + c
    c1 = a * b + a * c + b * c - d * d - e * e - f * f
    c0 = a * (b * c - f * f) - d * (d * c - f * e) + e * (d * f - b * e)
    if c0 < 0.0:
        return start, False
    tiny = 2.2e-16 * (abs(S[0, 0]) + abs(S[1, 1]) + abs(S[2, 2]))
    y = 0.0
    for _ in range(12):
        q = ((c2 - y) * y - c1) * y + c0
        dq = (2.0 * c2 - 3.0 * y) * y - c1
        if dq >= 0.0:
            return start + y, False
        step = -q / dq
        if step <= tiny:  # q <= 0 (rounding at the root) or converged
            return start + y + (step if step > 0.0 else 0.0), True
        y += step
    return start + y, False


@njit(cache=True, error_model="numpy", inline="always")
def _spectrum_from_smallest(S, lam1, q):
    """The gap lambda_2 - lambda_1 of the symmetric 3 x 3 ``S`` and its smallest eigenvector in
    ``q``, given lambda_1 = ``lam1`` (the search computed it for the node's bound): the other
    two eigenvalues are the roots of x^2 - s x + p with s = trace - lambda_1 and
    p = c1 - lambda_1 s (c1 the sum of the principal 2 x 2 minors); lambda_3 by the formula
    without cancellation, lambda_2 = p / lambda_3; q by :func:`solvopt.khc.bounds.smallest_vector_3`.
    Returns -1 where that is not resolved (the caller then uses bounds.spectrum)."""
    a, b, c = S[0, 0], S[1, 1], S[2, 2]
    d, e, f = S[0, 1], S[0, 2], S[1, 2]
    s = a + b + c - lam1
    p = a * b + a * c + b * c - d * d - e * e - f * f - lam1 * s
    disc = s * s - 4.0 * p
    if s <= 0.0 or disc < 0.0:
        return -1.0
    lam3 = 0.5 * (s + math.sqrt(disc))
    gap = p / lam3 - lam1
    if gap <= 1e-4 * s or not smallest_vector_3(S, lam1, q):  # near a double eigenvalue q is ill-determined
        return -1.0
    return gap


# --- the resumable depth-first search -------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def _cluster_increases(Xt, n, level, j, cnt, mean, S, memo, home, scatter, axis, jac, z1, r2, lam1):
    """Fill row ``home`` of ``memo`` (length M + n + 2) for one cluster: memo[home, p] = the
    cheap lower estimate of lambda_min(A + x_p) - lambda_min(A) for every point p (the
    two-eigenvalue bound of :mod:`solvopt.khc.bounds` with weight 1: beta = N / (N + 1); exact
    for n = 2), then the cluster's smallest eigenvector, its gap lambda_2 - lambda_1 (from its
    smallest eigenvalue ``lam1`` for n = 3 where resolved, else :func:`~solvopt.khc.bounds.spectrum`) and
    bounds.py's rounding MARGIN.

    Every point, assigned or not, in loops without branches over the points' coordinates
    ``Xt`` (n x M) into the separate scratch arrays ``z1`` and ``r2`` (length M): they run in
    SIMD lanes, faster than a loop over the unassigned points alone (2-D indexing and distinct
    arrays, not views of one: measured 2.3 times faster than that at M = 100). The cluster is
    j at ``level``; its scatter is copied into the scratch ``scatter`` and its eigenvector comes
    out in ``axis`` (views S[level, j] would cost atomic reference counts at every call)."""
    M = Xt.shape[1]
    for a in range(n):
        for q in range(n):
            scatter[a, q] = S[level, j, a, q]
    gap = -1.0
    if n == 3:
        gap = _spectrum_from_smallest(scatter, lam1, axis)
    if gap < 0.0:
        _, gap = spectrum(scatter, n, axis, jac)
    trace = 0.0
    for a in range(n):
        trace += scatter[a, a]
        memo[home, M + a] = axis[a]
    memo[home, M + n] = gap
    memo[home, M + n + 1] = MARGIN * trace
    size = cnt[level, j]
    beta = size / (size + 1.0)
    for p in range(M):
        z1[p] = 0.0
        r2[p] = 0.0
    for a in range(n):
        c, q = mean[level, j, a], axis[a]
        for p in range(M):
            v = Xt[a, p] - c
            z1[p] += q * v
            r2[p] += v * v
    for p in range(M):
        memo[home, p] = placement_increase(gap, beta, z1[p] * z1[p], r2[p])


@njit(cache=True, inline="always")
def _placement_row(top, i, p, memo, src, level, k, margin):
    """top[i, :k] = point p's estimated increase in each cluster at ``level``, less the rounding
    margin (memo column ``margin``), at least 0: a row of :func:`_joint_increase`'s input."""
    for j in range(k):
        home = src[level, j]
        value = memo[home, p] - memo[home, margin]
        top[i, j] = value if value > 0.0 else 0.0


@njit(cache=True, error_model="numpy", inline="always")
def _pick_point(X, k, level, cnt, mean, S, lam, used, assigned, scatter, jac, top, memo, src, slack, Xt, lane_a, lane_b,
                axis, hard, end):
    """Dynamic order: ``(point, increase)``, the unassigned point whose cheapest placement raises
    the bound most, and a valid lower bound on what the unassigned points add to the node's cost.

    ``max_u min_j (lambda_min(A_j + u) - lambda_min(A_j))`` is itself a valid increase of the
    node's bound (u must go somewhere); branching on a point with large increases makes its
    children strong. The pick scores each point by the cheap lower estimates d_j of its
    placements (:func:`_cluster_increases`; the children's bounds are then computed exactly)
    with the product rule of MIP branching, prod_j (d_j + f s), s the node's slack (incumbent
    less gap tolerance less the node's cost), f = PRODUCT_FLOOR: a point whose other children
    are strong too wins over one whose cheapest placement is a little higher. Measured against
    max-min (min_j d_j alone) on uniform points, m = 70, n = 3, k = 3: 8.9 against 33 million
    nodes, about 3 times fewer at m = 60-80 for n, k in {2, 3}; the product of the two cheapest
    placements only: 5-8% more nodes at n = k = 3 (benchmarks/results/khc_bnb_scale.md). While
    some usable cluster has fewer than n points every increase is 0: take the next point in the
    static order (increase 0).

    The estimates are memoised per level: level e's row of ``memo`` holds those of the cluster
    that changed on entering level e (computed on first use, flag src[e, k]), and src[e, c] is
    the level whose row holds cluster c's (the last level on the path where c changed), so a
    node computes one cluster's estimates, not k. ``increase`` is :func:`_joint_increase` over the
    LOOKAHEAD points of largest cheapest estimate (kept in the scratch ``top``), less the margins;
    where that is below the slack but at least half of it, the pairs' shares may raise it enough to
    prune (:func:`_node_increase`, :func:`_pair_shares`, :func:`_joint_increase_pairs`: a cluster
    that takes two of the points rises by at least their weight-2 charges, which at most double
    the plain value; section 10 of benchmarks/results/khc_bnb_scale.md: 20% fewer nodes in the
    final doll of m = 100).

    Only the points before ``end`` are candidates (and only they enter the increase): the split
    dolls (:func:`split_starts`) bound the points from ``end`` on by the doll's value in R.
    """
    M, n = X.shape
    lookahead = top.shape[0] // 2 - 1  # top keeps one point more than the joint bound takes
    limit = used[level] + 1 if used[level] + 1 < k else k
    first = -1
    for p in range(end):
        if not assigned[p]:
            first = p
            break
    for j in range(limit):
        if cnt[level, j] + 1.0 <= n:
            for i in range(lookahead + 1):
                hard[level, i] = -1
            return first, 0.0
    for j in range(limit):  # here limit = k: all clusters are open
        home = src[level, j]
        if src[home, k] == 0:  # cluster j as it is at ``home`` (and here): estimates not computed yet
            _cluster_increases(Xt, n, level, j, cnt, mean, S, memo, home, scatter, axis, jac, lane_a, lane_b,
                               lam[level, j])
            src[home, k] = 1
    # first the parent's hardest points (hard[level - 1]: its top points and one spare) with this
    # node's estimates: when their joint increase already exhausts the slack the node is pruned
    # without scoring every point (the full scan finds the same points most of the time)
    count = lookahead - lookahead  # a computed 0 (see below)
    for i in range(lookahead + 1):
        p = hard[level - 1, i] if level > 0 else -1
        if p < 0 or p >= end or assigned[p] or count == lookahead:
            continue
        _placement_row(top, count, p, memo, src, level, k, M + n + 1)
        top[count, k + 1] = p
        count += 1
    if count > 0:
        quick = _node_increase(top, count, slack, X, level, k, cnt, mean, memo, src)
        if quick >= slack:
            return first, quick
    floor = PRODUCT_FLOOR * slack
    # every point's score and cheapest estimate, cluster by cluster (branch-free loops: SIMD) ...
    scores, cheapests = lane_a, lane_b
    for p in range(M):
        scores[p] = 1.0
        cheapests[p] = np.inf
    for j in range(limit):
        home = src[level, j]
        for p in range(M):
            increase = memo[home, p]
            scores[p] *= increase + floor
            cheapests[p] = increase if increase < cheapests[p] else cheapests[p]
    for p in range(M):  # the assigned points lose both contests (scores are >= 0: slack > 0 here)
        scores[p] = -2.0 if assigned[p] else scores[p]
        cheapests[p] = -np.inf if assigned[p] else cheapests[p]
    # ... then the best score and the largest cheapest estimates, in a loop whose branches are
    # rarely taken (a test of assigned[p] here was mispredicted a third of the time)
    best_point, best_score = first, -1.0
    kept = lookahead - lookahead  # a computed 0: a literal would make Numba compile _joint_increase twice
    bar = -np.inf  # the smallest kept cheapest estimate once LOOKAHEAD + 1 are kept
    for p in range(end):
        cheapest = cheapests[p]
        score = scores[p]
        if score > best_score:
            best_score = score
            best_point = p
        # keep the LOOKAHEAD + 1 points of largest cheapest estimate in top[:kept], sorted decreasing
        if cheapest > bar:
            i = kept if kept <= lookahead else lookahead
            while i > 0 and top[i - 1, k] < cheapest:
                for j in range(k + 2):
                    top[i, j] = top[i - 1, j]
                i -= 1
            _placement_row(top, i, p, memo, src, level, k, M + n + 1)
            top[i, k] = cheapest
            top[i, k + 1] = p
            if kept <= lookahead:
                kept += 1
            if kept == lookahead + 1:
                bar = top[kept - 1, k]
    for i in range(lookahead + 1):  # the children's first candidates (see above)
        hard[level, i] = int(top[i, k + 1]) if i < kept else -1
    return best_point, _node_increase(top, kept if kept < lookahead else lookahead, slack, X, level, k, cnt, mean,
                                      memo, src)


@njit(cache=True, error_model="numpy", inline="always")
def _node_increase(top, count, slack, X, level, k, cnt, mean, memo, src):
    """What the rows' ``count`` points add to the node at least: :func:`_joint_increase`, raised by
    the pairs' shares where it is below ``slack`` but at least half of it (the shares at most
    double it, so below half they cannot prune)."""
    increase = _joint_increase(top, count, k)
    if increase < slack <= 2.0 * increase and count >= 2:
        M, n = X.shape
        _pair_shares(top, count, X, level, k, cnt, mean, memo, src, M, n)
        increase = max(increase, _joint_increase_pairs(top, count, k))
    return increase


@njit(cache=True, inline="always")
def _joint_increase_small(top, count, k):
    """:func:`_joint_increase` for 1 to 3 points: the minimum over all k^count assignments."""
    best = np.inf
    if count == 1:
        for a in range(k):
            best = min(best, top[0, a])
        return best
    if count == 2:
        for a in range(k):
            for b in range(k):
                value = max(top[0, a], top[1, a]) if a == b else top[0, a] + top[1, b]
                best = min(best, value)
        return best
    for a in range(k):
        t0 = top[0, a]
        for b in range(k):
            t1 = top[1, b]
            pair = max(t0, t1) if a == b else t0 + t1  # points 0 and 1 alone
            if pair >= best:
                continue
            for c in range(k):
                t2 = top[2, c]
                if c == a and c == b:
                    value = max(pair, t2)
                elif c == a:
                    value = max(t0, t2) + t1
                elif c == b:
                    value = t0 + max(t1, t2)
                else:
                    value = pair + t2
                best = min(best, value)
    return best


@njit(cache=True, error_model="numpy", inline="always")
def _pair_shares(top, count, X, level, k, cnt, mean, memo, src, M, n):
    """top[i, k + 2 + j] = phi_j(u_i, 1/2) for the rows' points u_i (point index in column k + 1):
    what u_i adds to cluster j when the cluster takes two of the rows' points (the charge of
    :mod:`solvopt.khc.bounds`, case (1) with mu = 1/2: weight-2 estimate, halved, less the margin)."""
    for i in range(count):
        p = int(top[i, k + 1])
        for j in range(k):
            home = src[level, j]
            z1 = 0.0
            r2 = 0.0
            for a in range(n):
                v = X[p, a] - mean[level, j, a]
                z1 += memo[home, M + a] * v
                r2 += v * v
            N = cnt[level, j]
            charge = placement_increase(memo[home, M + n], 2.0 * N / (N + 2.0), z1 * z1, r2) - memo[home, M + n + 1]
            value = 0.5 * charge
            top[i, k + 2 + j] = value if value > 0.0 else 0.0


@njit(cache=True)
def _joint_increase_pairs(top, count, k):
    """:func:`_joint_increase` of 2 or 3 points with a cluster that takes two or three of them
    rising by at least the largest of its pairs' shares (:func:`_pair_shares`), when larger than
    its largest single increase. Apart from :func:`_joint_increase_small` on purpose: one function
    with a flag for both made the plain joint increase, called at every node, branchier (one thread,
    uniform m = 70, n = 3, k = 3: 11.4-13.3 s against 10.1-11.3 s, the same tree)."""
    w = k + 2
    best = np.inf
    if count == 2:
        for a in range(k):
            for b in range(k):
                if a == b:
                    value = max(max(top[0, a], top[1, a]), top[0, w + a] + top[1, w + a])
                else:
                    value = top[0, a] + top[1, b]
                best = min(best, value)
        return best
    for a in range(k):
        for b in range(k):
            for c in range(k):
                if a != b and b != c and a != c:
                    value = top[0, a] + top[1, b] + top[2, c]
                elif a == b and b == c:
                    value = max(max(top[0, a], top[1, a], top[2, a]), top[0, w + a] + top[1, w + a],
                                top[0, w + a] + top[2, w + a], top[1, w + a] + top[2, w + a])
                elif a == b:
                    value = max(max(top[0, a], top[1, a]), top[0, w + a] + top[1, w + a]) + top[2, c]
                elif a == c:
                    value = max(max(top[0, a], top[2, a]), top[0, w + a] + top[2, w + a]) + top[1, b]
                else:
                    value = max(max(top[1, b], top[2, b]), top[1, w + b] + top[2, w + b]) + top[0, a]
                best = min(best, value)
    return best


@njit(cache=True)
def _joint_increase(top, count, k):
    """min over the assignments of points 0..count-1 to the k clusters of
    sum_j max_{i -> j} top[i, j]: a lower bound on what those points add to the node's cost.

    Valid because points in different clusters add their increases exactly (each cluster's cost
    is its own), and a cluster that takes several points rises by at least the largest of their
    single increases (adding points never lowers a smallest eigenvalue). A depth-first search
    with the running sum as its bound (points in decreasing order of their cheapest increase);
    rows ``L + d`` of ``top`` (L = top.shape[0] // 2) hold the clusters' maxima at depth d and
    column k there the choice made at depth d.
    """
    if count == 0:
        return 0.0
    if count <= 3:  # the LOOKAHEAD sizes: every assignment in plain loops (the search below took ~16% of
        # the kernel's perf samples on the final doll of m = 100)
        return _joint_increase_small(top, count, k)
    L = top.shape[0] // 2
    best = 0.0  # the greedy assignment (each point to its cheapest cluster) is the first candidate
    for j in range(k):
        top[L, j] = 0.0
    for i in range(count):
        c = 0
        for j in range(1, k):
            if top[i, j] < top[i, c]:
                c = j
        if top[i, c] > top[L, c]:
            top[L, c] = top[i, c]
    for j in range(k):
        best += top[L, j]
        top[L, j] = 0.0
    d = 0
    top[L, k] = -1.0
    while d >= 0:
        c = int(top[L + d, k]) + 1
        if c >= k:
            d -= 1
            continue
        top[L + d, k] = c
        total = 0.0
        for j in range(k):
            value = top[L + d, j]
            if j == c and top[d, j] > value:
                value = top[d, j]
            top[L + d + 1, j] = value
            total += value
        if total >= best:
            continue
        if d + 1 == count:
            best = total
            continue
        d += 1
        top[L + d, k] = -1.0
    return best


@njit(cache=True, nogil=True)
def _search(X, R, k, cnt, mean, S, lam, used, base, bound, child_j, child_b, child_lam, nchild, pos, branch_point,
            assigned,
            dynamic, assign, best, scal, iscal, max_nodes, rel_gap, abs_gap, tmp_S, work, spec, psi, jac,
            shared, path, front_paths, front_b):
    """Run the depth-first search for at most ``max_nodes`` nodes; return _DONE or _BUDGET.

    Level d's children put point ``branch_point[d]`` into each cluster: d itself in the static
    order (``dynamic`` None: Numba then prunes the dynamic branch and never compiles
    :func:`_pick_point`), chosen by :func:`_pick_point` otherwise (``dynamic`` True).
    scal = [incumbent, min bound of pruned nodes]; iscal = [depth, nodes, path length, split
    depth, frontier count]. Everything lives in the arrays, so the next call resumes where this
    one stopped. ``psi`` None: the plain bound; else (with the scratch ``spec``) every node also
    charges its unassigned points (:func:`solvopt.khc.bounds.charge_bound`, static order only).

    For the parallel search (:mod:`solvopt.khc.parallel`; a plain search passes ``shared`` =
    [incumbent], path length 0 and split depth M + 1, which change nothing): nodes are pruned
    against min(own incumbent, ``shared[0]``), the incumbent cost other searches share (a leaf
    that beats both writes it); at levels d < path length only the child into cluster
    ``path[0, d]`` is made (the search is the subtree below that path) and, in the dynamic order,
    the branching point is the recorded ``path[1, d]`` (where >= 0) rather than a new pick: a pick
    depends on the incumbent through the slack, so a subtree replayed after the incumbent improved
    could otherwise branch on another point there and miss part of the tree; a node at the split
    depth is not expanded but recorded: its levels' clusters and branching points in
    ``front_paths[row, 0]`` and ``[row, 1]`` and its bound in ``front_b`` (while there is room;
    the count goes on).
    The kernel releases the GIL: two threads run it on two searches at once.
    """
    M, n = X.shape
    nodes_start = iscal[1]
    path_len = iscal[2]
    split_depth = iscal[3]
    if dynamic is not None:  # unpacked once: every unpacking (and every array view) costs reference counts
        top, memo, src, Xt, lane_a, lane_b, axis, hard, ends = dynamic
    while True:
        d = iscal[0]
        if d < 0:
            return _DONE
        if iscal[1] - nodes_start >= max_nodes:
            return _BUDGET
        if pos[d] >= nchild[d]:
            assigned[branch_point[d]] = False
            iscal[0] = d - 1
            continue
        j = child_j[d, pos[d]]
        b = child_b[d, pos[d]]
        new_lam = child_lam[d, pos[d]]
        pos[d] += 1
        ub = scal[0] if scal[0] < shared[0] else shared[0]
        tolerance = rel_gap * abs(ub)
        if abs_gap > tolerance:
            tolerance = abs_gap
        if b >= ub - tolerance:
            if b < scal[1]:
                scal[1] = b  # the remaining siblings have larger bounds
            pos[d] = nchild[d]
            continue
        # the child: copy level d to d + 1 and put the branching point into cluster j
        e = d + 1
        point = branch_point[d]
        for c in range(k):
            cnt[e, c] = cnt[d, c]
            lam[e, c] = lam[d, c]
            for a in range(n):
                mean[e, c, a] = mean[d, c, a]
                for q in range(n):
                    S[e, c, a, q] = S[d, c, a, q]
        # rank-one update of cluster j: add the point; its smallest eigenvalue is the one computed
        # for the child's bound (the same operations on the same numbers)
        size = cnt[e, j]
        factor = size / (size + 1.0)
        for a in range(n):
            da = X[point, a] - mean[e, j, a]
            for q in range(n):
                S[e, j, a, q] += factor * da * (X[point, q] - mean[e, j, q])
        for a in range(n):
            mean[e, j, a] += (X[point, a] - mean[e, j, a]) / (size + 1.0)
        cnt[e, j] = size + 1.0
        lam[e, j] = new_lam
        used[e] = used[d] if used[d] > j + 1 else j + 1
        total = 0.0
        for c in range(k):
            total += lam[e, c]
        base[e] = total
        assign[point] = j
        assigned[point] = True
        iscal[1] += 1
        if e == M:
            bound[e] = b
            if total < scal[0] and total < shared[0]:
                scal[0] = total
                for i in range(M):
                    best[i] = assign[i]
                shared[0] = total  # a racing write may lose a better value: see parallel.py
            continue
        if psi is not None:
            charged, pruned = charge_bound(X, e, k, cnt[e], mean[e], S[e], total, R, ub - tolerance, spec, psi, jac)
            if pruned:  # no completion beats the incumbent by more than the tolerance
                if charged > ub:
                    charged = ub
                if charged < scal[1]:
                    scal[1] = charged
                continue
            if charged > b:
                b = charged
        bound[e] = b
        if e == split_depth:  # the parallel search's frontier: record the node, do not expand it
            row = iscal[4]
            if row < front_b.shape[0]:
                for level in range(e):
                    front_paths[row, 0, level] = assign[branch_point[level]]
                    front_paths[row, 1, level] = branch_point[level]
                front_b[row] = b
            iscal[4] = row + 1
            continue
        if dynamic is None:
            branch_point[e] = e
        else:
            for c in range(k):  # the memo's pointers: cluster j changed on entering level e
                src[e, c] = src[d, c] if c != j else e
            src[e, k] = 0
            if e < path_len and path[1, e] >= 0:  # a replayed level: the recorded point (see above)
                branch_point[e] = path[1, e]
                increase = 0.0
                for i in range(hard.shape[1]):
                    hard[e, i] = -1
            else:
                branch_point[e], increase = _pick_point(X, k, e, cnt, mean, S, lam, used, assigned, tmp_S, jac, top,
                                                        memo, src, ub - tolerance - total - R[e], Xt, lane_a, lane_b,
                                                        axis, hard, ends[e])
            if total + R[e] + increase > b:  # R[e] bounds the points from ends[e] on, the increase those before
                b = total + R[e] + increase
                bound[e] = b
                if b >= ub - tolerance:  # no completion beats the incumbent by more than the tolerance
                    if b < scal[1]:
                        scal[1] = b if b < ub else ub
                    continue
        # the children: the branching point into each usable cluster, sorted by bound
        point = branch_point[e]
        limit = used[e] + 1 if used[e] + 1 < k else k
        count = 0
        for j in range(limit):
            if e < path_len and j != path[0, e]:
                continue  # above the subtree's root only its path is made
            size = cnt[e, j]
            new_lam = 0.0
            if size + 1.0 > n:  # lambda_min of cluster j with the point added (at most n points: 0)
                factor = size / (size + 1.0)
                for a in range(n):
                    da = X[point, a] - mean[e, j, a]
                    for q in range(n):
                        tmp_S[a, q] = S[e, j, a, q] + factor * da * (X[point, q] - mean[e, j, q])
                converged = False
                if n == 3 and dynamic is not None:  # Newton from the estimate of the pick (a lower bound)
                    start = lam[e, j]
                    home = src[e, j]
                    if src[home, k] == 1:
                        estimate = memo[home, point] - memo[home, M + n + 1]
                        if estimate > 0.0:
                            start += estimate
                    value, converged = _smallest_from_below(tmp_S, start)
                if not converged:
                    value = _smallest_eigenvalue_work(tmp_S, n, work)
                new_lam = value if value > 0.0 else 0.0
            b_child = total - lam[e, j] + new_lam + R[e + 1]
            if b_child < b:
                b_child = b
            i = count  # insertion into the sorted list
            while i > 0 and child_b[e, i - 1] > b_child:
                child_b[e, i] = child_b[e, i - 1]
                child_j[e, i] = child_j[e, i - 1]
                child_lam[e, i] = child_lam[e, i - 1]
                i -= 1
            child_b[e, i] = b_child
            child_j[e, i] = j
            child_lam[e, i] = new_lam
            count += 1
        nchild[e] = count
        pos[e] = 0
        iscal[0] = e


def own_cache_lines(values, dtype=np.float64) -> np.ndarray:
    """An array of ``values`` with 64 unused bytes on each side: the small counters a kernel
    writes at every node (and the shared incumbent) share no cache line with another thread's
    data, which would make the cores invalidate each other's caches (false sharing)."""
    pad = 64 // np.dtype(dtype).itemsize
    buffer = np.zeros(len(values) + 2 * pad, dtype=dtype)
    view = buffer[pad:pad + len(values)]
    view[:] = values
    return view


@dataclass
class DollSearch:
    """The search state of one branch-and-bound over the points X (one Russian doll)."""

    X: np.ndarray
    R: np.ndarray           # R[d]: lower bound of the suffix X[d:], R[len(X)] = 0
    k: int
    incumbent: float
    incumbent_assignment: np.ndarray
    dynamic: bool = False   # pick the branching point per node (R: see ``ends``)
    charge: bool = False    # charge the unassigned points (bounds.charge_bound; ignored by the dynamic order)
    nodes: int = 0
    arrays: dict = field(default_factory=dict)
    # the parallel search's pieces (solvopt.khc.parallel; the defaults are the plain search):
    shared: np.ndarray | None = None  # [incumbent cost] shared between searches (None: this search's own)
    path: np.ndarray | None = None    # the subtree's root: path[0, d] = cluster of level d's branching point,
                                      # path[1, d] = that point (-1 or a 1-d path: the kernel picks it)
    split_depth: int | None = None    # record the nodes at this depth instead of expanding them ...
    front_capacity: int = 0           # ... up to this many
    ends: np.ndarray | None = None    # dynamic order: at depth d only points before ends[d] are picked, and
                                      # R[d] bounds the points from ends[d] on (None: M, all points)

    def __post_init__(self):
        # one canonical layout for the kernels (one compiled signature each): float64, C order
        self.X = np.ascontiguousarray(self.X, dtype=np.float64)
        self.R = np.ascontiguousarray(self.R, dtype=np.float64)
        M, n = self.X.shape
        k = self.k
        a = self.arrays
        a["cnt"] = np.zeros((M + 1, k))
        a["mean"] = np.zeros((M + 1, k, n))
        a["S"] = np.zeros((M + 1, k, n, n))
        a["lam"] = np.zeros((M + 1, k))
        a["used"] = np.zeros(M + 1, dtype=np.int64)
        a["base"] = np.zeros(M + 1)
        a["bound"] = np.zeros(M + 1)
        a["child_j"] = np.zeros((M + 1, k), dtype=np.int64)
        a["child_b"] = np.zeros((M + 1, k))
        a["child_lam"] = np.zeros((M + 1, k))  # the children's new smallest eigenvalue (root: 0)
        a["nchild"] = np.zeros(M + 1, dtype=np.int64)
        a["pos"] = np.zeros(M + 1, dtype=np.int64)
        a["branch_point"] = np.zeros(M + 1, dtype=np.int64)
        a["assigned"] = np.zeros(M, dtype=np.bool_)
        a["assign"] = np.zeros(M, dtype=np.int64)
        a["best"] = np.array(self.incumbent_assignment, dtype=np.int64)
        a["scal"] = own_cache_lines([self.incumbent, np.inf])
        path = None if self.path is None else np.atleast_2d(np.asarray(self.path, dtype=np.int64))
        path_len = 0 if path is None else path.shape[1]
        split = M + 1 if self.split_depth is None else int(self.split_depth)
        a["iscal"] = own_cache_lines([0, 0, path_len, split, 0], np.int64)
        if self.shared is None:
            self.shared = own_cache_lines([self.incumbent])
        a["path"] = np.full((2, M + 1), -1, dtype=np.int64)
        if path_len:
            a["path"][:path.shape[0], :path_len] = path
        a["front_paths"] = np.zeros((self.front_capacity, 2, M + 1), dtype=np.int64)
        a["front_b"] = np.zeros(self.front_capacity)
        a["tmp_S"] = np.zeros((n, n))
        # Jacobi scratch (see _jacobi_smallest); None for n <= 2, whose kernels compile without it
        a["work"] = np.zeros((n, n)) if n > 2 else None
        # charge_bound's scratch; None compiles the kernel without it
        charged = self.charge and not self.dynamic
        a["spec"] = np.zeros((k, n + 2))
        a["jac"] = np.zeros((2, n, n))
        a["psi"] = np.zeros((MU_STEPS, M)) if charged else None
        # the dynamic order's scratch (_pick_point, _joint_increase); None compiles the static kernel
        a["dynamic"] = (np.zeros((2 * LOOKAHEAD + 2, 2 * k + 2)), np.zeros((M + 1, M + n + 2)),
                        np.zeros((M + 1, k + 1), dtype=np.int64), np.ascontiguousarray(self.X.T),
                        np.zeros(M), np.zeros(M), np.zeros(n),
                        np.full((M + 1, LOOKAHEAD + 1), -1, dtype=np.int64),
                        np.full(M + 1, M, dtype=np.int64) if self.ends is None else
                        np.ascontiguousarray(self.ends, dtype=np.int64)) if self.dynamic else None
        # the root: point 0 goes to cluster 0 (symmetry), bound R[1]
        a["nchild"][0] = 1
        a["child_j"][0, 0] = 0
        a["child_b"][0, 0] = self.R[1] if M >= 1 else 0.0
        a["bound"][0] = self.R[0]

    def run(self, max_nodes: int, rel_gap: float, abs_gap: float) -> bool:
        """Search at most ``max_nodes`` nodes; True when the search is complete."""
        a = self.arrays
        code = _search(self.X, self.R, int(self.k), a["cnt"], a["mean"], a["S"], a["lam"], a["used"], a["base"],
                       a["bound"], a["child_j"], a["child_b"], a["child_lam"], a["nchild"], a["pos"], a["branch_point"],
                       a["assigned"], a["dynamic"], a["assign"], a["best"], a["scal"], a["iscal"],
                       int(max_nodes), float(rel_gap), float(abs_gap), a["tmp_S"], a["work"], a["spec"], a["psi"],
                       a["jac"], self.shared, a["path"], a["front_paths"], a["front_b"])
        self.nodes = int(a["iscal"][1])
        self.incumbent = float(a["scal"][0])
        self.incumbent_assignment = a["best"].copy()
        return code == _DONE

    def open_nodes(self) -> tuple[int, float]:
        """Number of unexplored children on the stack and the smallest of their bounds."""
        a = self.arrays
        depth = int(a["iscal"][0])
        count, smallest = 0, math.inf
        for d in range(depth + 1):
            rest = a["child_b"][d, a["pos"][d]:a["nchild"][d]]
            count += rest.size
            if rest.size:
                smallest = min(smallest, float(rest.min()))
        return count, smallest

    def bound(self) -> float:
        """A valid lower bound now: min(incumbent, open children, nodes pruned within the gap)."""
        _, smallest_open = self.open_nodes()
        return min(self.incumbent, smallest_open, float(self.arrays["scal"][1]))

    def frontier(self) -> list[tuple[float, np.ndarray]]:
        """The nodes recorded at the split depth: (bound, path), path[0, d] = cluster of level d's
        branching point, path[1, d] = that point."""
        a = self.arrays
        rows = min(int(a["iscal"][4]), self.front_capacity)
        return [(float(a["front_b"][r]), a["front_paths"][r, :, :self.split_depth].copy()) for r in range(rows)]

    def frontier_overflowed(self) -> bool:
        return int(self.arrays["iscal"][4]) > self.front_capacity

    def split_open(self) -> list[tuple[float, np.ndarray]]:
        """Hand over the open children of the shallowest level that has some (below the path):
        (bound, path) of each (path as in :meth:`frontier`); this search will not visit them (work sharing
        between threads).
        Call only while the kernel is not running on this search."""
        a = self.arrays
        depth = int(a["iscal"][0])
        start = int(a["iscal"][2])  # above the path every level holds its one path child
        for d in range(start, depth + 1):
            first, last = int(a["pos"][d]), int(a["nchild"][d])
            if first < last:
                points = a["branch_point"][:d + 1].copy()
                clusters = a["assign"][points]  # level d's cluster is each child's own, set below
                out = []
                for i in range(first, last):
                    clusters[d] = a["child_j"][d, i]
                    out.append((float(a["child_b"][d, i]), np.stack([clusters, points])))
                a["nchild"][d] = first
                return out
        return []
