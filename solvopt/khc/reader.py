"""The k-HC instance readers and writers: point files and AMPL data files.

**Point files**: a numeric matrix (m points x n coordinates) as ``.csv`` or ``.npy``. A CSV
point file may state ``k`` in a comment line of its own, ``# k=3`` (``solvopt convert`` writes
one); otherwise, and for ``.npy``, the caller passes it (``read_instance(path, k=3)``, CLI
``--k 3``), and a ``k`` passed overrides the file's.

**AMPL data files** (the published semi-random ``sr_<m>_<n>_<k>_<seed>.dat`` set)::

    set M := 1 2 ... m ;          # point indices
    set N := 1 2 ... n ;          # coordinate indices
    set K := 1 2 ... k ;          # hyperplane indices (k = |K|)
    param a : 1 2 ... n :=        # a table: column header = N
    1  x11 x12 ...                # one row per point: index in M, then n coordinates
    ...
    ;

The AMPL file is recognised by its content (``set M`` / ``param a``) because Archetti IRP files
also end in ``.dat``. A ``k`` from the caller overrides ``|K|``.

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
        raise InstanceFormatError(path, None,
                                  f"expected at least one point with at least one coordinate, got shape {points.shape}")
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
    # the file has no data: next() raises, naming what was expected
    _, first = lines.peek() or lines.next("a row of comma-separated coordinates")
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
        raise InstanceFormatError(path, None, "expected a 2-D array (points x coordinates), "
                                              f"got shape {getattr(array, 'shape', '?')}")
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


# --- AMPL data files ----------------------------------------------------------------------------
_TOKEN = re.compile(r":=|[:;]|[^\s:;]+")
_STATEMENT_START = re.compile(r"^\s*(set\s+[MNK]\b|param\s+a\b)", re.MULTILINE)
SET_NAMES = ("M", "N", "K")


def sniff_ampl_khc(path: str, head: str) -> bool:
    return _STATEMENT_START.search(head) is not None


def _tokens(path: str) -> tuple[list[tuple[int, str]], int]:
    """All tokens of the file with their 1-based line numbers (``#`` comments and a UTF-8 byte-order mark removed)."""
    lines = LineReader(path, comment="#")
    tokens = [(no, t) for no, line in lines.lines for t in _TOKEN.findall(line)]
    return tokens, lines.last_line


class _Statements:
    """Walks the token list; errors name the line of the token where something else was due."""

    def __init__(self, path: str, tokens: list[tuple[int, str]], last_line: int):
        self.path, self.tokens, self.pos, self.end_line = path, tokens, 0, last_line + 1

    def at_end(self) -> bool:
        return self.pos >= len(self.tokens)

    def take(self, expected: str) -> tuple[int, str]:
        if self.at_end():
            raise InstanceFormatError(self.path, self.end_line, f"unexpected end of file, expected {expected}")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expect(self, literal: str, context: str) -> int:
        no, tok = self.take(f"{literal!r} {context}")
        if tok != literal:
            raise InstanceFormatError(self.path, no, f"expected {literal!r} {context}, got {tok!r}")
        return no

    def until_semicolon(self, what: str) -> list[tuple[int, str]]:
        items: list[tuple[int, str]] = []
        while True:
            no, tok = self.take(f"{what} or ';'")
            if tok == ";":
                return items
            if tok in (":", ":="):
                raise InstanceFormatError(self.path, no, f"expected {what} or ';', got {tok!r}")
            items.append((no, tok))


def read_ampl_khc(path: str, k: int | None = None):
    """Read a k-HC AMPL data file; data = {"points": (m, n) float64, "k": int}."""
    stream = _Statements(path, *_tokens(path))
    sets: dict[str, list[str]] = {}
    table = None
    if stream.at_end():
        stream.take("'set M := ... ;'")
    while not stream.at_end():
        no, keyword = stream.take("'set' or 'param'")
        if keyword == "set":
            name_no, name = stream.take("a set name (M, N or K)")
            if name not in SET_NAMES:
                raise InstanceFormatError(path, name_no, f"expected set M, N or K, got set {name!r}")
            if name in sets:
                raise InstanceFormatError(path, name_no, f"set {name} is defined twice")
            stream.expect(":=", f"after 'set {name}'")
            members = stream.until_semicolon(f"a member of set {name}")
            labels = [tok for _, tok in members]
            if len(set(labels)) != len(labels):
                dup = next(n for (n, t) in members if labels.count(t) > 1)
                raise InstanceFormatError(path, dup, f"set {name} lists a member twice")
            sets[name] = labels
        elif keyword == "param":
            name_no, name = stream.take("'a'")
            if name != "a":
                raise InstanceFormatError(path, name_no, f"expected 'param a', got 'param {name}'")
            if table is not None:
                raise InstanceFormatError(path, name_no, "param a is defined twice")
            table = _read_table(stream, path, name_no)
        else:
            raise InstanceFormatError(path, no, f"expected 'set' or 'param', got {keyword!r}")
    for name in SET_NAMES:
        if name not in sets:
            raise InstanceFormatError(path, stream.end_line, f"end of file without 'set {name} := ... ;'")
    if table is None:
        raise InstanceFormatError(path, stream.end_line, "end of file without the point table 'param a : ... := ... ;'")
    points = _check_table(path, table, sets)
    file_k = len(sets["K"])
    if k is None:
        return khc_instance(path, "ampl_khc", points, file_k, k_from_file=True)
    inst = khc_instance(path, "ampl_khc", points, k)
    inst.meta["file_k"] = file_k
    return inst


def _read_table(stream: _Statements, path: str, start_line: int):
    """``: header := rows ;`` -> (header [(line, label)], rows [(line, index, [(line, token)])])."""
    stream.expect(":", "after 'param a' (a table: 'param a : 1 2 ... n :=')")
    header = []
    while True:
        no, tok = stream.take("a column label or ':='")
        if tok == ":=":
            break
        if tok in (":", ";"):
            raise InstanceFormatError(path, no, f"expected a column label or ':=', got {tok!r}")
        header.append((no, tok))
    if not header:
        raise InstanceFormatError(path, start_line, "the table 'param a' has no column labels")
    cells = stream.until_semicolon("a table row (point index and coordinates)")
    width = len(header) + 1
    rows = []
    by_line: dict[int, list[tuple[int, str]]] = {}
    for no, tok in cells:
        by_line.setdefault(no, []).append((no, tok))
    for no, items in by_line.items():
        if len(items) != width:
            raise InstanceFormatError(path, no, f"expected a point index and {len(header)} coordinates, "
                                                f"got {len(items)} values")
        rows.append((no, items[0][1], items[1:]))
    return header, rows


def _check_table(path: str, table, sets) -> np.ndarray:
    header, rows = table
    n_labels = sets["N"]
    if [t for _, t in header] != n_labels:
        raise InstanceFormatError(path, header[0][0], f"the table's column labels {[t for _, t in header]} "
                                                      f"differ from set N = {n_labels}")
    position = {label: i for i, label in enumerate(sets["M"])}
    points = np.full((len(position), len(n_labels)), np.nan)
    seen: dict[str, int] = {}
    for no, index, values in rows:
        if index not in position:
            raise InstanceFormatError(path, no, f"point index {index!r} is not in set M")
        if index in seen:
            raise InstanceFormatError(path, no, f"point {index} already has a row (line {seen[index]})")
        seen[index] = no
        points[position[index]] = [parse_number(tok, path, vno, f"coordinate {j + 1} of point {index}")
                                   for j, (vno, tok) in enumerate(values)]
    missing = [label for label in sets["M"] if label not in seen]
    if missing:
        last = rows[-1][0] if rows else None
        raise InstanceFormatError(path, last, f"the table has {len(rows)} rows but set M has {len(position)} "
                                              f"points; no row for point(s) {', '.join(missing[:5])}")
    return points


def format_ampl_khc(points: np.ndarray, k: int) -> str:
    """The AMPL k-HC text of ``points`` (m, n) with ``k`` hyperplanes (inverse of the reader)."""
    m, n = points.shape
    out = [f"set M := {' '.join(str(i) for i in range(1, m + 1))} ;",
           f"set N := {' '.join(str(j) for j in range(1, n + 1))} ;",
           f"set K := {' '.join(str(j) for j in range(1, k + 1))} ;",
           "param a : ",
           f" {' '.join(str(j) for j in range(1, n + 1))}:="]
    out += [f"{i + 1}  " + " ".join(repr(float(v)) if not float(v).is_integer() else str(int(v)) for v in row)
            for i, row in enumerate(points)]
    out.append(";")
    return "\n".join(out) + "\n"


def write_ampl_khc(instance: Instance, path: str) -> None:
    """``solvopt convert`` to ``.dat``: the AMPL k-HC text (the format of the shipped instances)."""
    with open(path, "w") as fh:
        fh.write(format_ampl_khc(instance.data["points"], instance.data["k"]))


AMPL_KHC_READER = register_reader(Reader(
    format="ampl_khc", family="khc", extensions=(".dat",), read=read_ampl_khc, sniff=sniff_ampl_khc,
    params=("k",), description="k-HC AMPL data file (set M, N, K; param a table)"))
register_writer("khc", ".dat", write_ampl_khc)
