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

import numbers
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from solvopt.core.errors import ModelError
from solvopt.core.memory import format_bytes, machine_memory
from solvopt.core.registry import compile_and_run, get_solver
from solvopt.core.result import Result

from .arrays import FloatArray, float_array, require_pandas
from .expr import SMALL_BYTES, Constraint, Coords, Expr, LinExpr, QuadExpr, align_pandas, as_const, pandas_kind, widen
from .highs_export import load_standard_form, new_highs
from .standard_form import QuadConstraint, StandardForm

VTYPES = ("continuous", "binary", "integer")
# the key of Result.solution under which a solve stores each variable's values ({name: array}); the
# solver's own arrays ("x": every column, "row_dual", "reduced_cost") keep their keys
VARIABLES_KEY = "variables"
# names a variable may not take: the duals' keys (kept from when variables shared the solver's keys)
RESERVED_NAMES = ("row_dual", "reduced_cost")
# bytes one variable costs while it is built (bounds, its identity block, temporaries): the
# estimate add_var checks against the machine's memory before allocating anything
BYTES_PER_VARIABLE = 64


def _shape(shape: Any) -> tuple[int, ...]:
    """A variable shape from an int or a sequence of ints; anything else is a ModelError."""
    if isinstance(shape, (tuple, list)):
        items = tuple(shape)
    elif isinstance(shape, np.ndarray):
        items = tuple(shape.ravel()) if shape.ndim else (shape[()],)
    else:
        items = (shape,)
    out = []
    for s in items:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
            raise ModelError(f"variable shape must be integers, got {shape!r}")
        if s < 0:
            raise ModelError(f"variable shape must be non-negative, got {shape!r}")
        out.append(int(s))
    return tuple(out)


def _coords(coords: Any, dims: Any, shape: tuple[int, ...] | None) -> tuple[Any, ...]:
    """Labels per dimension (``pandas.Index`` objects named by ``dims``) from ``coords=``/``dims=``.

    ``coords`` is a dict {dimension name: labels} or a sequence of index-likes, one per dimension
    (None: positions 0, 1, ... of ``shape``); labels must be unique within a dimension.
    """
    pd = require_pandas("labelled variables (coords=, dims=)")
    if isinstance(coords, dict):
        if dims is not None and list(dims) != list(coords):
            raise ModelError(f"dims={list(dims)!r} differs from the keys of the coords dict {list(coords)!r}")
        dims, items = list(coords), list(coords.values())
    elif coords is None:
        if shape is None:
            raise ModelError("dims= needs a shape= or coords=")
        items = [pd.RangeIndex(n) for n in shape]
    else:
        if isinstance(coords, (str, bytes, pd.Index)) or not hasattr(coords, "__iter__"):
            raise ModelError("coords= is a sequence of index-likes, one per dimension (for one dimension: "
                             "coords=[labels]), or a dict {dimension name: labels}")
        items = list(coords)
    indexes = []
    for k, item in enumerate(items):
        if isinstance(item, (str, bytes)) or np.ndim(item) == 0 and not isinstance(item, pd.Index):
            raise ModelError(f"coords: dimension {k} is {_plain_repr(item)}, not a list of labels (for one "
                             "dimension write coords=[labels])")
        index = item if isinstance(item, pd.Index) else pd.Index(item)
        if not index.is_unique:
            raise ModelError(f"coords: the labels of dimension {k} repeat: "
                             f"{list(index[index.duplicated()].unique()[:5])}")
        indexes.append(index)
    if dims is None:
        dims = [index.name if index.name is not None else f"dim_{k}" for k, index in enumerate(indexes)]
    dims = [dims] if isinstance(dims, str) else list(dims)
    if len(dims) != len(indexes):
        raise ModelError(f"dims names {len(dims)} dimensions and coords {len(indexes)}")
    if len(set(dims)) != len(dims) or not all(isinstance(d, str) for d in dims):
        raise ModelError(f"dims must be distinct strings, got {dims!r}")
    out = tuple(index.rename(d) for index, d in zip(indexes, dims))
    if shape is not None and tuple(len(i) for i in out) != shape:
        raise ModelError(f"coords have lengths {tuple(len(i) for i in out)} but shape= is {shape}")
    return out


