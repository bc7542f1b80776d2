"""LP/MILP/QP model files (``.mps``, ``.mps.gz``, ``.qps``, ``.lp``) read by HiGHS into a StandardForm.

HiGHS parses the file; we convert its model (column-wise matrix, lower-triangular Hessian)
into :class:`solvopt.dsl.standard_form.StandardForm`, and back for writing (used by
``solvopt convert``). HiGHS' free-MPS parser reads a non-numeric value as 0 without a word,
and drops entries that name an undefined row (inventing a column for an undefined bound), so
MPS files are first scanned for non-numeric and NaN values, undefined names and data lines too
short to be one (HiGHS' readModel never returns on a COLUMNS line of one or two tokens), which are
reported with their line; an LP file with nothing but comments is refused (HiGHS reads it as an
empty model). HiGHS is created through :func:`solvopt.dsl.highs_export.new_highs` so that its
banner never reaches stdout (the CLI prints JSON there).
"""
from __future__ import annotations

import gzip
import os
import tempfile
import warnings

import numpy as np
import scipy.sparse as sp

from ..core.errors import InstanceFormatError, ModelError
from ..dsl.highs_export import highspy_module, load_standard_form, new_highs
from ..io.base import Instance, Reader, instance_name, register_reader
from ..io.convert import register_writer

MPS_EXTENSIONS = (".mps", ".mps.gz", ".qps", ".qps.gz")
# Sections whose data lines end in numbers, and which of those numbers may be infinite.
_NUMERIC_SECTIONS = {"COLUMNS": False, "RHS": True, "RANGES": True, "BOUNDS": True,
                     "QUADOBJ": False, "QMATRIX": False, "QSECTION": False}
_BOUND_TYPES_WITH_VALUE = {"UP", "LO", "FX", "LI", "UI", "SC"}
# The fewest whitespace-separated tokens a data line of a section has (fixed-format names with
# spaces only add tokens), and what the line holds.
_FEWEST_TOKENS = {"ROWS": 2, "COLUMNS": 3, "RHS": 2, "RANGES": 2, "BOUNDS": 2}
_SHAPES = {"ROWS": "a row type and a name", "COLUMNS": "a column, a row and a value (or a MARKER line)",
           "RHS": "a row and a value", "RANGES": "a row and a value", "BOUNDS": "a bound type and a column"}


def _highspy():
    return highspy_module("reading or writing MPS/LP files")


def quiet_highs():
    """A ``highspy.Highs`` that prints nothing on stdout (:func:`solvopt.dsl.highs_export.new_highs`)."""
    _highspy()
    return new_highs()


# --- MPS value check --------------------------------------------------------------------------
def _open_text(path: str):
    opener = gzip.open if path.lower().endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8", errors="replace")


def _value_positions(section: str, tokens: list[str]) -> list[int]:
    """Which tokens of an MPS data line are numbers (empty when the line's layout is unclear)."""
    n = len(tokens)
    if section == "COLUMNS":
        if any("MARKER" in t for t in tokens):
            return []
        return {3: [2], 5: [2, 4]}.get(n, [])
    if section in ("RHS", "RANGES"):
        return {2: [1], 3: [2], 4: [1, 3], 5: [2, 4]}.get(n, [])
    if section == "BOUNDS":
        return [3] if n == 4 and tokens[0].upper() in _BOUND_TYPES_WITH_VALUE else []
    return [2] if n == 3 else []


def _bound_column(tokens: list[str]) -> str | None:
    """The column a BOUNDS line names (with or without a bound-set name), None when unclear."""
    n, kind = len(tokens), tokens[0].upper()
    if n == 4:
        return tokens[2]
    if n == 3:
        return tokens[1] if kind in _BOUND_TYPES_WITH_VALUE else tokens[2]
    if n == 2 and kind not in _BOUND_TYPES_WITH_VALUE:
        return tokens[1]
    return None


