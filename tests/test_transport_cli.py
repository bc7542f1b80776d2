"""The transport family on the command line: solve .npz files, --p (inf too), --method, bad files."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from solvopt.cli import main
from solvopt.dsl import Transport
from solvopt.io import read_instance

SMALL = Path(__file__).resolve().parents[1] / "instances" / "transport" / "small.npz"


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _json(out: str) -> dict:
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1
    return json.loads(lines[0])


def _small_model(p):
    data = read_instance(SMALL).data
    return Transport(data["x"], data["y"], data["a"], data["b"], p=p)


@pytest.mark.parametrize("p, method", [("2", "exact"), ("1", "exact"), ("1.5", "pot"), ("inf", "bottleneck"),
                                       ("inf", "exact")])
def test_solve_json_matches_the_python_api(capsys, p, method):
    if method == "pot":
        pytest.importorskip("ot")
        capsys.readouterr()             # what importing POT printed (pykeops, when installed, warns on stdout)
    code, out, err = _run(capsys, "solve", SMALL, "--p", p, "--method", method, "--json")
    assert code == 0, err
    record = _json(out)
    assert record["family"] == "transport" and record["method"] == method
    assert record["termination"] == "optimal"
    expected = _small_model(float(p)).solve("exact").objective
    assert record["objective"] == pytest.approx(expected, rel=1e-9)
    plan = record["solution"]["plan"]
    assert set(plan) == {"row", "col", "data", "shape"} and plan["shape"] == [20, 30]   # plain COO
    assert abs(sum(plan["data"]) - 1.0) < 1e-9
    assert record["stats"]["p"] == ("inf" if p == "inf" else float(p))


def test_default_method_and_the_summary_table(capsys):
    code, out, err = _run(capsys, "solve", SMALL)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("small"))
    assert "transport" in row and err == ""


def test_metric_and_engine_flags(capsys):
    code, out, err = _run(capsys, "solve", SMALL, "--p", "1", "--metric", "cityblock", "--method", "exact",
                          "--engine", "highs", "--json")
    assert code == 0, err
    data = read_instance(SMALL).data
    expected = Transport(data["x"], data["y"], p=1, metric="cityblock").solve("exact").objective
    record = _json(out)
    assert record["objective"] == pytest.approx(expected, rel=1e-9)
    assert record["options"]["engine"] == "highs"


def test_out_writes_the_plan_as_triplets(tmp_path, capsys):
    code, _, err = _run(capsys, "solve", SMALL, "--p", "2", "--method", "exact", "--out", tmp_path / "res")
    assert code == 0, err
    doc = json.loads((tmp_path / "res" / "small.json").read_text())
    plan = doc["solution"]["plan"]
    assert set(plan) == {"row", "col", "data", "shape"} and plan["shape"] == [20, 30]
    dense = np.zeros((20, 30))
    dense[plan["row"], plan["col"]] = plan["data"]
    np.testing.assert_allclose(dense.sum(axis=1), 1 / 20, atol=1e-12)
    assert doc["objective"] == pytest.approx(_small_model(2).solve("exact").objective, rel=1e-12)


def test_info_and_methods(capsys):
    code, out, _ = _run(capsys, "info", SMALL, "--json")
    assert code == 0
    info = json.loads(out.splitlines()[0])
    assert info["family"] == "transport" and info["sources"] == 20 and info["targets"] == 30
    code, out, _ = _run(capsys, "methods", "--family", "transport")
    assert code == 0 and all(name in out for name in ("exact", "bottleneck", "pot"))


def _npz(tmp_path, name, **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


X3, Y4 = np.arange(6.0).reshape(3, 2), np.arange(8.0).reshape(4, 2)
BAD_FILES = [
    ("nan.npz", dict(x=np.array([[0.0, np.nan], [1.0, 1.0]]), y=Y4), "'x' has a non-finite entry"),
    ("dims.npz", dict(x=X3, y=np.zeros((4, 3))), "same dimension"),
    ("negative.npz", dict(x=X3, y=Y4, a=np.array([0.5, 0.7, -0.2])), "'a' has a negative weight"),
    ("unequal.npz", dict(x=X3, y=Y4, a=np.ones(3), b=np.ones(4)), "equal total mass"),
    ("empty.npz", dict(x=np.zeros((0, 2)), y=Y4), "'x' is empty"),
    ("missing.npz", dict(x=X3), "missing array 'y'"),
    ("count.npz", dict(x=X3, y=Y4, b=np.ones(3) / 3), "'b' has 3 entries but 'y' has 4 points"),
    ("cost.npz", dict(cost=np.ones((3, 4)), a=np.ones(4) / 4), "'a' has 4 entries"),
]


@pytest.mark.parametrize("name, arrays, words", BAD_FILES)
def test_bad_files_fail_in_one_line_naming_the_file(tmp_path, capsys, name, arrays, words):
    path = _npz(tmp_path, name, **arrays)
    code, out, err = _run(capsys, "solve", path, "--p", "2", "--json")
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and words in lines[0], err
    assert "Traceback" not in err


def test_junk_file_and_bad_flags_are_one_line_errors(tmp_path, capsys):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"PK\x03\x04 not a zip")
    for argv, words in [((junk,), "not a readable .npz"),
                        ((SMALL, "--p", "0.5"), "p must be in [1, inf]"),
                        ((SMALL, "--p", "nan"), "p must be in [1, inf]"),
                        ((SMALL, "--metric", "hamming"), "metric must be one of"),
                        ((SMALL, "--method", "exact", "--engine", "bogus"), "option 'engine'"),
                        ((SMALL, "--p", "2", "--method", "bottleneck"), "computes W_inf"),
                        ((SMALL, "--method", "nope"), "unknown method 'nope'")]:
        code, out, err = _run(capsys, "solve", *argv)
        lines = err.strip().splitlines()
        assert code != 0 and len(lines) == 1 and words in lines[0], (argv, err)
        assert "Traceback" not in err


def test_cost_matrix_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    cost = rng.random((5, 7))
    path = _npz(tmp_path, "cost.npz", distance=cost)
    code, out, err = _run(capsys, "solve", path, "--p", "inf", "--json")
    assert code == 0, err
    record = _json(out)
    assert record["objective"] == Transport(distance=cost, p=math.inf).solve("bottleneck").objective


def test_boolean_method_flags(tmp_path, capsys):
    rng = np.random.default_rng(1)
    path = _npz(tmp_path, "square.npz", x=rng.random((6, 2)), y=rng.random((6, 2)))
    engines = []
    for flag in ("yes", "no"):
        code, out, err = _run(capsys, "solve", path, "--method", "exact", "--assignment", flag, "--json")
        assert code == 0, err
        engines.append(_json(out)["stats"]["engine"])
    assert engines[0] == "linear_sum_assignment" and engines[1] != engines[0]
    with pytest.raises(SystemExit):
        main(["solve", str(path), "--assignment", "maybe"])
    assert "--assignment: invalid yes_no value: 'maybe'" in capsys.readouterr().err
