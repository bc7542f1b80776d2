"""Node bounds of the k-HC2 assignment branch-and-bound that charge the unassigned points.

A node of :mod:`solvopt.khc.bnb` has partial clusters A_1..A_k (N_j points, centroid c_j, centred
scatter S_j, smallest eigenvalue lambda_j) and unassigned points U, in the static order a suffix
of the points. Its plain bound sum_j lambda_j charges nothing for U. This module charges them.

**The charge of one point.** For a plane P write f_j(P) = sum_{a in A_j} dist(a, P)^2 and
e_j(P) = f_j(P) - lambda_j >= 0 (the excess of P over A_j's best plane). For mu > 0,

    phi_j(u, mu) = min_P [ mu e_j(P) + dist(u, P)^2 ]
                 = mu ( lambda_min(S_j + beta v v^T) - lambda_j ),   v = u - c_j, beta = N_j / (N_j mu + 1):

mu f_j(P) + dist(u, P)^2 is mu times the least-squares cost of A_j plus u with weight W = 1/mu,
whose best plane passes through the weighted centroid and costs the smallest eigenvalue of the
weighted scatter S_j + (N_j W / (N_j + W)) v v^T. phi is 0 while N_j < n (a plane passes
through A_j and u), concave and nondecreasing in mu, and tends to u's distance to A_j's plane.

**Lower bound on lambda_min(S + beta v v^T) without an n x n eigenproblem.** With the smallest
eigenpair (lambda_1, q) and the second eigenvalue lambda_2 of S, S >= T := lambda_1 q q^T +
lambda_2 (I - q q^T) (Loewner order), so lambda_min(S + beta v v^T) >= lambda_min(T + beta v v^T).
T + beta v v^T is lambda_2 on the complement of span{q, v} and, in the basis q, v_perp/|v_perp|,
lambda_1 I + [[beta z1^2, beta z1 z2], [beta z1 z2, g + beta z2^2]] with z1 = q^T v,
z2^2 = |v|^2 - z1^2 and the gap g = lambda_2 - lambda_1; that block's smallest eigenvalue is at
most lambda_1 + g (test vector (z2, -z1)), so

    lambda_min(S + beta v v^T) - lambda_1 >= incr := 2 beta g z1^2 / (tr + sqrt(tr^2 - 4 beta g z1^2)),
    tr = g + beta |v|^2

(exact for n = 2). One dot product per point and cluster, no eigenproblem. The spectrum of S_j
(:func:`spectrum`: closed form for n = 2, Jacobi with accumulated rotations above) is computed
once per node and cluster. Rounding: with computed eigenpairs the residual S q - lambda_1 q is a
few eps ||S||, and T built from them differs from a true minorant of S by at most that
(in the Loewner order: an eigenvector off by an angle a moves T by g sin a, and sin a is at most
the residual over g); ``MARGIN`` * trace(S_j), orders of magnitude above, is subtracted from
every incr, so rounding never overstates a charge.

**Sharing the clusters' excess.** Let U' be the next t unassigned points and U'' the rest (a
suffix, whose k-HC2 optimum is at least R[.], the Russian-doll bound, 0 without dolls). For any
completion with planes P_j and any mu > 0, every u in U' assigned to cluster c(u) satisfies
dist(u, P_c(u))^2 >= phi_c(u)(u, mu) - mu e_c(u)(P_c(u)) >= psi_u(mu) - mu e_c(u)(P_c(u)) with
psi_u(mu) = min_j phi_j(u, mu). Summing, with t_j points of U' in cluster j,

    total >= sum_j lambda_j + R + sum_{u in U'} psi_u(mu) + sum_j e_j(P_j) (1 - mu t_j).

(1) mu t <= 1: every coefficient 1 - mu t_j >= 0, so total >= sum_j lambda_j + R + sum psi_u(mu):
    a valid node bound (reported, and inherited by the children).
(2) mu t > 1: suppose the completion costs less than the target T (incumbent minus the gap
    tolerance). Every other term is >= 0, so each e_j <= s := T - sum_j lambda_j - R, and
    sum_j e_j (1 - mu t_j) >= -s sum_j max(0, mu t_j - 1) >= -s (mu t - 1) (the t_j sum to t).
    Hence total >= sum_j lambda_j + R + sum psi_u(mu) - s (mu t - 1); if that is >= T, no
    completion beats T and the node is pruned (its subtree's costs are >= min(incumbent, that
    value), which is what the search records as the bound of a pruned node).

Every t (U' a prefix of U, R = R[e + t]) and every mu of a small grid mu_g = MU_RATIO^g / |U| is
tried; prefix sums make all t cost O(|U|) per mu, the charges O(|U| k) per mu. (Sharing is
what makes it valid: the tempting sum of each point's cheapest single-point increase double
counts a cluster's excess, see bnb.py.)
"""
from __future__ import annotations