def check_mps_values(path: str) -> None:
    """Raise InstanceFormatError (with the line) where HiGHS would read a different model than the file's.

    A non-numeric or NaN value (HiGHS reads it as 0 or keeps the NaN), an entry naming a row
    that ROWS does not define or a bound on a column that COLUMNS does not define (HiGHS drops
    the one and invents a column for the other, with a warning at most), binary data, or a file
    that ends before ``ENDATA``. Names are checked only while every ROWS / COLUMNS line has the
    plain whitespace-separated layout (fixed-format names with spaces are left to HiGHS).
    """
    section, no = "", 0                   # "": before the first section header
    rows: set[str] = set()
    columns: set[str] = set()
    rows_clear = columns_clear = True
    try:
        with _open_text(path) as fh:
            for no, line in enumerate(fh, start=1):
                if "\x00" in line:  # (non-UTF-8 names are left to HiGHS)
                    raise InstanceFormatError(path, no, "binary data in an MPS text file")
                if not line.strip() or line.startswith("*"):
                    continue
                if not line[0].isspace():
                    section = line.split()[0].upper()
                    if section == "ENDATA":
                        return
                    continue
                tokens = line.split()
                if len(tokens) < _FEWEST_TOKENS.get(section, 0):  # HiGHS loops forever on a 1-2 token COLUMNS line
                    raise InstanceFormatError(path, no, f"{section} line too short: expected {_SHAPES[section]}, "
                                                        f"got {line.strip()!r}")
                if section == "ROWS":
                    if len(tokens) == 2:
                        rows.add(tokens[1])
                    else:
                        rows_clear = False
                    continue
                if section not in _NUMERIC_SECTIONS:
                    continue
                positions = _value_positions(section, tokens)
                if section == "COLUMNS":
                    if positions:
                        columns.add(tokens[0])
                    elif not any("MARKER" in t for t in tokens):
                        columns_clear = False
                for pos in positions:
                    token = tokens[pos]
                    try:
                        value = float(token)
                    except ValueError:
                        raise InstanceFormatError(path, no, f"expected a number in {section}, got {token!r}") from None
                    if np.isnan(value) or (np.isinf(value) and not _NUMERIC_SECTIONS[section]):
                        raise InstanceFormatError(path, no, f"{section} value must be finite, got {token!r}")
                    if section in ("COLUMNS", "RHS", "RANGES") and rows_clear and tokens[pos - 1] not in rows:
                        raise InstanceFormatError(path, no, f"{section} entry names row {tokens[pos - 1]!r}, "
                                                            f"which ROWS does not define")
                if section == "BOUNDS" and columns_clear:
                    column = _bound_column(tokens)
                    if column is not None and column not in columns:
                        raise InstanceFormatError(path, no, f"BOUNDS entry names column {column!r}, "
                                                            f"which COLUMNS does not define")
    except (OSError, EOFError) as exc:  # e.g. a truncated or non-gzip .gz
        raise InstanceFormatError(path, None, f"cannot read: {exc}") from None
    raise InstanceFormatError(path, no + 1, "unexpected end of file, expected ENDATA (the file is truncated)")


def check_lp_text(path: str) -> None:
    """An LP file must state something: one with nothing but blanks and comments is an error.

    (HiGHS reads such a file as an empty model, which would "solve" as optimal 0.)
    """
    try:
        with _open_text(path) as fh:
            for line in fh:
                text = line.split("\\", 1)[0].strip()   # a backslash starts a comment
                if text:
                    return
    except (OSError, EOFError) as exc:
        raise InstanceFormatError(path, None, f"cannot read: {exc}") from None
    raise InstanceFormatError(path, 1, "empty LP file: expected an objective section (minimize or maximize)")


