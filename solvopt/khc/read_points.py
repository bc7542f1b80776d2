"""k-HC point files: a numeric matrix (m points x n coordinates) as ``.csv`` or ``.npy``.

A CSV point file may state ``k`` in a comment line of its own, ``# k=3`` (``solvopt convert`` writes
one); otherwise, and for ``.npy``, the caller passes it (``read_instance(path, k=3)``, CLI ``--k 3``),
and a ``k`` passed overrides the file's.
:func:`khc_instance` is the one place that validates k-HC data for every k-HC reader.
"""
from __future__ import annotations

import re

import numpy as np

from ..core.errors import InstanceFormatError, ModelError
from ..io.base import Instance, LineReader, Reader, instance_name, parse_number, register_reader
from ..io.convert import register_writer


def khc_instance(path: str, fmt: str, points: np.ndarray, k: int | None, k_from_file: bool = False) -> Instance:
    """Validate a k-HC point set and wrap it: data = {"points": (m, n) float64, "k": int}.

    ``k_from_file`` says whether ``k`` was read from the file (errors then name the file).
    """
    m, n = points.shape
    if m == 0 or n == 0:
        raise InstanceFormatError(path, None, f"expected at least one point with at least one coordinate, got shape {points.shape}")
    if k is None:
        raise ModelError(f"{path}: k-HC point files carry no k; pass the number of hyperplanes (CLI: --k K)")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ModelError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= m:
        message = f"k must be in 1..m = 1..{m}, got k = {k}"
        raise InstanceFormatError(path, None, message) if k_from_file else ModelError(f"{path}: {message}")
    return Instance(family="khc", format=fmt, name=instance_name(path), path=path,
                    data={"points": np.ascontiguousarray(points, dtype=np.float64), "k": int(k)},
                    meta={"m": int(m), "n": int(n), "k": int(k)})




def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def read_csv_points(path: str) -> np.ndarray:
    """Comma-separated rows of numbers; ``#`` starts a comment; an optional header of names.

    A leading UTF-8 byte-order mark is skipped.
    """
    lines = LineReader(path, comment="#")  # drops a leading UTF-8 byte-order mark
    if lines.at_end():
        lines.next("a row of comma-separated coordinates")  # raises: the file has no data
    _, first = lines.peek()
    header = None
    if not any(_is_number(t.strip()) for t in first.split(",")):
        header = [t.strip() for t in first.split(",")]
        lines.next("the header")
    rows: list[list[float]] = []
    width = len(header) if header is not None else None
    while not lines.at_end():
        no, line = lines.next("a row of coordinates")
        tokens = [t.strip() for t in line.split(",")]
        if width is None:
            width = len(tokens)
        if len(tokens) != width:
            raise InstanceFormatError(path, no, f"expected {width} comma-separated values, got {len(tokens)}")
        rows.append([parse_number(t, path, no, f"coordinate {j + 1}") for j, t in enumerate(tokens)])
    if not rows:
        raise lines.error("expected at least one row of coordinates after the header",
                          line=lines.last_line + 1)
    return np.array(rows, dtype=np.float64)


def read_npy_points(path: str) -> np.ndarray:
    """A 2-D numeric ``.npy`` array (no pickles)."""
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InstanceFormatError(path, None, f"not a readable .npy array ({exc})") from None
    if not isinstance(array, np.ndarray) or array.ndim != 2:
        raise InstanceFormatError(path, None, f"expected a 2-D array (points x coordinates), got shape {getattr(array, 'shape', '?')}")
    if not (np.issubdtype(array.dtype, np.number) and not np.issubdtype(array.dtype, np.complexfloating)):
        raise InstanceFormatError(path, None, f"expected a real numeric array, got dtype {array.dtype}")
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        i, j = bad[0]
        raise InstanceFormatError(path, None, f"point {i}, coordinate {j} must be finite, got {array[i, j]}")
    return array.astype(np.float64)


_K_COMMENT = re.compile(r"^\s*#\s*k\s*=\s*(\S*)\s*$", re.IGNORECASE)


def k_comment(path: str) -> int | None:
    """The ``k`` a CSV point file states in a ``# k=3`` comment line (None when it states none)."""
    if path.lower().endswith(".npy"):
        return None
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            line = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
            match = _K_COMMENT.match(line)
            if match:
                text = match.group(1)
                if not text.isdigit() or int(text) < 1:
                    raise InstanceFormatError(path, no, f"'# k=' needs a positive integer, got {text!r}")
                return int(text)
    return None


def read_points(path: str, k: int | None = None) -> Instance:
    """Read a ``.csv`` / ``.npy`` point file as a k-HC instance with the given ``k`` (else the file's)."""
    points = read_npy_points(path) if path.lower().endswith(".npy") else read_csv_points(path)
    stated = k_comment(path) if k is None else None
    return khc_instance(path, "points", points, k if k is not None else stated, k_from_file=stated is not None)


def describe_points(path: str) -> dict:
    """``solvopt info`` of a point file: its size and ``k`` (``"unset"`` when the file states none)."""
    points = read_npy_points(path) if path.lower().endswith(".npy") else read_csv_points(path)
    k = k_comment(path)
    return {"path": path, "name": instance_name(path), "family": "khc", "format": "points",
            "m": int(points.shape[0]), "n": int(points.shape[1]), "k": "unset" if k is None else k}


def write_csv_points(instance: Instance, path: str) -> None:
    """``solvopt convert`` to ``.csv``: a ``# k=K`` comment (read back), a header of names, the points."""
    points, k = instance.data["points"], instance.data["k"]
    header = ",".join(f"x{j + 1}" for j in range(points.shape[1]))
    with open(path, "w") as fh:
        fh.write(f"# k-HC points from {instance.name}: m={points.shape[0]} n={points.shape[1]}\n"
                 f"# k={k}\n{header}\n")
        for row in points:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")


def write_npy_points(instance: Instance, path: str) -> None:
    """``solvopt convert`` to ``.npy``: the (m, n) float64 array of points."""
    with open(path, "wb") as fh:  # a file object: np.save would append .npy to other names
        np.save(fh, instance.data["points"], allow_pickle=False)


POINTS_READER = register_reader(Reader(
    format="points", family="khc", extensions=(".csv", ".npy"), read=read_points,
    params=("k",), description="k-HC point matrix (m x n) as CSV or NumPy .npy; k from a '# k=K' line or --k",
    peek=describe_points))
register_writer("khc", ".csv", write_csv_points)
register_writer("khc", ".npy", write_npy_points)
