"""Vectorised expression arrays: linear (:class:`LinExpr`) and quadratic (:class:`QuadExpr`).

A ``LinExpr`` of shape ``s`` is N = prod(s) affine functions stored as one sparse matrix
``coef`` (N x number of model variables, CSR) and a constant vector ``const`` (N,). Every
operation is a whole-array scipy/numpy operation, never a Python loop per scalar:

- indexing and broadcasting select (possibly repeated) rows of ``coef``;
- ``sum(axis)`` and ``A @ x`` multiply ``coef`` by a sparse or dense matrix on the left;
- ``+``, ``-`` and ``*``/``/`` by arrays add matrices or scale rows.

A ``QuadExpr`` adds, per element, quadratic terms (element, var_i, var_j, coefficient) to a
``LinExpr``; it comes from elementwise products of two linear expressions and supports
``+``, ``-``, scaling and ``sum``. Comparisons build :class:`Constraint` arrays.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import ModelError

SENSES = ("<=", ">=", "==")


def _as_const(value, where: str) -> np.ndarray:
    """A finite float array from a scalar / array-like (a Param is an ndarray already)."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{where}: constants must be finite (found NaN or inf)")
    return arr


def _widen(matrix: sp.csr_matrix, ncols: int) -> sp.csr_matrix:
    """The same CSR matrix with ``ncols`` columns (variables added to the model since it was built)."""
    if matrix.shape[1] == ncols:
        return matrix
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], ncols))


def _scale_rows(matrix: sp.csr_matrix, factor: np.ndarray) -> sp.csr_matrix:
    """diag(factor) @ matrix without a matrix product: each stored value times its row's factor."""
    data = matrix.data * np.repeat(factor, np.diff(matrix.indptr))
    return sp.csr_matrix((data, matrix.indices, matrix.indptr), shape=matrix.shape)


def _broadcast_rows(shape: tuple, target: tuple) -> np.ndarray:
    """Flat row indices that broadcast an array of ``shape`` to ``target`` (numpy rules)."""
    idx = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return np.broadcast_to(idx, target).ravel()


def _aggregation(shape: tuple, axis) -> tuple[sp.csr_matrix, tuple]:
    """Sparse 0/1 matrix summing a flat array of ``shape`` over ``axis``, and the result shape."""
    n = int(np.prod(shape, dtype=np.int64))
    if axis is None:
        return sp.csr_matrix((np.ones(n), (np.zeros(n, dtype=np.int64), np.arange(n))), shape=(1, n)), ()
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    ndim = len(shape)
    try:
        axes = tuple(sorted({a % ndim if -ndim <= a < ndim else _bad_axis(a, ndim) for a in axes}))
    except ZeroDivisionError:
        raise ModelError("cannot sum over an axis of a scalar expression") from None
    keep = [d for d in range(ndim) if d not in axes]
    out_shape = tuple(shape[d] for d in keep)
    m = int(np.prod(out_shape, dtype=np.int64))
    # output index of every input element: the kept axes' index, broadcast over the summed ones
    expanded = tuple(shape[d] if d in keep else 1 for d in range(ndim))
    out_flat = np.broadcast_to(np.arange(m, dtype=np.int64).reshape(expanded), shape).ravel()
    # one entry per column: build it column-wise, no sorting needed
    agg = sp.csc_matrix((np.ones(n), out_flat, np.arange(n + 1, dtype=np.int64)), shape=(m, n))
    return agg.tocsr(), out_shape


def _bad_axis(a, ndim):
    raise ModelError(f"axis {a} is out of bounds for an expression with {ndim} dimensions")


class _Operand:
    """What LinExpr and QuadExpr share: numpy defers to them, comparisons build constraints."""

    __array_ufunc__ = None  # numpy: `array OP expr` calls expr.__rOP__
    __array_priority__ = 1000

    shape: tuple

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __array__(self, dtype=None, copy=None):
        """A 0-d object array holding the expression, so array libraries defer to our operators."""
        holder = np.empty((), dtype=object)
        holder[()] = self
        return holder

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar expression")
        return self.shape[0]

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        if not isinstance(other, _Operand):
            other = _as_const(other, "subtraction")
        return self + (-1.0) * other

    def __rsub__(self, other):
        return (-1.0) * self + other

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        if isinstance(other, _Operand):
            raise ModelError("division by an expression is not linear or quadratic")
        den = _as_const(other, "division")
        if np.any(den == 0):
            raise ModelError("division by zero in an expression")
        return self * (1.0 / den)

    def __le__(self, other):
        return Constraint.build(self, other, "<=")

    def __ge__(self, other):
        return Constraint.build(self, other, ">=")

    def __eq__(self, other):  # type: ignore[override]
        return Constraint.build(self, other, "==")

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("an expression has no truth value; did you mean to add a constraint with model.add(...)?")


