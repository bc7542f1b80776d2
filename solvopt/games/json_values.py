"""Parsed JSON values as arrays and utility forms: the checks every games instance kind shares.

:func:`numeric` refuses ragged rows, non-numbers and the wrong number of dimensions with one
``ModelError`` naming the field, before any model code sees the value; :func:`form_from_json`
builds a utility form of :mod:`solvopt.dsl.utilities` from its JSON. Used by the static kinds
(:mod:`solvopt.games.instance`) and the Markov kinds (:mod:`solvopt.games.markov_instance`).
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dsl.utilities import utility_from_params

FORM_PARAMS = {"ces": ("values", "rho")}  # the forms that take more than their one parameter array
_SHAPE_WORDS: dict[int | None, str] = {0: "a number", 1: "a list of numbers", 2: "a matrix (rows of equal length)",
                3: "an array of matrices (rows of equal length)"}


def numeric(value, what: str, ndim: int | None = None) -> np.ndarray:
    """``value`` (parsed JSON) as a float array, or one ModelError naming ``what`` and what was expected.

    Ragged rows (``[[1, 2], [3]]``), non-numbers and the wrong number of dimensions are refused
    here, before any model code sees them.
    """
    expected = _SHAPE_WORDS.get(ndim, "a numeric array with rows of equal length")
    if isinstance(value, bool) or value is None:
        raise ModelError(f"{what} must be {expected}, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (ValueError, TypeError, OverflowError):
        raise ModelError(f"{what} must be {expected}; got rows of different lengths or non-numbers") from None
    if ndim is not None and arr.ndim != ndim:
        raise ModelError(f"{what} must be {expected}, got an array of shape {arr.shape}")
    return arr


def form_from_json(spec: dict, what: str = "utility"):
    """A utility form from its JSON: ``kind`` and its parameter rows (one per consumer)."""
    kind = spec["kind"]
    params = {k: v for k, v in spec.items() if k != "kind"}
    needed = FORM_PARAMS.get(kind)
    if needed is not None:
        missing = [k for k in needed if k not in params]
        if missing:
            raise ModelError(f"{what}: a {kind} utility needs {' and '.join(repr(k) for k in needed)}; "
                             f"missing {', '.join(repr(k) for k in missing)}")
        params = {k: numeric(params[k], f"{what}.{k}", 0 if k == "rho" else None) for k in params}
        params["rho"] = float(params["rho"])
    else:
        params = {k: numeric(v, f"{what}.{k}") for k, v in params.items()}
    return utility_from_params(kind, params)
