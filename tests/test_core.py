"""The spine: Result round-trips, options validation, device resolution, compile time."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from solvopt.core import (
    BackendUnavailable,
    ModelError,
    Result,
    SolutionStatus,
    SolveOptions,
    Termination,
    parse_options,
    relative_gap,
    resolve_device,
)
from solvopt.core.options import Option


def test_result_round_trip_with_arrays_sparse_and_nonfinite():
    plan = sp.coo_matrix(([0.5, 0.25], ([0, 2], [1, 0])), shape=(3, 2))
    r = Result(Termination.TIME_LIMIT, SolutionStatus.FEASIBLE, objective=3.5, bound=-math.inf, gap=math.inf,
               solution={"x": np.arange(6, dtype=float).reshape(2, 3), "assign": np.array([0, 1, 1]),
                         "plan": plan, "nested": {"v": np.array([np.nan, 1.0])}, "routes": [[1, 2], [3]]},
               stats={"nodes": 7, "wall_time": 0.1, "backend": "numpy"}, family="test", method="m")
    back = Result.from_json(r.to_json())
    assert back.termination is Termination.TIME_LIMIT and back.solution_status is SolutionStatus.FEASIBLE
    assert back.objective == 3.5 and back.bound == -math.inf and back.gap == math.inf
    np.testing.assert_array_equal(back.solution["x"], r.solution["x"])
    assert back.solution["x"].dtype == np.float64 and back.solution["assign"].dtype == r.solution["assign"].dtype
    np.testing.assert_array_equal(back.solution["plan"].toarray(), plan.toarray())
    assert np.isnan(back.solution["nested"]["v"][0]) and back.solution["nested"]["v"][1] == 1.0
    assert back.solution["routes"] == [[1, 2], [3]]
    assert back.stats == r.stats and back.family == "test" and back.method == "m"
    assert back.to_dict() == r.to_dict()


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
       st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_relative_gap_properties(obj, slack):
    bound = obj - slack
    g = relative_gap(obj, bound)
    assert g >= 0
    if slack == 0:
        assert g == 0
    assert relative_gap(obj, obj + slack) == 0.0  # a bound above the objective counts as closed


def test_options_reject_unknown_and_bad_values():
    with pytest.raises(ModelError, match="unknown option 'time_limt'"):
        parse_options({"time_limt": 3})
    with pytest.raises(ModelError, match="time_limit"):
        SolveOptions(time_limit=-1)
    with pytest.raises(ModelError, match="device"):
        SolveOptions(device="tpu")
    with pytest.raises(ModelError, match="threads"):
        SolveOptions(threads=0)
    opts = parse_options({"time_limit": 2.5, "scenarios": 10},
                         (Option("scenarios", int, 100), Option("policy", str, "penalty")))
    assert opts.time_limit == 2.5 and opts.extra == {"scenarios": 10, "policy": "penalty"}



def test_device_resolution_without_gpu(monkeypatch):
    from solvopt.core import backend
    monkeypatch.setattr(backend, "gpu_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(BackendUnavailable, match="solvopt\\[gpu\\]"):
        resolve_device("gpu")
    assert backend.array_module("cpu") is np


def test_every_result_reports_its_compile_time():
    """stats["compile_time"] is in every result, 0.0 for a method that compiles nothing."""
    import numpy as np

    from solvopt.dsl import Model

    m = Model()
    x = m.add_var(shape=2, lb=0, ub=1, name="x")
    m.maximize(np.array([1.0, 2.0]) @ x)
    r = m.solve()
    assert r.stats["compile_time"] == 0.0 and r.stats["wall_time"] > 0