class LinExpr(_Operand):
    """An array of affine expressions: ``coef @ x + const`` reshaped to ``shape``."""

    def __init__(self, coef: sp.csr_matrix, const: np.ndarray, shape: tuple, model=None):
        self.coef = coef.tocsr() if not sp.isspmatrix_csr(coef) else coef
        self.const = np.asarray(const, dtype=float).ravel()
        self.shape = tuple(int(s) for s in shape)
        self.model = model
        if self.coef.shape[0] != self.size or self.const.shape[0] != self.size:
            raise AssertionError("LinExpr rows do not match its shape")

    # --- construction helpers ------------------------------------------------------------
    @classmethod
    def constant(cls, value, ncols: int = 0, model=None) -> "LinExpr":
        arr = _as_const(value, "constant")
        n = arr.size
        return cls(sp.csr_matrix((n, ncols)), arr.ravel(), arr.shape, model)

    def _ncols(self) -> int:
        return self.coef.shape[1]

    def _select(self, rows: np.ndarray, shape: tuple) -> "LinExpr":
        return LinExpr(self.coef[rows], self.const[rows], shape, self.model)

    def _coerce(self, other) -> "LinExpr":
        if isinstance(other, LinExpr):
            _same_model(self, other)
            return other
        if isinstance(other, QuadExpr):
            raise TypeError("internal: quadratic operand")
        return LinExpr.constant(other, self._ncols(), self.model)

    # --- array protocol --------------------------------------------------------------------
    def __getitem__(self, key) -> "LinExpr":
        idx = np.arange(self.size, dtype=np.int64).reshape(self.shape)
        try:
            sel = idx[key]
        except (IndexError, TypeError) as exc:
            raise ModelError(f"bad index {key!r} for an expression of shape {self.shape}: {exc}") from None
        sel = np.asarray(sel)
        return self._select(sel.ravel(), sel.shape)

    def reshape(self, *shape) -> "LinExpr":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new = np.empty(self.shape, dtype=np.int8).reshape(shape).shape
        return LinExpr(self.coef, self.const, new, self.model)

    def ravel(self) -> "LinExpr":
        return LinExpr(self.coef, self.const, (self.size,), self.model)

    @property
    def T(self) -> "LinExpr":
        idx = np.arange(self.size, dtype=np.int64).reshape(self.shape).T
        return self._select(idx.ravel(), idx.shape)

    def broadcast_to(self, shape: tuple) -> "LinExpr":
        shape = tuple(shape)
        if shape == self.shape:
            return self
        try:
            rows = _broadcast_rows(self.shape, shape)
        except ValueError:
            raise ModelError(f"cannot broadcast an expression of shape {self.shape} to {shape}") from None
        return self._select(rows, shape)

    def sum(self, axis=None) -> "LinExpr":
        agg, out_shape = _aggregation(self.shape, axis)
        return LinExpr(agg @ self.coef, agg @ self.const, out_shape, self.model)

    # --- arithmetic ------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, QuadExpr):
            return other + self
        other = self._coerce(other)
        shape = _broadcast_shape(self.shape, other.shape)
        a, b = self.broadcast_to(shape), other.broadcast_to(shape)
        n = max(a._ncols(), b._ncols())
        return LinExpr(_widen(a.coef, n) + _widen(b.coef, n), a.const + b.const, shape, self.model or other.model)

    def __mul__(self, other):
        if isinstance(other, LinExpr):
            return QuadExpr.product(self, other)
        if isinstance(other, QuadExpr):
            raise ModelError("products of degree higher than 2 are not supported")
        factor = _as_const(other, "multiplication")
        shape = _broadcast_shape(self.shape, factor.shape)
        a = self.broadcast_to(shape)
        f = np.broadcast_to(factor, shape).ravel()
        return LinExpr(_scale_rows(a.coef, f), a.const * f, shape, self.model)

    def __pow__(self, power):
        if power == 1:
            return self
        if power == 2:
            return QuadExpr.product(self, self)
        raise ModelError(f"only powers 1 and 2 are supported, got {power!r}")

    def __matmul__(self, other):
        if isinstance(other, _Operand):
            raise ModelError("the product of two expressions with @ is not supported; use (x * y).sum()")
        mat = other if sp.issparse(other) else _as_const(other, "matmul")
        if self.ndim != 1:
            raise ModelError(f"expr @ matrix needs a 1-D expression, got shape {self.shape}")
        # (x @ M)_j = sum_i x_i M_ij  ->  coef rows combined by M^T
        if mat.ndim == 1:
            return (self * np.asarray(mat)).sum()
        left = sp.csr_matrix(mat.T) if sp.issparse(mat) else mat.T
        return _left_multiply(left, self)

    def __rmatmul__(self, other):
        mat = other if sp.issparse(other) else _as_const(other, "matmul")
        if mat.ndim == 1:
            if self.ndim != 1:
                raise ModelError("vector @ expr needs a 1-D expression")
            return (self * np.asarray(mat)).sum()
        if self.ndim == 1:
            return _left_multiply(mat, self)
        if self.ndim == 2:  # (A @ X)[:, j] for each column j of X
            cols = [_left_multiply(mat, self[:, j]) for j in range(self.shape[1])]
            stacked = LinExpr(sp.vstack([c.coef for c in cols]).tocsr(), np.concatenate([c.const for c in cols]),
                              (self.shape[1], mat.shape[0]), self.model)
            return stacked.T
        raise ModelError(f"matrix @ expr supports 1-D and 2-D expressions, got shape {self.shape}")

    # --- values ----------------------------------------------------------------------------
    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The expression's values at the full variable vector ``x``."""
        return (_widen(self.coef, len(x)) @ x + self.const).reshape(self.shape)

    @property
    def value(self) -> np.ndarray | None:
        x = None if self.model is None else self.model.solution_vector
        if x is None or len(x) < self._ncols():  # none yet, or uses variables added after the solve
            return None
        return self.evaluate(x)

    def __repr__(self):
        return f"LinExpr(shape={self.shape}, nnz={self.coef.nnz})"