# --- HiGHS <-> StandardForm -------------------------------------------------------------------
def _with_highs_log(h, action) -> tuple[bool, list[str]]:
    """Run ``action`` (returns success) with HiGHS logging into a temporary file, not the console.

    Returns (success, HiGHS' messages) so that errors can name HiGHS' reason and warnings
    (e.g. "duplicate nonzero ... ignored") are not lost.
    """
    fd, log = tempfile.mkstemp(suffix=".log")
    os.close(fd)
    try:
        h.setOptionValue("output_flag", True)
        h.setOptionValue("log_to_console", False)
        h.setOptionValue("log_file", log)
        try:
            ok = action()
        finally:
            h.setOptionValue("log_file", "")
            h.setOptionValue("output_flag", False)
        with open(log, errors="replace") as fh:
            messages = [line.strip() for line in fh if line.strip()]
    finally:
        os.unlink(log)
    return ok, messages


def _messages(messages: list[str], level: str) -> list[str]:
    return [m[len(level) + 1:].strip() for m in messages if m.startswith(level + ":")]


def highs_to_standard_form(h, path: str = "<model>"):
    """The model held by a ``highspy.Highs`` as a StandardForm (A in CSR, Q symmetric)."""
    from solvopt.dsl.standard_form import StandardForm
    highspy = _highspy()
    model = h.getModel()
    lp = model.lp_
    n, m = int(lp.num_col_), int(lp.num_row_)
    a = lp.a_matrix_
    start, index, value = (np.asarray(a.start_, dtype=np.int64), np.asarray(a.index_, dtype=np.int64),
                           np.asarray(a.value_, dtype=np.float64))
    if a.format_ == highspy.MatrixFormat.kRowwise:
        A = sp.csr_matrix((value, index, start), shape=(m, n))
    else:
        A = sp.csc_matrix((value, index, start), shape=(m, n)).tocsr()
    A.sum_duplicates()
    integrality = np.zeros(n, dtype=np.int8)
    if len(lp.integrality_):
        kinds = np.array([int(v) for v in lp.integrality_], dtype=np.int8)
        semi = np.flatnonzero(kinds >= 2)
        if semi.size:
            raise InstanceFormatError(path, None, f"semi-continuous/semi-integer variables are not supported "
                                                  f"(column {semi[0]})")
        integrality = kinds
    Q = _hessian(model.hessian_, n, highspy)
    names = list(lp.col_names_) if len(lp.col_names_) == n and n else None
    row_names = list(lp.row_names_) if len(lp.row_names_) == m and m else None
    sf = StandardForm(c=np.asarray(lp.col_cost_, dtype=np.float64), A=A,
                      row_lower=np.asarray(lp.row_lower_, dtype=np.float64),
                      row_upper=np.asarray(lp.row_upper_, dtype=np.float64),
                      col_lower=np.asarray(lp.col_lower_, dtype=np.float64),
                      col_upper=np.asarray(lp.col_upper_, dtype=np.float64),
                      integrality=integrality, Q=Q, offset=float(lp.offset_), sense=int(lp.sense_),
                      var_names=names, row_names=row_names)
    _check_finite(path, sf)
    return sf


def _hessian(hessian, n: int, highspy) -> sp.csr_matrix | None:
    """HiGHS stores the lower triangle of Q column-wise (or the full square); return full symmetric Q."""
    if int(hessian.dim_) == 0 or len(hessian.value_) == 0:
        return None
    H = sp.csc_matrix((np.asarray(hessian.value_, dtype=np.float64), np.asarray(hessian.index_, dtype=np.int64),
                       np.asarray(hessian.start_, dtype=np.int64)), shape=(n, n))
    if hessian.format_ == highspy.HessianFormat.kSquare:
        Q = 0.5 * (H + H.T)
    else:
        lower = sp.tril(H)
        Q = lower + sp.tril(lower, k=-1).T
    Q = sp.csr_matrix(Q)
    Q.eliminate_zeros()
    return Q


