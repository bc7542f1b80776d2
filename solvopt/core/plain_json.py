"""numpy / scipy / enums / dataclasses as plain JSON values.

The one conversion behind ``Result.to_json``, ``--json`` and the files ``--out`` writes: arrays
become lists, sparse matrices COO dicts, and inf / -inf / nan the strings ``"inf"``, ``"-inf"``,
``"nan"`` (JSON has no such numbers).
"""
from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

import numpy as np

_NONFINITE = {math.inf: "inf", -math.inf: "-inf"}


def plain(obj: Any) -> Any:
    """``obj`` as plain JSON values: lists for arrays, COO dicts for sparse, strings for inf/nan."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return plain(obj.value)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return plain_float(float(obj))
    if isinstance(obj, (complex, np.complexfloating)):
        return {"real": plain_float(float(obj.real)), "imag": plain_float(float(obj.imag))}
    if isinstance(obj, np.ndarray):
        return plain_array(obj)
    if hasattr(obj, "tocoo") and hasattr(obj, "shape"):  # scipy.sparse
        coo = obj.tocoo()
        return {"row": coo.row.tolist(), "col": coo.col.tolist(), "data": plain_array(np.asarray(coo.data)),
                "shape": [int(s) for s in coo.shape]}
    if isinstance(obj, dict):
        return {str(plain(k)) if not isinstance(k, str) else k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if callable(obj):
        return getattr(obj, "__name__", type(obj).__name__)
    raise TypeError(f"cannot write a {type(obj).__name__} as JSON")


def plain_float(x: float) -> float | str:
    """A float for JSON: inf / -inf / nan as strings, no negative zero."""
    if math.isnan(x):
        return "nan"
    return _NONFINITE.get(x, x + 0.0)  # + 0.0: no "-0.0" in the file


def plain_array(a: np.ndarray) -> Any:
    """An array as nested lists, non-finite values as strings."""
    if a.dtype.kind == "f":
        a = a + 0.0  # no "-0.0" in the file
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        return plain(a.tolist()) if a.ndim else plain_float(float(a))
    if a.dtype.kind == "c":
        return plain(a.tolist())
    if a.dtype.kind == "O":
        return plain(a.tolist())
    return a.tolist()  # nested lists of Python ints / floats / bools / strings
