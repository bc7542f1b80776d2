"""The published k-HC2 MINLP (and its multi-norm strengthenings) written in the solvopt DSL.

    min  sum_ij d_ij^2
    s.t. sum_j x_ij = 1                          x_ij binary, x_ij = 0 for j > i (symmetry breaking)
         d_ij >= +-(a_i^T w_j - gamma_j) - M (1 - x_ij),     0 <= d_ij <= M
         sum_l w_jl^2 >= 1                       ("2": the nonconvex, reverse-convex unit constraint)
         w_j in [-1, 1]^n,  |gamma_j| <= max_i ||a_i||_1
  "inf": sum_l u_jl = 1, w_jl >= -1 + (1 + 1/sqrt n) u_jl          (||w_j||_inf >= 1/sqrt n, u binary)
  "1":   w = p - q, p <= s, q <= 1 - s, sum_l (p_jl + q_jl) >= 1   (||w_j||_1 >= 1, s binary)

Both blocks are implied by ||w_j||_2 >= 1 (valid MILP strengthening). Without "2" the model is
the p-norm problem whose optimum LB_p is a lower bound on OPT_2. SCIP and Gurobi solve the very
model built here (through the DSL's StandardForm / Pyomo export), so comparisons with the "sbb"
method are on the same formulation. Imports only the DSL core and solvopt.core.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .hyperplane_data import data_big_m, parse_norms, validate_big_m, validate_k, validate_points
from .model import Model, Var


def khc_minlp(points: Any, k: int, norms: Any = frozenset({"2", "inf"}), big_m: float | None = None,
              symmetry_breaking: bool = True) -> tuple[Model, dict[str, Var]]:
    """The k-HC2 MINLP of ``points`` (m, n) and ``k`` as a DSL :class:`~solvopt.dsl.Model`, and its handles.

    ``big_m=None`` uses the diameter of the points (valid, see
    :attr:`~solvopt.dsl.hyperplane.HyperplaneClustering.big_m`). Returns ``(model, handles)``
    with handles ``x, w, gamma, d`` and, per block, ``u`` (inf) or ``p, q, s`` (1-norm).
    """
    points = validate_points(points)
    m, n = points.shape
    k = validate_k(k, m)
    norms = parse_norms(norms)
    big_m = validate_big_m(big_m)
    if big_m is None:
        big_m = data_big_m(points)
    allowed = np.ones((m, k))
    if symmetry_breaking:
        allowed = (np.arange(k)[None, :] <= np.arange(m)[:, None]).astype(float)
    gamma_bound = float(np.abs(points).sum(axis=1).max()) + 1.0   # |a^T w| <= ||a||_1 for w in [-1, 1]^n

    model = Model(f"khc_m{m}_n{n}_k{k}_{'+'.join(sorted(norms))}")
    x = model.add_var(shape=(m, k), vtype="binary", ub=allowed, name="x")
    w = model.add_var(shape=(k, n), lb=-1.0, ub=1.0, name="w")
    gamma = model.add_var(shape=(k,), lb=-gamma_bound, ub=gamma_bound, name="gamma")
    d = model.add_var(shape=(m, k), lb=0.0, ub=big_m * allowed, name="d")
    handles = {"x": x, "w": w, "gamma": gamma, "d": d}

    model.add(x.sum(axis=1) == 1, name="assign")
    for j in range(k):
        residual = points @ w[j] - gamma[j]
        model.add(d[:, j] >= residual - big_m * (1 - x[:, j]), name=f"dist_pos_{j}")
        model.add(d[:, j] >= -residual - big_m * (1 - x[:, j]), name=f"dist_neg_{j}")
    if "2" in norms:
        for j in range(k):
            model.add((w[j] ** 2).sum() >= 1, name=f"unit_{j}")
    if "inf" in norms:
        u = model.add_var(shape=(k, n), vtype="binary", name="u")
        model.add(u.sum(axis=1) == 1, name="inf_choice")
        model.add(w >= -1 + (1 + 1 / math.sqrt(n)) * u, name="inf_norm")
        handles["u"] = u
    if "1" in norms:
        p = model.add_var(shape=(k, n), lb=0.0, ub=1.0, name="p")
        q = model.add_var(shape=(k, n), lb=0.0, ub=1.0, name="q")
        s = model.add_var(shape=(k, n), vtype="binary", name="s")
        model.add(w == p - q, name="split")
        model.add(p <= s, name="pos_sign")
        model.add(q <= 1 - s, name="neg_sign")
        model.add((p + q).sum(axis=1) >= 1, name="one_norm")
        handles.update(p=p, q=q, s=s)
    model.minimize((d ** 2).sum())
    return model, handles
