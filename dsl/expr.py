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

pandas Series and DataFrames are operands too (pandas defers to ``__pandas_priority__``): they
are lined up with the expression's labels (``coords``, from a labelled variable; positions
0, 1, ... without) and then used as arrays (:func:`align_pandas`). pandas is never imported here.
"""
from __future__ import annotations

import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, TypeVar, overload

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from solvopt.core.errors import ModelError
from solvopt.core.memory import format_bytes, machine_memory

from .arrays import FloatArray

if TYPE_CHECKING:
    from .model import Model

SENSES = ("<=", ">=", "==")

# the labels of an expression: one pandas Index per dimension, or None
Coords: TypeAlias = "tuple[Any, ...] | None"
IndexArray: TypeAlias = npt.NDArray[np.int64]


class ExpressionUseError(ModelError, TypeError):
    """An expression used where Python needs a plain value: ``if expr:``, ``bool(constraint)``, ``len`` of a scalar.

    A ModelError that is also a TypeError (what Python raises there for other objects)."""


def as_const(value: Any, where: str) -> FloatArray:
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
            if any(isinstance(v, (str, bytes)) for v in arr.ravel()):
                raise ModelError(f"{where}: constants must be real numbers, got text {_short(value)}")
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
# below this many bytes an array fits on any machine: the memory checks skip reading its size
SMALL_BYTES = 1 << 26


def _check_size(shape: tuple[int, ...], what: str) -> None:
    """Refuse an expression whose elements alone would not fit in memory (before allocating)."""
    size = int(np.prod(shape, dtype=object))
    need = BYTES_PER_ELEMENT * size
    if need < SMALL_BYTES:       # fits anywhere: no need to read the machine's memory (a file read)
        return
    have = machine_memory()
    if have is not None and need > have:
        raise ModelError(f"{what} of shape {shape} has {size:,} elements and would need over {format_bytes(need)} of "
                         f"memory; this machine has {format_bytes(have)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def widen(matrix: sp.csr_matrix, ncols: int) -> sp.csr_matrix:
    """The same CSR matrix with ``ncols`` columns (variables added to the model since it was built)."""
    if matrix.shape[1] == ncols:
        return matrix
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], ncols))


def _scale_rows(matrix: sp.csr_matrix, factor: FloatArray) -> sp.csr_matrix:
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


def _take_rows(matrix: sp.csr_matrix, rows: IndexArray) -> sp.csr_matrix:
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


def _broadcast_rows(shape: tuple[int, ...], target: tuple[int, ...]) -> IndexArray:
    """Flat row indices that broadcast an array of ``shape`` to ``target`` (numpy rules)."""
    idx = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return np.broadcast_to(idx, target).ravel()


def _sum_axes(shape: tuple[int, ...], axis: Any) -> tuple[int, ...]:
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
        k = int(a)
        out.add(k % ndim if -ndim <= k < ndim else _bad_axis(a, ndim))
    return tuple(sorted(out))


def _grouping(shape: tuple[int, ...], axis: Any) -> tuple[IndexArray | None, int, tuple[int, ...]]:
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


def _sum_targets(shape: tuple[int, ...], axis: Any) -> tuple[IndexArray, tuple[int, ...]]:
    """The output element of every input element under a sum over ``axis``, and the output shape."""
    axes = _sum_axes(shape, axis)
    keep = [d for d in range(len(shape)) if d not in axes]
    out_shape = tuple(shape[d] for d in keep)
    m = int(np.prod(out_shape, dtype=np.int64))
    expanded = tuple(shape[d] if d in keep else 1 for d in range(len(shape)))
    return np.broadcast_to(np.arange(m, dtype=np.int64).reshape(expanded), shape).ravel(), out_shape


def _bad_axis(a: object, ndim: int) -> NoReturn:
    raise ModelError(f"axis {a} is out of bounds for an expression with {ndim} dimensions")


class _Operand:
    """What LinExpr and QuadExpr share: numpy and pandas defer to them, comparisons build constraints.

    ``coords`` (None, or one ``pandas.Index`` per dimension) are the labels of a labelled
    variable, carried through elementwise arithmetic, sums and transposes; pandas operands are
    aligned to them (see :func:`align_pandas`).
    """

    __array_ufunc__ = None  # numpy: `array OP expr` calls expr.__rOP__
    __array_priority__ = 1000
    __pandas_priority__ = 5000  # pandas >= 2.1: `series OP expr` calls expr.__rOP__ (Series 3000, DataFrame 4000)
    coords: Coords = None

    shape: tuple[int, ...]
    model: Model | None

    if TYPE_CHECKING:       # what LinExpr and QuadExpr both define
        def __add__(self, other: Any) -> Expr: ...
        def __mul__(self, other: Any) -> Expr: ...
        def sum(self, axis: Any = None) -> Expr: ...
        @property
        def value(self) -> FloatArray | None: ...

    @property
    def dims(self) -> tuple[Any, ...] | None:
        """The dimension names of a labelled expression (None when it has no labels)."""
        return None if self.coords is None else tuple(c.name for c in self.coords)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __array__(self, dtype: Any = None, copy: Any = None) -> npt.NDArray[np.object_]:
        """A 0-d object array holding the expression, so array libraries defer to our operators.

        pandas asks for it only where it would compute with the expression itself (``series @ x``
        and ``frame @ x`` do not defer, a Series of expressions): a ModelError saying what to write.
        """
        caller = sys._getframe(1).f_globals.get("__name__", "")  # noqa: SLF001  # documented in sys, not private
        if caller.startswith("pandas"):
            raise ModelError("pandas cannot compute with solvopt expressions itself: `series @ x` and `frame @ x` are "
                             "pandas' own operators (write `x @ series`, or `x @ frame.T` for `frame @ x`: the same "
                             "products, aligned by label), and a Series or DataFrame of expressions is not supported "
                             "(combine the expression arrays with +, *, @ and .sum())")
        holder = np.empty((), dtype=object)
        holder[()] = self
        return holder

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy functions on expressions: ``np.sum``, ``np.dot``, ``np.transpose``, ``np.reshape``, ...

        Anything else is a ModelError naming the expression methods to use instead.
        """
        handler = _ARRAY_FUNCTIONS.get(func)
        if handler is None:
            raise ModelError(f"numpy.{func.__name__} does not take solvopt expressions; use the expression's own "
                             "operations (+, -, *, /, @, .sum(axis), .T, .reshape, indexing) or "
                             f"numpy.{'/numpy.'.join(sorted(f.__name__ for f in _ARRAY_FUNCTIONS))}")
        return handler(*args, **kwargs)

    def __len__(self) -> int:
        if not self.shape:
            raise ExpressionUseError("len() of a scalar expression")
        return self.shape[0]

    def __neg__(self) -> Expr:
        return self * -1.0

    def __sub__(self, other: Any) -> Expr:
        if pandas_kind(other):
            return self._with_pandas(other, "subtraction", lambda arr: self - arr)
        rhs = other if isinstance(other, _Operand) else as_const(other, "subtraction")
        return self + (-1.0) * rhs

    def __rsub__(self, other: Any) -> Expr:
        out: Expr = (-1.0) * self + other
        return out

    def __radd__(self, other: Any) -> Expr:
        out: Expr = self + other
        return out

    def __rmul__(self, other: Any) -> Expr:
        out: Expr = self * other
        return out

    def __truediv__(self, other: Any) -> Expr:
        if isinstance(other, _Operand):
            raise ModelError("division by an expression is not linear or quadratic")
        if pandas_kind(other):
            return self._with_pandas(other, "division", lambda arr: self / arr)
        den = as_const(other, "division")
        if np.any(den == 0):
            raise ModelError("division by zero in an expression")
        return self * (1.0 / den)

    def __le__(self, other: Any) -> Constraint:
        return Constraint.build(self, other, "<=")

    def __ge__(self, other: Any) -> Constraint:
        return Constraint.build(self, other, ">=")

    def __eq__(self, other: Any) -> Constraint:  # type: ignore[override]
        return Constraint.build(self, other, "==")

    __hash__ = object.__hash__

    def __bool__(self) -> NoReturn:
        raise ExpressionUseError("an expression has no truth value; did you mean to add a constraint with "
                                 "model.add(...)?")

    # --- labels and pandas ---------------------------------------------------------------------
    def _with_pandas(self, value: Any, what: str, op: Callable[[FloatArray], Expr]) -> Expr:
        """``op`` applied to the pandas operand ``value`` aligned to this expression's labels."""
        arr, coords = align_pandas(self.shape, self.coords, value, what)
        return _labelled(op(arr), coords)

    def to_pandas(self) -> Any:
        """The values after a solve as a labelled pandas object (None before a solve).

        A Series for one dimension, a DataFrame for two (rows: the first dimension), a Series
        with a MultiIndex beyond; a float for a scalar. Unlabelled dimensions count 0, 1, ...
        """
        value = self.value
        return None if value is None else labelled_values(value, self.coords, getattr(self, "name", None))


