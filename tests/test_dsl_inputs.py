"""Extreme and wrong inputs to the algebraic DSL (issue 9): each is a ModelError with a clear message,
never a raw ValueError/TypeError/MemoryError and never a silent conversion."""
from __future__ import annotations

import numpy as np
import pytest

from solvopt.core import ModelError, SolvoptError
from solvopt.dsl import Model


def _x(shape=3):
    m = Model()
    return m, m.add_var(shape=shape, lb=-1, ub=1, name="x")


def _refused(fn, match):
    with pytest.raises(SolvoptError, match=match) as info:
        fn()
    assert isinstance(info.value, ModelError)
    return info.value


@pytest.mark.parametrize("value", [np.array([1j, 1, 1]), np.array([1 + 0j, 1, 1]), [1, 2j, 3],
                                   np.array([1, 2, 3], dtype=np.complex64)])
def test_complex_constants_are_refused_not_truncated(value):
    m, x = _x()
    _refused(lambda: value @ x, "complex")
    _refused(lambda: x * value, "complex")
    _refused(lambda: x <= value, "complex")
    _refused(lambda: m.add_var(shape=3, lb=value, name="y"), "complex")


def test_fractional_and_non_integer_shapes_are_refused():
    m = Model()
    _refused(lambda: m.add_var(shape=2.5), r"shape must be integers.*2\.5")
    _refused(lambda: m.add_var(shape=(2, 1.0)), "shape must be integers")
    _refused(lambda: m.add_var(shape="3"), "shape must be integers")
    _refused(lambda: m.add_var(shape=True), "shape must be integers")
    _refused(lambda: m.add_var(shape=-1), "non-negative")
    assert m.add_var(shape=np.int64(4), name="ok").shape == (4,)
    assert m.add_var(shape=np.array([2, 3]), name="ok2").shape == (2, 3)
    assert m.num_vars == 10


def test_text_constants_are_refused():
    m, x = _x()
    _refused(lambda: x <= "a", "right-hand side.*text")
    _refused(lambda: x + "a", "text")
    _refused(lambda: x * np.array(["a", "b", "c"]), "text")
    _refused(lambda: m.add_var(shape=2, ub="a", name="y"), "upper bound")


def test_object_arrays_are_refused_unless_they_hold_plain_numbers():
    m, x = _x()
    _refused(lambda: x <= np.array([1, None, 3], dtype=object), "object array")
    _refused(lambda: x + np.array([{}, 1, 2], dtype=object), "object array")
    _refused(lambda: m.add(np.array([x[0], x[1]], dtype=object) <= 1), "array of expressions|no truth value")
    ok = x <= np.array([1, 2, 3], dtype=object)
    np.testing.assert_array_equal(ok.body.const, [-1.0, -2.0, -3.0])


def test_huge_variables_are_refused_with_an_estimate_before_allocating():
    m = Model()
    err = _refused(lambda: m.add_var(shape=10**12, name="big"), r"'big'.*1,000,000,000,000 entries.*TiB")
    assert "memory" in str(err)
    _refused(lambda: m.add_var(shape=(10**6, 10**6, 10**6)), "memory")
    assert m.num_vars == 0 and len(m.vars) == 0     # nothing was added
    x, y = m.add_var(shape=10**6, name="x"), m.add_var(shape=10**6, name="y")
    _refused(lambda: x[:, None] + y[None, :], r"broadcasting.*1,000,000,000,000 elements.*memory")
    _refused(lambda: x[:, None] * y[None, :], r"broadcasting.*memory")


def test_numbers_too_large_for_floats_are_refused():
    m, x = _x()
    _refused(lambda: x <= 10**400, "real numbers|finite")
    _refused(lambda: x * np.inf, "finite")
    _refused(lambda: x + np.array([np.nan, 0, 0]), "finite")


def test_bad_axes_and_reshapes_are_model_errors():
    m, x = _x((2, 3))
    _refused(lambda: x.sum(axis=2), "out of bounds")
    _refused(lambda: x.sum(axis=1.5), "axis must be an integer")
    _refused(lambda: x.reshape(4, 2), "cannot reshape")
    _refused(lambda: x.transpose(0, 0), "cannot transpose")
    _refused(lambda: x[5], "bad index")
    _refused(lambda: x["a"], "bad index")


def test_bad_names_and_objects_are_model_errors():
    m, x = _x()
    _refused(lambda: m.add_var(shape=2, name=3), "name must be a string")
    _refused(lambda: m.add(x.sum() <= 1, name=3), "name must be a string")
    _refused(lambda: m.add("x <= 1"), "takes a constraint")
    con = m.add(x.sum() <= 1, name="once")
    _refused(lambda: m.add(con), "already in this model")


# --- the shared array checks (dsl/arrays.py) ---------------------------------------------------------
@pytest.mark.parametrize("value, match", [
    ([True, False], "data must be real numbers, got booleans"), ([1j, 2], "real numbers, got complex numbers"),
    (["a"], "real numbers, got text"), ([[1.0], [1.0, 2.0]], "data must be a numeric array"),
    (np.array([None, 1.0]), "real numbers, got Python objects"),
])
def test_float_array_and_real_array_refuse_what_is_not_real(value, match):
    from solvopt.dsl.arrays import float_array, real_array
    for convert in (float_array, real_array):
        _refused(lambda convert=convert: convert(value, "data"), match)


def test_float_array_keeps_views_and_values_real_array_checks_them():
    from solvopt.dsl.arrays import float_array, real_array
    view = np.broadcast_to(np.array([1.0, np.inf, np.nan]), (1000, 3))
    assert np.shares_memory(float_array(view, "v"), view)           # no copy of a broadcast view
    assert float_array(np.arange(3), "v").dtype == np.float64
    _refused(lambda: real_array(view, "v"), r"non-finite entry at \(0, 1\): inf")
    _refused(lambda: real_array(view, "v", allow_inf=True), r"NaN entry at \(0, 2\)")
    assert real_array([1, 2], "v", (2,)).tolist() == [1.0, 2.0]


def test_variable_bounds_follow_the_same_rule():
    m = Model()
    _refused(lambda: m.add_var(shape=2, ub=[True, False], name="x"), "bound of 'x' must be real numbers, got booleans")
    _refused(lambda: m.add_var(shape=2, lb=[0, 1j], name="y"), "bound of 'y' must be real numbers, got complex")
    assert m.add_var(shape=2, lb=-np.inf, ub=[1, 2], name="z").ub.tolist() == [1.0, 2.0]