def _plain_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Components(list[Any]):
    """The model's variables or constraints, in order; also looked up by name: ``m.constraints["supply"]``."""

    def __init__(self, what: str):
        super().__init__()
        self.what = what

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            for item in self:
                if item.name == key:
                    return item
            known = ", ".join(repr(n) for n in self.names()[:20]) or "none"
            raise ModelError(f"no {self.what} named {key!r} (the model has: {known})")
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return any(item.name == key for item in self)
        return super().__contains__(key)

    def names(self) -> list[str]:
        return [item.name for item in self]


class Param(np.ndarray[Any, np.dtype[np.float64]]):
    """A named constant array: behaves like a NumPy array inside expressions."""

    name: str | None

    def __new__(cls, value: Any, name: str | None = None) -> Param:
        obj = np.asarray(as_const(value, f"Param {name or ''}".strip())).view(cls)
        obj.name = name
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.name = getattr(obj, "name", None)


class Var(LinExpr):
    """An array of decision variables: columns ``start .. start + size`` of the model."""

    model: Model

    def __init__(self, model: Model, start: int, shape: tuple[int, ...], lb: FloatArray, ub: FloatArray, vtype: str,
                 name: str):
        n = int(np.prod(shape, dtype=np.int64))
        itype = np.int32 if start + n < np.iinfo(np.int32).max else np.int64
        coef = sp.csr_matrix((np.ones(n), np.arange(start, start + n, dtype=itype), np.arange(n + 1, dtype=itype)),
                             shape=(n, start + n))
        super().__init__(coef, np.zeros(n), shape, model)
        self.start, self.name, self.vtype = start, name, vtype
        self._block_start = start
        self.lb, self.ub = lb, ub

    @property
    def value(self) -> FloatArray | None:
        """The solution values (shaped like the variable), or None before a solve."""
        x = self.model.solution_vector
        if x is None or len(x) < self.start + self.size:  # none yet, or added after the last solve
            return None
        values: FloatArray = x[self.start:self.start + self.size].reshape(self.shape)
        return values

    @property
    def solution(self) -> Any:
        """The solution values as a labelled pandas object (None before a solve); needs pandas.

        A Series for a 1-D variable, a DataFrame for a 2-D one (rows: the first dimension), a
        Series with a MultiIndex beyond, a float for a scalar; labels from ``coords`` (positions
        0, 1, ... without). ``value`` is the same as a NumPy array.
        """
        return self.to_pandas()

    @property
    def columns(self) -> npt.NDArray[np.int_]:
        return np.arange(self.start, self.start + self.size)

    def __repr__(self) -> str:
        dims = "" if self.coords is None else f", dims={self.dims}"
        return f"Var({self.name!r}, shape={self.shape}, {self.vtype}{dims})"