import math

from numba import njit

MU_STEPS = 6          # the mu grid: MU_RATIO^g / |U| for g < MU_STEPS
MU_RATIO = 4.0
MARGIN = 1e-12        # times trace(S_j): subtracted from each charge (rounding of the spectrum)
CHARGE_DEPTH = 1.0
TRIG_SEPARATION = 1e-4  # 3 x 3 trigonometric eigenvalues only when |r| <= 1 - this (else Jacobi)


@njit(cache=True)
def jacobi_diagonalise(A, n, V, track):
    """Diagonalise the symmetric n x n A in place by the cyclic Jacobi method; V *= rotations if ``track``.

    Each rotation zeroes one off-diagonal pair (Golub & Van Loan's cyclic Jacobi; the diagonal is
    updated by the accurate ``-/+ t a_pq`` formulas); sweeps repeat until every off-diagonal
    entry is below ``1e-16 sqrt(|a_pp a_qq|)`` (the relative-accuracy criterion of Demmel and
    Veselic). Backward stable like LAPACK's symmetric eigensolvers (eigenvalue errors a few
    eps ||A||), quadratically convergent, allocation-free. With V = I on entry and ``track``, V's
    columns end as the eigenvectors of A's diagonal entries; without ``track`` V is not touched
    (callers pass A: one compiled signature serves both uses).
    """
    for _ in range(50):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                aij = A[i, j]
                aii = A[i, i]
                ajj = A[j, j]
                if abs(aij) <= 1e-16 * math.sqrt(abs(aii * ajj)):
                    continue
                rotated = True
                theta = 0.5 * (ajj - aii) / aij
                t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))  # 0 when theta overflows
                if theta < 0.0:
                    t = -t
                cos = 1.0 / math.sqrt(1.0 + t * t)
                sin = t * cos
                A[i, i] = aii - t * aij
                A[j, j] = ajj + t * aij
                A[i, j] = 0.0
                A[j, i] = 0.0
                for h in range(n):
                    if h != i and h != j:
                        ahi = A[h, i]
                        ahj = A[h, j]
                        A[h, i] = A[i, h] = cos * ahi - sin * ahj
                        A[h, j] = A[j, h] = sin * ahi + cos * ahj
                    if track:
                        vhi = V[h, i]
                        vhj = V[h, j]
                        V[h, i] = cos * vhi - sin * vhj
                        V[h, j] = sin * vhi + cos * vhj
        if not rotated:
            return


@njit(cache=True)
def trig_eigenvalues_3(S):
    """(lambda_1, lambda_2, resolved) of the symmetric 3 x 3 S by the trigonometric (Smith) formula,
    eigenvalues mid + 2 p cos(phi + 2 pi i / 3), phi = acos(r) / 3: errors at most
    eps ||S|| / sqrt(1 - r^2). ``resolved`` is False near a double eigenvalue (|r| > 1 -
    TRIG_SEPARATION), where acos loses half the digits and the caller must use Jacobi; S = c I
    gives (c, c, True)."""
    a, b, c = S[0, 0], S[1, 1], S[2, 2]
    d, e, f = S[0, 1], S[0, 2], S[1, 2]
    mid = (a + b + c) / 3.0
    p2 = (a - mid) ** 2 + (b - mid) ** 2 + (c - mid) ** 2 + 2.0 * (d * d + e * e + f * f)
    if p2 <= 0.0:
        return mid, mid, True
    p = math.sqrt(p2 / 6.0)
    ba, bb, bc = (a - mid) / p, (b - mid) / p, (c - mid) / p
    bd, be, bf = d / p, e / p, f / p
    r = 0.5 * (ba * (bb * bc - bf * bf) - bd * (bd * bc - bf * be) + be * (bd * bf - bb * be))
    if abs(r) > 1.0 - TRIG_SEPARATION:
        return mid, mid, False
    phi = math.acos(r) / 3.0
    lam1 = mid + 2.0 * p * math.cos(phi + 2.0 * math.pi / 3.0)
    lam3 = mid + 2.0 * p * math.cos(phi)
    return lam1, 3.0 * mid - lam1 - lam3, True


