"""The algebraic model: variable arrays, constraints, an objective; compiled to a StandardForm.

    m = Model()
    x = m.add_var(shape=3, lb=0, name="x")
    m.add(np.array([[1, 1, 1]]) @ x <= 10)
    m.maximize(np.array([3, 2, 4]) @ x)
    result = m.solve()           # HiGHS; method="scip" | "gurobi" for the same model elsewhere

Variables are blocks of consecutive columns of the standard form; every expression and
constraint is a whole array, so building a model with 10^6 variables costs a handful of
sparse-matrix operations, not 10^6 Python objects.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import ModelError
from solvopt.core.result import Result

from .expr import Constraint, LinExpr, QuadExpr, _as_const, _widen
from .standard_form import QuadConstraint, StandardForm

VTYPES = ("continuous", "binary", "integer")
# keys of Result.solution set by the backends (a variable named "x" replaces the full vector there;
# Model.solution_vector keeps it)
RESERVED_NAMES = ("row_dual", "reduced_cost")


class Param(np.ndarray):
    """A named constant array: behaves like a NumPy array inside expressions."""

    def __new__(cls, value, name: str | None = None):
        obj = np.asarray(_as_const(value, f"Param {name or ''}".strip())).view(cls)
        obj.name = name
        return obj

    def __array_finalize__(self, obj):
        self.name = getattr(obj, "name", None)


class Var(LinExpr):
    """An array of decision variables: columns ``start .. start + size`` of the model."""

    def __init__(self, model: "Model", start: int, shape: tuple, lb: np.ndarray, ub: np.ndarray, vtype: str,
                 name: str):
        n = int(np.prod(shape, dtype=np.int64))
        coef = sp.csr_matrix((np.ones(n), np.arange(start, start + n), np.arange(n + 1)), shape=(n, start + n))
        super().__init__(coef, np.zeros(n), shape, model)
        self.start, self.name, self.vtype = start, name, vtype
        self.lb, self.ub = lb, ub

    @property
    def value(self) -> np.ndarray | None:
        """The solution values (shaped like the variable), or None before a solve."""
        x = self.model.solution_vector
        if x is None or len(x) < self.start + self.size:  # none yet, or added after the last solve
            return None
        return x[self.start:self.start + self.size].reshape(self.shape)

    @property
    def columns(self) -> np.ndarray:
        return np.arange(self.start, self.start + self.size)

    def __repr__(self):
        return f"Var({self.name!r}, shape={self.shape}, {self.vtype})"


class Model:
    """A declarative LP / MILP / QP / QCP model over variable arrays."""

    def __init__(self, name: str = "model"):
        self.name = name
        self.vars: list[Var] = []
        self.constraints: list[Constraint] = []
        self.objective: LinExpr | QuadExpr | None = None
        self.sense = 1
        self.num_vars = 0
        self.solution_vector: np.ndarray | None = None
        self.last_result: Result | None = None

    # --- building -----------------------------------------------------------------------------
    def add_var(self, shape=(), lb=0.0, ub=np.inf, vtype: str = "continuous", name: str | None = None) -> Var:
        """Add a variable array. ``lb``/``ub`` broadcast to ``shape``; binary forces [0, 1]."""
        shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ModelError(f"variable shape must be non-negative, got {shape}")
        if vtype not in VTYPES:
            raise ModelError(f"vtype must be one of {', '.join(VTYPES)}, got {vtype!r}")
        name = name or f"v{len(self.vars)}"
        if name in RESERVED_NAMES:
            raise ModelError(f"{name!r} is reserved in results (the duals); choose another name")
        if any(v.name == name for v in self.vars):
            raise ModelError(f"a variable named {name!r} already exists")
        try:
            lb_a, ub_a = (np.broadcast_to(np.asarray(b, dtype=float), shape).ravel().copy() for b in (lb, ub))
        except ValueError:
            raise ModelError(f"bounds of {name!r} do not broadcast to its shape {shape}") from None
        if np.isnan(lb_a).any() or np.isnan(ub_a).any():
            raise ModelError(f"bounds of {name!r} contain NaN")
        if np.any(lb_a == np.inf) or np.any(ub_a == -np.inf):
            raise ModelError(f"variable {name!r} has a lower bound of +inf or an upper bound of -inf")
        if vtype == "binary":
            lb_a, ub_a = np.maximum(lb_a, 0.0), np.minimum(ub_a, 1.0)
        if np.any(lb_a > ub_a):
            raise ModelError(f"variable {name!r} has a lower bound above its upper bound")
        var = Var(self, self.num_vars, shape, lb_a, ub_a, vtype, name)
        self.num_vars += var.size
        self.vars.append(var)
        return var

    def add(self, constraint: Constraint, name: str | None = None) -> Constraint:
        """Add a constraint array (built with <=, >= or == on expressions)."""
        if not isinstance(constraint, Constraint):
            raise ModelError("model.add takes a constraint such as `A @ x <= b` (got "
                             f"{type(constraint).__name__})")
        if constraint.body.model is not None and constraint.body.model is not self:
            raise ModelError("the constraint uses variables of another model")
        constraint.name = name or constraint.name or f"c{len(self.constraints)}"
        constraint.model = self
        self.constraints.append(constraint)
        return constraint

    def minimize(self, expr) -> None:
        self._set_objective(expr, 1)

    def maximize(self, expr) -> None:
        self._set_objective(expr, -1)

    def _set_objective(self, expr, sense: int) -> None:
        if not isinstance(expr, (LinExpr, QuadExpr)):
            expr = LinExpr.constant(expr, self.num_vars, self)
        if expr.model is not None and expr.model is not self:
            raise ModelError("the objective uses variables of another model")
        if expr.size != 1:
            raise ModelError(f"the objective must be a scalar expression, got shape {expr.shape} (use .sum())")
        self.objective, self.sense = expr, sense

    # --- compiling ------------------------------------------------------------------------
    def compile(self) -> StandardForm:
        """The standard form: CSR rows, bounds, integrality, Q and quadratic constraints."""
        n = self.num_vars
        c, offset, Q = np.zeros(n), 0.0, None
        if self.objective is not None:
            lin = self.objective.lin if isinstance(self.objective, QuadExpr) else self.objective
            c = np.asarray(_widen(lin.coef, n).todense()).ravel() if lin.coef.nnz else np.zeros(n)
            offset = float(lin.const[0])
            if isinstance(self.objective, QuadExpr):
                Q = _symmetric(self.objective.vi, self.objective.vj, self.objective.q, n)
        blocks, lower, upper, quad = [], [], [], []
        row = 0
        for con in self.constraints:
            if con.is_quadratic:
                quad.extend(_quad_rows(con, n))
                continue
            body = con.body
            rhs = -body.const
            lo = rhs if con.sense in (">=", "==") else np.full(body.size, -np.inf)
            hi = rhs if con.sense in ("<=", "==") else np.full(body.size, np.inf)
            blocks.append(_widen(body.coef, n))
            lower.append(lo)
            upper.append(hi)
            con.rows = np.arange(row, row + body.size)
            row += body.size
        A = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, n))
        A.sum_duplicates()
        lb = np.concatenate([v.lb for v in self.vars]) if self.vars else np.zeros(0)
        ub = np.concatenate([v.ub for v in self.vars]) if self.vars else np.zeros(0)
        integrality = np.concatenate([np.full(v.size, v.vtype != "continuous", dtype=np.int8)
                                      for v in self.vars]) if self.vars else np.zeros(0, dtype=np.int8)
        return StandardForm(c=c, A=A, row_lower=np.concatenate(lower) if lower else np.zeros(0),
                            row_upper=np.concatenate(upper) if upper else np.zeros(0), col_lower=lb, col_upper=ub,
                            integrality=integrality, Q=Q, offset=offset, sense=self.sense, quad_constraints=quad,
                            var_names=None, row_names=None)

    # --- solving ----------------------------------------------------------------------------
    def solve(self, method: str | None = None, **options) -> Result:
        """Compile, solve with ``method`` (default HiGHS) and store the values on the variables."""
        from .backends import solve_standard_form
        sf = self.compile()
        result = solve_standard_form(sf, method=method, **options)
        self._absorb(result)
        return result

    def _absorb(self, result: Result) -> None:
        x = result.solution.get("x")
        self.solution_vector = None if x is None else np.asarray(x, dtype=float)
        self.last_result = result
        if x is None:
            return
        duals = result.solution.get("row_dual")
        for v in self.vars:
            result.solution[v.name] = v.value
        for con in self.constraints:
            con.dual_values = None if duals is None or con.rows is None else np.asarray(duals)[con.rows]

    def to_pyomo(self):
        """A Pyomo ConcreteModel of this very model (any Pyomo solver can take it)."""
        from .backends.pyomo_export import to_pyomo
        return to_pyomo(self)

    def __repr__(self):
        return (f"Model({self.name!r}, variables={self.num_vars}, constraint blocks={len(self.constraints)}, "
                f"objective={'set' if self.objective is not None else 'none'})")


def _symmetric(vi, vj, q, n) -> sp.csr_matrix:
    """Q with 1/2 x^T Q x = sum q x_i x_j."""
    M = sp.coo_matrix((q, (vi, vj)), shape=(n, n)).tocsr()
    return (M + M.T).tocsr()


def _quad_rows(con: Constraint, n: int) -> list[QuadConstraint]:
    """One QuadConstraint per element of a quadratic constraint array (export only)."""
    body = con.body
    out = []
    order = np.argsort(body.elem, kind="stable")
    bounds = np.searchsorted(body.elem[order], np.arange(body.size + 1))
    lin = _widen(body.lin.coef, n)
    for e in range(body.size):
        sel = order[bounds[e]:bounds[e + 1]]
        P = sp.coo_matrix((body.q[sel], (body.vi[sel], body.vj[sel])), shape=(n, n)).tocsr()
        rhs = -float(body.lin.const[e])
        lo = rhs if con.sense in (">=", "==") else -np.inf
        hi = rhs if con.sense in ("<=", "==") else np.inf
        out.append(QuadConstraint(P=P, q=np.asarray(lin[e].todense()).ravel(), lower=lo, upper=hi,
                                  name=f"{con.name}[{e}]"))
    return out


def variable_names(vars_: list[Var]) -> list[str]:
    """Scalar names ``x[i,j]`` of every column, in column order (for exports; a Python loop)."""
    names = []
    for v in vars_:
        if v.shape == ():
            names.append(v.name)
        else:
            names.extend(f"{v.name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*v.shape))
    return names