class Model:
    """A declarative LP / MILP / QP / QCP model over variable arrays."""

    def __init__(self, name: str = "model"):
        self.name = name
        self.vars = Components("variable")                # Var arrays
        self.constraints = Components("constraint")       # Constraint arrays
        self.objective: LinExpr | QuadExpr | None = None
        self.sense = 1
        self.num_vars = 0
        self.solution_vector: FloatArray | None = None
        self.last_result: Result | None = None

    # --- building -----------------------------------------------------------------------------
    def add_var(self, shape: Any = None, lb: Any = 0.0, ub: Any = np.inf, vtype: str = "continuous",
                name: str | None = None, coords: Any = None, dims: Any = None) -> Var:
        """Add a variable array. ``lb``/``ub`` broadcast to ``shape``; binary forces [0, 1].

        ``coords`` labels the dimensions (as linopy's): a sequence of index-likes, one per
        dimension, or a dict {dimension name: labels}; ``dims`` names the dimensions. The shape
        follows from the labels (``shape``, when also given, must agree). pandas operands line up
        with the labels, and ``x.solution`` returns the values labelled; ``lb``/``ub`` may be
        Series/DataFrames, lined up the same way.

        The memory the array needs is estimated before anything is allocated: a shape beyond the
        machine's memory is a ModelError that says how much it would take.
        """
        labels: Coords = None
        if coords is not None or dims is not None:
            labels = _coords(coords, dims, None if shape is None else _shape(shape))
            shape = tuple(len(index) for index in labels)
        shape = _shape(() if shape is None else shape)
        if vtype not in VTYPES:
            raise ModelError(f"vtype must be one of {', '.join(VTYPES)}, got {vtype!r}")
        if name is not None and not isinstance(name, str):
            raise ModelError(f"a variable name must be a string, got {type(name).__name__}")
        name = name or f"v{len(self.vars)}"
        if name in RESERVED_NAMES:
            raise ModelError(f"{name!r} is reserved in results (the duals); choose another name")
        if name in self.vars:
            raise ModelError(f"a variable named {name!r} already exists")
        size = int(np.prod(shape, dtype=object))   # exact: no overflow for absurd shapes
        need = BYTES_PER_VARIABLE * size
        have = None if need < SMALL_BYTES else machine_memory()   # small: fits anywhere, no file read
        if have is not None and need > have:
            raise ModelError(f"variable {name!r} of shape {shape} has {size:,} entries and would need about "
                             f"{format_bytes(need)} of memory; this machine has {format_bytes(have)}")
        lb_a, ub_a = (self._bound(b, shape, name, which, labels) for b, which in ((lb, "lower"), (ub, "upper")))
        if np.isnan(lb_a).any() or np.isnan(ub_a).any():
            raise ModelError(f"bounds of {name!r} contain NaN")
        if np.any(lb_a == np.inf) or np.any(ub_a == -np.inf):
            raise ModelError(f"variable {name!r} has a lower bound of +inf or an upper bound of -inf")
        if vtype == "binary":
            lb_a, ub_a = np.maximum(lb_a, 0.0), np.minimum(ub_a, 1.0)
        if np.any(lb_a > ub_a):
            raise ModelError(f"variable {name!r} has a lower bound above its upper bound")
        try:
            var = Var(self, self.num_vars, shape, lb_a, ub_a, vtype, name)
        except MemoryError:
            raise ModelError(f"out of memory building variable {name!r} of shape {shape} (about "
                             f"{format_bytes(need)})") from None
        if labels is not None:
            var.coords = labels
        self.num_vars += var.size
        self.vars.append(var)
        return var

    @staticmethod
    def _bound(value: Any, shape: tuple[int, ...], name: str, which: str, labels: Coords = None) -> FloatArray:
        """A bound broadcast to ``shape`` as a flat float array (inf allowed, NaN checked by the caller)."""
        if pandas_kind(value):   # lined up with the labels (inf allowed: open bounds)
            value, _ = align_pandas(shape, labels, value, f"{which} bound of {name!r}", allow_inf=True)
        arr = float_array(value, f"{which} bound of {name!r}")
        try:
            flat: FloatArray = np.broadcast_to(arr, shape).ravel().copy()
        except ValueError:
            raise ModelError(f"{which} bound of {name!r} does not broadcast to its shape {shape}") from None
        return flat

    def add(self, constraint: Constraint, name: str | None = None) -> Constraint:
        """Add a constraint array (built with <=, >= or == on expressions); ``name`` finds it again.

        ``m.constraints[name]`` returns it (after a solve its ``dual`` holds the LP duals).
        """
        if not isinstance(constraint, Constraint):
            raise ModelError("model.add takes a constraint such as `A @ x <= b` (got "
                             f"{type(constraint).__name__})")
        if constraint.body.model is not None and constraint.body.model is not self:
            raise ModelError("the constraint uses variables of another model")
        if constraint.model is self:
            raise ModelError(f"constraint {constraint.name!r} is already in this model")
        if name is not None and not isinstance(name, str):
            raise ModelError(f"a constraint name must be a string, got {type(name).__name__}")
        name = name or constraint.name
        if name is None:
            k = len(self.constraints)
            while f"c{k}" in self.constraints:
                k += 1
            name = f"c{k}"
        if name in self.constraints:
            raise ModelError(f"a constraint named {name!r} already exists")
        constraint.name = name
        constraint.model = self
        self.constraints.append(constraint)
        return constraint

    def minimize(self, expr: Any) -> None:
        self._set_objective(expr, 1)

    def maximize(self, expr: Any) -> None:
        self._set_objective(expr, -1)

    def _set_objective(self, expr: Any, sense: int) -> None:
        objective: Expr = expr if isinstance(expr, (LinExpr, QuadExpr)) else LinExpr.constant(expr, self.num_vars, self)
        if objective.model is not None and objective.model is not self:
            raise ModelError("the objective uses variables of another model")
        if objective.size != 1:
            raise ModelError(f"the objective must be a scalar expression, got shape {objective.shape} (use .sum())")
        self.objective, self.sense = objective, sense

    # --- compiling ------------------------------------------------------------------------
    def compile(self, method: str | None = None) -> StandardForm:
        """The standard form: the matrix column-wise (CSC, as HiGHS stores it), bounds, integrality, Q.

        The same for every ``lp`` method (``method`` is accepted for the spine's signature).
        """
        n = self.num_vars
        c, offset, Q = np.zeros(n), 0.0, None
        if self.objective is not None:
            lin = self.objective.lin if isinstance(self.objective, QuadExpr) else self.objective
            if lin.coef.nnz:
                c = np.bincount(lin.coef.indices, weights=lin.coef.data, minlength=n).astype(float, copy=False)
            offset = float(lin.const[0])
            if isinstance(self.objective, QuadExpr):
                Q = _symmetric(self.objective.vi, self.objective.vj, self.objective.q, n)
        blocks: list[sp.csr_matrix] = []
        lower: list[FloatArray] = []
        upper: list[FloatArray] = []
        quad: list[QuadConstraint] = []
        row = 0
        for con in self.constraints:
            body = con.body
            if isinstance(body, QuadExpr):
                quad.extend(_quad_rows(con, body, n))
                continue
            rhs = -body.const
            lo = rhs if con.sense in (">=", "==") else np.full(body.size, -np.inf)
            hi = rhs if con.sense in ("<=", "==") else np.full(body.size, np.inf)
            blocks.append(widen(body.coef, n))
            lower.append(lo)
            upper.append(hi)
            con.rows = np.arange(row, row + body.size)
            row += body.size
        if not blocks:
            A = sp.csc_matrix((0, n))
        elif len(blocks) == 1:
            A = blocks[0].tocsc()
        else:
            A = sp.vstack(blocks, format="csr").tocsc()   # stacking rows is concatenation; one transpose pass
        A.sum_duplicates()    # a fresh matrix: sums terms met twice in a row (cheap check when there are none)
        lb = np.concatenate([v.lb for v in self.vars]) if self.vars else np.zeros(0)
        ub = np.concatenate([v.ub for v in self.vars]) if self.vars else np.zeros(0)
        integrality = np.concatenate([np.full(v.size, v.vtype != "continuous", dtype=np.int8)
                                      for v in self.vars]) if self.vars else np.zeros(0, dtype=np.int8)
        return StandardForm(c=c, A=A, row_lower=np.concatenate(lower) if lower else np.zeros(0),
                            row_upper=np.concatenate(upper) if upper else np.zeros(0), col_lower=lb, col_upper=ub,
                            integrality=integrality, Q=Q, offset=offset, sense=self.sense, quad_constraints=quad,
                            var_names=None, row_names=None)

    def to_highspy(self) -> Any:
        """A silent ``highspy.Highs`` with this model loaded (call ``run()`` on it, as with linopy's).

        The matrix goes over column-wise in one ``passModel`` call on the arrays themselves.
        """
        h = new_highs()
        load_standard_form(h, self.compile())
        return h

    # --- solving ----------------------------------------------------------------------------
    def solve(self, method: str | None = None, **options: Any) -> Result:
        """Compile, solve with the ``lp`` family's ``method`` (default HiGHS) and store the values.

        The solver is found through the registry by family name; the ``lp`` solvers check the
        model's kind (a method that does not take it, e.g. quadratic constraints on HiGHS, is a
        ModelError naming those that do).
        """
        result = compile_and_run(get_solver("lp", method, options.get("device")), self, **options)
        self._absorb(result)
        return result

    def _absorb(self, result: Result) -> None:
        _clean_zeros(result)
        x = result.solution.get("x")
        self.solution_vector = None if x is None else np.asarray(x, dtype=float)
        self.last_result = result
        if x is None:
            return
        duals = result.solution.get("row_dual")
        result.solution = Solution(result.solution)
        result.solution[VARIABLES_KEY] = {v.name: v.value for v in self.vars}
        for con in self.constraints:
            con.dual_values = None if duals is None or con.rows is None else np.asarray(duals)[con.rows]

    # --- Pyomo ------------------------------------------------------------------------------
    def to_pyomo(self) -> Any:
        """A Pyomo ConcreteModel of this very model (any Pyomo solver can take it).

        Each variable array is one indexed Var and each constraint array one indexed Constraint,
        with the DSL's names and shapes (a name Pyomo reserves, such as ``name``, gets a trailing
        underscore; ``pm.solvopt_names`` maps every DSL name to its Pyomo component name).
        """
        from .backends.pyomo_export import to_pyomo
        return to_pyomo(self)

    def load_pyomo_solution(self, pyomo_model: Any) -> None:
        """Take the values (and duals, when the model has an imported ``dual`` Suffix) of a solved
        :meth:`to_pyomo` export back into this model's variables and constraints.

        Afterwards ``x.value``, expression values and ``constraint.dual`` read the Pyomo solve.
        """
        from .backends.pyomo_export import read_pyomo_duals, read_pyomo_values
        x = read_pyomo_values(self, pyomo_model) + 0.0
        if np.isnan(x).any():
            missing = [v.name for v in self.vars if np.isnan(x[v.start:v.start + v.size]).any()]
            raise ModelError(f"the Pyomo model holds no values for {', '.join(missing)} (was it solved?)")
        self.solution_vector = x
        duals = read_pyomo_duals(self, pyomo_model)
        for con in self.constraints:
            d = None if duals is None else duals.get(con.name)
            con.dual_values = None if d is None else np.asarray(d, dtype=float).ravel() + 0.0

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, variables={self.num_vars}, constraint blocks={len(self.constraints)}, "
                f"objective={'set' if self.objective is not None else 'none'})")