class LinExpr(_Operand):
    """An array of affine expressions: ``coef @ x + const`` reshaped to ``shape``."""

    # first column when ``coef`` is exactly the identity on columns start .. start + size and
    # ``const`` is zero (a whole variable array): lets ``A @ x`` reuse A's structure as it is
    _block_start: int | None = None

    def __init__(self, coef: sp.csr_matrix, const: npt.ArrayLike, shape: tuple[int, ...], model: Model | None = None):
        self.coef = coef.tocsr() if not sp.isspmatrix_csr(coef) else coef
        self.const = np.asarray(const, dtype=float).ravel()
        self.shape = tuple(int(s) for s in shape)
        self.model = model
        if self.coef.shape[0] != self.size or self.const.shape[0] != self.size:
            raise AssertionError("LinExpr rows do not match its shape")

    # --- construction helpers ------------------------------------------------------------
    @classmethod
    def constant(cls, value: Any, ncols: int = 0, model: Model | None = None) -> LinExpr:
        arr = as_const(value, "constant")
        n = arr.size
        return cls(sp.csr_matrix((n, ncols)), arr.ravel(), arr.shape, model)

    def ncols(self) -> int:
        """Columns of ``coef``: the model's variables when the expression was built."""
        return int(self.coef.shape[1])

    def select_rows(self, rows: IndexArray, shape: tuple[int, ...]) -> LinExpr:
        """The expression's elements at the flat positions ``rows``, shaped ``shape``."""
        return LinExpr(_take_rows(self.coef, rows), self.const[rows], shape, self.model)

    def _coerce(self, other: Any) -> LinExpr:
        if isinstance(other, LinExpr):
            _same_model(self, other)
            return other
        if isinstance(other, QuadExpr):
            raise TypeError("internal: quadratic operand")
        return LinExpr.constant(other, self.ncols(), self.model)

    # --- array protocol --------------------------------------------------------------------
    def __getitem__(self, key: Any) -> LinExpr:
        idx = np.arange(self.size, dtype=np.int64).reshape(self.shape)
        try:
            sel = idx[key]
        except (IndexError, TypeError, ValueError) as exc:
            raise ModelError(f"bad index {key!r} for an expression of shape {self.shape}: {exc}") from None
        sel = np.asarray(sel)
        return self.select_rows(sel.ravel(), sel.shape)

    def sel(self, **labels: Any) -> LinExpr:
        """Select by label on a labelled expression, as linopy's / xarray's ``sel``:
        ``x.sel(plant="berlin")`` drops the dimension, ``x.sel(plant=["berlin", "milan"])`` keeps it
        (in that order) with those labels. Unknown dimensions or labels are a ModelError."""
        if self.coords is None:
            raise ModelError("sel() selects by label: this expression has none (label variables with coords=)")
        idx = np.arange(self.size, dtype=np.int64).reshape(self.shape)
        coords: list[Any] = []
        axis = 0
        for index in self.coords:
            if index.name not in labels:
                coords.append(index)
                axis += 1
                continue
            want = labels.pop(index.name)
            scalar = np.ndim(want) == 0 and not isinstance(want, (list, tuple))
            target = [want] if scalar else list(want)
            pos = index.get_indexer(target)
            if (pos < 0).any():
                raise ModelError(f"sel: dimension {index.name!r} has no label "
                                 f"{', '.join(repr(t) for t, p in zip(target, pos) if p < 0)}")
            if scalar:
                idx = np.take(idx, int(pos[0]), axis=axis)
            else:
                idx = np.take(idx, pos, axis=axis)
                coords.append(index[pos])
                axis += 1
        if labels:
            raise ModelError(f"sel: no dimension named {', '.join(map(repr, labels))} (the expression's "
                             f"dimensions: {', '.join(map(repr, self.dims or ()))})")
        return _labelled(self.select_rows(idx.ravel(), idx.shape), tuple(coords))

    def reshape(self, *shape: Any) -> LinExpr:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        try:
            new = np.empty(self.shape, dtype=np.int8).reshape(shape).shape
        except (TypeError, ValueError) as exc:
            raise ModelError(f"cannot reshape an expression of shape {self.shape} to {shape}: {exc}") from None
        return LinExpr(self.coef, self.const, new, self.model)

    def ravel(self) -> LinExpr:
        return LinExpr(self.coef, self.const, (self.size,), self.model)

    @property
    def T(self) -> LinExpr:
        return self.transpose()

    def transpose(self, *axes: Any) -> LinExpr:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = tuple(axes[0] or ())
        try:
            idx = np.arange(self.size, dtype=np.int64).reshape(self.shape).transpose(*(axes or ()))
        except (TypeError, ValueError) as exc:
            raise ModelError(f"cannot transpose an expression of shape {self.shape} by {axes}: {exc}") from None
        out = self.select_rows(idx.ravel(), idx.shape)
        if self.coords is not None:
            order = tuple(axes) if axes else tuple(range(self.ndim - 1, -1, -1))
            coords = self.coords
            out.coords = tuple(coords[a % self.ndim] for a in order)
        return out

    def broadcast_to(self, shape: tuple[int, ...]) -> LinExpr:
        target = tuple(shape)
        if target == self.shape:
            return self
        _check_size(target, "broadcasting an expression")
        try:
            rows = _broadcast_rows(self.shape, target)
        except ValueError:
            raise ModelError(f"cannot broadcast an expression of shape {self.shape} to {target}") from None
        return self.select_rows(rows, target)

    def sum(self, axis: Any = None) -> LinExpr:
        """Sum over ``axis`` (all axes when None), as NumPy's ``sum``.

        The terms of each output element are the concatenated terms of its inputs (one gather
        when the summed axes are not the trailing ones, none when they are); a variable met twice
        in one output keeps two entries, summed where the matrix is used. On a labelled
        expression ``axis`` may name dimensions: ``x.sum("market")``.
        """
        axis = _named_axes(self, axis)
        perm, group, out_shape = _grouping(self.shape, axis)
        coef = self.coef if perm is None else _take_rows(self.coef, perm)
        const = self.const if perm is None else self.const[perm]
        m = int(np.prod(out_shape, dtype=np.int64))
        if group == 0:
            return _labelled(LinExpr.constant(np.zeros(out_shape), self.ncols(), self.model),
                             _kept_coords(self.coords, self.shape, axis))
        indptr = coef.indptr[::group]
        out = sp.csr_matrix((coef.data, coef.indices, indptr), shape=(m, self.ncols()))
        return _labelled(LinExpr(out, const.reshape(m, group).sum(axis=1), out_shape, self.model),
                         _kept_coords(self.coords, self.shape, axis))

    # --- arithmetic ------------------------------------------------------------------------
    def __add__(self, other: Any) -> Expr:
        if isinstance(other, QuadExpr):
            return other + self
        if pandas_kind(other):
            return self._with_pandas(other, "addition", lambda arr: self + arr)
        return self._plus(other)

    def _plus(self, other: Any) -> LinExpr:
        """``self + other`` for a linear or constant ``other``."""
        rhs = self._coerce(other)
        if rhs.coords is not None and self.coords is not None:
            rhs = _align_expr(self, rhs)
        shape = _broadcast_shape(self.shape, rhs.shape)
        a, b = self.broadcast_to(shape), rhs.broadcast_to(shape)
        n = max(a.coef.shape[1], b.coef.shape[1])
        if b.coef.nnz == 0:      # adding a constant: the terms stay as they are
            coef = widen(a.coef, n)
        elif a.coef.nnz == 0:
            coef = widen(b.coef, n)
        else:
            coef = widen(a.coef, n) + widen(b.coef, n)
        out = LinExpr(coef, a.const + b.const, shape, self.model or rhs.model)
        if self.coords is not None or rhs.coords is not None:
            out.coords = _result_coords(shape, self, rhs)
        return out

    def __mul__(self, other: Any) -> Expr:
        if isinstance(other, LinExpr):
            return QuadExpr.product(self, other)
        if isinstance(other, QuadExpr):
            raise ModelError("products of degree higher than 2 are not supported")
        if pandas_kind(other):
            return self._with_pandas(other, "multiplication", lambda arr: self * arr)
        return self._times(as_const(other, "multiplication"))

    def _times(self, factor: FloatArray) -> LinExpr:
        """``self * factor`` for a constant array ``factor`` (as_const's output)."""
        shape = _broadcast_shape(self.shape, factor.shape)
        a = self.broadcast_to(shape)
        f = np.broadcast_to(factor, shape).ravel()
        out = LinExpr(_scale_rows(a.coef, f), a.const * f, shape, self.model)
        if self.coords is not None and shape == self.shape:
            out.coords = self.coords
        return out

    def __pow__(self, power: Any) -> Expr:
        if power == 1:
            return self
        if power == 2:
            return QuadExpr.product(self, self)
        raise ModelError(f"only powers 1 and 2 are supported, got {power!r}")

    def __matmul__(self, other: Any) -> Expr:
        """``expr @ other`` with NumPy's matmul rules for 1-D and 2-D operands."""
        if isinstance(other, _Operand):
            raise ModelError("the product of two expressions with @ is not supported; use (x * y).sum()")
        if pandas_kind(other):
            return self._matmul_pandas(other)
        mat: Any = other if sp.issparse(other) else as_const(other, "matmul")
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
            return self.left_multiply(left)
        if self.ndim == 2:           # X @ M = (M^T @ X^T)^T
            return _matrix_times_2d(mat.T, self.T).T
        raise ModelError(f"expr @ array supports 1-D and 2-D expressions, got shape {self.shape}")

    def __rmatmul__(self, other: Any) -> Expr:
        """``other @ expr`` with NumPy's matmul rules for 1-D and 2-D operands."""
        kind = pandas_kind(other)
        if kind == "series":          # s @ x == x @ s;  s @ X == X.T @ s
            return (self if self.ndim == 1 else self.T)._matmul_pandas(other)
        if kind == "frame":           # F @ x == x @ F.T;  F @ X == (X.T @ F.T).T
            return self._matmul_pandas(other.T) if self.ndim == 1 else self.T._matmul_pandas(other.T).T
        mat: Any = other if sp.issparse(other) else as_const(other, "matmul")
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
            return self.left_multiply(mat)
        if self.ndim == 2:
            return _matrix_times_2d(mat, self)
        raise ModelError(f"array @ expr supports 1-D and 2-D expressions, got shape {self.shape}")

    def _matmul_pandas(self, other: Any) -> LinExpr:
        """``self @ series`` / ``self @ frame``: the Series' (frame's) index aligned to the last dimension."""
        if self.ndim not in (1, 2):
            raise ModelError(f"expr @ Series/DataFrame needs a 1-D or 2-D expression, got shape {self.shape}")
        pd = sys.modules["pandas"]
        labels = _labels(self.shape, self.coords, self.ndim - 1)
        what = f"matmul with a {type(other).__name__}"
        vals = as_const(other.to_numpy(), what)
        rows = _indexer(other.index, labels, what, _dim_text(self.coords, self.ndim - 1))
        if rows is not None:
            vals = vals[rows]
        out = self @ vals
        assert isinstance(out, LinExpr)  # a linear expression times constants
        kept = () if self.ndim == 1 else (_labels(self.shape, self.coords, 0),)
        if isinstance(other, pd.DataFrame):
            return _labelled(out, kept + (other.columns,))
        return _labelled(out, kept if self.coords is not None else ())

    # --- values ----------------------------------------------------------------------------
    def evaluate(self, x: FloatArray) -> FloatArray:
        """The expression's values at the full variable vector ``x``."""
        values: FloatArray = (widen(self.coef, len(x)) @ x + self.const).reshape(self.shape)
        return values

    @property
    def value(self) -> FloatArray | None:
        x = None if self.model is None else self.model.solution_vector
        if x is None or len(x) < self.ncols():  # none yet, or uses variables added after the solve
            return None
        return self.evaluate(x)

    def left_multiply(self, mat: Any) -> LinExpr:
        """``mat @ self`` for a 1-D expression: a sparse/dense matrix product on the rows of coef.

        When each row of the expression is a single variable (a variable array, or a selection of
        one), the product is ``mat`` itself with its column indices mapped to those variables: no
        sparse matrix product.
        """
        if self.ndim != 1 or mat.shape[1] != self.size:
            raise ModelError(f"matmul shapes do not match: matrix {mat.shape} @ expression {self.shape}")
        left = mat.tocsr() if sp.issparse(mat) else sp.csr_matrix(mat)
        ncols = self.ncols()
        if self._block_start is not None:
            indices = left.indices.astype(np.int64 if ncols > np.iinfo(np.int32).max else np.int32)
            indices += self._block_start
            coef = sp.csr_matrix((left.data.copy(), indices, left.indptr.copy()), shape=(left.shape[0], ncols))
        elif _unit_rows(self.coef):
            coef = sp.csr_matrix((left.data * self.coef.data[left.indices], self.coef.indices[left.indices],
                                  left.indptr.copy()), shape=(left.shape[0], ncols))
        else:
            coef = (left @ self.coef).tocsr()
        if self._block_start is not None or not self.const.any():
            const = np.zeros(left.shape[0])
        else:
            const = np.asarray(left @ self.const).ravel()
        return LinExpr(coef, const, (mat.shape[0],), self.model)

    def __repr__(self) -> str:
        return f"LinExpr(shape={self.shape}, nnz={self.coef.nnz})"


