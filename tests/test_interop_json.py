"""One JSON dialect: --json is the --out document, to_dict is plain, from_json round-trips."""
from __future__ import annotations

import json

import numpy as np
import scipy.sparse as sp

from solvopt.cli import main
from solvopt.core.result import Result
from solvopt.io.results import result_document


def _result():
    return Result("optimal", "optimal", objective=1.5, bound=float("-inf"), family="transport", method="exact",
                  solution={"plan": np.array([[0.5, 0.0], [-0.0, np.inf]]), "idx": np.arange(4, dtype=np.int32),
                            "flows": sp.csr_matrix(np.eye(2)), "routes": [[1, 2], [3]],
                            "quantiles": {0.5: 2.0, 0.95: 3.0}},
                  stats={"wall_time": 0.25, "scenarios": 10})


def _no_wrappers(obj) -> bool:
    if isinstance(obj, dict):
        return "__ndarray__" not in obj and "__sparse__" not in obj and all(_no_wrappers(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_no_wrappers(v) for v in obj)
    return True


def test_to_dict_is_the_plain_out_document():
    r = _result()
    d = json.loads(r.to_json())
    assert _no_wrappers(d)
    assert d["solution"]["plan"] == [[0.5, 0.0], [0.0, "inf"]] and d["solution"]["idx"] == [0, 1, 2, 3]
    assert d["solution"]["flows"] == {"row": [0, 1], "col": [0, 1], "data": [1.0, 1.0], "shape": [2, 2]}
    assert d["solution"]["quantiles"] == {"0.5": 2.0, "0.95": 3.0}
    doc = json.loads(json.dumps(result_document({"instance": "a", "path": "a.npz"}, r)))
    assert {k: v for k, v in doc.items() if k not in ("instance", "path")} == d


def test_from_json_restores_arrays_floats_and_quantile_keys():
    r = _result()
    back = Result.from_json(r.to_json())
    assert isinstance(back.solution["plan"], np.ndarray) and back.solution["plan"].dtype == np.float64
    np.testing.assert_array_equal(back.solution["plan"], r.solution["plan"])
    assert back.solution["idx"].dtype == np.int32
    assert (back.solution["flows"].toarray() == np.eye(2)).all()
    assert back.solution["routes"] == [[1, 2], [3]]          # a list stays a list
    assert back.solution["quantiles"] == {0.5: 2.0, 0.95: 3.0}
    assert back.bound == -np.inf and back.stats == r.stats


def test_quantile_keys_are_floats_in_python():
    r = Result("optimal", solution={"quantiles": {"0.5": 1.0}})
    assert r.solution["quantiles"] == {0.5: 1.0}


def test_legacy_wrapped_arrays_still_read():
    legacy = {"termination": "optimal", "solution_status": "optimal",
              "solution": {"x": {"__ndarray__": [1.0, "nan"], "shape": [2], "dtype": "float64"}}}
    x = Result.from_dict(legacy).solution["x"]
    assert x.shape == (2,) and x[0] == 1.0 and np.isnan(x[1])


def test_cli_json_line_equals_the_out_file(samples, tmp_path, capsys):
    path = samples / "lp" / "knapsack.mps"
    assert main(["solve", str(path), "--json", "--out", str(tmp_path)]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    doc = json.load(open(tmp_path / "knapsack.json"))
    for volatile in ("stats",):
        line.pop(volatile), doc.pop(volatile)
    assert line == doc and _no_wrappers(line)
    assert "row_duals" not in line["solution"] and "columns" in line["solution"]
    back = Result.from_dict(doc)
    assert isinstance(back.solution["x"], np.ndarray)

