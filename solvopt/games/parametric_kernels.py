"""Numba twins of the rollout and its reverse pass (:class:`solvopt.games.parametric_sampled.SampledEngine`).

The NumPy methods of the engine are the reference (the tests compare both on the same inputs);
these loops do the same arithmetic one rollout at a time, without the per-step array overhead
that dominates NumPy at small c and D. Numba is optional: without it the engine runs its NumPy
methods (``kernel="auto"`` resolves through :func:`solvopt.core.backend.select_kernels`).
"""
from __future__ import annotations

import numpy as np


def _jit(fn):
    try:
        import numba
    except ImportError:      # pragma: no cover - numba is optional
        return fn
    return numba.njit(cache=True)(fn)


@_jit
def rollout(G, states, z0, noise, lower, upper, lower_slope, upper_slope, A, Bm, off, lin, Q, e, Z, C, disc):
    """Forward pass: states z (T+1, B, c), clipped actions (T, B, D), inside and upper masks, returns
    (B, N), occupancy moments Y (S, n, n) — the arrays of ``SampledEngine.evaluate`` — and whether
    the bounds crossed somewhere."""
    T, B, c = noise.shape
    S, D, n = G.shape
    N = lin.shape[0]
    z = np.empty((T + 1, B, c))
    acts = np.empty((T, B, D))
    inside = np.empty((T, B, D))
    above = np.empty((T, B, D))
    crossed = False
    returns = np.zeros((B, N))
    Y = np.zeros((S, n, n))
    x = np.empty(n)
    for b in range(B):
        for k in range(c):
            z[0, b, k] = z0[b, k]
        for t in range(T):
            s = states[t, b]
            x[0] = 1.0
            for k in range(c):
                x[k + 1] = z[t, b, k]
            for p in range(n):
                for q in range(n):
                    Y[s, p, q] += disc[t] * x[p] * x[q]
            for d in range(D):
                u = 0.0
                for p in range(n):
                    u += G[s, d, p] * x[p]
                lo = lower[s, d]
                hi = upper[s, d]
                for k in range(c):
                    if lower_slope[s, d, k] != 0.0:
                        lo += lower_slope[s, d, k] * x[k + 1]
                    if upper_slope[s, d, k] != 0.0:
                        hi += upper_slope[s, d, k] * x[k + 1]
                if lo > hi:
                    crossed = True
                a = min(max(u, lo), hi)
                acts[t, b, d] = a
                inside[t, b, d] = 1.0 if (u >= lo and u <= hi) else 0.0
                above[t, b, d] = 1.0 if u > hi else 0.0
            for i in range(N):
                r = 0.0
                for d in range(D):
                    a = acts[t, b, d]
                    r += lin[i, s, d] * a
                    for f in range(D):
                        r += 0.5 * a * Q[i, s, d, f] * acts[t, b, f]
                    for k in range(c):
                        r += a * C[i, s, d, k] * x[k + 1]
                for k in range(c):
                    r += e[i, s, k] * x[k + 1]
                    for m in range(c):
                        r += 0.5 * x[k + 1] * Z[i, s, k, m] * x[m + 1]
                returns[b, i] += disc[t] * r
            for k in range(c):
                v = off[s, k] + noise[t, b, k]
                for m in range(c):
                    v += A[s, k, m] * x[m + 1]
                for d in range(D):
                    v += Bm[s, k, d] * acts[t, b, d]
                z[t + 1, b, k] = v
    return z, acts, inside, above, returns, Y / B, crossed


@_jit
def reverse(G, states, z, acts, inside, above, A, Bm, lower_slope, upper_slope, lin, Q, e, Z, C, disc):
    """Reverse pass: the gradient (S, D, n) of the batch mean of the discounted sum of the reward
    with coefficients (lin, Q, e, Z, C) per state (already combined over players)."""
    T, B, D = acts.shape
    S, _, n = G.shape
    c = n - 1
    grad = np.zeros((S, D, n))
    lam = np.empty(c)
    dz = np.empty(c)
    du = np.empty(D)
    da = np.empty(D)
    for b in range(B):
        for k in range(c):
            lam[k] = 0.0
        for t in range(T - 1, -1, -1):
            s = states[t, b]
            for d in range(D):
                g = lin[s, d]
                for f in range(D):
                    g += Q[s, d, f] * acts[t, b, f]
                for k in range(c):
                    g += C[s, d, k] * z[t, b, k]
                g *= disc[t]
                for k in range(c):
                    g += Bm[s, k, d] * lam[k]
                da[d] = g
                du[d] = g * inside[t, b, d]
            for k in range(c):
                g = e[s, k]
                for m in range(c):
                    g += Z[s, k, m] * z[t, b, m]
                for d in range(D):
                    g += C[s, d, k] * acts[t, b, d]
                g *= disc[t]
                for m in range(c):
                    g += A[s, m, k] * lam[m]
                for d in range(D):
                    g += G[s, d, k + 1] * du[d]
                    g += da[d] * (above[t, b, d] * upper_slope[s, d, k]
                                  + (1.0 - inside[t, b, d] - above[t, b, d]) * lower_slope[s, d, k])
                dz[k] = g
            for d in range(D):
                grad[s, d, 0] += du[d]
                for k in range(c):
                    grad[s, d, k + 1] += du[d] * z[t, b, k]
            for k in range(c):
                lam[k] = dz[k]
    return grad / B