def _matrix_times_2d(mat: Any, expr: LinExpr) -> LinExpr:
    """``mat @ X`` for a 2-D expression X (p, q): one block-diagonal product on X's columns."""
    p, q = expr.shape
    if mat.shape[1] != p:
        raise ModelError(f"matmul shapes do not match: matrix {mat.shape} @ expression {expr.shape}")
    left = mat.tocsr() if sp.issparse(mat) else sp.csr_matrix(mat)
    blocks = sp.kron(sp.identity(q, format="csr"), left, format="csr")   # column j of X -> rows j*m ..
    cols = expr.T.ravel().left_multiply(blocks)
    return cols.reshape(q, mat.shape[0]).T


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ModelError(f"shapes {a} and {b} do not broadcast") from None


def _same_model(a: _Operand, b: _Operand) -> None:
    if a.model is not None and b.model is not None and a.model is not b.model:
        raise ModelError("cannot combine expressions of two different models")


class QuadExpr(_Operand):
    """An array of quadratic expressions: per element, sum of q * x_i * x_j plus a LinExpr."""

    def __init__(self, elem: npt.ArrayLike, vi: npt.ArrayLike, vj: npt.ArrayLike, q: npt.ArrayLike, lin: LinExpr):
        self.elem = np.asarray(elem, dtype=np.int64)
        self.vi = np.asarray(vi, dtype=np.int64)
        self.vj = np.asarray(vj, dtype=np.int64)
        self.q = np.asarray(q, dtype=float)
        self.lin = lin
        self.shape = lin.shape
        self.model = lin.model

    @property
    def coords(self) -> Coords:
        return self.lin.coords

    @coords.setter
    def coords(self, value: Coords) -> None:
        self.lin.coords = value

    @classmethod
    def product(cls, a: LinExpr, b: LinExpr) -> QuadExpr:
        """Elementwise (a * b) of two affine arrays, expanded into quadratic + linear terms."""
        _same_model(a, b)
        if a.coords is not None and b.coords is not None:
            b = _align_expr(a, b)
        coords = _result_coords(_broadcast_shape(a.shape, b.shape), a, b)
        shape = _broadcast_shape(a.shape, b.shape)
        a, b = a.broadcast_to(shape), b.broadcast_to(shape)
        n = max(a.ncols(), b.ncols())
        A, B = widen(a.coef, n).tocsr(), widen(b.coef, n).tocsr()
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
        lin.coords = coords
        return cls(elem, A.indices[ia], B.indices[ib], A.data[ia] * B.data[ib], lin)

    def sum(self, axis: Any = None) -> QuadExpr:
        axis = _named_axes(self, axis)
        target, _ = _sum_targets(self.shape, axis)
        return QuadExpr(target[self.elem], self.vi, self.vj, self.q, self.lin.sum(axis))

    def __add__(self, other: Any) -> Expr:
        if pandas_kind(other):
            return self._with_pandas(other, "addition", lambda arr: self + arr)
        if isinstance(other, QuadExpr):
            _same_model(self, other)
            rhs = _align_expr(self, other) if self.coords is not None and other.coords is not None else other
            shape = _broadcast_shape(self.shape, rhs.shape)
            a, b = self.broadcast_to(shape), rhs.broadcast_to(shape)
            return QuadExpr(np.concatenate([a.elem, b.elem]), np.concatenate([a.vi, b.vi]),
                            np.concatenate([a.vj, b.vj]), np.concatenate([a.q, b.q]), a.lin._plus(b.lin))
        lin = self.lin._plus(other)
        q = self.broadcast_to(lin.shape)
        return QuadExpr(q.elem, q.vi, q.vj, q.q, lin)

    def __mul__(self, other: Any) -> Expr:
        if isinstance(other, _Operand):
            raise ModelError("products of degree higher than 2 are not supported")
        if pandas_kind(other):
            return self._with_pandas(other, "multiplication", lambda arr: self * arr)
        factor = as_const(other, "multiplication")
        if factor.ndim == 0:
            return QuadExpr(self.elem, self.vi, self.vj, self.q * float(factor), self.lin._times(factor))
        shape = _broadcast_shape(self.shape, factor.shape)
        q = self.broadcast_to(shape)
        f = np.broadcast_to(factor, shape).ravel()
        return QuadExpr(q.elem, q.vi, q.vj, q.q * f[q.elem], q.lin._times(factor))

    def broadcast_to(self, shape: tuple[int, ...]) -> QuadExpr:
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

    def __getitem__(self, key: Any) -> NoReturn:
        raise ModelError("indexing a quadratic expression is not supported; index the linear factors first")

    def __matmul__(self, other: Any) -> NoReturn:
        raise ModelError("@ with a quadratic expression is not supported; use (q * w).sum(axis) instead")

    __rmatmul__ = __matmul__

    def evaluate(self, x: FloatArray) -> FloatArray:
        out = self.lin.evaluate(x).ravel().copy()
        np.add.at(out, self.elem, self.q * x[self.vi] * x[self.vj])
        values: FloatArray = out.reshape(self.shape)
        return values

    @property
    def value(self) -> FloatArray | None:
        if self.model is None or self.model.solution_vector is None:
            return None
        return self.evaluate(self.model.solution_vector)

    def __repr__(self) -> str:
        return f"QuadExpr(shape={self.shape}, quadratic terms={len(self.q)})"


