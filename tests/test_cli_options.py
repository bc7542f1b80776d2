"""Backend options from the CLI (--solver-option), methods --verbose wrapping, info/convert fixes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from solvopt.cli import main, typed_solver_options
from solvopt.core.errors import SolvoptError
from solvopt.core.registry import solvers


def _lp(name):
    return next(s for s in solvers("lp") if s.name == name)


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


KNAPSACK = "instances/lp/knapsack.mps"


def test_presolve_off_reaches_highs(capsys, monkeypatch):
    import highspy
    seen = {}
    real = highspy.Highs.setOptionValue

    def spy(self, name, value):
        seen[name] = value
        return real(self, name, value)
    monkeypatch.setattr(highspy.Highs, "setOptionValue", spy)
    code, out, err = _run(capsys, "solve", KNAPSACK, "--solver-option", "presolve=off", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["objective"] == pytest.approx(25.0) and doc["options"]["presolve"] == "off"
    assert seen["presolve"] == "off"


def test_a_backend_parameter_goes_into_params_typed():
    assert typed_solver_options(_lp("highs"), [("mip_rel_gap", "0.5"), ("lp_algorithm", "ipm")]) == \
        {"params": {"mip_rel_gap": 0.5}, "lp_algorithm": "ipm"}
    assert typed_solver_options(_lp("scip"), [("presolve", "off"), ("limits/gap", "0.01")]) == \
        {"presolve": False, "params": {"limits/gap": 0.01}}
    assert typed_solver_options(_lp("gurobi"), [("MIPFocus", "1"), ("Method", "2"), ("Presolve", "0")]) == \
        {"params": {"MIPFocus": 1, "Method": 2, "Presolve": 0}}


def test_a_loose_relative_gap_reaches_highs(capsys):
    code, out, err = _run(capsys, "solve", KNAPSACK, "--solver-option", "mip_rel_gap=0.5", "--json")
    assert code == 0, err
    doc = json.loads(out)   # HiGHS stops at once at a 50% gap (the LP bound 26 against the incumbent 25 or less)
    assert doc["options"]["params"] == {"mip_rel_gap": 0.5} and doc["bound"] >= doc["objective"]


def test_scip_presolve_and_parameter_from_the_cli(capsys):
    code, out, err = _run(capsys, "solve", KNAPSACK, "-m", "scip", "--solver-option", "presolve=off",
                          "--solver-option", "limits/gap=0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["objective"] == pytest.approx(25.0) and doc["options"]["presolve"] is False


@pytest.mark.parametrize("argv, words", [
    (["--solver-option", "presolve=of"], "expected one of choose, on, off"),
    (["--solver-option", "no_such_option=1"], "HiGHS rejected its parameter no_such_option"),
    (["-m", "scip", "--solver-option", "presolve=maybe"], "expected true/false"),
    (["-m", "scip", "--solver-option", "limits/nogap=1"], "SCIP rejected its parameter limits/nogap"),
    (["--solver-option", "presolve"], "takes NAME=VALUE"),
])
def test_bad_solver_options_are_one_line_and_exit_1(capsys, argv, words):
    code, out, err = _run(capsys, "solve", KNAPSACK, *argv)
    assert code == 1 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_unknown_option_of_a_method_without_params_is_one_line(capsys):
    code, out, err = _run(capsys, "solve", "instances/khc/sr_10_2_2_1022.dat", "--solver-option", "bogus=1")
    assert code == 1 and "has no such option" in err and len(err.strip().splitlines()) == 1


def test_a_declared_int_option_is_typed():
    khc = next(s for s in solvers("khc") if s.option("restarts") is not None)
    assert typed_solver_options(khc, [("restarts", "3")]) == {"restarts": 3}
    with pytest.raises(SolvoptError, match="restarts"):
        typed_solver_options(khc, [("restarts", "three")])


def test_methods_verbose_wraps_instead_of_cutting(capsys):
    code, out, err = _run(capsys, "methods", "--family", "lp", "--verbose")
    assert code == 0 and "..." not in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "set after solvopt's (name" in out and "value)" in out   # the whole help text, wrapped


# --- per-file parameters: (path, params) batch items, '# k=K' in point files ---------------------
def _points(tmp_path, name, rows, k=None):
    path = tmp_path / name
    head = f"# k={k}\n" if k is not None else ""
    path.write_text(head + "x,y\n" + "".join(f"{a},{b}\n" for a, b in rows))
    return path


ROWS = [(0, 0), (1, 1), (2, 2.1), (0, 3), (1, 2), (2, 1.2), (3, 0)]


def test_a_point_file_states_its_k(tmp_path):
    from solvopt.io import read_instance
    assert read_instance(_points(tmp_path, "a.csv", ROWS, k=3)).data["k"] == 3
    assert read_instance(_points(tmp_path, "b.csv", ROWS, k=3), k=2).data["k"] == 2   # a given k wins
    with pytest.raises(SolvoptError, match="no k"):
        read_instance(_points(tmp_path, "c.csv", ROWS))


def test_convert_writes_the_k_that_reading_back_finds(tmp_path, capsys):
    src = _points(tmp_path, "src.csv", ROWS)
    assert main(["convert", str(src), str(tmp_path / "out.csv"), "--k", "2"]) == 0
    capsys.readouterr()
    code, out, err = _run(capsys, "info", tmp_path / "out.csv", "--json")
    assert code == 0 and json.loads(out)["k"] == 2


def test_info_without_k_says_unset_and_exits_0(tmp_path, capsys):
    code, out, err = _run(capsys, "info", _points(tmp_path, "p.csv", ROWS))
    assert code == 0 and "k=unset" in out and "m=7" in out and not err


def test_solve_list_takes_path_params_pairs_and_model_params_k(tmp_path):
    from solvopt.dist.batch import solve_list
    from solvopt.dsl import HyperplaneClustering
    a, b = _points(tmp_path, "a.csv", ROWS), _points(tmp_path, "b.csv", ROWS, k=3)
    results = solve_list([(a, {"k": 2}), b, (b, {"k": 1})], method="brute-force")
    points = np.asarray(ROWS, dtype=float)
    for r, k in zip(results, (2, 3, 1)):
        ref = HyperplaneClustering(points, k).solve("brute-force").objective
        assert r.termination.value == "optimal" and r.objective == pytest.approx(ref, abs=1e-9), k
    (r,) = solve_list([a], method="brute-force", model_params={"k": 2})
    assert r.objective == pytest.approx(results[0].objective)


# --- small fixes: results_frame export, Markov economies' options, info's one line ---------------
def test_io_exports_results_frame():
    import solvopt.io as io
    from solvopt.io.frames import results_frame
    assert io.results_frame is results_frame and "results_frame" in io.__all__


@pytest.mark.parametrize("name", ["markov_paper_cd_deterministic", "markov_paper_leontief_stochastic"])
def test_info_reads_the_paper_economies(capsys, name):
    code, out, err = _run(capsys, "info", f"instances/games/{name}.json", "--json")
    assert code == 0, err
    assert json.loads(out)["kind"] == "markov_exchange_economy"


def test_a_solve_refuses_an_unsupported_economy_option_in_one_line(capsys):
    # the stated economy has endowment floors and caps, which only markov-horizon takes
    code, out, err = _run(capsys, "solve", "instances/games/markov_paper_cd_deterministic.json", "--method",
                          "markov-newton")
    assert code == 1 and "does not support" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_economy_schema_still_refuses_unknown_fields(tmp_path, capsys):
    data = json.load(open("instances/games/markov_paper_cd_deterministic.json"))
    data["horizn"] = 30
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(data))
    code, out, err = _run(capsys, "info", path)
    assert code == 1 and "horizn" in err


def test_info_reports_a_reader_bug_in_one_line(tmp_path, capsys, monkeypatch):
    from solvopt.khc import reader
    path = _points(tmp_path, "p.csv", ROWS, k=2)

    def broken(path):
        raise IndexError("list index out of range")
    monkeypatch.setattr(reader, "read_csv_points", broken)
    code, out, err = _run(capsys, "info", path, "--k", "2")
    assert code == 1 and "list index out of range" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


# --- solvopt warmup ---------------------------------------------------------------------------------
def test_warmup_command_passes_the_families_and_prints_a_table(capsys, monkeypatch):
    import solvopt.warmup as warm
    calls = []

    def fake(families=None, progress=None):   # the real one compiles for seconds; its own tests run it
        calls.append(families)
        progress("dp: 2 kernel(s), compiled in 1.0 s (4 solve(s), 1.2 s)")
        return {"dp": {"seconds": 1.2, "compile_time": 1.0, "cached": False, "kernels": {"a": {}, "b": {}},
                       "solves": {"c/m": {"seconds": 1.2}}}}
    monkeypatch.setattr(warm, "warmup", fake)
    code, out, err = _run(capsys, "warmup", "--family", "dp", "--family", "khc")
    assert code == 0 and calls == [["dp", "khc"]]
    assert "dp: 2 kernel(s)" in err and out.splitlines()[1].split()[:3] == ["dp", "compiled", "2"]
    code, out, err = _run(capsys, "warmup", "--json")
    assert code == 0 and calls[-1] is None and json.loads(out)["dp"]["compile_time"] == 1.0


def test_warmup_of_an_unknown_family_is_one_line(capsys):
    code, out, err = _run(capsys, "warmup", "--family", "nope")
    assert code == 1 and "unknown family 'nope'" in err and len(err.strip().splitlines()) == 1
