"""Vectorised expression arrays: linear (:class:`LinExpr`) and quadratic (:class:`QuadExpr`).

A ``LinExpr`` of shape ``s`` is N = prod(s) affine functions stored as one sparse matrix
``coef`` (N x number of model variables, CSR) and a constant vector ``const`` (N,). Every
operation is a whole-array scipy/numpy operation, never a Python loop per scalar:

- indexing, transposing and broadcasting gather (possibly repeated) rows of ``coef``;
- ``sum(axis)`` concatenates the terms of each group of rows (a gather when the summed axes
  are not the trailing ones; a variable met twice in one row keeps two entries, summed where
  the matrix is used: ``Model.compile`` sums them);
- ``A @ x`` multiplies ``coef`` by ``A`` on the left; on a variable array (or any expression
  with one variable per element) it is ``A`` itself with its column indices mapped;
- ``+``, ``-`` and ``*``/``/`` by arrays add matrices or scale rows;
- ``w @ Y``, ``Y @ v``, ``A @ Y`` on 2-D expressions follow NumPy's matmul rules; ``np.sum``,
  ``np.dot``, ``np.transpose``, ... work through ``__array_function__``.

Expressions may share ``coef`` arrays (a sum's output reuses its input's data and indices): they
are never modified in place.

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
from solvopt.core.memory import format_bytes, machine_memory

SENSES = ("<=", ">=", "==")


class ExpressionUseError(ModelError, TypeError):
    """An expression used where Python needs a plain value: ``if expr:``, ``bool(constraint)``, ``len`` of a scalar.

    A ModelError that is also a TypeError (what Python raises there for other objects)."""


def _as_const(value, where: str) -> np.ndarray:
    """A finite float array from a number / array-like (a Param is an ndarray already).

    Anything that is not plain real numbers (complex, text, objects, dates) is a ModelError
    naming ``where``, never a silent conversion (complex numbers are not truncated).
    """
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        arr = np.asarray(value, dtype=np.float64)
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ModelError(f"{where}: constants must be arrays of real numbers ({exc})") from None
        kind = arr.dtype.kind
        if kind == "c":
            raise ModelError(f"{where}: complex constants are not supported (dtype {arr.dtype}); "
                             "pass the real part (.real) if that is what you mean")
        if kind in "US":
            raise ModelError(f"{where}: constants must be real numbers, got text {_short(value)}")
        if kind == "O":
            if any(isinstance(v, _Operand) for v in arr.ravel()[:1000]):
                raise ModelError(f"{where}: an array of expressions is not a constant; combine expressions "
                                 "with +, *, @ and .sum() instead of collecting them in a NumPy array")
            if any(isinstance(v, complex) for v in arr.ravel()[:1000]):
                raise ModelError(f"{where}: complex constants are not supported; pass the real part")
            if any(v is None for v in arr.ravel()):
                raise ModelError(f"{where}: constants must be real numbers, got an object array holding None")
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError, OverflowError):
                raise ModelError(f"{where}: constants must be real numbers, got an object array holding "
                                 f"{type(arr.ravel()[0]).__name__ if arr.size else 'nothing'}") from None
        elif kind not in "biuf":
            raise ModelError(f"{where}: constants must be real numbers, got dtype {arr.dtype}")
        else:
            arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        raise ModelError(f"{where}: constants must be finite (found NaN or inf)")
    return arr


# bytes an expression element costs at least (a row pointer, one term, a constant, temporaries)
BYTES_PER_ELEMENT = 40


def _check_size(shape: tuple, what: str) -> None:
    """Refuse an expression whose elements alone would not fit in memory (before allocating)."""
    size = int(np.prod(shape, dtype=object))
    need, have = BYTES_PER_ELEMENT * size, machine_memory()
    if have is not None and need > have:
        raise ModelError(f"{what} of shape {shape} has {size:,} elements and would need over {format_bytes(need)} of "
                         f"memory; this machine has {format_bytes(have)}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _widen(matrix: sp.csr_matrix, ncols: int) -> sp.csr_matrix:
    """The same CSR matrix with ``ncols`` columns (variables added to the model since it was built)."""
    if matrix.shape[1] == ncols:
        return matrix
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], ncols))


def _scale_rows(matrix: sp.csr_matrix, factor: np.ndarray) -> sp.csr_matrix:
    """diag(factor) @ matrix without a matrix product: each stored value times its row's factor."""
    if _unit_rows(matrix):
        data = matrix.data * factor
    else:
        data = matrix.data * np.repeat(factor, np.diff(matrix.indptr))
    return sp.csr_matrix((data, matrix.indices, matrix.indptr), shape=matrix.shape)