Expr: TypeAlias = "LinExpr | QuadExpr"   # an expression array, linear or quadratic
_E = TypeVar("_E", bound=_Operand)


@dataclass
class Constraint:
    """``body sense 0`` elementwise, with ``body`` = lhs - rhs (linear or quadratic)."""

    body: LinExpr | QuadExpr
    sense: str
    name: str | None = None
    model: Model | None = None
    rows: IndexArray | None = None    # row indices in the compiled standard form (linear ones)
    dual_values: FloatArray | None = None

    @classmethod
    def build(cls, lhs: Any, rhs: Any, sense: str) -> Constraint:
        if not isinstance(rhs, _Operand) and not pandas_kind(rhs):
            rhs = as_const(rhs, f"right-hand side of {sense}")
        body = lhs - rhs
        if not isinstance(body, (LinExpr, QuadExpr)):
            raise ModelError("a constraint needs at least one expression side")
        return cls(body=body, sense=sense)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.body.shape

    @property
    def is_quadratic(self) -> bool:
        return isinstance(self.body, QuadExpr)

    @property
    def coords(self) -> Coords:
        """The labels of the constraint's elements (its body's), or None."""
        return self.body.coords

    def to_pandas(self) -> Any:
        """The duals as a labelled pandas object (as :meth:`LinExpr.to_pandas`), or None."""
        dual = self.dual
        return None if dual is None else labelled_values(dual, self.coords, self.name)

    @property
    def dual(self) -> FloatArray | None:
        """Dual values (LP solves), shaped like the constraint."""
        return None if self.dual_values is None else self.dual_values.reshape(self.shape)

    def __bool__(self) -> NoReturn:
        raise ExpressionUseError("a constraint has no truth value (NumPy object arrays of expressions compare "
                           "element by element and need one); add it to a model with model.add(...)")