@njit(cache=True, error_model="numpy")
def placement_increase(gap, beta, z1sq, r2):
    """Lower bound on lambda_min(S + beta v v^T) - lambda_1 from S's gap lambda_2 - lambda_1,
    z1sq = (q . v)^2 and r2 = |v|^2 (the module docstring's incr; exact for n = 2).

    Branch-free (tr <= 0 selects 0 after the fact; numpy's error model lets 0 / 0 be NaN
    instead of raising), so a loop over points that calls it runs in SIMD lanes."""
    tr = gap + beta * r2
    det = beta * gap * z1sq
    disc = tr * tr - 4.0 * det
    value = 2.0 * det / (tr + math.sqrt(disc if disc > 0.0 else 0.0))
    return value if tr > 0.0 else 0.0


@njit(cache=True, inline="always")
def smallest_vector_3(S, lam1, q):
    """q = a unit eigenvector of the symmetric 3 x 3 ``S`` for its eigenvalue ``lam1``: the rows of
    S - lam1 I span q's orthogonal complement, so q is their longest cross product. False (q not
    set) where every cross product vanishes (S = lam1 I: any q)."""
    a1, b1, c1 = S[0, 0] - lam1, S[1, 1] - lam1, S[2, 2] - lam1
    d, e, f = S[0, 1], S[0, 2], S[1, 2]
    x0, y0, z0 = d * f - e * b1, e * d - a1 * f, a1 * b1 - d * d      # row 0 x row 1
    x1, y1, z1 = d * c1 - e * f, e * e - a1 * c1, a1 * f - d * e      # row 0 x row 2
    x2, y2, z2 = b1 * c1 - f * f, f * e - d * c1, d * f - b1 * e      # row 1 x row 2
    n0 = x0 * x0 + y0 * y0 + z0 * z0
    n1 = x1 * x1 + y1 * y1 + z1 * z1
    n2 = x2 * x2 + y2 * y2 + z2 * z2
    if n1 > n0 and n1 >= n2:
        x0, y0, z0, n0 = x1, y1, z1, n1
    elif n2 > n0:
        x0, y0, z0, n0 = x2, y2, z2, n2
    if n0 <= 0.0:
        return False
    norm = math.sqrt(n0)
    q[0], q[1], q[2] = x0 / norm, y0 / norm, z0 / norm
    return True


@njit(cache=True)
def spectrum(S, n, q, jac):
    """(lambda_1, lambda_2 - lambda_1) of the symmetric n x n S and a unit eigenvector q of lambda_1.

    n <= 2 in closed form. n = 3 by the trigonometric formula (eigenvalues q + 2 p cos(phi + 2 pi i / 3),
    phi = acos(r) / 3) and q as the longest cross product of two rows of S - lambda_1 I, when
    |r| <= 1 - TRIG_SEPARATION: errors then at most eps ||S|| / sqrt(1 - r^2) ~ 100 eps ||S||
    (six times faster than Jacobi, the cost that dominated the dynamic order's picks). Else,
    near a double eigenvalue where acos loses half the digits, and for n > 3: the cyclic Jacobi
    method with the rotations accumulated (``jac``: 2 x n x n scratch, S is not changed),
    eigenvalue errors a few eps ||S||. The eigenvector's angle error is at most the eigenvalue
    error over the gap (see the module docstring for the margin, which is far above both).
    """
    if n == 1:
        q[0] = 1.0
        return S[0, 0], 0.0
    if n == 2:
        a, b, c = S[0, 0], S[0, 1], S[1, 1]
        half = 0.5 * (a - c)
        rad = math.sqrt(half * half + b * b)
        lam1 = 0.5 * (a + c) - rad
        # (S - lam1 I) q = 0: q is orthogonal to either row; take the longer candidate
        x0, y0 = b, lam1 - a
        x1, y1 = c - lam1, -b
        if x0 * x0 + y0 * y0 >= x1 * x1 + y1 * y1:
            x, y = x0, y0
        else:
            x, y = x1, y1
        norm = math.sqrt(x * x + y * y)
        if norm == 0.0 or rad == 0.0:
            q[0], q[1] = 1.0, 0.0
            return lam1, 0.0
        q[0] = x / norm
        q[1] = y / norm
        return lam1, 2.0 * rad
    if n == 3:
        lam1, lam2, resolved = trig_eigenvalues_3(S)
        if resolved and smallest_vector_3(S, lam1, q):  # else S = c I: any q, and Jacobi below picks one
            gap = lam2 - lam1
            return lam1, gap if gap > 0.0 else 0.0
    A = jac[0]
    V = jac[1]
    for i in range(n):
        for j in range(n):
            A[i, j] = S[i, j]
            V[i, j] = 1.0 if i == j else 0.0
    jacobi_diagonalise(A, n, V, n > 0)  # a computed True: one signature with bnb's call
    first = 0
    for i in range(1, n):
        if A[i, i] < A[first, first]:
            first = i
    second = 1 if first == 0 else 0
    for i in range(n):
        if i != first and A[i, i] < A[second, second]:
            second = i
    for i in range(n):
        q[i] = V[i, first]
    gap = A[second, second] - A[first, first]
    return A[first, first], gap if gap > 0.0 else 0.0


