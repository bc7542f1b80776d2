"""The standard form every algebraic model compiles to, and that backends load directly.

    minimise (sense=+1) or maximise (sense=-1)   c^T x + 1/2 x^T Q x + offset
    subject to   row_lower <= A x <= row_upper
                 col_lower <= x <= col_upper
                 x_j integer where integrality[j] == 1
                 quadratic constraints  lower <= x^T P x + q^T x <= upper   (export only)

Infinite bounds are +-inf. ``A`` is any scipy sparse matrix: ``Model.compile`` gives it
column-wise (CSC, the layout HiGHS stores, so :mod:`.highs_export` hands it over as it is); the
MPS/LP readers give it row-wise. HiGHS loads (c, A, bounds, integrality, Q) as arrays; the Pyomo
export also carries the quadratic constraints, so SCIP/Gurobi solve the very same model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


@dataclass
class QuadConstraint:
    P: sp.csr_matrix          # (n, n), the quadratic part x^T P x (not halved)
    q: np.ndarray             # (n,) linear part
    lower: float
    upper: float
    name: str | None = None


@dataclass
class StandardForm:
    c: np.ndarray
    A: sp.spmatrix                               # CSC from Model.compile, CSR from the file readers
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray                      # int8: 0 continuous, 1 integer
    Q: sp.csr_matrix | None = None              # objective 1/2 x^T Q x (symmetric)
    offset: float = 0.0
    sense: int = 1                               # +1 minimise, -1 maximise
    quad_constraints: list[QuadConstraint] = field(default_factory=list)
    var_names: list[str] | None = None
    row_names: list[str] | None = None

    @property
    def num_vars(self) -> int:
        return int(self.c.shape[0])

    @property
    def num_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def is_mip(self) -> bool:
        return bool(np.any(self.integrality))

    @property
    def kind(self) -> str:
        """lp | milp | qp | miqp | qcp (a name for messages and capabilities)."""
        if self.quad_constraints:
            return "qcp"
        base = "qp" if self.Q is not None and self.Q.nnz else "lp"
        return ("mi" + base) if self.is_mip else base

    def split_rows(self) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray]:
        """The rows as ``G x <= h`` and ``E x == e`` (ranged rows become two inequalities).

        For backends whose matrix API takes one sense per row (Gurobi, SCIP).
        """
        A = self.A.tocsr()
        lo, hi = self.row_lower, self.row_upper
        eq = np.isfinite(lo) & (lo == hi)
        upper = np.isfinite(hi) & ~eq
        lower = np.isfinite(lo) & ~eq
        G = sp.vstack([A[upper], -A[lower]], format="csr")
        h = np.concatenate([hi[upper], -lo[lower]])
        return G, h, A[eq], lo[eq]

    def objective_value(self, x: np.ndarray) -> float:
        """c^T x + 1/2 x^T Q x + offset, in the model's own sense."""
        val = float(self.c @ x) + self.offset
        if self.Q is not None and self.Q.nnz:
            val += 0.5 * float(x @ (self.Q @ x))
        return val
