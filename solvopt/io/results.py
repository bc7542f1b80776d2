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
  ``solution["columns"]`` = ``{name: value}`` (and ``solution["row_dual_by_name"]`` = ``{row name:
  dual}`` when duals are known), when ``instance`` (its :class:`~solvopt.io.base.Instance`) is given.

The file name is never taken from what a file holds (a game's ``"name"``): the CLI gives each
input a name from its path (:func:`output_names`: sanitised, unique within the run), and a
record's ``instance`` is sanitised (:func:`safe_name`) when no name is given. Every file is written
atomically: a temporary file in the same folder, then ``os.replace``; a reader never sees half a
file, and a failed write leaves the previous file (if any) in place.

Large arrays (more than :data:`LARGE_ELEMENTS` numbers) are encoded in chunks, and the writer asks
``should_stop()`` between chunks: when it answers True (a Ctrl-C arrived while writing), or a
second Ctrl-C interrupts the encoding, the large arrays are left out, the document names them
in ``"omitted"`` (dotted paths such as ``"solution.plan"``) and is written without them.
:func:`encode_json` does the same for the CLI's ``--json`` line (the same plain document).

``"arrays"`` lists where the result held numpy arrays (``{"path": ["solution", "x"], "type":
"float64"}``; ``"sparse"`` for a sparse matrix): ``Result.from_dict`` / ``Result.from_json`` read
a document back with those values as arrays again. ``Result.to_dict()`` and the CLI's ``--json``
line are this same document (one JSON dialect); this module only writes.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np

from ..core.plain_json import plain, plain_array

LARGE_ELEMENTS = 1 << 16   # a value with more numbers than this is encoded in chunks, abandonably
CHUNK_ELEMENTS = 1 << 16   # numbers per chunk
MAX_NAME = 120             # characters of an output file's stem
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


class WriteAbandoned(Exception):
    """Encoding a large value was stopped (``should_stop()`` answered True, or a second Ctrl-C)."""





def result_document(record: dict, result, instance=None) -> dict:
    """What ``write_result`` writes: the record's own keys, then every field of ``result``, plain."""
    names = [f.name for f in dataclasses.fields(result)]
    doc = {k: plain(v) for k, v in record.items() if k not in names}
    for name in names:
        doc[name] = plain(getattr(result, name))
    named = _named_lp_values(result, instance)
    if named:
        doc["solution"] = dict(doc.get("solution") or {}, **named)
    doc["arrays"] = _arrays(result)
    return doc


def _arrays(result) -> list:
    from ..core.result import array_paths
    return array_paths({"solution": result.solution, "stats": result.stats})


class Written(list):
    """The paths :func:`write_result` wrote; ``omitted``: the dotted paths of values left out."""

    omitted: list[str] = []


def safe_name(text: str) -> str:
    """A file stem made from ``text`` that names no other place: no folders, no ``..``, no hidden file.

    Every run of characters outside ``A-Z a-z 0-9 . _ + -`` becomes ``_``; leading dots are dropped;
    an empty result is ``instance``; at most :data:`MAX_NAME` characters.
    """
    name = _UNSAFE.sub("_", str(text)).lstrip(".")[:MAX_NAME].rstrip(".")
    return name or "instance"


def output_names(paths) -> list[str]:
    """One output stem per input path: the file name without its extension(s), sanitised, unique.

    Uniqueness ignores case (two names differing only in case are one file on some systems). The
    first input with a stem keeps it; a later one gets the smallest ``-2``, ``-3``, ... that is
    neither taken nor another input's own stem, so the names depend only on the list of paths (not
    on which instance finishes first): ``d1/small.npz d2/small.npz`` -> ``small``, ``small-2``.
    """
    from .base import instance_name
    stems = [safe_name(instance_name(os.fspath(p))) for p in paths]
    own = Counter(s.casefold() for s in stems)
    taken: set[str] = set()
    names = []
    for stem in stems:
        name, k = stem, 2
        while name.casefold() in taken:
            name = f"{stem[:MAX_NAME - 8]}-{k}"
            k += 1
            if name.casefold() in own:
                name = stem  # another input's own stem: keep looking
        taken.add(name.casefold())
        names.append(name)
    return names


def write_result(out_dir: str | os.PathLike, record: dict, result, instance=None, *, name: str | None = None,
                 should_stop: Callable[[], bool] | None = None) -> Written:
    """Write ``DIR/<name>.json`` (plain JSON) and, for split routes, ``DIR/<name>.sol``, each atomically.

    ``record`` is the CLI's record (``instance``: the name, ``path``: the file); ``instance`` (the
    :class:`~solvopt.io.base.Instance` solved, optional) gives LP column names. ``name``: the file
    stem (the CLI's from :func:`output_names`); without it ``record["instance"]`` sanitised by
    :func:`safe_name`. ``should_stop``: asked between chunks of large arrays; when it answers True
    the document is written without them (named in ``"omitted"``). Returns the paths written
    (a list whose ``omitted`` attribute lists what was left out, empty when nothing was).
    """
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    name = safe_name(record["instance"] if name is None else name)
    json_path = os.path.join(out_dir, f"{name}.json")
    doc = _lazy_document(record, result, instance)
    written = Written([json_path])
    try:
        _atomic_write(json_path, lambda fh, _: _write_pieces(fh, encode_pieces(doc, "plain", should_stop)))
    except WriteAbandoned:
        small, written.omitted = _without_large(doc)
        _atomic_write(json_path, lambda fh, _: _write_pieces(fh, encode_pieces(dict(small, omitted=written.omitted),
                                                                                   "plain")))
    routes = (result.solution or {}).get("routes") if result.family == "cvrp" else None
    if routes:
        sol_path = os.path.join(out_dir, f"{name}.sol")
        write_vrplib_solution(sol_path, routes, result.objective)
        written.append(sol_path)
    return written


def encode_json(record: dict, should_stop: Callable[[], bool] | None = None, omit_large: bool = False) -> str:
    """``json.dumps(record)`` as plain JSON (this module's form), for a record whose values are raw.

    ``record``: the CLI's keys (``instance``, ``path``) and a result's fields, whose values may
    be arrays and sparse matrices (encoded as :func:`plain` does). Large values are encoded
    in chunks, asking ``should_stop()`` between them; when it answers True, when a second Ctrl-C
    interrupts the encoding, or with ``omit_large``, they are left out and named in ``"omitted"``.
    """
    if not omit_large:
        try:
            return "".join(encode_pieces(record, "plain", should_stop))
        except (WriteAbandoned, KeyboardInterrupt):
            pass
    small, omitted = _without_large(record)
    return "".join(encode_pieces(dict(small, omitted=omitted) if omitted else small, "plain"))


def _atomic_write(path: str, write: Callable) -> None:
    """``write(fh, tmp)`` into a temporary file ``tmp`` beside ``path``, then ``os.replace`` it onto ``path``."""
    folder, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=folder or ".", prefix=f".{base}.", suffix=".tmp")
    try:
        mask = os.umask(0)  # mkstemp makes the file private (0600); give it what open() would (0666 & ~umask)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh, tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_pieces(fh, pieces: Iterator[str]) -> None:
    for piece in pieces:
        fh.write(piece)
    fh.write("\n")


