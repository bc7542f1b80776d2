"""Optimal-transport instances as NumPy ``.npz``: two weighted point sets.

Arrays: ``x`` (n, d) source points, ``y`` (m, d) target points, optional ``a`` (n,) and ``b``
(m,) nonnegative masses (uniform 1/n and 1/m when absent) with equal totals.
"""
from __future__ import annotations

import zipfile

import numpy as np

from ..core.errors import InstanceFormatError
from .base import Instance, Reader, instance_name, register_reader

KNOWN_ARRAYS = ("x", "y", "a", "b")
MASS_RTOL = 1e-9


def _real_array(path: str, name: str, value: np.ndarray, ndim: int) -> np.ndarray:
    if value.ndim != ndim:
        raise InstanceFormatError(path, None, f"array {name!r} must be {ndim}-D, got shape {value.shape}")
    if not np.issubdtype(value.dtype, np.number) or np.issubdtype(value.dtype, np.complexfloating):
        raise InstanceFormatError(path, None, f"array {name!r} must be real numbers, got dtype {value.dtype}")
    value = value.astype(np.float64)
    if not np.all(np.isfinite(value)):
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
        raise InstanceFormatError(path, None, f"array {name!r} has a non-finite entry at {where}")
    return value


def _weights(path: str, name: str, arrays, count: int) -> np.ndarray:
    if name not in arrays:
        return np.full(count, 1.0 / count)
    w = _real_array(path, name, arrays[name], 1)
    if w.shape[0] != count:
        owner = "x" if name == "a" else "y"
        raise InstanceFormatError(path, None, f"array {name!r} has {w.shape[0]} entries but {owner!r} has {count} points")
    if np.any(w < 0):
        raise InstanceFormatError(path, None, f"array {name!r} has a negative weight at index {int(np.argmin(w))}")
    return w


def read_transport_npz(path: str) -> Instance:
    """Read ``x``, ``y`` (and ``a``, ``b``); data = {"x", "y", "a", "b"} as float64 arrays."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise InstanceFormatError(path, None, f"not a readable .npz archive ({exc})") from None
    unknown = sorted(set(arrays) - set(KNOWN_ARRAYS))
    if unknown:
        raise InstanceFormatError(path, None, f"unknown array(s) {', '.join(unknown)}; expected {', '.join(KNOWN_ARRAYS)}")
    for name in ("x", "y"):
        if name not in arrays:
            raise InstanceFormatError(path, None, f"missing array {name!r} (points, shape (count, dimension))")
    x = _real_array(path, "x", arrays["x"], 2)
    y = _real_array(path, "y", arrays["y"], 2)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise InstanceFormatError(path, None, f"'x' and 'y' need at least one point, got {x.shape} and {y.shape}")
    if x.shape[1] != y.shape[1]:
        raise InstanceFormatError(path, None, f"'x' and 'y' must have the same dimension, got {x.shape[1]} and {y.shape[1]}")
    a = _weights(path, "a", arrays, x.shape[0])
    b = _weights(path, "b", arrays, y.shape[0])
    total_a, total_b = float(a.sum()), float(b.sum())
    if total_a <= 0 or total_b <= 0:
        raise InstanceFormatError(path, None, "the weights 'a' and 'b' must have a positive total mass")
    if abs(total_a - total_b) > MASS_RTOL * max(total_a, total_b):
        raise InstanceFormatError(path, None, f"arrays 'a' and 'b' must have equal total mass, got {total_a!r} and {total_b!r}")
    meta = {"sources": int(x.shape[0]), "targets": int(y.shape[0]), "dimension": int(x.shape[1]), "mass": total_a}
    return Instance(family="transport", format="transport_npz", name=instance_name(path), path=path,
                    data={"x": x, "y": y, "a": a, "b": b}, meta=meta)


TRANSPORT_NPZ_READER = register_reader(Reader(
    format="transport_npz", family="transport", extensions=(".npz",), read=read_transport_npz,
    description="optimal transport: point sets x, y with weights a, b (.npz)"))