# --- labels and pandas operands -------------------------------------------------------------------
def pandas_kind(value: object) -> str | None:
    """"series" / "frame" for a pandas Series / DataFrame, else None (never imports pandas)."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(value, pd.Series):
        return "series"
    if isinstance(value, pd.DataFrame):
        return "frame"
    return None


def _labelled(expr: _E, coords: Coords) -> _E:
    """``expr`` carrying ``coords`` (dropped when they do not fit its shape)."""
    if coords is not None and len(coords) == len(expr.shape) and len(coords) > 0 and \
            all(len(c) == s for c, s in zip(coords, expr.shape)):
        expr.coords = tuple(coords)
    return expr


def _labels(shape: tuple[int, ...], coords: Coords, k: int) -> Any:
    """The labels of dimension ``k``: the expression's, or positions 0 .. n-1 when it has none."""
    if coords is not None:
        return coords[k]
    return sys.modules["pandas"].RangeIndex(shape[k])


def _dim_text(coords: Coords, k: int) -> str:
    name = None if coords is None else coords[k].name
    return f"dimension {name!r}" if name is not None else f"dimension {k}" + ("" if coords is not None else
                                                                             " (unlabelled: positions 0, 1, ...)")


def _named_axes(expr: _Operand, axis: Any) -> Any:
    """``axis`` with dimension names (str) replaced by their positions."""
    names = [axis] if isinstance(axis, str) else list(axis) if isinstance(axis, (tuple, list)) else None
    if names is None or not any(isinstance(a, str) for a in names):
        return axis
    dims = expr.dims
    out = []
    for a in names:
        if isinstance(a, str):
            if dims is None or a not in dims:
                raise ModelError(f"no dimension named {a!r} (the expression's dimensions: "
                                 f"{', '.join(map(repr, dims)) if dims else 'unnamed'})")
            a = dims.index(a)
        out.append(a)
    return out[0] if isinstance(axis, str) else tuple(out)


