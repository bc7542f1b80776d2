"""pandas in and labels out of the DSL: Series/DataFrame operands lined up by label, labelled
variables (``coords=``), the values namespace of ``Result.solution`` and results as frames.

References are independent: the same model built from plain NumPy arrays (by position) must give
the very same standard form and optimum; alignment is checked against arrays reordered by hand
over random permutations of the labels.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.errors import BackendUnavailable, ModelError
from solvopt.core.result import Result
from solvopt.dsl import Model

pd = pytest.importorskip("pandas")

PLANTS = ["berlin", "lyon", "milan", "porto"]
MARKETS = ["m1", "m2", "m3"]


def _forms_equal(a, b):
    np.testing.assert_array_equal(a.c, b.c)
    np.testing.assert_array_equal(a.A.toarray(), b.A.toarray())
    for key in ("row_lower", "row_upper", "col_lower", "col_upper", "integrality"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
    assert a.offset == b.offset and a.sense == b.sense


def _facility_data(seed=0):
    rng = np.random.default_rng(seed)
    cost = rng.uniform(1, 9, size=(len(PLANTS), len(MARKETS))).round(2)
    fixed = rng.uniform(5, 20, size=len(PLANTS)).round(2)
    capacity = rng.uniform(10, 20, size=len(PLANTS)).round(1)
    demand = rng.uniform(3, 8, size=len(MARKETS)).round(1)
    return cost, fixed, capacity, demand


def _facility_numpy(cost, fixed, capacity, demand):
    m = Model()
    x = m.add_var(shape=cost.shape, lb=0, name="x")
    y = m.add_var(shape=len(fixed), vtype="binary", name="open")
    m.add(x.sum(axis=1) <= capacity * y, name="capacity")
    m.add(x.sum(axis=0) >= demand, name="demand")
    m.minimize((cost * x).sum() + fixed @ y)
    return m


def _facility_pandas(cost, fixed, capacity, demand, rng):
    """The same model from shuffled pandas data and labelled variables."""
    pi, mi = rng.permutation(len(PLANTS)), rng.permutation(len(MARKETS))
    cost_df = pd.DataFrame(cost, index=PLANTS, columns=MARKETS).iloc[pi, mi]
    fixed_s = pd.Series(fixed, index=PLANTS).iloc[rng.permutation(len(PLANTS))]
    cap_s = pd.Series(capacity, index=PLANTS).iloc[rng.permutation(len(PLANTS))]
    dem_s = pd.Series(demand, index=pd.Index(MARKETS, name="market")).iloc[mi]
    m = Model()
    x = m.add_var(coords={"plant": PLANTS, "market": MARKETS}, lb=0, name="x")
    y = m.add_var(coords=[pd.Index(PLANTS, name="plant")], vtype="binary", name="open")
    m.add(x.sum(axis=1) <= cap_s * y, name="capacity")
    m.add(dem_s <= x.sum(axis=0), name="demand")          # the pandas operand on the left
    m.minimize((cost_df * x).sum() + y @ fixed_s)
    return m, x, y


def test_pandas_model_has_the_numpy_models_standard_form_and_optimum():
    data = _facility_data()
    ref = _facility_numpy(*data)
    m, x, y = _facility_pandas(*data, np.random.default_rng(1))
    _forms_equal(m.compile(), ref.compile())
    r, r_ref = m.solve(), ref.solve()
    assert r.objective == pytest.approx(r_ref.objective, rel=1e-9)
    sol = x.solution
    assert isinstance(sol, pd.DataFrame) and list(sol.index) == PLANTS and list(sol.columns) == MARKETS
    assert sol.index.name == "plant" and sol.columns.name == "market"
    np.testing.assert_allclose(sol.to_numpy(), x.value)
    assert isinstance(y.solution, pd.Series) and list(y.solution.index) == PLANTS and y.solution.name == "open"
    duals = m.constraints["demand"].to_pandas()
    assert duals is None or list(duals.index) == MARKETS


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(6)), st.permutations(range(6)), st.integers(0, 2**31 - 1))
def test_series_operands_line_up_by_label_under_any_order(perm_a, perm_b, seed):
    rng = np.random.default_rng(seed)
    labels = [f"k{i}" for i in range(6)]
    w = rng.normal(size=6)
    s = pd.Series(w, index=labels).iloc[list(perm_a)]
    m = Model()
    x = m.add_var(coords=[labels], lb=-5, name="x")
    other = m.add_var(coords=[[labels[i] for i in perm_b]], name="z")      # same labels, another order
    point = rng.normal(size=12)
    xv, zv = point[:6], point[6:]
    z_by_label = zv[np.argsort(perm_b)]                                   # z's values in x's label order
    cases = {
        "s * x": (s * x, w * xv), "x * s": (x * s, w * xv), "x + s": (x + s, xv + w), "s + x": (s + x, xv + w),
        "s - x": (s - x, w - xv), "x - s": (x - s, xv - w), "x / s": (x / s, xv / w),
        "x @ s": (x @ s, np.array(w @ xv)), "x + z": (x + other, xv + z_by_label),
        "x * z": (x * other, xv * z_by_label),
    }
    for name, (expr, expected) in cases.items():
        np.testing.assert_allclose(expr.evaluate(point), expected, rtol=1e-12, atol=1e-12, err_msg=name)
    for con, sense in ((x <= s, "<="), (s >= x, "<="), (x >= s, ">="), (s <= x, ">="), (x == s, "==")):
        assert con.sense == sense                # pandas hands the comparison over reflected
        np.testing.assert_allclose(con.body.evaluate(point), xv - w, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.permutations(range(4)), st.permutations(range(3)), st.booleans())
def test_dataframes_and_multiindex_series_line_up_with_2d_variables(pi, mi, transposed):
    rng = np.random.default_rng(7)
    c = rng.normal(size=(4, 3))
    m = Model()
    x = m.add_var(coords={"plant": PLANTS, "market": MARKETS}, name="x")
    point = rng.normal(size=12)
    xv = point.reshape(4, 3)
    df = pd.DataFrame(c, index=pd.Index(PLANTS, name="plant"),
                      columns=pd.Index(MARKETS, name="market")).iloc[list(pi), list(mi)]
    if transposed:
        df = df.T                                  # named axes: lined up by name, not by position
    np.testing.assert_allclose((df * x).evaluate(point), c * xv)
    np.testing.assert_allclose((x - df).evaluate(point), xv - c)
    stacked = df.stack() if not transposed else df.T.stack()
    stacked = stacked.iloc[rng.permutation(12)]
    np.testing.assert_allclose((stacked * x).evaluate(point), c * xv)
    # a Series over one dimension broadcasts along the other, found by its index name
    per_market = pd.Series([1.0, 2.0, 3.0], index=pd.Index(MARKETS, name="market")).iloc[list(mi)]
    per_plant = pd.Series([1.0, 2.0, 3.0, 4.0], index=pd.Index(PLANTS, name="plant")).iloc[list(pi)]
    np.testing.assert_allclose((x * per_market).evaluate(point), xv * [1, 2, 3])
    np.testing.assert_allclose((x * per_plant).evaluate(point), xv * np.array([1, 2, 3, 4])[:, None])
    # matrix products: x @ frame and frame @ x written the other way round
    w = pd.DataFrame(rng.normal(size=(3, 2)), index=MARKETS, columns=["p", "q"]).iloc[list(mi)]
    prod = x @ w
    np.testing.assert_allclose(prod.evaluate(point), xv @ w.loc[MARKETS].to_numpy())
    assert list(prod.coords[0]) == PLANTS and list(prod.coords[1]) == ["p", "q"]


def test_unlabelled_variables_take_default_index_series_by_position():
    cap = np.array([3.0, 1.0, 2.0])
    m, ref = Model(), Model()
    y, yr = m.add_var(shape=3, name="y"), ref.add_var(shape=3, name="y")
    m.add(pd.Series(cap) * y <= 5), ref.add(cap * yr <= 5)
    m.add(y <= pd.Series(cap).sort_values())       # reordered positions still line up
    ref.add(yr <= cap)
    m.maximize(y @ pd.Series([1.0, 1.0, 1.0]))
    ref.maximize(np.ones(3) @ yr)
    _forms_equal(m.compile(), ref.compile())
    assert m.solve().objective == pytest.approx(ref.solve().objective)
    sol = y.solution
    assert list(sol.index) == [0, 1, 2]
    c = np.arange(6.0).reshape(3, 2)
    X = m.add_var(shape=(3, 2), name="X")
    point = np.random.default_rng(3).normal(size=m.num_vars)
    np.testing.assert_allclose((pd.DataFrame(c) * X).evaluate(point), (c * X).evaluate(point))
    np.testing.assert_allclose((X @ pd.DataFrame(c.T)).evaluate(point), (X @ c.T).evaluate(point))


def test_labels_survive_elementwise_ops_sums_and_transposes():
    m = Model()
    x = m.add_var(coords={"plant": PLANTS, "market": MARKETS}, name="x")
    assert x.dims == ("plant", "market")
    assert (2 * x - 1).dims == ("plant", "market")
    assert x.sum(axis=1).dims == ("plant",) and x.sum(axis=0).dims == ("market",)
    assert x.T.dims == ("market", "plant") and x.sum().coords is None
    assert ((x ** 2) * 3).dims == ("plant", "market")
    assert x[0].coords is None       # positional selections drop the labels


def test_bounds_as_series_line_up_and_keep_infinity():
    m = Model()
    lb = pd.Series({"b": -np.inf, "c": 2.0, "a": 1.0})
    z = m.add_var(coords=[["a", "b", "c"]], lb=lb, ub=pd.Series({"c": 3.0, "a": np.inf, "b": 0.0}), name="z")
    np.testing.assert_array_equal(z.lb, [1.0, -np.inf, 2.0])
    np.testing.assert_array_equal(z.ub, [np.inf, 0.0, 3.0])
    with pytest.raises(ModelError, match="labels do not line up"):
        m.add_var(coords=[["a", "b", "c"]], lb=pd.Series({"a": 1.0, "b": 1.0}), name="w")


def test_mismatches_are_one_clear_error():
    m = Model()
    x = m.add_var(coords=[["a", "b", "c"]], name="x")
    X = m.add_var(coords={"plant": PLANTS, "market": MARKETS}, name="X")
    y = m.add_var(shape=3, name="y")
    with pytest.raises(ModelError, match=r"labels do not line up.*'d'"):
        x * pd.Series({"a": 1.0, "b": 2.0, "d": 3.0})
    with pytest.raises(ModelError, match="not in it"):
        _ = x <= pd.Series({"a": 1.0, "b": 2.0})
    with pytest.raises(ModelError, match="unlabelled"):
        y * pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"])
    with pytest.raises(ModelError, match="repeat"):
        x + pd.Series([1.0, 2.0, 3.0], index=["a", "a", "b"])
    with pytest.raises(ModelError, match="2-D expression"):
        x * pd.DataFrame(np.ones((3, 3)))
    with pytest.raises(ModelError, match="x @ series"):
        pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"]) @ x
    with pytest.raises(ModelError, match="x @ frame.T"):
        pd.DataFrame(np.ones((2, 3)), columns=["a", "b", "c"]) @ x
    with pytest.raises(ModelError, match="real numbers"):
        x * pd.Series(["1", "2", "3"], index=["a", "b", "c"])
    with pytest.raises(ModelError, match="finite"):
        x + pd.Series([1.0, np.nan, 3.0], index=["a", "b", "c"])
    with pytest.raises(ModelError, match="combining two labelled"):
        x + m.add_var(coords=[["a", "b", "z"]], name="v")
    with pytest.raises(ModelError, match="MultiIndex"):
        X * pd.Series([1.0], index=pd.MultiIndex.from_tuples([("a", "b", "c")]))


def test_coords_validation():
    m = Model()
    with pytest.raises(ModelError, match="coords=\\[labels\\]"):
        m.add_var(coords=["a", "b"], name="x")
    with pytest.raises(ModelError, match="repeat"):
        m.add_var(coords=[["a", "a"]], name="x")
    with pytest.raises(ModelError, match="shape"):
        m.add_var(shape=3, coords=[["a", "b"]], name="x")
    with pytest.raises(ModelError, match="distinct"):
        m.add_var(coords=[["a"], ["b"]], dims=["i", "i"], name="x")
    v = m.add_var(shape=(2, 3), dims=("i", "j"), name="v")
    assert v.dims == ("i", "j") and list(v.coords[1]) == [0, 1, 2]


def test_variable_values_have_their_own_namespace():
    m = Model()
    x = m.add_var(shape=2, ub=[1.0, 2.0], name="x")     # named like the solver's full vector
    y = m.add_var(coords=[["a", "b", "c"]], ub=3.0, name="y")
    m.maximize(x.sum() + y.sum())
    r = m.solve()
    assert r.solution["x"].shape == (5,)                  # every column, never replaced
    np.testing.assert_allclose(r.solution["variables"]["x"], [1.0, 2.0])
    np.testing.assert_allclose(r.solution["variables"]["y"], [3.0, 3.0, 3.0])
    np.testing.assert_allclose(x.value, [1.0, 2.0])
    np.testing.assert_allclose(r.solution["y"], y.value)  # older reads of a name that is no solver key
    assert r.solution.get("y") is not None and r.solution.get("nothing") is None
    back = Result.from_json(r.to_json())
    np.testing.assert_allclose(back.solution["variables"]["y"], [3.0, 3.0, 3.0])
    assert back.solution["x"].shape == (5,) and "y" not in r.to_dict()["solution"]


def test_results_frame_one_row_per_result():
    from solvopt.io.frames import results_frame
    m = Model()
    x = m.add_var(shape=2, ub=1.0, name="x")
    m.maximize(x.sum())
    r = m.solve()
    r.stats["instance"] = "toy"
    other = Result("time_limit", "feasible", objective=3.0, bound=2.0, family="khc", method="bnb",
                   stats={"nodes": 12, "wall_time": 0.5, "scenario_costs": np.zeros(3)})
    frame = results_frame([r, other.to_dict()])
    assert list(frame["termination"]) == ["optimal", "time_limit"]
    assert list(frame["instance"])[0] == "toy" and frame["objective"].tolist() == [2.0, 3.0]
    assert frame.loc[1, "nodes"] == 12 and "scenario_costs" not in frame.columns
    for col in ("solution_status", "bound", "gap", "wall_time", "method", "family"):
        assert col in frame.columns
    one = r.to_frame()
    assert len(one) == 1 and one.loc[0, "method"] == r.method
    with pytest.raises(ModelError, match="item 1"):
        results_frame([r, 3])
    named = results_frame({"a.mps": other, "b.mps": r})
    assert list(named["instance"]) == ["a.mps", "toy"]


def test_without_pandas_the_error_names_the_extra(monkeypatch):
    m = Model()
    x = m.add_var(shape=2, ub=1.0, name="x")
    m.maximize(x.sum())
    r = m.solve()
    monkeypatch.setitem(sys.modules, "pandas", None)      # `import pandas` fails
    with pytest.raises(BackendUnavailable, match=r"solvopt\[pandas\]"):
        r.to_frame()
    with pytest.raises(BackendUnavailable, match=r"solvopt\[pandas\]"):
        _ = x.solution
    with pytest.raises(BackendUnavailable, match=r"solvopt\[pandas\]"):
        m.add_var(coords=[["a"]], name="y")
    np.testing.assert_allclose(x.value, [1.0, 1.0])       # NumPy values need no pandas
    assert (x * np.ones(2)).shape == (2,)


def test_named_sums_expression_values_and_duals_come_back_labelled():
    m = Model()
    x = m.add_var(coords={"plant": ["a", "b"], "market": ["u", "v", "w"]}, name="x")
    m.add(x.sum("market") <= pd.Series({"b": 5.0, "a": 4.0}), name="cap")
    m.add(x.sum("plant") >= pd.Series({"w": 1.0, "u": 2.0, "v": 3.0}), name="dem")
    cost = pd.DataFrame([[1, 2, 3], [3, 1, 2.0]], index=["a", "b"], columns=["u", "v", "w"])
    m.minimize((x * cost).sum())
    r = m.solve()
    # by hand: u from a (2 x 1), v and w from b (3 x 1 + 1 x 2) = 7; each market's dual is its cheapest cost
    assert r.objective == pytest.approx(7.0)
    assert (x * cost).sum("market").to_pandas().to_dict() == pytest.approx({"a": 2.0, "b": 5.0})
    assert m.constraints["dem"].to_pandas().to_dict() == pytest.approx({"u": 1.0, "v": 1.0, "w": 2.0})
    assert x.sum(("plant", "market")).coords is None
    with pytest.raises(ModelError, match="no dimension named 'region'"):
        x.sum("region")


def test_sel_selects_by_label_like_positional_indexing():
    m = Model()
    x = m.add_var(coords={"plant": PLANTS, "market": MARKETS}, name="x")
    point = np.arange(12.0)
    xv = point.reshape(4, 3)
    one = x.sel(plant="milan")
    np.testing.assert_array_equal(one.evaluate(point), xv[2])
    assert one.dims == ("market",)
    some = x.sel(market=["m3", "m1"], plant=["porto", "berlin"])
    np.testing.assert_array_equal(some.evaluate(point), xv[np.ix_([3, 0], [2, 0])])
    assert list(some.coords[0]) == ["porto", "berlin"] and list(some.coords[1]) == ["m3", "m1"]
    assert np.asarray(x.sel(plant="lyon", market="m2").evaluate(point)) == xv[1, 1]
    with pytest.raises(ModelError, match="no label 'rome'"):
        x.sel(market="rome")
    with pytest.raises(ModelError, match="no dimension named 'region'"):
        x.sel(region="eu")
    with pytest.raises(ModelError, match="has none"):
        m.add_var(shape=2, name="u").sel(dim_0=1)
