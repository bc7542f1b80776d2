"""One result type for every family (modelled on Pyomo's newer solver interface).

Termination (why the solver stopped) and solution status (what we hold) are two separate
axes; a result always carries the incumbent and the bound found so far.
"""
from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from .plain_json import plain


class Termination(str, enum.Enum):
    OPTIMAL = "optimal"
    FEASIBLE_WITHIN_GAP = "feasible_within_gap"
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    NUMERICAL_ERROR = "numerical_error"
    INTERRUPTED = "interrupted"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class SolutionStatus(str, enum.Enum):
    NONE = "none"
    FEASIBLE = "feasible"
    OPTIMAL = "optimal"

    def __str__(self) -> str:
        return self.value


@overload
def relative_gap(objective: float, bound: float, sense: int = 1) -> float: ...
@overload
def relative_gap(objective: float | None, bound: float | None, sense: int = 1) -> float | None: ...
def relative_gap(objective: float | None, bound: float | None, sense: int = 1) -> float | None:
    """Relative gap |obj - bound| / max(|obj|, 1e-10); 0 when both are equal (incl. both 0).

    ``sense`` is +1 for minimisation (bound <= objective) and -1 for maximisation.
    """
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return math.inf
    diff = max(0.0, sense * (objective - bound))
    if diff == 0.0:
        return 0.0
    return diff / max(abs(objective), 1e-10)


def format_gap(gap: float | None) -> str:
    """A gap as a person reads it: '0%' below 1e-9, else 3 significant digits ('-' when none)."""
    if gap is None:
        return "-"
    if not math.isfinite(gap):
        return "inf"
    if gap < 1e-9:
        return "0%"
    return f"{100 * gap:.3g}%"


@dataclass
class Result:
    """What every ``solve`` returns.

    ``solution`` holds family-specific arrays (assignment + planes, transport plan, values +
    argmins, ...). ``stats`` holds wall time, nodes, iterations, backend and device.
    ``guarantee`` states what is proven about the answer (e.g. an approximation factor).
    """

    termination: Termination
    solution_status: SolutionStatus = SolutionStatus.NONE
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    solution: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    guarantee: str | None = None
    family: str | None = None
    method: str | None = None
    message: str = ""
    options: dict[str, Any] = field(default_factory=dict)    # the options it ran with
    versions: dict[str, Any] = field(default_factory=dict)   # solvopt's and the backend's versions

    def __post_init__(self) -> None:
        self.termination = Termination(self.termination)
        self.solution_status = SolutionStatus(self.solution_status)
        for part in (self.solution, self.stats):  # quantile levels are floats in Python
            if isinstance(part, dict) and isinstance(part.get("quantiles"), dict):
                part["quantiles"] = _float_keys(part["quantiles"])

    @property
    def ok(self) -> bool:
        """True when a feasible (or optimal) solution is held."""
        return self.solution_status is not SolutionStatus.NONE

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, the same document ``solvopt solve --out`` writes.

        Enums are their values; numpy arrays are nested lists; scipy sparse matrices are
        ``{"row", "col", "data", "shape"}`` (COO); non-finite floats are ``"inf"``, ``"-inf"``,
        ``"nan"``; dict keys are strings (quantile levels ``0.5`` become ``"0.5"``). ``"arrays"``
        lists where the arrays were (``{"path": ["solution", "x"], "type": "float64"}``, dtype
        ``"sparse"`` for a sparse matrix), so :meth:`from_dict` gives them back as arrays.
        """
        return {
            "family": self.family,
            "method": self.method,
            "termination": self.termination.value,
            "solution_status": self.solution_status.value,
            "objective": plain(self.objective),
            "bound": plain(self.bound),
            "gap": plain(self.gap),
            "guarantee": self.guarantee,
            "message": self.message,
            "solution": plain(self.solution),
            "stats": plain(self.stats),
            "options": plain(self.options),
            "versions": plain(self.versions),
            "arrays": array_paths({"solution": self.solution, "stats": self.stats}),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Inverse of :meth:`to_dict` and of the ``--json`` / ``--out`` documents.

        The values named in ``data["arrays"]`` come back as numpy arrays of their dtype (sparse
        ones as scipy COO); without that list (an older file) nested lists stay lists. Non-finite
        strings become floats; the keys of every ``quantiles`` dict become floats again.
        """
        data = _revive_arrays(data, data.get("arrays") or ())
        return cls(
            termination=Termination(data["termination"]),
            solution_status=SolutionStatus(data["solution_status"]),
            objective=_unfloat(data.get("objective")),
            bound=_unfloat(data.get("bound")),
            gap=_unfloat(data.get("gap")),
            solution={k: _revive(v) for k, v in (data.get("solution") or {}).items()},
            stats={k: _revive(v) for k, v in (data.get("stats") or {}).items()},
            guarantee=data.get("guarantee"),
            family=data.get("family"),
            method=data.get("method"),
            message=data.get("message", ""),
            options=dict(data.get("options") or {}),
            versions=dict(data.get("versions") or {}),
        )

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))

    def to_record(self) -> dict[str, Any]:
        """One flat row of plain scalars (no pandas needed): instance (when known), family, method,
        termination, solution_status, objective, bound, gap, wall_time, guarantee, then every
        other scalar of ``stats`` (numbers, text, booleans) under its own name.

        Arrays, dicts and lists in ``stats`` are left out; enums are their values; a missing
        number is None. :func:`solvopt.io.frames.results_frame` stacks these rows.
        """
        row: dict[str, Any] = {"instance": _scalar(self.stats.get("instance")), "family": self.family,
                               "method": self.method, "termination": self.termination.value,
                               "solution_status": self.solution_status.value, "objective": _scalar(self.objective),
                               "bound": _scalar(self.bound), "gap": _scalar(self.gap),
                               "wall_time": _scalar(self.stats.get("wall_time")), "guarantee": self.guarantee}
        for key, value in self.stats.items():
            key = str(key)
            if key not in row and _is_scalar(value):
                row[key] = _scalar(value)
        return row

    def to_frame(self) -> Any:
        """A one-row ``pandas.DataFrame`` of :meth:`to_record` (needs pandas: the ``pandas`` extra)."""
        return require_pandas("Result.to_frame").DataFrame([self.to_record()])

    @property
    def termination_label(self) -> str:
        """The termination as a table shows it, with what was optimised where a solver says it
        solved a restricted problem (``solution["optimised"]``, e.g. "split of the given tour")."""
        scope = self.solution.get("optimised") if isinstance(self.solution, dict) else None
        if isinstance(scope, str) and self.termination is Termination.OPTIMAL:
            return f"{self.termination.value} ({scope})"
        return self.termination.value

    def summary(self) -> str:
        """One line: termination, objective, bound, gap, time."""
        parts = [self.termination_label]
        if self.objective is not None:
            parts.append(f"obj={self.objective:.10g}")
        if self.bound is not None:
            parts.append(f"bound={self.bound:.10g}")
        if self.gap is not None:
            parts.append(f"gap={format_gap(self.gap)}")
        if "wall_time" in self.stats:
            parts.append(f"time={self.stats['wall_time']:.3f}s")
        return " ".join(parts)