def _kept_coords(coords: Coords, shape: tuple[int, ...], axis: Any) -> Coords:
    """The labels left after a sum over ``axis``."""
    if coords is None:
        return None
    axes = _sum_axes(shape, axis)
    return tuple(c for d, c in enumerate(coords) if d not in axes)


def _result_coords(shape: tuple[int, ...], a: _Operand, b: _Operand) -> Coords:
    """The labels of ``a OP b`` of broadcast ``shape``: those of the operand that has that shape."""
    for e in (a, b):
        if e.coords is not None and e.shape == shape:
            return e.coords
    return None


def _show(labels: Any) -> str:
    items = list(labels[:5])
    return "[" + ", ".join(repr(v) for v in items) + (", ..." if len(labels) > 5 else "") + "]"


def _indexer(source: Any, target: Any, what: str, where: str) -> IndexArray | None:
    """Positions in the index ``source`` of every label of ``target`` (None: they are in order).

    Both must hold the same labels, once each: anything else is one ModelError naming ``what``
    and the labels missing on either side.
    """
    if source is target or source.equals(target):
        return None
    if not source.is_unique:
        raise ModelError(f"{what}: its labels repeat ({_show(source[source.duplicated()].unique())}); "
                         f"labels must be unique to line up with {where}")
    rows: IndexArray = source.get_indexer(target)
    missing = rows < 0
    if len(source) == len(target) and not missing.any():
        return rows
    extra = source[~source.isin(target)]
    parts = []
    if missing.any():
        parts.append(f"{int(missing.sum())} labels of the expression are not in it: {_show(target[missing])}")
    if len(extra):
        parts.append(f"{len(extra)} of its labels are not the expression's: {_show(extra)}")
    raise ModelError(f"{what}: labels do not line up with {where}: " + "; ".join(parts) +
                     " (select or reindex it first, e.g. .reindex(labels, fill_value=0), or give the variable "
                     "these labels with coords=)")


