"""Optimal-transport instances as NumPy ``.npz``: two weighted point sets, or a matrix.

Arrays: ``x`` (n, d) source points and ``y`` (m, d) target points; or ``distance`` (n, m)
distances (raised to p); or ``cost`` (n, m) a ready cost, as POT's ``M`` (not raised to p:
W_p = (min <P, cost>)^(1/p), finite p only); optional ``a`` (n,) and ``b`` (m,) nonnegative masses (uniform when absent)
with equal totals. The data are checked by the model's own validation
(:mod:`solvopt.dsl.transport`), so a file and a model refuse the same things with the same
words; a refusal here names the file (:class:`InstanceFormatError`). The archive is read by
:func:`solvopt.io.npz.load_npz`, which checks every member's header (a real dtype, a shape that
matches the bytes held and fits in memory) before allocating it.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl.transport import Transport
from solvopt.io.base import Instance, Reader, instance_name, register_reader
from solvopt.io.npz import load_npz

KNOWN_ARRAYS = ("x", "y", "a", "b", "cost", "distance")


def _load(path: str) -> dict[str, np.ndarray]:
    """The archive's arrays; each header (dtype, shape) is checked before its data is allocated."""
    return load_npz(path)


def read_transport_npz(path: str) -> Instance:
    """Read ``x``, ``y`` (or ``distance``, or ``cost``) and ``a``, ``b``; data = {"x", "y", "distance",
    "cost", "a", "b"} (float64; the matrices None for points, ``x`` and ``y`` None for a matrix; a
    and b filled in when absent)."""
    arrays = _load(path)
    unknown = sorted(set(arrays) - set(KNOWN_ARRAYS))
    if unknown:
        raise InstanceFormatError(path, None,
                                  f"unknown array(s) {', '.join(unknown)}; expected {', '.join(KNOWN_ARRAYS)}")
    if "cost" not in arrays and "distance" not in arrays:
        for name in ("x", "y"):
            if name not in arrays:
                raise InstanceFormatError(path, None, f"missing array {name!r} (points, shape (count, dimension)) "
                                                      "or 'distance' (an (n, m) distance matrix) or 'cost' "
                                                      "(an (n, m) ready cost, not raised to p)")
            if arrays[name].ndim != 2:  # the file format is strict (the model also reads 1-D as the line)
                raise InstanceFormatError(path, None, f"array {name!r} must be 2-D (count, dimension), "
                                                      f"got shape {arrays[name].shape}")
    try:
        model = Transport(**{k: arrays.get(k) for k in KNOWN_ARRAYS}, p=1)   # p = 1: a ready cost as is
    except ModelError as exc:
        raise InstanceFormatError(path, None, str(exc)) from None
    if model.cost is None:
        meta = {"sources": model.n, "targets": model.m, "dimension": model.dimension, "mass": model.mass}
    else:
        meta = {"sources": model.n, "targets": model.m, "cost_matrix": True, "mass": model.mass}
    data = {"x": model.x, "y": model.y, "cost": model.ready_cost,
            "distance": model.cost if model.ready_cost is None else None, "a": model.a, "b": model.b}
    return Instance(family="transport", format="transport_npz", name=instance_name(path), path=path,
                    data=data, meta=meta)


TRANSPORT_NPZ_READER = register_reader(Reader(
    format="transport_npz", family="transport", extensions=(".npz",), read=read_transport_npz,
    description="optimal transport: point sets x, y (or a cost matrix) with weights a, b (.npz)"))
