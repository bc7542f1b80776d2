"""Results written for readers who do not have solvopt: ``write_result(out_dir, record, result)``.

``DIR/<name>.json`` is plain JSON that any language reads as is:

- arrays are nested lists (a (3, 2) array is ``[[..], [..], [..]]``), scalars are numbers;
- sparse matrices are ``{"row": [...], "col": [...], "data": [...], "shape": [m, n]}`` (COO);
- non-finite floats are the strings ``"inf"``, ``"-inf"``, ``"nan"`` (JSON has no such numbers);
- enums are their values (``"optimal"``); ``-0.0`` is written ``0.0``.

It holds the record's own keys (``instance``, ``path``) and every field of the
:class:`~solvopt.core.result.Result`. Beside it:

- a split of a CVRP tour into routes (``solution["routes"]``) is also written as ``DIR/<name>.sol``
  in the CVRPLIB convention (``Route #1: 3 5 2`` lines of customer ids, then ``Cost X``), which
  ``vrplib.read_solution`` and CVRPLIB tools read; the ``vrplib`` package (extra ``io``) writes
  the routes when it is installed;
- an LP/MILP/QP result of a file whose columns (and rows) have names gets
  ``solution["columns"]`` = ``{name: value}`` (and ``solution["row_duals"]`` = ``{row name:
  dual}`` when duals are known), when ``instance`` (its :class:`~solvopt.io.base.Instance`) is given.

``Result.to_dict()`` / ``Result.from_dict()`` stay the round-trip form (typed arrays); this module
only writes.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
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
        return _float(float(obj))
    if isinstance(obj, (complex, np.complexfloating)):
        return {"real": _float(obj.real), "imag": _float(obj.imag)}
    if isinstance(obj, np.ndarray):
        return _array(obj)
    if hasattr(obj, "tocoo") and hasattr(obj, "shape"):  # scipy.sparse
        coo = obj.tocoo()
        return {"row": coo.row.tolist(), "col": coo.col.tolist(), "data": _array(np.asarray(coo.data)),
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


def _float(x: float):
    if math.isnan(x):
        return "nan"
    return _NONFINITE.get(x, x + 0.0)  # + 0.0: no "-0.0" in the file


def _array(a: np.ndarray):
    if a.dtype.kind == "f":
        a = a + 0.0  # no "-0.0" in the file
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        return plain(a.tolist()) if a.ndim else _float(float(a))
    if a.dtype.kind == "c":
        return plain(a.tolist())
    if a.dtype.kind == "O":
        return plain(a.tolist())
    return a.tolist()  # nested lists of Python ints / floats / bools / strings


def result_document(record: dict, result, instance=None) -> dict:
    """What ``write_result`` writes: the record's own keys, then every field of ``result``, plain."""
    names = [f.name for f in dataclasses.fields(result)]
    doc = {k: plain(v) for k, v in record.items() if k not in names}
    for name in names:
        doc[name] = plain(getattr(result, name))
    named = _named_lp_values(result, instance)
    if named:
        doc["solution"] = dict(doc.get("solution") or {}, **named)
    return doc


def write_result(out_dir: str | os.PathLike, record: dict, result, instance=None) -> list[str]:
    """Write ``DIR/<record["instance"]>.json`` (plain JSON) and, for split routes, ``<name>.sol``.

    ``record`` is the CLI's record (``instance``: the name, ``path``: the file); ``instance`` (the
    :class:`~solvopt.io.base.Instance` solved, optional) gives LP column names. Returns the paths written.
    """
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    name = str(record["instance"])
    json_path = os.path.join(out_dir, f"{name}.json")
    with open(json_path, "w", encoding="utf-8") as fh:
        json.dump(result_document(record, result, instance), fh, allow_nan=False)
        fh.write("\n")
    written = [json_path]
    routes = (result.solution or {}).get("routes") if result.family == "cvrp" else None
    if routes:
        sol_path = os.path.join(out_dir, f"{name}.sol")
        write_vrplib_solution(sol_path, routes, result.objective)
        written.append(sol_path)
    return written


def write_vrplib_solution(path: str, routes, cost: float | None) -> None:
    """CVRPLIB ``.sol``: ``Route #i: ids`` lines (by ``vrplib.write_solution`` when installed), ``Cost X``."""
    routes = [[int(c) for c in route] for route in routes if len(route)]
    try:
        import vrplib
    except ImportError:
        vrplib = None
    if vrplib is not None:
        vrplib.write_solution(path, routes)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            for i, route in enumerate(routes, start=1):
                fh.write(" ".join([f"Route #{i}:"] + [str(c) for c in route]) + "\n")
    if cost is not None:
        with open(path, "a", encoding="utf-8") as fh:  # CVRPLIB writes "Cost X" (vrplib reads it too)
            fh.write(f"Cost {_cost_text(cost)}\n")


def _cost_text(cost: float) -> str:
    cost = float(cost)
    return str(int(cost)) if cost.is_integer() else repr(cost)


def _named_lp_values(result, instance) -> dict:
    """``{"columns": {name: value}, "row_duals": {name: dual}}`` for an LP file's result with names."""
    if instance is None or result.family != "lp":
        return {}
    sf = (getattr(instance, "data", None) or {}).get("standard_form")
    solution = result.solution or {}
    out = {}
    cols = getattr(sf, "var_names", None)
    x = solution.get("x")
    if cols and x is not None and len(cols) == len(x) and len(set(cols)) == len(cols):
        out["columns"] = {str(n): plain(v) for n, v in zip(cols, np.asarray(x).tolist())}
    rows = getattr(sf, "row_names", None)
    duals = solution.get("row_dual")
    if rows and duals is not None and len(rows) == len(duals) and len(set(rows)) == len(rows):
        out["row_duals"] = {str(n): plain(v) for n, v in zip(rows, np.asarray(duals).tolist())}
    return out