def _check_finite(path: str, sf) -> None:
    """NaN anywhere, or an infinite cost/coefficient, is a malformed model (HiGHS lets them through)."""
    for what, values in (("objective coefficient", sf.c), ("constraint coefficient", sf.A.data),
                         ("quadratic coefficient", sf.Q.data if sf.Q is not None else np.empty(0))):
        if not np.all(np.isfinite(values)):
            raise InstanceFormatError(path, None, f"every {what} must be finite")
    for what, values in (("row bound", np.r_[sf.row_lower, sf.row_upper]),
                         ("column bound", np.r_[sf.col_lower, sf.col_upper])):
        if np.any(np.isnan(values)):
            raise InstanceFormatError(path, None, f"a {what} is NaN")
    if not np.isfinite(sf.offset):
        raise InstanceFormatError(path, None, "the objective offset must be finite")


def standard_form_to_highs(sf, h=None):
    """Load a StandardForm into a (new, quiet) ``highspy.Highs`` for writing, with its names.

    HiGHS writes models it cannot solve (MIQPs); quadratic constraints are refused.
    """
    h = quiet_highs() if h is None else h
    load_standard_form(h, sf, keep_names=True)
    return h


# --- the readers ----------------------------------------------------------------------------------
def read_model_file(path: str) -> Instance:
    """Read an MPS/LP file with HiGHS; data = {"standard_form": StandardForm}."""
    highspy = _highspy()
    lower = path.lower()
    is_lp = lower.endswith(".lp")
    if is_lp:
        check_lp_text(path)
    else:
        check_mps_values(path)
    h = quiet_highs()
    ok, messages = _with_highs_log(h, lambda: h.readModel(path) == highspy.HighsStatus.kOk)
    if not ok:
        reason = "; ".join(_messages(messages, "ERROR") or messages) or "no reason given"
        raise InstanceFormatError(path, None, f"HiGHS could not read the model: {reason}")
    highs_warnings = _messages(messages, "WARNING")
    dropped = [m for m in highs_warnings if "not defined" in m]
    if dropped:  # HiGHS would solve a model without these entries: not the file's model
        raise InstanceFormatError(path, None, f"HiGHS: {dropped[0]}")
    for message in highs_warnings:  # HiGHS reads on but may have dropped data: say so
        warnings.warn(f"{path}: HiGHS: {message}", stacklevel=2)
    sf = highs_to_standard_form(h, path)
    meta = {"variables": sf.num_vars, "rows": sf.num_rows, "nonzeros": int(sf.A.nnz), "kind": sf.kind,
            "integer_variables": int(np.count_nonzero(sf.integrality))}
    if highs_warnings:
        meta["warnings"] = highs_warnings
    return Instance(family="lp", format="lp" if is_lp else "mps", name=instance_name(path), path=path,
                    data={"standard_form": sf}, meta=meta)


def write_model_file(sf, path: str) -> None:
    """Write a StandardForm as ``.mps`` or ``.lp`` (HiGHS picks the format from the extension)."""
    highspy = _highspy()
    h = standard_form_to_highs(sf)
    ok, messages = _with_highs_log(h, lambda: h.writeModel(path) != highspy.HighsStatus.kError)
    if not ok:
        raise ModelError(f"HiGHS could not write {path}: {'; '.join(_messages(messages, 'ERROR') or messages)}")


def write_instance(instance: Instance, path: str) -> None:
    """``solvopt convert`` to ``.mps`` / ``.lp``: the instance's StandardForm written by HiGHS."""
    write_model_file(instance.data["standard_form"], path)


MPS_READER = register_reader(Reader(
    format="mps", family="lp", extensions=MPS_EXTENSIONS, read=read_model_file,
    description="LP/MILP/QP model in (free) MPS or QPS, read by HiGHS"))
LP_READER = register_reader(Reader(
    format="lp", family="lp", extensions=(".lp",), read=read_model_file,
    description="LP/MILP/QP model in CPLEX LP format, read by HiGHS"))
register_writer("lp", ".mps", write_instance)
register_writer("lp", ".lp", write_instance)
