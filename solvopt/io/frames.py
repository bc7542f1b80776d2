"""Results as a pandas table: ``results_frame(results)``, one row per result.

    from solvopt.io.frames import results_frame
    frame = results_frame(solve_list(paths, family="khc"))

Each row is :meth:`Result.to_record <solvopt.core.result.Result.to_record>`: the instance name
(when known: batch runs record it in ``stats["instance"]``), family, method, termination,
solution status, objective, bound, gap, wall time, guarantee and every scalar of ``stats``
(compile time, nodes, iterations, ...); columns missing from a result are empty (NaN/None) there.
pandas is optional (the ``pandas`` extra); without it this is a BackendUnavailable naming it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from solvopt.core.errors import ModelError
from solvopt.core.result import Result, require_pandas


def results_frame(results: Iterable[Result | Mapping[str, Any]] | Mapping[str, Result]):
    """A ``pandas.DataFrame`` with one row per result, in order (see the module docstring).

    Items are Results, or their ``Result.to_dict()`` / JSON-loaded dicts; anything else is a
    ModelError naming its position. A mapping ``{name: result}`` names each row's instance where
    the result does not (``results_frame(dict(zip(paths, results)))``).
    """
    pd = require_pandas("results_frame")
    rows = []
    names: list[Any] = []
    if isinstance(results, Mapping) and not _looks_like_result(results):
        names, results = list(results.keys()), list(results.values())
    for i, item in enumerate(results):
        if isinstance(item, Mapping) and not isinstance(item, Result):
            try:
                item = Result.from_dict(dict(item))
            except (KeyError, TypeError, ValueError) as exc:
                raise ModelError(f"results_frame: item {i} is a dict but not a Result's ({exc})") from None
        if not isinstance(item, Result):
            raise ModelError(f"results_frame: item {i} is a {type(item).__name__}, not a Result")
        row = item.to_record()
        if names and row.get("instance") is None:
            row["instance"] = str(names[i])
        rows.append(row)
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pd.DataFrame(rows, columns=list(columns))


def _looks_like_result(data: Mapping) -> bool:
    """True for one Result's dict form (it has a termination), not a mapping of many."""
    return "termination" in data and not isinstance(data.get("termination"), (Result, Mapping))
