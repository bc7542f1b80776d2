"""AMPL data files of k-HC instances (the published semi-random ``sr_<m>_<n>_<k>_<seed>.dat`` set).

    set M := 1 2 ... m ;          # point indices
    set N := 1 2 ... n ;          # coordinate indices
    set K := 1 2 ... k ;          # hyperplane indices (k = |K|)
    param a : 1 2 ... n :=        # a table: column header = N
    1  x11 x12 ...                # one row per point: index in M, then n coordinates
    ...
    ;

The file is recognised by its content (``set M`` / ``param a``) because Archetti IRP files
also end in ``.dat``. A ``k`` from the caller overrides ``|K|``.
"""
from __future__ import annotations

import re

import numpy as np

from ..core.errors import InstanceFormatError
from ..io.base import Instance, LineReader, Reader, parse_number, register_reader
from ..io.convert import register_writer
from .read_points import khc_instance

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
        items = []
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