def _left_multiply(mat, expr: LinExpr) -> LinExpr:
    """``mat @ expr`` for a 1-D expression: a sparse/dense matrix product on the rows of coef."""
    if mat.shape[1] != expr.size:
        raise ModelError(f"matmul shapes do not match: matrix {mat.shape} @ expression {expr.shape}")
    left = mat if sp.issparse(mat) else sp.csr_matrix(mat)
    coef = (left @ expr.coef).tocsr()
    const = np.asarray(left @ expr.const).ravel()
    return LinExpr(coef, const, (mat.shape[0],), expr.model)


def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ModelError(f"shapes {a} and {b} do not broadcast") from None


def _same_model(a, b) -> None:
    if a.model is not None and b.model is not None and a.model is not b.model:
        raise ModelError("cannot combine expressions of two different models")


class QuadExpr(_Operand):
    """An array of quadratic expressions: per element, sum of q * x_i * x_j plus a LinExpr."""

    def __init__(self, elem, vi, vj, q, lin: LinExpr):
        self.elem = np.asarray(elem, dtype=np.int64)
        self.vi = np.asarray(vi, dtype=np.int64)
        self.vj = np.asarray(vj, dtype=np.int64)
        self.q = np.asarray(q, dtype=float)
        self.lin = lin
        self.shape = lin.shape
        self.model = lin.model

    @classmethod
    def product(cls, a: LinExpr, b: LinExpr) -> "QuadExpr":
        """Elementwise (a * b) of two affine arrays, expanded into quadratic + linear terms."""
        _same_model(a, b)
        shape = _broadcast_shape(a.shape, b.shape)
        a, b = a.broadcast_to(shape), b.broadcast_to(shape)
        n = max(a._ncols(), b._ncols())
        A, B = _widen(a.coef, n).tocsr(), _widen(b.coef, n).tocsr()
        # all pairs (term of a, term of b) within each row
        na, nb = np.diff(A.indptr), np.diff(B.indptr)
        pairs = na * nb
        elem = np.repeat(np.arange(len(na), dtype=np.int64), pairs)
        start = np.repeat(np.cumsum(pairs) - pairs, pairs)
        local = np.arange(int(pairs.sum()), dtype=np.int64) - start
        nb_rep = np.repeat(nb, pairs)
        ia = np.repeat(A.indptr[:-1], pairs) + local // np.maximum(nb_rep, 1)
        ib = np.repeat(B.indptr[:-1], pairs) + local % np.maximum(nb_rep, 1)
        # cross terms with the constants, and the constant product
        lin = LinExpr(_scale_rows(A, b.const) + _scale_rows(B, a.const), a.const * b.const, shape, a.model or b.model)
        return cls(elem, A.indices[ia], B.indices[ib], A.data[ia] * B.data[ib], lin)

    def sum(self, axis=None) -> "QuadExpr":
        agg, out_shape = _aggregation(self.shape, axis)
        return QuadExpr(_map_elements(agg, self.elem), self.vi, self.vj, self.q, self.lin.sum(axis))

    def __add__(self, other):
        if isinstance(other, QuadExpr):
            _same_model(self, other)
            shape = _broadcast_shape(self.shape, other.shape)
            a, b = self.broadcast_to(shape), other.broadcast_to(shape)
            return QuadExpr(np.concatenate([a.elem, b.elem]), np.concatenate([a.vi, b.vi]),
                            np.concatenate([a.vj, b.vj]), np.concatenate([a.q, b.q]), a.lin + b.lin)
        lin = self.lin + other
        q = self.broadcast_to(lin.shape)
        return QuadExpr(q.elem, q.vi, q.vj, q.q, lin)

    def __mul__(self, other):
        if isinstance(other, _Operand):
            raise ModelError("products of degree higher than 2 are not supported")
        factor = _as_const(other, "multiplication")
        if factor.ndim == 0:
            return QuadExpr(self.elem, self.vi, self.vj, self.q * float(factor), self.lin * factor)
        shape = _broadcast_shape(self.shape, factor.shape)
        q = self.broadcast_to(shape)
        f = np.broadcast_to(factor, shape).ravel()
        return QuadExpr(q.elem, q.vi, q.vj, q.q * f[q.elem], q.lin * factor)

    def broadcast_to(self, shape: tuple) -> "QuadExpr":
        shape = tuple(shape)
        if shape == self.shape:
            return self
        rows = _broadcast_rows(self.shape, shape)  # new element e takes old element rows[e]
        order = np.argsort(rows, kind="stable")
        counts = np.bincount(rows, minlength=self.size)
        # for each old quad term, one copy per new element that maps to its element
        starts = np.concatenate([[0], np.cumsum(counts)])
        reps = counts[self.elem]
        term = np.repeat(np.arange(len(self.elem)), reps)
        offs = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
        new_elem = order[starts[self.elem[term]] + offs]
        return QuadExpr(new_elem, self.vi[term], self.vj[term], self.q[term], self.lin.broadcast_to(shape))

    def __getitem__(self, key):
        raise ModelError("indexing a quadratic expression is not supported; index the linear factors first")

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        out = self.lin.evaluate(x).ravel().copy()
        np.add.at(out, self.elem, self.q * x[self.vi] * x[self.vj])
        return out.reshape(self.shape)

    @property
    def value(self):
        if self.model is None or self.model.solution_vector is None:
            return None
        return self.evaluate(self.model.solution_vector)

    def __repr__(self):
        return f"QuadExpr(shape={self.shape}, quadratic terms={len(self.q)})"