def _unit_rows(matrix: sp.csr_matrix) -> bool:
    """True when every row holds exactly one stored entry (a selection of single variables)."""
    n = matrix.shape[0]
    return matrix.nnz == n and (n == 0 or bool((np.diff(matrix.indptr) == 1).all()))


def _take_rows(matrix: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """``matrix[rows]`` (rows may repeat) as flat gathers: no per-row Python work."""
    shape = (len(rows), matrix.shape[1])
    if _unit_rows(matrix):
        indptr = np.arange(len(rows) + 1, dtype=matrix.indptr.dtype)
        return sp.csr_matrix((matrix.data[rows], matrix.indices[rows], indptr), shape=shape)
    lengths = np.diff(matrix.indptr)[rows]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    pos = np.repeat(matrix.indptr[rows] - indptr[:-1], lengths) + np.arange(indptr[-1], dtype=np.int64)
    return sp.csr_matrix((matrix.data[pos], matrix.indices[pos], indptr), shape=shape)


def _broadcast_rows(shape: tuple, target: tuple) -> np.ndarray:
    """Flat row indices that broadcast an array of ``shape`` to ``target`` (numpy rules)."""
    idx = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return np.broadcast_to(idx, target).ravel()


def _sum_axes(shape: tuple, axis) -> tuple[int, ...]:
    """The summed axes of ``shape`` (all of them for None), normalised and sorted."""
    ndim = len(shape)
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    if ndim == 0:
        raise ModelError("cannot sum over an axis of a scalar expression")
    out = set()
    for a in axes:
        if not isinstance(a, numbers.Integral) or isinstance(a, bool):
            raise ModelError(f"axis must be an integer or a tuple of integers, got {a!r}")
        out.add(int(a) % ndim if -ndim <= a < ndim else _bad_axis(a, ndim))
    return tuple(sorted(out))


def _grouping(shape: tuple, axis) -> tuple[np.ndarray | None, int, tuple]:
    """How a sum over ``axis`` groups the flat elements of ``shape``.

    Returns ``(perm, group, out_shape)``: after reordering the elements by ``perm`` (None: they
    are in order already, as for a sum over trailing axes), each output element is the sum of
    ``group`` consecutive elements.
    """
    axes = _sum_axes(shape, axis)
    keep = tuple(d for d in range(len(shape)) if d not in axes)
    out_shape = tuple(shape[d] for d in keep)
    group = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    if keep + axes == tuple(range(len(shape))):
        return None, group, out_shape
    n = int(np.prod(shape, dtype=np.int64))
    perm = np.arange(n, dtype=np.int64).reshape(shape).transpose(keep + axes).ravel()
    return perm, group, out_shape


def _sum_targets(shape: tuple, axis) -> tuple[np.ndarray, tuple]:
    """The output element of every input element under a sum over ``axis``, and the output shape."""
    axes = _sum_axes(shape, axis)
    keep = [d for d in range(len(shape)) if d not in axes]
    out_shape = tuple(shape[d] for d in keep)
    m = int(np.prod(out_shape, dtype=np.int64))
    expanded = tuple(shape[d] if d in keep else 1 for d in range(len(shape)))
    return np.broadcast_to(np.arange(m, dtype=np.int64).reshape(expanded), shape).ravel(), out_shape


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

    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on expressions: ``np.sum``, ``np.dot``, ``np.transpose``, ``np.reshape``, ...

        Anything else is a ModelError naming the expression methods to use instead.
        """
        handler = _ARRAY_FUNCTIONS.get(func)
        if handler is None:
            raise ModelError(f"numpy.{func.__name__} does not take solvopt expressions; use the expression's own "
                             "operations (+, -, *, /, @, .sum(axis), .T, .reshape, indexing) or "
                             f"numpy.{'/numpy.'.join(sorted(f.__name__ for f in _ARRAY_FUNCTIONS))}")
        return handler(*args, **kwargs)

    def __len__(self):
        if not self.shape:
            raise ExpressionUseError("len() of a scalar expression")
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
        raise ExpressionUseError("an expression has no truth value; did you mean to add a constraint with model.add(...)?")


class LinExpr(_Operand):
    """An array of affine expressions: ``coef @ x + const`` reshaped to ``shape``."""

    # first column when ``coef`` is exactly the identity on columns start .. start + size and
    # ``const`` is zero (a whole variable array): lets ``A @ x`` reuse A's structure as it is
    _block_start: int | None = None

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
        return LinExpr(_take_rows(self.coef, rows), self.const[rows], shape, self.model)

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
        except (IndexError, TypeError, ValueError) as exc:
            raise ModelError(f"bad index {key!r} for an expression of shape {self.shape}: {exc}") from None
        sel = np.asarray(sel)
        return self._select(sel.ravel(), sel.shape)

    def reshape(self, *shape) -> "LinExpr":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        try:
            new = np.empty(self.shape, dtype=np.int8).reshape(shape).shape
        except (TypeError, ValueError) as exc:
            raise ModelError(f"cannot reshape an expression of shape {self.shape} to {shape}: {exc}") from None
        return LinExpr(self.coef, self.const, new, self.model)

    def ravel(self) -> "LinExpr":
        return LinExpr(self.coef, self.const, (self.size,), self.model)

    @property
    def T(self) -> "LinExpr":
        return self.transpose()

    def transpose(self, *axes) -> "LinExpr":
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        try:
            idx = np.arange(self.size, dtype=np.int64).reshape(self.shape).transpose(*(axes or ()))
        except (TypeError, ValueError) as exc:
            raise ModelError(f"cannot transpose an expression of shape {self.shape} by {axes}: {exc}") from None
        return self._select(idx.ravel(), idx.shape)

    def broadcast_to(self, shape: tuple) -> "LinExpr":
        shape = tuple(shape)
        if shape == self.shape:
            return self
        _check_size(shape, "broadcasting an expression")
        try:
            rows = _broadcast_rows(self.shape, shape)
        except ValueError:
            raise ModelError(f"cannot broadcast an expression of shape {self.shape} to {shape}") from None
        return self._select(rows, shape)

    def sum(self, axis=None) -> "LinExpr":
        """Sum over ``axis`` (all axes when None), as NumPy's ``sum``.

        The terms of each output element are the concatenated terms of its inputs (one gather
        when the summed axes are not the trailing ones, none when they are); a variable met twice
        in one output keeps two entries, summed where the matrix is used.
        """
        perm, group, out_shape = _grouping(self.shape, axis)
        coef = self.coef if perm is None else _take_rows(self.coef, perm)
        const = self.const if perm is None else self.const[perm]
        m = int(np.prod(out_shape, dtype=np.int64))
        if group == 0:
            return LinExpr.constant(np.zeros(out_shape), self._ncols(), self.model)
        indptr = coef.indptr[::group]
        out = sp.csr_matrix((coef.data, coef.indices, indptr), shape=(m, self._ncols()))
        return LinExpr(out, const.reshape(m, group).sum(axis=1), out_shape, self.model)

    # --- arithmetic ------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, QuadExpr):
            return other + self
        other = self._coerce(other)
        shape = _broadcast_shape(self.shape, other.shape)
        a, b = self.broadcast_to(shape), other.broadcast_to(shape)
        n = max(a._ncols(), b._ncols())
        if b.coef.nnz == 0:      # adding a constant: the terms stay as they are
            coef = _widen(a.coef, n)
        elif a.coef.nnz == 0:
            coef = _widen(b.coef, n)
        else:
            coef = _widen(a.coef, n) + _widen(b.coef, n)
        return LinExpr(coef, a.const + b.const, shape, self.model or other.model)

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
        """``expr @ other`` with NumPy's matmul rules for 1-D and 2-D operands."""
        if isinstance(other, _Operand):
            raise ModelError("the product of two expressions with @ is not supported; use (x * y).sum()")
        mat = other if sp.issparse(other) else _as_const(other, "matmul")
        if self.ndim == 0 or mat.ndim == 0:
            raise ModelError("matmul needs operands of at least one dimension; use * for scalars")
        if mat.ndim == 1:            # (..., k) @ (k,): sum over the last axis
            if self.shape[-1] != mat.shape[0]:
                raise ModelError(f"matmul shapes do not match: expression {self.shape} @ vector {mat.shape}")
            return (self * np.asarray(mat)).sum(axis=-1)
        if mat.ndim != 2:
            raise ModelError(f"expr @ array supports 1-D and 2-D arrays, got shape {mat.shape}")
        if self.ndim == 1:           # (x @ M)_j = sum_i x_i M_ij
            left = sp.csr_matrix(mat.T) if sp.issparse(mat) else mat.T
            return _left_multiply(left, self)
        if self.ndim == 2:           # X @ M = (M^T @ X^T)^T
            return _matrix_times_2d(mat.T, self.T).T
        raise ModelError(f"expr @ array supports 1-D and 2-D expressions, got shape {self.shape}")

    def __rmatmul__(self, other):
        """``other @ expr`` with NumPy's matmul rules for 1-D and 2-D operands."""
        mat = other if sp.issparse(other) else _as_const(other, "matmul")
        if self.ndim == 0 or mat.ndim == 0:
            raise ModelError("matmul needs operands of at least one dimension; use * for scalars")
        if mat.ndim == 1:            # (k,) @ (..., k, p): sum over the second-to-last axis
            axis = -1 if self.ndim == 1 else -2
            if self.shape[axis] != mat.shape[0]:
                raise ModelError(f"matmul shapes do not match: vector {mat.shape} @ expression {self.shape}")
            w = np.asarray(mat) if self.ndim == 1 else np.asarray(mat)[:, None]
            return (self * w).sum(axis=axis)
        if mat.ndim != 2:
            raise ModelError(f"array @ expr supports 1-D and 2-D arrays, got shape {mat.shape}")
        if self.ndim == 1:
            return _left_multiply(mat, self)
        if self.ndim == 2:
            return _matrix_times_2d(mat, self)
        raise ModelError(f"array @ expr supports 1-D and 2-D expressions, got shape {self.shape}")

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
    """``mat @ expr`` for a 1-D expression: a sparse/dense matrix product on the rows of coef.

    When each row of the expression is a single variable (a variable array, or a selection of
    one), the product is ``mat`` itself with its column indices mapped to those variables: no
    sparse matrix product.
    """
    if mat.shape[1] != expr.size:
        raise ModelError(f"matmul shapes do not match: matrix {mat.shape} @ expression {expr.shape}")
    left = mat.tocsr() if sp.issparse(mat) else sp.csr_matrix(mat)
    ncols = expr._ncols()
    if expr._block_start is not None:
        indices = left.indices.astype(np.int64 if ncols > np.iinfo(np.int32).max else np.int32)
        indices += expr._block_start
        coef = sp.csr_matrix((left.data.copy(), indices, left.indptr.copy()), shape=(left.shape[0], ncols))
    elif _unit_rows(expr.coef):
        coef = sp.csr_matrix((left.data * expr.coef.data[left.indices], expr.coef.indices[left.indices],
                              left.indptr.copy()), shape=(left.shape[0], ncols))
    else:
        coef = (left @ expr.coef).tocsr()
    if expr._block_start is not None or not expr.const.any():
        const = np.zeros(left.shape[0])
    else:
        const = np.asarray(left @ expr.const).ravel()
    return LinExpr(coef, const, (mat.shape[0],), expr.model)


def _matrix_times_2d(mat, expr: LinExpr) -> LinExpr:
    """``mat @ X`` for a 2-D expression X (p, q): one block-diagonal product on X's columns."""
    p, q = expr.shape
    if mat.shape[1] != p:
        raise ModelError(f"matmul shapes do not match: matrix {mat.shape} @ expression {expr.shape}")
    left = mat.tocsr() if sp.issparse(mat) else sp.csr_matrix(mat)
    blocks = sp.kron(sp.identity(q, format="csr"), left, format="csr")   # column j of X -> rows j*m ..
    cols = _left_multiply(blocks, expr.T.ravel())
    return cols.reshape(q, mat.shape[0]).T


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
        target, _ = _sum_targets(self.shape, axis)
        return QuadExpr(target[self.elem], self.vi, self.vj, self.q, self.lin.sum(axis))

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
        _check_size(shape, "broadcasting an expression")
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

    def __matmul__(self, other):
        raise ModelError("@ with a quadratic expression is not supported; use (q * w).sum(axis) instead")

    __rmatmul__ = __matmul__

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
        if not isinstance(rhs, _Operand):
            rhs = _as_const(rhs, f"right-hand side of {sense}")
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
        raise ExpressionUseError("a constraint has no truth value (NumPy object arrays of expressions compare "
                           "element by element and need one); add it to a model with model.add(...)")


# --- NumPy functions on expressions (``__array_function__``) ------------------------------------
def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
    if dtype is not None or out is not None or keepdims or unsupported:
        raise ModelError("numpy.sum on an expression takes only `axis` (no dtype, out, keepdims, initial, where)")
    if not isinstance(a, _Operand):
        raise ModelError("numpy.sum: the summed operand must be the expression")
    return a.sum(axis=axis)


def _np_dot(a, b, out=None):
    if out is not None:
        raise ModelError("numpy.dot on an expression does not take `out`")
    nd_a, nd_b = np.ndim(a) if not isinstance(a, _Operand) else a.ndim, \
        np.ndim(b) if not isinstance(b, _Operand) else b.ndim
    if nd_a == 0 or nd_b == 0:
        return a * b
    if nd_a > 2 or nd_b > 2:
        raise ModelError("numpy.dot on expressions supports 1-D and 2-D operands; use @ or .sum(axis)")
    return a @ b


def _linear(a, what: str) -> "LinExpr":
    if not isinstance(a, LinExpr):
        raise ModelError(f"numpy.{what} takes a linear expression here; quadratic ones support +, -, * and .sum()")
    return a


def _np_transpose(a, axes=None):
    return _linear(a, "transpose").transpose(axes)


def _np_reshape(a, shape=None, order="C", **kwargs):
    if order != "C":
        raise ModelError("expressions reshape in C order only")
    shape = kwargs.pop("newshape", shape)
    return _linear(a, "reshape").reshape(shape)


def _np_ravel(a, order="C"):
    if order != "C":
        raise ModelError("expressions ravel in C order only")
    return _linear(a, "ravel").ravel()


def _np_broadcast_to(a, shape, subok=False):
    return _linear(a, "broadcast_to").broadcast_to(shape if isinstance(shape, tuple) else (shape,))


_ARRAY_FUNCTIONS = {
    np.sum: _np_sum, np.dot: _np_dot, np.transpose: _np_transpose, np.reshape: _np_reshape,
    np.ravel: _np_ravel, np.broadcast_to: _np_broadcast_to,
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim, np.size: lambda a, axis=None: (
        a.size if axis is None else a.shape[axis]),
}
