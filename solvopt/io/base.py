"""Instance readers: a registry keyed by format, with sniffing by extension and content.

A reader turns a file into an :class:`Instance` (family, format, name, data). Malformed
files raise :class:`InstanceFormatError` naming the file, the 1-based line and what was
expected; :class:`LineReader` makes that easy for text formats.
"""
from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from ..core.errors import InstanceFormatError, ModelError
from ..core.family import load_readers


@dataclass
class Instance:
    """A problem read from a file. ``data`` holds the family's arrays (documented per reader)."""

    family: str
    format: str
    name: str
    path: str
    data: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What was detected and its size, for ``solvopt info``."""
        out = {"path": self.path, "name": self.name, "family": self.family, "format": self.format}
        out.update(self.meta)
        return out


@dataclass(frozen=True)
class Reader:
    format: str
    family: str
    extensions: tuple[str, ...]
    read: Callable[..., Instance]
    sniff: Callable[[str, str], bool] | None = None  # (path, first ~4 KiB of text) -> bool
    description: str = ""
    params: tuple[str, ...] = ()  # keyword parameters ``read`` takes (e.g. ("k",) for point files)
    # path -> what ``solvopt info`` shows when ``read`` needs a parameter the user did not give
    peek: Callable[[str], dict] | None = None


_READERS: dict[str, Reader] = {}
_LOAD_FAILURES: list[str] = []  # "module: reason" of reader modules that failed to import


def register_reader(reader: Reader) -> Reader:
    _READERS[reader.format] = reader
    return reader


def readers() -> list[Reader]:
    """Every registered reader (``import solvopt.io`` has loaded the built-in ones)."""
    return list(_READERS.values())


def load_reader_modules(orphans: tuple[str, ...] = ()) -> list[str]:
    """Import every family's reader modules and ``orphans``, guarded; failures are kept.

    A reader module that fails to import registers nothing; its ``"module: reason"`` is kept
    and shown when a file's format cannot be detected (see :func:`reader_load_failures`).
    """
    failures = load_readers()
    for name in orphans:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    _LOAD_FAILURES[:] = failures
    return list(failures)


def reader_load_failures() -> list[str]:
    """``"module: reason"`` of the reader modules that failed to import."""
    return list(_LOAD_FAILURES)


def instance_name(path: str) -> str:
    """The file name without folders and without its (possibly double, e.g. ``.mps.gz``) extension."""
    name = os.path.basename(path)
    for ext in (".gz", ".bz2"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
    return os.path.splitext(name)[0]


MAX_JSON_DEPTH = 100  # instance files nest a few levels; deeper is refused before code walks it
MAX_JSON_INT_DIGITS = 300  # a longer integer literal is read as a float (inf beyond 1e308: refused as non-finite)


class JsonSyntaxError(InstanceFormatError):
    """Broken JSON: ``FILE:LINE:COLUMN: not valid JSON: what the parser expected``."""

    def __init__(self, path, line: int, column: int, message: str):
        super().__init__(path, line, message)
        self.column = column
        self.args = (f"{self.path}:{line}:{column}: {message}",)


def _json_int(text: str):
    return int(text) if len(text.lstrip("-")) <= MAX_JSON_INT_DIGITS else float(text)


def load_json(path: str, max_depth: int = MAX_JSON_DEPTH):
    """Parse a JSON instance file; every way it can be malformed is one :class:`InstanceFormatError`.

    Broken JSON names the line and column (:class:`JsonSyntaxError`); a file that is not UTF-8
    names the line of the first bad byte; nesting deeper than ``max_depth`` is refused (deeper
    than the parser's recursion limit included), so no code that walks the data recurses far.
    An integer literal of more than ``MAX_JSON_INT_DIGITS`` digits is read as a float (inf when
    out of range). NaN / Infinity literals are parsed (as Python's ``json`` does); the caller
    refuses them.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InstanceFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InstanceFormatError(path, line, f"not a UTF-8 text file ({exc.reason})") from None
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise JsonSyntaxError(path, exc.lineno, exc.colno, f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InstanceFormatError(path, None, f"JSON nested too deeply; at most {max_depth} levels are accepted") \
            from None
    except ValueError as exc:  # e.g. a number the parser refuses
        raise InstanceFormatError(path, None, f"not valid JSON: {exc}") from None
    depth = json_depth(data)
    if depth > max_depth:
        raise InstanceFormatError(path, None, f"JSON nested {depth} levels deep; at most {max_depth} are accepted")
    return data


def json_depth(value) -> int:
    """How deeply ``value`` (parsed JSON) nests lists and objects (0 for a scalar), without recursion."""
    best, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        best = max(best, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return best


def _head(path: str, nbytes: int = 4096) -> str:
    with open(path, "rb") as fh:
        raw = fh.read(nbytes)
    return raw.decode("utf-8", errors="replace")


def detect_format(path: str) -> Reader:
    """Pick the reader: by content sniffing among readers claiming the extension, then any."""
    all_readers = readers()
    if not os.path.exists(path):
        raise InstanceFormatError(path, None, "no such file")
    if os.path.isdir(path):
        raise InstanceFormatError(path, None, "is a directory, expected an instance file")
    lower = path.lower()
    by_ext = [r for r in all_readers if any(lower.endswith(e) for e in r.extensions)]
    try:
        head = _head(path)
    except OSError as exc:
        raise InstanceFormatError(path, None, f"cannot read: {exc.strerror}") from None
    for r in by_ext:
        if r.sniff is None or r.sniff(path, head):
            return r
    for r in all_readers:
        if r not in by_ext and r.sniff is not None and r.sniff(path, head):
            return r
    known = ", ".join(sorted({e for r in all_readers for e in r.extensions}))
    failed = f" (some readers failed to load: {'; '.join(_LOAD_FAILURES)})" if _LOAD_FAILURES else ""
    raise InstanceFormatError(path, None, f"cannot detect the instance format (known extensions: {known}){failed}")


def read_instance(path: str | os.PathLike, format: str | None = None, **params) -> Instance:
    """Read an instance file; ``format`` overrides detection; ``params`` go to the reader."""
    path = os.fspath(path)
    if format is None:
        reader = detect_format(path)
    else:
        readers()
        if format not in _READERS:
            raise ModelError(f"unknown instance format {format!r}; known: {', '.join(sorted(_READERS))}")
        reader = _READERS[format]
        if not os.path.exists(path):
            raise InstanceFormatError(path, None, "no such file")
    unknown = sorted(set(params) - set(reader.params))
    if unknown:
        raise ModelError(f"{reader.format} files take no parameter {', '.join(unknown)}"
                         + (f" (they take: {', '.join(reader.params)})" if reader.params else ""))
    try:
        return reader.read(path, **params)
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8 where a reader (or HiGHS's names) wanted text
        raise InstanceFormatError(path, None, f"not UTF-8 text: byte {exc.object[exc.start:exc.start + 1]!r} "
                                              f"({exc.reason})") from None


class LineReader:
    """Iterate over the non-blank lines of a text file, keeping 1-based line numbers for errors."""

    def __init__(self, path: str, comment: str | None = None):
        self.path = path
        with open(path, "rb") as fh:
            raw = fh.read()
        try:
            text = raw.decode("utf-8-sig")  # a leading byte-order mark (spreadsheet exports) is dropped
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise InstanceFormatError(path, line, f"not a UTF-8 text file ({exc.reason})") from None
        if "\x00" in text:
            line = text.count("\n", 0, text.index("\x00")) + 1
            raise InstanceFormatError(path, line, "binary data (NUL byte) in a text file")
        self.lines: list[tuple[int, str]] = []
        for no, content in enumerate(text.splitlines(), start=1):
            if comment is not None and comment in content:
                content = content[: content.index(comment)]
            if content.strip():
                self.lines.append((no, content.strip()))
        self.pos = 0
        self.last_line = len(text.splitlines())

    def error(self, message: str, line: int | None = None) -> InstanceFormatError:
        if line is None:
            line = self.lines[self.pos - 1][0] if 0 < self.pos <= len(self.lines) else self.last_line
        return InstanceFormatError(self.path, line, message)

    def at_end(self) -> bool:
        return self.pos >= len(self.lines)

    def next(self, expected: str) -> tuple[int, str]:
        """The next non-blank line, or an error saying the file ended where ``expected`` was due."""
        if self.at_end():
            raise InstanceFormatError(self.path, self.last_line + 1 if self.last_line else 1,
                                      f"unexpected end of file, expected {expected}")
        item = self.lines[self.pos]
        self.pos += 1
        return item

    def peek(self) -> tuple[int, str] | None:
        return None if self.at_end() else self.lines[self.pos]


@overload
def parse_number(token: str, path: str, line: int, what: str, integer: Literal[True],
                 allow_nonfinite: bool = False) -> int: ...
@overload
def parse_number(token: str, path: str, line: int, what: str, integer: Literal[False] = False,
                 allow_nonfinite: bool = False) -> float: ...
@overload
def parse_number(token: str, path: str, line: int, what: str, integer: bool = False,
                 allow_nonfinite: bool = False) -> float | int: ...
def parse_number(token: str, path: str, line: int, what: str, integer: bool = False,
                 allow_nonfinite: bool = False) -> float | int:
    """Parse one token as a number (int when ``integer``); NaN/inf are errors unless allowed."""
    try:
        value = int(token) if integer else float(token)
    except ValueError:
        if integer:
            f: float | None
            try:
                f = float(token)
            except ValueError:
                f = None
            if f is not None and f.is_integer():
                return int(f)
        kind = "an integer" if integer else "a number"
        raise InstanceFormatError(path, line, f"expected {kind} for {what}, got {token!r}") from None
    if not integer and not allow_nonfinite and not math.isfinite(value):
        raise InstanceFormatError(path, line, f"{what} must be finite, got {token!r}")
    return value