def _series_axis(index: Any, shape: tuple[int, ...], coords: Coords) -> int:
    """The dimension a Series lines up with: the one named like its index, else the only one
    holding its labels, else the last (NumPy's broadcasting rule); when none holds them, the one
    sharing the most labels (so that the error names the labels that differ there)."""
    nd = len(shape)
    if nd == 1:
        return 0
    names = [None] * nd if coords is None else [c.name for c in coords]
    if index.name is not None and names.count(index.name) == 1:
        return names.index(index.name)
    shared = [int(_labels(shape, coords, k).isin(index).sum()) for k in range(nd)]
    matches = [k for k in range(nd) if shape[k] == len(index) and shared[k] == shape[k]]
    if len(matches) == 1:
        return matches[0]
    if not matches and max(shared) > 0:    # none fits: the closest, for the error message
        return max(k for k in range(nd) if shared[k] == max(shared))
    return nd - 1


def align_pandas(shape: tuple[int, ...], coords: Coords, value: Any, what: str,
                 allow_inf: bool = False) -> tuple[FloatArray, Coords]:
    """A pandas Series / DataFrame as a float array lined up with an expression of ``shape`` and
    labels ``coords`` (None: positions 0, 1, ...), and the labels of the result.

    - a Series lines up with one dimension (see :func:`_series_axis`) and broadcasts along the
      others; a Series with a MultiIndex of one level per dimension fills the whole shape;
    - a DataFrame lines up with a 2-D expression: rows with the first dimension, columns with the
      second (swapped when its index and columns are named like the dimensions the other way);
    - against a scalar expression either keeps its own shape and gives the result its labels.
    Labels are matched by value (reordered as needed); different label sets are a ModelError.
    ``allow_inf`` keeps infinite values (bounds); NaN is left for the caller to refuse then.
    """
    pd = sys.modules["pandas"]
    nd = len(shape)
    what = f"{what} with a pandas {type(value).__name__}"
    if allow_inf:
        raw = value.to_numpy()
        finite = np.isfinite(raw) if raw.dtype.kind == "f" else True
        vals = np.where(finite, as_const(np.where(finite, raw, 0.0) if raw.dtype.kind == "f" else raw, what), raw)
    else:
        vals = as_const(value.to_numpy(), what)
    if isinstance(value, pd.DataFrame):
        if nd == 0:
            return vals, (value.index, value.columns)
        if nd != 2:
            raise ModelError(f"{what}: a DataFrame lines up with a 2-D expression (rows with its first "
                             f"dimension, columns with its second); this expression has shape {shape}")
        axes = (value.index, value.columns)
        names = [None, None] if coords is None else [c.name for c in coords]
        if (names[0] != names[1] and value.index.name is not None and value.index.name == names[1]
                and value.columns.name == names[0]):
            vals, axes = vals.T, (value.columns, value.index)
        rows = _indexer(axes[0], _labels(shape, coords, 0), f"{what} (its rows)", _dim_text(coords, 0))
        cols = _indexer(axes[1], _labels(shape, coords, 1), f"{what} (its columns)", _dim_text(coords, 1))
        if rows is not None:
            vals = vals[rows]
        if cols is not None:
            vals = vals[:, cols]
        return vals, coords
    index = value.index
    if nd == 0:
        return vals, (index,)
    if isinstance(index, pd.MultiIndex):
        if index.nlevels != nd:
            raise ModelError(f"{what}: its MultiIndex has {index.nlevels} levels and the expression "
                             f"{nd} dimensions")
        names = [None] * nd if coords is None else [c.name for c in coords]
        if None not in names and list(index.names) != names and sorted(map(str, index.names)) == \
                sorted(map(str, names)):
            index = index.reorder_levels(names)
        target = pd.MultiIndex.from_product([_labels(shape, coords, k) for k in range(nd)])
        rows = _indexer(index, target, what, "the expression's label combinations")
        return (vals if rows is None else vals[rows]).reshape(shape), coords
    axis = _series_axis(index, shape, coords)
    rows = _indexer(index, _labels(shape, coords, axis), what, _dim_text(coords, axis))
    if rows is not None:
        vals = vals[rows]
    return vals.reshape([shape[k] if k == axis else 1 for k in range(nd)]), coords


