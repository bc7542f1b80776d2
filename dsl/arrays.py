"""Checked conversion of user data to float64 arrays: one rule and one wording for every model."""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError


def real_array(value, name: str, shape: tuple | None = None, *, allow_inf: bool = False) -> np.ndarray:
    """``value`` as a new float64 array, or a ModelError naming ``name`` and what is wrong.

    Refuses ragged or non-numeric data (text, objects, complex), a shape other than ``shape``
    (None entries are free) and NaN anywhere; inf too unless ``allow_inf`` (e.g. open bounds).
    The message points at the first offending entry.
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ModelError(f"{name} must be a numeric array (rows of equal length)") from None
    if raw.dtype.kind not in "biuf":
        raise ModelError(f"{name} must be real numbers, got dtype {raw.dtype}")
    arr = np.array(raw, dtype=np.float64, order="C")
    if shape is not None and (arr.ndim != len(shape)
                              or any(s is not None and s != t for s, t in zip(shape, arr.shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ModelError(f"{name} must have shape {want}, got {arr.shape}")
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ModelError(f"{name} has a {'NaN' if allow_inf else 'non-finite'} entry at {where}")
    return arr



def require_pandas(what: str):
    """The ``pandas`` module, or a BackendUnavailable naming ``what`` and the extra to install."""
    from solvopt.core.result import require_pandas as _require
    return _require(what)
