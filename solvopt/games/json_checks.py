"""File-level checks the games readers share: the shipped JSON Schemas, NaN / Infinity, JSON paths.

Both the general game reader (:mod:`solvopt.games.reader`) and the production-economy reader
(:mod:`solvopt.games.production_reader`) validate with these, so every error is one line naming the
file and the field.
"""
from __future__ import annotations

import functools
import json
import math
import os

from ..core.errors import InstanceFormatError

_HERE = os.path.dirname(__file__)


@functools.cache
def schema(name: str = "schema.json") -> dict | None:
    """A schema shipped beside this module (None when absent: the Markov one is optional)."""
    path = os.path.join(_HERE, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def field_name(parts) -> str:
    """A JSON path as people write it: players[0].cost.Q ('(top level)' for the root)."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def first_nonfinite(value):
    """The JSON path (a tuple) of the first NaN / Infinity in parsed JSON, or None (no recursion, so
    any nesting the JSON parser accepted is walked)."""
    stack = [(value, ())]
    while stack:
        item, parts = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return parts
        if isinstance(item, dict):
            stack.extend((v, parts + (k,)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, parts + (i,)) for i, v in reversed(list(enumerate(item))))
    return None


def validate(data, path: str, which: str = "schema.json") -> None:
    """Raise InstanceFormatError naming the file and the first offending field."""
    import jsonschema
    rules = schema(which)
    if rules is None:
        return
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(rules).iter_errors(data))
    if error is not None:
        message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
        raise InstanceFormatError(path, None, f"field {field_name(error.absolute_path)}: {message}")
