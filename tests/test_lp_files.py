"""MPS / LP files of the lp family: entries HiGHS would drop are errors with the line; clean CLI output."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from solvopt.cli import main
from solvopt.core.errors import InstanceFormatError
from solvopt.io import read_instance

GOOD = """NAME          GOOD
ROWS
 N  obj
 L  c1
 G  c2
COLUMNS
    MARKER                 'MARKER'                 'INTORG'
    x         obj       1.0        c1        1.0
    x         c2        1.0
    MARKER                 'MARKER'                 'INTEND'
    y         obj       -1.0       c1        1.0
RHS
    rhs       c1        4.0        c2        1.0
    rhs       obj       -2.0
RANGES
    rng       c1        2.0
BOUNDS
 UP bnd       x         3.0
 MI bnd       y
ENDATA
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _fails_at(path, line, words):
    with pytest.raises(InstanceFormatError) as info:
        read_instance(path)
    assert info.value.path == path and info.value.line == line, str(info.value)
    assert words in str(info.value)
    return info.value


def test_the_good_file_reads_and_solves(tmp_path):
    inst = read_instance(_write(tmp_path, "good.mps", GOOD))
    sf = inst.data["standard_form"]
    assert (sf.num_vars, sf.num_rows, sf.kind) == (2, 2, "milp") and "warnings" not in inst.meta


@pytest.mark.parametrize("old, new, line, words", [
    ("    x         c2        1.0\n", "    x         c9        1.0\n", 9, "COLUMNS entry names row 'c9'"),
    ("    x         obj       1.0        c1        1.0\n", "    x         obj       1.0        cc        1.0\n", 8,
     "COLUMNS entry names row 'cc'"),
    ("    rhs       c1        4.0        c2        1.0\n", "    rhs       c1        4.0        c3        1.0\n", 13,
     "RHS entry names row 'c3'"),
    ("    rng       c1        2.0\n", "    rng       r1        2.0\n", 16, "RANGES entry names row 'r1'"),
    (" UP bnd       x         3.0\n", " UP bnd       z         3.0\n", 18, "BOUNDS entry names column 'z'"),
    (" MI bnd       y\n", " MI bnd       w\n", 19, "BOUNDS entry names column 'w'"),
])
def test_mps_entries_naming_undefined_rows_or_columns_name_the_line(tmp_path, old, new, line, words):
    assert old in GOOD
    path = _write(tmp_path, "bad.mps", GOOD.replace(old, new))
    _fails_at(path, line, words)


def test_mps_undefined_row_on_the_cli_is_one_line_and_exit_1(tmp_path, capsys):
    path = _write(tmp_path, "bad.mps", GOOD.replace(" c2        1.0\n", " c7        1.0\n", 1))
    code = main(["solve", path, "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and f"{path}:9:" in err and "'c7'" in err


@pytest.mark.parametrize("text", ["", "\n\n", "\\ only a comment\n   \\ and another\n"])
def test_an_empty_lp_file_is_an_error_not_optimal_zero(tmp_path, text):
    _fails_at(_write(tmp_path, "empty.lp", text), 1, "empty LP file")


def test_an_explicit_empty_lp_model_still_reads(tmp_path):
    inst = read_instance(_write(tmp_path, "e.lp", "Minimize\n obj: \nEnd\n"))
    assert inst.data["standard_form"].num_vars == 0


@pytest.mark.parametrize("method", ["highs", "scip"])
def test_progress_json_stdout_holds_only_json_lines(tmp_path, method):
    if method == "scip":
        pytest.importorskip("pyscipopt")
    path = _write(tmp_path, "good.mps", GOOD)
    proc = subprocess.run([sys.executable, "-m", "solvopt.cli", "solve", path, path, "--progress", "--json",
                           "--method", method], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["termination"] == "optimal" for line in lines)
    assert f"] {method}: " in proc.stderr   # the backend's progress went to stderr
