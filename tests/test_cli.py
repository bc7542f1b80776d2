"""The command line: one-line errors without tracebacks, JSON output, methods, info."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linprog

from solvopt.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write_lp_mps(path):
    """A small LP written by HiGHS itself, plus its optimum computed independently by linprog."""
    highspy = pytest.importorskip("highspy")
    c = np.array([-3.0, -5.0, 0.0])
    A = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [3.0, 2.0, 0.0]])
    ub = np.array([4.0, 12.0, 18.0])
    h = highspy.Highs()
    h.silent()
    for j in range(3):
        h.addVar(0.0, highspy.kHighsInf)
        h.changeColCost(j, c[j])
    for i in range(3):
        nz = np.nonzero(A[i])[0]
        h.addRow(-highspy.kHighsInf, ub[i], len(nz), nz.astype(np.int32), A[i, nz])
    h.writeModel(str(path))
    ref = linprog(c, A_ub=A, b_ub=ub, bounds=[(0, None)] * 3, method="highs")
    return ref.fun


def test_solve_mps_json_matches_linprog(tmp_path, capsys):
    mps = tmp_path / "small.mps"
    expected = _write_lp_mps(mps)
    code, out, err = _run(capsys, "solve", str(mps), "--json")
    assert code == 0, err
    record = json.loads(out.strip().splitlines()[0])
    assert record["termination"] == "optimal" and record["solution_status"] == "optimal"
    assert record["objective"] == pytest.approx(expected, rel=1e-9)
    assert record["instance"] == "small" and record["family"] == "lp"


def test_solve_writes_out_dir_and_table(tmp_path, capsys):
    mps = tmp_path / "small.mps"
    _write_lp_mps(mps)
    code, out, err = _run(capsys, "solve", str(mps), str(mps), "--out", str(tmp_path / "res"))
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split()[:4] == ["instance", "family", "method", "termination"] and len(lines) == 3
    saved = json.loads((tmp_path / "res" / "small.json").read_text())
    assert "x" in saved["solution"]


@pytest.mark.parametrize("argv, pattern", [
    (["solve", "/no/such/file.mps"], "no such file"),
    (["info", "/no/such/file.vrp"], "no such file"),
    (["solve", "{tmp}/junk.xyz"], "cannot detect the instance format"),
    (["methods", "--family", "no-such-family"], "unknown family"),
])
def test_user_errors_are_one_line_and_nonzero(tmp_path, capsys, argv, pattern):
    (tmp_path / "junk.xyz").write_text("hello\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = _run(capsys, *argv)
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and pattern in err and "Traceback" not in err


def test_bad_option_value_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["solve", "x.mps", "--time-limit", "-3"])
    assert exc.value.code == 2


def test_family_flag_not_accepted_by_lp(tmp_path, capsys):
    mps = tmp_path / "small.mps"
    _write_lp_mps(mps)
    code, out, err = _run(capsys, "solve", str(mps), "--scenarios", "10")
    assert code == 1 and "--scenarios" in err


def test_methods_lists_lp_backends_with_availability(capsys):
    code, out, err = _run(capsys, "methods", "--json")
    assert code == 0
    rows = json.loads(out)
    lp = {r["method"]: r for r in rows if r["family"] == "lp"}
    assert "highs" in lp and lp["highs"]["availability"] == "available" and lp["highs"]["default"]
    assert {"scip", "gurobi"} <= set(lp)


def test_console_script_entry_point_runs(tmp_path):
    mps = tmp_path / "small.mps"
    _write_lp_mps(mps)
    proc = subprocess.run([sys.executable, "-m", "solvopt.cli", "info", str(mps), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["family"] == "lp" and info["format"] == "mps"


def test_k_flag_on_a_non_khc_instance_is_an_error(capsys, samples):
    vrp = samples / "cvrp" / "X-n101-k25.vrp"
    code, out, err = _run(capsys, "solve", str(vrp), "--k", "3")
    assert code == 1 and "--k" in err and "Traceback" not in err


def test_info_with_k_on_a_file_that_takes_none_is_an_error(capsys, samples):
    code, out, err = _run(capsys, "info", str(samples / "cvrp" / "X-n101-k25.vrp"), "--k", "3")
    assert code == 1 and "take no parameter k" in err
    code, out, err = _run(capsys, "info", str(samples / "khc" / "sr_10_2_2_1022.dat"), "--k", "3", "--json")
    assert code == 0 and json.loads(out)["k"] == 3


def test_family_override_that_does_not_fit_the_file_is_one_line(capsys, samples):
    code, out, err = _run(capsys, "solve", str(samples / "lp" / "knapsack.mps"), "--family", "khc")
    assert code == 1 and "--family khc cannot solve it" in err and "Traceback" not in err