class Solution(dict[str, Any]):
    """``Result.solution`` of a DSL solve: the solver's arrays (``"x"``, ``"row_dual"``, ...) and
    ``"variables"`` = {variable name: values}.

    A variable's name that is not one of the solver's keys also reads through ``solution[name]``
    and ``solution.get(name)`` (for older code; it is not a key, so JSON holds each array once).
    The solver's keys always win: ``solution["x"]`` is every column even when a variable is
    named ``x``.
    """

    def __missing__(self, key: str) -> Any:
        variables = dict.get(self, VARIABLES_KEY)
        if isinstance(variables, dict) and key in variables:
            return variables[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def _clean_zeros(result: Result) -> None:
    """Turn -0.0 into 0.0 in the result's numbers (values, duals, objective, bound)."""
    for key in ("x", "row_dual", "reduced_cost"):
        if result.solution.get(key) is not None:
            result.solution[key] = np.asarray(result.solution[key], dtype=float) + 0.0
    for attr in ("objective", "bound"):
        value = getattr(result, attr, None)
        if isinstance(value, float) and value == 0.0:
            setattr(result, attr, 0.0)


def _symmetric(vi: npt.ArrayLike, vj: npt.ArrayLike, q: npt.ArrayLike, n: int) -> sp.csr_matrix:
    """Q with 1/2 x^T Q x = sum q x_i x_j."""
    M = sp.coo_matrix((q, (vi, vj)), shape=(n, n)).tocsr()
    return (M + M.T).tocsr()


def _quad_rows(con: Constraint, body: QuadExpr, n: int) -> list[QuadConstraint]:
    """One QuadConstraint per element of a quadratic constraint array (``body``: its body; export only)."""
    out = []
    order = np.argsort(body.elem, kind="stable")
    bounds = np.searchsorted(body.elem[order], np.arange(body.size + 1))
    lin = widen(body.lin.coef, n)
    for e in range(body.size):
        sel = order[bounds[e]:bounds[e + 1]]
        P = sp.coo_matrix((body.q[sel], (body.vi[sel], body.vj[sel])), shape=(n, n)).tocsr()
        rhs = -float(body.lin.const[e])
        lo = rhs if con.sense in (">=", "==") else -np.inf
        hi = rhs if con.sense in ("<=", "==") else np.inf
        out.append(QuadConstraint(P=P, q=np.asarray(lin[e].todense()).ravel(), lower=lo, upper=hi,
                                  name=f"{con.name}[{e}]"))
    return out