def _map_elements(agg: sp.csr_matrix, elem: np.ndarray) -> np.ndarray:
    """The output element of each input element under a 0/1 aggregation matrix."""
    target = np.empty(agg.shape[1], dtype=np.int64)
    coo = agg.tocoo()
    target[coo.col] = coo.row
    return target[elem]


@dataclass
class Constraint:
    """``body sense 0`` elementwise, with ``body`` = lhs - rhs (linear or quadratic)."""

    body: LinExpr | QuadExpr
    sense: str
    name: str | None = None
    model: object = None
    rows: np.ndarray | None = None    # row indices in the compiled standard form (linear ones)
    dual_values: np.ndarray | None = None

    @classmethod
    def build(cls, lhs, rhs, sense: str) -> "Constraint":
        body = lhs - rhs
        if not isinstance(body, (LinExpr, QuadExpr)):
            raise ModelError("a constraint needs at least one expression side")
        return cls(body=body, sense=sense)

    @property
    def shape(self) -> tuple:
        return self.body.shape

    @property
    def is_quadratic(self) -> bool:
        return isinstance(self.body, QuadExpr)

    @property
    def dual(self) -> np.ndarray | None:
        """Dual values (LP solves), shaped like the constraint."""
        return None if self.dual_values is None else self.dual_values.reshape(self.shape)

    def __bool__(self):
        raise TypeError("a constraint has no truth value; add it to a model with model.add(...)")