@overload
def _align_expr(ref: _Operand, other: LinExpr) -> LinExpr: ...
@overload
def _align_expr(ref: _Operand, other: QuadExpr) -> QuadExpr: ...
def _align_expr(ref: _Operand, other: Expr) -> Expr:
    """``other`` with its labelled dimensions reordered to ``ref``'s labels (trailing dimensions
    matched, as NumPy broadcasts; dimensions of length 1 broadcast). Different labels: ModelError."""
    ref_coords, other_coords = ref.coords, other.coords
    if ref_coords is None or other_coords is None:     # nothing to line up
        return other
    nd = min(ref.ndim, other.ndim)
    idx, new = None, list(other_coords)
    for k in range(1, nd + 1):
        a, b = ref_coords[-k], other_coords[-k]
        if a is b or len(a) == 1 or len(b) == 1:
            continue
        rows = _indexer(b, a, "combining two labelled expressions", _dim_text(ref_coords, ref.ndim - k))
        if rows is None:
            continue
        if idx is None:
            idx = np.arange(other.size, dtype=np.int64).reshape(other.shape)
        idx = np.take(idx, rows, axis=other.ndim - k)
        new[-k] = a
    if idx is None:
        return other
    order = idx.ravel()
    out: Expr
    if isinstance(other, QuadExpr):
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order), dtype=np.int64)
        out = QuadExpr(inverse[other.elem], other.vi, other.vj, other.q, other.lin.select_rows(order, other.shape))
    else:
        out = other.select_rows(order, other.shape)
    out.coords = tuple(new)
    return out


def labelled_values(data: npt.ArrayLike, coords: Coords, name: Any = None) -> Any:
    """``data`` (an array) as a labelled pandas object: a Series for one dimension, a DataFrame
    for two, a Series with a MultiIndex beyond; a float for a scalar. Needs pandas."""
    values = np.asarray(data)
    if values.ndim == 0:
        return float(values)
    from .arrays import require_pandas
    pd = require_pandas("labelled values (to_pandas, .solution)")
    shape = values.shape
    labels = [_labels(shape, coords, k) for k in range(len(shape))]
    if len(shape) == 1:
        return pd.Series(values, index=labels[0], name=name)
    if len(shape) == 2:
        frame = pd.DataFrame(values, index=labels[0], columns=labels[1])
        return frame
    return pd.Series(values.ravel(), index=pd.MultiIndex.from_product(labels), name=name)


# --- NumPy functions on expressions (``__array_function__``) ------------------------------------
def _np_sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
            **unsupported: Any) -> Expr:
    if dtype is not None or out is not None or keepdims or unsupported:
        raise ModelError("numpy.sum on an expression takes only `axis` (no dtype, out, keepdims, initial, where)")
    if not isinstance(a, _Operand):
        raise ModelError("numpy.sum: the summed operand must be the expression")
    return a.sum(axis=axis)


def _np_dot(a: Any, b: Any, out: Any = None) -> Any:
    if out is not None:
        raise ModelError("numpy.dot on an expression does not take `out`")
    nd_a, nd_b = np.ndim(a) if not isinstance(a, _Operand) else a.ndim, \
        np.ndim(b) if not isinstance(b, _Operand) else b.ndim
    if nd_a == 0 or nd_b == 0:
        return a * b
    if nd_a > 2 or nd_b > 2:
        raise ModelError("numpy.dot on expressions supports 1-D and 2-D operands; use @ or .sum(axis)")
    return a @ b


def _linear(a: object, what: str) -> LinExpr:
    if not isinstance(a, LinExpr):
        raise ModelError(f"numpy.{what} takes a linear expression here; quadratic ones support +, -, * and .sum()")
    return a


def _np_transpose(a: Any, axes: Any = None) -> LinExpr:
    return _linear(a, "transpose").transpose(axes)


def _np_reshape(a: Any, shape: Any = None, order: str = "C", **kwargs: Any) -> LinExpr:
    if order != "C":
        raise ModelError("expressions reshape in C order only")
    shape = kwargs.pop("newshape", shape)
    return _linear(a, "reshape").reshape(shape)


def _np_ravel(a: Any, order: str = "C") -> LinExpr:
    if order != "C":
        raise ModelError("expressions ravel in C order only")
    return _linear(a, "ravel").ravel()


def _np_broadcast_to(a: Any, shape: Any, subok: bool = False) -> LinExpr:
    return _linear(a, "broadcast_to").broadcast_to(shape if isinstance(shape, tuple) else (shape,))


_ARRAY_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _np_sum, np.dot: _np_dot, np.transpose: _np_transpose, np.reshape: _np_reshape,
    np.ravel: _np_ravel, np.broadcast_to: _np_broadcast_to,
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim, np.size: lambda a, axis=None: (
        a.size if axis is None else a.shape[axis]),
}