@njit(cache=True)
def charge_bound(X, e, k, cnt, mean, S, base, R, target, spec, psi, jac):
    """(bound, pruned) of the node at depth ``e`` charging the unassigned points X[e:].

    ``cnt``, ``mean``, ``S`` are the node's k clusters (counts, centroids, centred scatters),
    ``base`` = sum_j lambda_j, ``R`` the suffix bounds (R[len(X)] = 0), ``target`` the value a
    completion must beat (incumbent minus gap tolerance). ``spec`` (k x (n + 2)), ``psi``
    (MU_STEPS x len(X)) and ``jac`` (2 x n x n) are scratch. Returns a valid lower bound of the node (case (1) of the
    module docstring, at least base + R[e]) and, when case (1) or (2) shows that no completion
    beats ``target``, pruned = True with the bound replaced by the value that proved it.
    """
    M, n = X.shape
    size = M - e
    plain = base + R[e]
    if size <= 0 or size > CHARGE_DEPTH * M:
        return plain, False
    for j in range(k):
        if cnt[j] < n:  # a plane passes through A_j and any point: every charge is 0
            return plain, False
    for j in range(k):
        lam1, gap = spectrum(S[j], n, spec[j], jac)
        spec[j, n] = gap
        trace = 0.0
        for a in range(n):
            trace += S[j, a, a]
        spec[j, n + 1] = MARGIN * trace
    # screen: every charge is at most the point's squared distance to the nearest cluster plane
    # (phi_j(u, mu) <= mu beta z1^2 <= z1^2), so when even those sums cannot reach the target
    # the node keeps its plain bound and the charges are not computed
    reach = plain
    acc = 0.0
    for i in range(size):
        u = e + i
        nearest = math.inf
        for j in range(k):
            if spec[j, n] <= 0.0:
                nearest = 0.0
                break
            z1 = 0.0
            for a in range(n):
                z1 += spec[j, a] * (X[u, a] - mean[j, a])
            if z1 * z1 < nearest:
                nearest = z1 * z1
        acc += nearest
        if base + R[e + i + 1] + acc > reach:
            reach = base + R[e + i + 1] + acc
    if reach < target:
        return plain, False
    for i in range(size):
        for g in range(MU_STEPS):
            psi[g, i] = math.inf
        u = e + i
        for j in range(k):
            gap = spec[j, n]
            if gap <= 0.0:
                for g in range(MU_STEPS):
                    psi[g, i] = 0.0
                break
            z1 = 0.0
            r2 = 0.0
            for a in range(n):
                v = X[u, a] - mean[j, a]
                z1 += spec[j, a] * v
                r2 += v * v
            z1sq = z1 * z1
            N = cnt[j]
            mu = 1.0 / size
            for g in range(MU_STEPS):
                incr = placement_increase(gap, N / (N * mu + 1.0), z1sq, r2)
                phi = mu * (incr - spec[j, n + 1])
                if phi < 0.0:
                    phi = 0.0
                if phi < psi[g, i]:
                    psi[g, i] = phi
                mu *= MU_RATIO
    best = plain
    mu = 1.0 / size
    for g in range(MU_STEPS):
        acc = 0.0
        for t in range(1, size + 1):
            acc += psi[g, t - 1]
            rest = base + R[e + t]
            excess = t * mu - 1.0
            if g == 0 or excess <= 0.0:  # case (1), mu t <= 1: a valid bound
                value = rest + acc
                if value > best:
                    best = value
                if value >= target:
                    return value, True
            else:  # case (2): valid only against completions below the target
                value = rest + acc - (target - rest) * excess
                if value >= target:
                    return value, True
        mu *= MU_RATIO
    # each point its own mu: the grid value maximising psi_u(mu) - s mu with s the slack of U' = U
    slack = target - base - R[M]
    acc = 0.0
    mu_sum = 0.0
    for t in range(1, size + 1):
        i = t - 1
        mu = 1.0 / size
        pick, pick_mu, pick_value = 0.0, 0.0, 0.0
        for g in range(MU_STEPS):
            value = psi[g, i] - slack * mu
            if value > pick_value:
                pick, pick_mu, pick_value = psi[g, i], mu, value
            mu *= MU_RATIO
        acc += pick
        mu_sum += pick_mu
        rest = base + R[e + t]
        excess = mu_sum - 1.0
        if excess <= 0.0:
            value = rest + acc
            if value > best:
                best = value
        else:
            value = rest + acc - (target - rest) * excess
        if value >= target:
            return value, True
    return best, False