def _lazy_document(record: dict, result, instance) -> dict:
    """``result_document`` with the solution's values left as they are (encoded later, in chunks)."""
    names = [f.name for f in dataclasses.fields(result)]
    doc = {k: v for k, v in record.items() if k not in names}
    for name in names:
        doc[name] = getattr(result, name)
    named = _named_lp_values(result, instance)
    if named:
        doc["solution"] = dict(doc.get("solution") or {}, **named)
    doc["arrays"] = _arrays(result)
    return doc


def result_json(record: dict, result, instance=None, should_stop: Callable[[], bool] | None = None,
                omit_large: bool = False) -> str:
    """The document :func:`write_result` writes, as one line of JSON (the CLI's ``--json`` line)."""
    return encode_json(_lazy_document(record, result, instance), should_stop, omit_large)


def _size(value) -> int:
    """How many numbers ``value`` holds (a cheap count: arrays by size, sparse by 3 x nnz)."""
    if isinstance(value, np.ndarray):
        return int(value.size)
    if hasattr(value, "tocoo") and hasattr(value, "nnz"):
        return 3 * int(value.nnz)
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_size(v) for v in value) if any(isinstance(v, (np.ndarray, dict, list, tuple)) for v in value) \
            else len(value)
    return 1


def _without_large(doc: dict, prefix: str = "") -> tuple[dict, list[str]]:
    """``doc`` with every large value under ``solution`` dropped, and the dotted paths dropped."""
    small, omitted = {}, []
    for key, value in doc.items():
        where = f"{prefix}{key}"
        if _size(value) <= LARGE_ELEMENTS:
            small[key] = value
        elif isinstance(value, dict):
            small[key], more = _without_large(value, where + ".")
            omitted += more
        else:
            omitted.append(where)
    return small, omitted


