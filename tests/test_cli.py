"""The command line: one-line errors without tracebacks, JSON output, methods, info."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linprog

from solvopt.cli import main
from solvopt.core.result import Result


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


# --- results readable without solvopt (solvopt.io.results) -------------------------------------
def _no_wrappers(obj):
    """True when ``obj`` (parsed JSON) holds no solvopt-specific wrapper."""
    if isinstance(obj, dict):
        return not ({"__ndarray__", "__sparse__", "dtype"} & set(obj)) and all(_no_wrappers(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_no_wrappers(v) for v in obj)
    return True


def test_plain_converts_arrays_sparse_and_non_finite_floats():
    import scipy.sparse as sp

    from solvopt.core.result import Termination
    from solvopt.io.results import plain
    assert plain(np.arange(6).reshape(3, 2)) == [[0, 1], [2, 3], [4, 5]]
    assert plain(np.array([[1.5, np.inf], [-np.inf, np.nan]])) == [[1.5, "inf"], ["-inf", "nan"]]
    assert plain({"t": Termination.OPTIMAL, "b": np.bool_(True), "i": np.int64(3), "f": np.float32(0.5)}) == \
        {"t": "optimal", "b": True, "i": 3, "f": 0.5}
    m = sp.csr_matrix(np.array([[0, 2.0], [3.0, 0]]))
    assert plain(m) == {"row": [0, 1], "col": [1, 0], "data": [2.0, 3.0], "shape": [2, 2]}
    assert plain((float("inf"), np.float64(-np.inf))) == ["inf", "-inf"]
    assert json.dumps(plain([-0.0, np.array([-0.0, 1.0])])) == "[0.0, [0.0, 1.0]]"
    json.dumps(plain(np.array([np.nan])), allow_nan=False)


def test_write_result_khc_is_plain_json_with_the_solution_as_lists(tmp_path, samples):
    from solvopt.dsl import HyperplaneClustering
    from solvopt.io import read_instance
    from solvopt.io.results import write_result
    inst = read_instance(samples / "khc" / "sr_10_2_2_1022.dat")
    r = HyperplaneClustering(inst.data["points"], inst.data["k"]).solve("brute-force")
    (path,) = write_result(tmp_path / "out", {"instance": inst.name, "path": inst.path}, r)
    doc = json.loads(open(path).read())
    assert _no_wrappers(doc)
    assert doc["instance"] == "sr_10_2_2_1022" and doc["termination"] == "optimal"
    assert doc["objective"] == pytest.approx(r.objective)
    assert doc["solution"]["assignment"] == np.asarray(r.solution["assignment"]).tolist()
    for key, value in r.solution.items():  # every array comes back as the same numbers in nested lists
        if isinstance(value, np.ndarray):
            assert np.array_equal(np.asarray(doc["solution"][key]), value), key
    # to_dict() is the same plain document, and from_dict gives the arrays back
    assert r.to_dict()["solution"]["assignment"] == doc["solution"]["assignment"]
    back = Result.from_dict(doc)
    assert isinstance(back.solution["assignment"], np.ndarray)
    assert np.array_equal(back.solution["assignment"], r.solution["assignment"])


def _read_sol(path):
    """An independent reader of the CVRPLIB .sol text."""
    routes, cost = [], None
    for line in open(path).read().splitlines():
        if line.startswith("Route #"):
            routes.append([int(t) for t in line.split(":", 1)[1].split()])
        elif line.startswith("Cost "):
            cost = float(line.split()[1])
    return routes, cost


def _split_result(samples):
    from solvopt.dsl import Split
    from solvopt.io import read_instance
    inst = read_instance(samples / "cvrp" / "X-n101-k25.vrp")
    return inst, Split.from_instance(inst).solve()


def test_write_result_split_writes_a_vrplib_solution(tmp_path, samples):
    from solvopt.io.results import write_result
    inst, r = _split_result(samples)
    paths = write_result(tmp_path, {"instance": inst.name, "path": inst.path}, r)
    assert [p.rsplit(".", 1)[1] for p in paths] == ["json", "sol"]
    routes, cost = _read_sol(paths[1])
    assert routes == [list(map(int, rt)) for rt in r.solution["routes"]] and cost == pytest.approx(r.objective)
    assert sorted(c for rt in routes for c in rt) == list(range(1, 101))  # each customer once
    # solvopt's own reader and (when installed) vrplib read it back
    from solvopt.io import read_instance
    back = read_instance(paths[1])
    assert back.data["routes"] == routes and back.data["cost"] == pytest.approx(r.objective)
    doc = json.loads(open(paths[0]).read())
    assert _no_wrappers(doc) and doc["solution"]["routes"] == routes


def test_vrplib_solution_is_the_same_with_or_without_the_vrplib_package(tmp_path, samples, monkeypatch):
    from solvopt.io.results import write_vrplib_solution
    _, r = _split_result(samples)
    monkeypatch.setitem(sys.modules, "vrplib", None)  # import vrplib -> ImportError: our writer
    write_vrplib_solution(str(tmp_path / "ours.sol"), r.solution["routes"], r.objective)
    monkeypatch.undo()
    vrplib = pytest.importorskip("vrplib")
    write_vrplib_solution(str(tmp_path / "theirs.sol"), r.solution["routes"], r.objective)
    assert (tmp_path / "ours.sol").read_text() == (tmp_path / "theirs.sol").read_text()
    parsed = vrplib.read_solution(str(tmp_path / "ours.sol"))
    assert parsed["routes"] == [list(map(int, rt)) for rt in r.solution["routes"]]
    assert parsed["cost"] == pytest.approx(r.objective)


def test_write_result_lp_names_the_columns(tmp_path, samples):
    from solvopt.core.family import get_family
    from solvopt.io import read_instance
    from solvopt.io.results import write_result
    inst = read_instance(samples / "lp" / "knapsack.mps")
    r = get_family("lp").build_model(inst).solve()
    (path,) = write_result(tmp_path, {"instance": inst.name, "path": inst.path}, r, inst)
    doc = json.loads(open(path).read())
    names = inst.data["standard_form"].var_names
    assert _no_wrappers(doc) and list(doc["solution"]["columns"]) == list(names)
    assert [doc["solution"]["columns"][n] for n in names] == pytest.approx(np.asarray(r.solution["x"]))


def test_write_result_non_finite_values_are_strings(tmp_path):
    from solvopt.core.result import Result, SolutionStatus, Termination
    from solvopt.io.results import write_result
    r = Result(Termination.UNBOUNDED, SolutionStatus.NONE, objective=-np.inf, bound=None, gap=np.inf,
               solution={"ray": np.array([1.0, np.nan])}, family="lp", method="highs")
    (path,) = write_result(tmp_path, {"instance": "u", "path": "u.lp"}, r)
    text = open(path).read()
    doc = json.loads(text)
    assert doc["objective"] == "-inf" and doc["gap"] == "inf" and doc["solution"]["ray"] == [1.0, "nan"]
    assert "NaN" not in text and "Infinity" not in text


def test_cli_out_writes_plain_json_and_a_sol_file(tmp_path, capsys, samples):
    code, out, err = _run(capsys, "solve", str(samples / "cvrp" / "X-n101-k25.vrp"), "--out", str(tmp_path))
    assert code == 0, err
    assert _no_wrappers(json.loads((tmp_path / "X-n101-k25.json").read_text()))
    assert _read_sol(tmp_path / "X-n101-k25.sol")[0]


# --- gaps print sensibly -------------------------------------------------------------------------
@pytest.mark.parametrize("gap, text", [(None, "-"), (0.0, "0%"), (2.4e-14, "0%"), (9.9e-10, "0%"),
                                       (1e-6, "0.0001%"), (0.0123456, "1.23%"), (0.5, "50%"),
                                       (float("inf"), "inf")])
def test_format_gap_prints_tiny_gaps_as_zero(gap, text):
    from solvopt.cli import format_gap
    assert format_gap(gap) == text
    assert "e-" not in format_gap(gap)


def test_table_prints_no_exponent_gap(capsys, samples):
    code, out, err = _run(capsys, "solve", str(samples / "khc" / "sr_10_2_2_1022.dat"), "--method", "brute-force")
    assert code == 0, err
    header, row = out.strip().splitlines()
    assert row.split()[header.split().index("gap")] == "0%"


# --- clean output: progress on stderr only, results on stdout --------------------------------------
class _Stream:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_default_follows_whether_stderr_is_a_terminal(monkeypatch):
    from solvopt.core.progress import Progress
    for tty in (False, True):
        stream = _Stream(tty)
        monkeypatch.setattr(sys, "stderr", stream)
        Progress()("hello", force=True)
        assert ("hello" in stream.text) is tty
    quiet = _Stream(True)
    Progress(False, stream=quiet)("x", force=True)
    assert quiet.text == ""


def test_progress_rate_line_has_rate_and_eta(capsys):
    from solvopt.core.progress import Progress, format_duration, format_rate
    assert format_rate(250_000, 1_000_000, 0.5) == "250,000/1,000,000 scenarios, 500,000/s, ETA 1.5s"
    assert format_rate(3, 10, 6.0, "chunks") == "3/10 chunks, 0.5/s, ETA 14.0s"
    assert format_rate(10, 10, 0.0).endswith("ETA 0.0s") and format_rate(0, 10, 1.0).endswith("ETA ?")
    assert [format_duration(s) for s in (0.04, 59.94, 245, 7380, float("inf"))] == ["0.0s", "59.9s", "4m05s",
                                                                                    "2h03m", "?"]
    Progress(True).rate(5, 20, "scenarios", elapsed=1.0, force=True)
    out, err = capsys.readouterr()
    assert out == "" and "5/20 scenarios, 5/s, ETA 3.0s" in err


def _stdout_lines_not_json(out):
    bad = []
    for line in out.splitlines():
        try:
            json.loads(line)
        except ValueError:
            bad.append(line)
    return bad


@pytest.mark.parametrize("instance, extra", [
    ("khc/sr_10_2_2_1022.dat", ["--method", "sbb"]),
    ("cvrp/X-n101-k25.vrp", ["--scenarios", "2000", "--seed", "1"]),
    ("irp/abs1n5_1.dat", ["--scenarios", "200"]),
    ("lp/knapsack.mps", ["--method", "highs"]),
    ("lp/knapsack.mps", ["--method", "scip"]),
])
def test_progress_json_keeps_stdout_to_json_lines(samples, instance, extra):
    if "scip" in extra:
        pytest.importorskip("pyscipopt")
    proc = subprocess.run([sys.executable, "-m", "solvopt.cli", "solve", str(samples / instance), "--progress",
                           "--json", "--time-limit", "30", *extra], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _stdout_lines_not_json(proc.stdout) == []
    assert len(proc.stdout.splitlines()) == 1