PANDAS_EXTRA = "pip install 'solvopt[pandas]'"


def require_pandas(what: str) -> Any:
    """The ``pandas`` module, or a BackendUnavailable saying ``what`` needs it and which extra to install."""
    try:
        import pandas
    except ImportError:
        from .errors import BackendUnavailable
        raise BackendUnavailable(f"{what} needs pandas, which is not installed: {PANDAS_EXTRA}") from None
    return pandas


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, (bool, str, int, float, np.generic, enum.Enum))


def _scalar(value: Any) -> Any:
    """A plain Python scalar (numpy scalars unwrapped, enums as their values)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- JSON conversion -------------------------------------------------------------------
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _float_out(x: float) -> float | str:
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _unfloat(x: Any) -> Any:
    if isinstance(x, str) and x in _NONFINITE:
        return _NONFINITE[x]
    return x


def _float_keys(d: dict[Any, Any]) -> dict[Any, Any]:
    """``d`` with every key that reads as a number made a float (quantile levels: ``"0.5"`` -> 0.5)."""
    out: dict[Any, Any] = {}
    for k, v in d.items():
        try:
            out[float(k)] = v
        except (TypeError, ValueError):
            out[k] = v
    return out


def array_paths(obj: Any, path: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Where ``obj`` holds numpy arrays or sparse matrices: ``[{"path": [...keys], "type": ...}]``."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
        return [{"path": list(path), "type": str(obj.dtype)}]
    if hasattr(obj, "tocoo") and hasattr(obj, "shape") and not isinstance(obj, np.ndarray):
        return [{"path": list(path), "type": "sparse"}]
    if isinstance(obj, dict):
        return [a for k, v in obj.items() for a in array_paths(v, path + (str(k),))]
    return []


def _revive_arrays(data: dict[str, Any], arrays: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``data`` (a plain document) with the values at the ``arrays`` paths made numpy / COO again."""
    import copy
    data = dict(data)
    for top in ("solution", "stats"):
        if isinstance(data.get(top), dict):
            data[top] = copy.copy(data[top])
    for entry in arrays:
        path, dtype = list(entry.get("path") or ()), entry.get("type")
        if len(path) < 2 or path[0] not in ("solution", "stats"):
            continue
        holder = data
        for key in path[:-1]:
            value = holder.get(key) if isinstance(holder, dict) else None
            if not isinstance(value, dict):
                break
            value = dict(value)
            holder[key] = value
            holder = value
        else:
            if path[-1] in holder:
                holder[path[-1]] = _to_array(holder[path[-1]], dtype)
    return data


def _to_array(value: Any, dtype: str | None) -> Any:
    if dtype == "sparse" and isinstance(value, dict) and {"row", "col", "data", "shape"} <= set(value):
        import scipy.sparse as sp
        return sp.coo_matrix((np.asarray(_unfloat_all(value["data"]), dtype=float),
                              (np.asarray(value["row"], dtype=np.int64), np.asarray(value["col"], dtype=np.int64))),
                             shape=tuple(value["shape"]))
    if isinstance(value, (list, int, float, str, bool)):
        return np.asarray(_unfloat_all(value), dtype=dtype)
    return value


def _unfloat_all(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_unfloat_all(v) for v in obj]
    return _unfloat(obj)


def _revive(obj: Any) -> Any:
    """A plain value back: non-finite strings as floats, ``quantiles`` keys as floats (legacy
    ``{"__ndarray__": ...}`` wrappers still read)."""
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            flat = [_unfloat(v) for v in obj["__ndarray__"]]
            return np.asarray(flat, dtype=obj["dtype"]).reshape(obj["shape"])
        if obj.get("__sparse__") == "coo":
            return _to_array(obj, "sparse")
        return {k: (_float_keys(_revive(v)) if k == "quantiles" and isinstance(v, dict) else _revive(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_revive(v) for v in obj]
    if isinstance(obj, np.ndarray) or hasattr(obj, "tocoo"):
        return obj
    return _unfloat(obj)