def encode_pieces(value, style: str, should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
    """JSON text of ``value`` in pieces; large arrays in chunks with ``should_stop()`` asked between them.

    ``style``: ``"plain"`` (the only form: this module's files, ``--json`` and ``Result.to_dict``).
    A second Ctrl-C (KeyboardInterrupt) while a large value is encoded becomes :class:`WriteAbandoned`.
    """
    leaf = plain
    if _size(value) <= LARGE_ELEMENTS:
        yield json.dumps(leaf(value), allow_nan=False)
        return
    if isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ("" if i == 0 else ", ") + json.dumps(key if isinstance(key, str) else str(leaf(key))) + ": "
            yield from encode_pieces(item, style, should_stop)
        yield "}"
    elif isinstance(value, (list, tuple)):  # a long list of small items: asked between items
        yield "["
        for i, item in enumerate(value):
            if should_stop is not None and should_stop():
                raise WriteAbandoned("stop requested")
            yield "" if i == 0 else ", "
            yield from encode_pieces(item, style, should_stop)
        yield "]"
    elif isinstance(value, np.ndarray) or (hasattr(value, "tocoo") and hasattr(value, "nnz")):
        try:
            yield from _plain_chunks(value, should_stop or (lambda: False))
        except KeyboardInterrupt:
            raise WriteAbandoned("interrupted") from None
    else:
        yield json.dumps(leaf(value), allow_nan=False)


def _rows(a: np.ndarray, should_stop) -> Iterator[str]:
    """``a``'s nested lists without the outer brackets, chunk by chunk along its first axis."""
    step = max(1, CHUNK_ELEMENTS // max(1, int(np.prod(a.shape[1:]))))
    for i in range(0, a.shape[0], step):
        if should_stop():
            raise WriteAbandoned("stop requested")
        yield ("" if i == 0 else ", ") + json.dumps(plain_array(a[i:i + step]), allow_nan=False)[1:-1]


def _plain_chunks(value, should_stop) -> Iterator[str]:
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            yield json.dumps(plain_array(value), allow_nan=False)
            return
        yield "["
        yield from _rows(value, should_stop)
        yield "]"
        return
    coo = value.tocoo()
    for key, part in (("row", coo.row), ("col", coo.col), ("data", np.asarray(coo.data))):
        yield ('{"' if key == "row" else ', "') + key + '": ['
        yield from _rows(part, should_stop)
        yield "]"
    yield f', "shape": {json.dumps([int(s) for s in coo.shape])}}}'


def write_vrplib_solution(path: str, routes, cost: float | None) -> None:
    """CVRPLIB ``.sol`` (written atomically): ``Route #i: ids`` lines (by ``vrplib.write_solution`` when
    installed), then ``Cost X``."""
    routes = [[int(c) for c in route] for route in routes if len(route)]
    try:
        import vrplib
    except ImportError:
        vrplib = None

    def write(fh, tmp):
        if vrplib is not None:  # vrplib writes to a path: the temporary file's
            fh.close()
            vrplib.write_solution(tmp, routes)
            fh = open(tmp, "a", encoding="utf-8")
        else:
            for i, route in enumerate(routes, start=1):
                fh.write(" ".join([f"Route #{i}:"] + [str(c) for c in route]) + "\n")
        with fh:
            if cost is not None:  # CVRPLIB writes "Cost X" (vrplib reads it too)
                fh.write(f"Cost {_cost_text(cost)}\n")

    _atomic_write(path, write)


def _cost_text(cost: float) -> str:
    cost = float(cost)
    return str(int(cost)) if cost.is_integer() else repr(cost)


def _named_lp_values(result, instance) -> dict:
    """``{"columns": {name: value}, "row_dual_by_name": {name: dual}}`` for an LP file's result with names."""
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
        out["row_dual_by_name"] = {str(n): plain(v) for n, v in zip(rows, np.asarray(duals).tolist())}
    return out
