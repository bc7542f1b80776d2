"""Checked conversion of user data to float64 arrays: one rule and one wording for every model."""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

FloatArray = npt.NDArray[np.float64]  # what the models hold their data as

_KINDS = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "bytes", "O": "Python objects"}


def float_array(value: Any, name: str) -> npt.NDArray[np.float64]:
    """``value`` as a float64 array, its values unchecked; a ModelError naming ``name`` unless it holds
    real numbers.

    Ragged data, booleans, complex numbers (never cut to their real part), text and objects are
    refused. Float64 input comes back without a copy, so a broadcast view keeps its size; callers
    check the values their model allows (e.g. +inf for a forbidden transition).
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{name} must be a numeric array (rows of equal length)") from None
    if raw.dtype.kind not in "iuf":
        raise ModelError(f"{name} must be real numbers, got {_KINDS.get(raw.dtype.kind, f'dtype {raw.dtype}')}")
    return raw.astype(np.float64, copy=False)


def real_array(value: Any, name: str, shape: tuple[int | None, ...] | None = None, *,
               allow_inf: bool = False) -> npt.NDArray[np.float64]:
    """``value`` as a new float64 array (the rule of :func:`float_array`), or a ModelError naming
    ``name`` and what is wrong.

    Also refuses a shape other than ``shape`` (None entries are free) and NaN anywhere; inf too
    unless ``allow_inf`` (e.g. open bounds). The message points at the first offending entry.
    """
    arr = np.array(float_array(value, name), dtype=np.float64, order="C")
    if shape is not None and (arr.ndim != len(shape)
                              or any(s is not None and s != t for s, t in zip(shape, arr.shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ModelError(f"{name} must have shape {want}, got {arr.shape}")
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        if allow_inf:
            raise ModelError(f"{name} has a NaN entry at {where}")
        value = "NaN" if np.isnan(arr[where]) else f"{arr[where]:g}"
        raise ModelError(f"{name} has a non-finite entry at {where}: {value}")
    return arr



def require_pandas(what: str) -> Any:
    """The ``pandas`` module, or a BackendUnavailable naming ``what`` and the extra to install."""
    from solvopt.core.result import require_pandas as _require
    return _require(what)
