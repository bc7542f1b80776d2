"""Transport the way POT users write it: cost= is POT's M, distance= a metric's distances,
wasserstein / emd2, the exact 1-D quantile formula (method '1d') and method 'auto'.

References: POT (``ot.emd2``, ``ot.wasserstein_1d``) when installed, else SciPy's linprog on the
transport LP; the exact min-cost flow / bottleneck methods for W_inf on the line.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvopt.transport as T
from solvopt import ModelError
from solvopt.core.registry import solvers
from solvopt.dsl import Transport
from solvopt.transport.auto import DENSE_PAIRS, auto_choice

try:
    import ot
except ImportError:              # the test extra installs POT; linprog stands in without it
    ot = None


def lp_emd2(a, b, M):
    """min <P, M> over P >= 0 with row sums a and column sums b, by SciPy's linprog (HiGHS)."""
    from scipy.optimize import linprog
    n, m = M.shape
    rows = np.kron(np.eye(n), np.ones(m))
    cols = np.kron(np.ones(n), np.eye(m))
    out = linprog(M.ravel(), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([a, b]), bounds=(0, None),
                  method="highs")
    assert out.status == 0
    return out.fun


def reference_emd2(a, b, M):
    return ot.emd2(a, b, M) if ot is not None else lp_emd2(a, b, M)


def _sample(seed, n=12, m=9, d=2):
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, d)), rng.random((m, d)) + 0.3
    a, b = rng.uniform(0.2, 1.0, n), rng.uniform(0.2, 1.0, m)
    return x, y, a / a.sum(), b / b.sum()


def sqeuclidean(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def test_cost_is_pots_M_and_distance_is_raised_to_p():
    x, y, a, b = _sample(0)
    M = sqeuclidean(x, y)                     # ot.dist(x, y): squared euclidean
    expected = reference_emd2(a, b, M)
    ready = Transport(cost=M, a=a, b=b, p=2).solve("exact")
    assert ready.objective ** 2 == pytest.approx(expected, rel=1e-9)
    assert ready.objective == pytest.approx(Transport(x, y, a=a, b=b, p=2).solve("exact").objective, rel=1e-9)
    assert Transport(cost=M, a=a, b=b, p=1).solve("exact").objective == pytest.approx(expected, rel=1e-9)
    D = np.sqrt(M)                            # distances: raised to p, the old meaning
    by_distance = Transport(distance=D, a=a, b=b, p=2).solve("exact")
    assert by_distance.objective == pytest.approx(ready.objective, rel=1e-9)
    assert Transport(distance=D, a=a, b=b, p=2).solve("auto").objective == pytest.approx(ready.objective, rel=1e-9)


@pytest.mark.parametrize("kwargs, words", [
    (dict(cost=np.ones((2, 2)), p="inf"), "needs a finite p"),
    (dict(cost=np.ones((2, 2)), distance=np.ones((2, 2))), "not both"),
    (dict(cost=[[1.0, -1.0]]), "'cost' has a negative cost at (0, 1)"),
    (dict(cost=np.ones(3)), "'cost' must be a 2-D"),
    (dict(cost=np.ones((2, 2)), x=[[0.0]]), "not both"),
])
def test_bad_matrix_inputs_are_one_clear_error(kwargs, words):
    with pytest.raises(ModelError) as err:
        Transport(**kwargs)
    assert words in str(err.value)


def test_emd2_matches_pots_call():
    x, y, a, b = _sample(1, 10, 14)
    M = sqeuclidean(x, y)
    assert T.emd2(a, b, M) == pytest.approx(reference_emd2(a, b, M), rel=1e-9)
    uniform = reference_emd2(np.full(10, 0.1), np.full(14, 1 / 14), M)
    assert T.emd2([], [], M) == pytest.approx(uniform, rel=1e-9)
    shifted = M - 0.7                          # negative entries: POT accepts them, so do we
    assert T.emd2(a, b, shifted) == pytest.approx(reference_emd2(a, b, shifted), rel=1e-9, abs=1e-12)
    value, result = T.emd2(a, b, M, return_result=True)
    plan = result.solution["plan"].toarray()
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-12)
    assert float((plan * M).sum()) == pytest.approx(value, rel=1e-9)
    assert result.termination.value == "optimal"


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 25), m=st.integers(1, 25), shift=st.sampled_from([0.0, -0.5]), uniform=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_emd_plan_is_optimal_against_the_lp(n, m, shift, uniform, seed):
    rng = np.random.default_rng(seed)
    M = rng.uniform(size=(n, m)) + shift
    a, b = (np.full(n, 1 / n), np.full(m, 1 / m)) if uniform else (rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m))
    b *= a.sum() / b.sum()
    plan = T.emd(a, b, M)
    assert isinstance(plan, np.ndarray) and plan.shape == (n, m) and plan.min() >= 0
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-12)
    assert float((plan * M).sum()) == pytest.approx(lp_emd2(a, b, M), rel=1e-9, abs=1e-12)
    full, result = T.emd(a, b, M, return_result=True)        # the full solve: the same optimum, proven
    assert result.termination.value == "optimal"
    np.testing.assert_allclose(full, result.solution["plan"].toarray())
    assert float((full * M).sum()) == pytest.approx(float((plan * M).sum()), rel=1e-9, abs=1e-12)


def test_emd_matches_pots_plan_and_takes_other_methods(monkeypatch):
    from solvopt.core.errors import SolverError
    from solvopt.transport import exact as exact_module
    x, y, a, b = _sample(3, 10, 14)
    M = sqeuclidean(x, y)
    plan = T.emd(a, b, M)
    reference = ot.emd(a, b, M) if ot is not None else None
    if reference is not None:
        assert float((plan * M).sum()) == pytest.approx(float((reference * M).sum()), rel=1e-9)
    assert T.emd([], [], M).sum() == pytest.approx(1.0)                       # POT's []: uniform masses
    calls = []
    from solvopt.transport import small
    monkeypatch.setattr(small, "certified_matrix", lambda *args: calls.append(0) or None)
    monkeypatch.setattr(exact_module, "certified_plan", lambda model: calls.append(1) or None)
    np.testing.assert_allclose((T.emd(a, b, M) * M).sum(), (plan * M).sum(), rtol=1e-9)   # declined: the full solve
    assert calls == [0, 1]
    rough = T.emd(a, b, M, method="approx")           # another method: its plan, feasible
    np.testing.assert_allclose(rough.sum(1), a, atol=1e-12)
    assert (rough * M).sum() >= (plan * M).sum() - 1e-12
    with pytest.raises(ModelError, match="2-D"):
        T.emd(a, b, M.ravel())
    monkeypatch.setattr(Transport, "solve", lambda self, method, **kw: type(
        "R", (), {"solution": None, "termination": type("T", (), {"value": "error"})(), "message": "no plan"})())
    with pytest.raises(SolverError, match="no plan"):
        T.emd(a, b, M, method="approx")


def test_wasserstein_between_point_sets():
    x, y, a, b = _sample(2, 15, 11)
    expected = math.sqrt(reference_emd2(a, b, sqeuclidean(x, y)))
    assert T.wasserstein(x, y, 2, a, b) == pytest.approx(expected, rel=1e-9)
    value, result = T.wasserstein(x, y, p=2, a=a, b=b, return_result=True)
    assert value == result.objective and result.stats["auto_method"] == "exact"
    assert T.wasserstein(x, y, 2, a, b, method="approx") <= 3 * expected * (1 + 1e-9)


def _line(seed, n, m):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n), rng.normal(1.0, 2.0, size=m)
    a, b = rng.uniform(0.0, 1.0, n), rng.uniform(0.1, 1.0, m)
    return x, y, a / a.sum(), b / b.sum()


@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_one_d_quantile_formula_against_pot_and_the_lp(p):
    x, y, a, b = _line(3, 23, 31)
    result = Transport(x, y, a=a, b=b, p=p).solve("1d")
    assert result.termination.value == "optimal" and result.stats["factor"] == 1.0
    expected = reference_emd2(a, b, np.abs(x[:, None] - y[None, :]) ** p)
    assert result.objective ** p == pytest.approx(expected, rel=1e-9)
    if ot is not None:                         # POT's wasserstein_1d is W_p^p
        assert T.wasserstein(x, y, p, a, b) ** p == pytest.approx(ot.wasserstein_1d(x, y, a, b, p=p), rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.sampled_from([1.0, 2.0, 3.0, math.inf]), st.integers(0, 10**6))
def test_one_d_equals_the_exact_methods(n, m, p, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 6, n).astype(float), rng.integers(0, 6, m).astype(float)   # ties included
    a, b = rng.integers(0, 4, n).astype(float), rng.integers(1, 4, m).astype(float)
    if a.sum() == 0:
        a[0] = 1.0
    b *= a.sum() / b.sum()
    model = Transport(x, y, a=a, b=b, p=p)
    got = model.solve("1d")
    exact = model.solve("bottleneck" if math.isinf(p) else "exact")
    assert got.objective == pytest.approx(exact.objective, rel=1e-9, abs=1e-12)
    assert got.termination.value == "optimal"


def test_one_d_w_inf_is_the_largest_quantile_gap():
    x, y = np.array([0.0, 1.0, 2.0, 10.0]), np.array([0.5, 1.5, 2.5, 3.0])
    assert T.wasserstein(x, y, "inf") == pytest.approx(7.0)     # sorted pairs: 0.5, 0.5, 0.5, 7
    assert Transport(x, y, p="inf", metric="chebyshev").solve("1d").objective == pytest.approx(7.0)


def test_one_d_is_a_listed_method_and_refuses_other_inputs():
    names = {s.name for s in solvers("transport")}
    assert {"1d", "auto"} <= names
    with pytest.raises(ModelError, match="points on the line"):
        Transport(np.zeros((3, 2)), np.ones((3, 2))).solve("1d")
    with pytest.raises(ModelError, match="points on the line"):
        Transport(distance=np.ones((2, 2))).solve("1d")


def test_auto_picks_by_size():
    x, y, _, _ = _line(4, 50, 60)
    assert auto_choice(Transport(x, y)) == "1d"
    rng = np.random.default_rng(5)
    assert auto_choice(Transport(rng.random((40, 2)), rng.random((30, 2)))) == "exact"
    side = int(math.isqrt(DENSE_PAIRS))
    pts = rng.random((side + 1, 2))
    assert auto_choice(Transport(pts, pts[::-1])) == "sparse-exact"          # points with a named metric
    assert auto_choice(Transport(pts[:side], pts[::-1][:side])) == "exact"
    k = side + 1
    assert auto_choice(Transport(pts[:k], pts[:k], a=np.linspace(1, 2, k), b=np.linspace(2, 1, k))) == "sparse-exact"
    flow = dict(a=np.linspace(1, 2, k), b=np.linspace(2, 1, k))
    assert auto_choice(Transport(pts[:k], pts[:k], p=12, **flow)) == "approx"   # beyond sparse-exact's p <= 8
    assert auto_choice(Transport(cost=np.ones((k, k)), **flow)) == "approx"     # a ready cost matrix


def test_npz_files_tell_cost_from_distance(tmp_path):
    from solvopt.transport.instance import model_from_instance
    from solvopt.transport.reader import read_transport_npz
    x, y, a, b = _sample(6, 8, 7)
    M = sqeuclidean(x, y)
    np.savez(tmp_path / "c.npz", cost=M, a=a, b=b)
    np.savez(tmp_path / "d.npz", distance=np.sqrt(M), a=a, b=b)
    for name in ("c.npz", "d.npz"):
        model = model_from_instance(read_transport_npz(str(tmp_path / name)), p=2)
        assert model.solve("exact").objective ** 2 == pytest.approx(reference_emd2(a, b, M), rel=1e-9)


def test_pot_import_prints_nothing_on_stdout(tmp_path, monkeypatch, capsys):
    """An optional backend of POT (KeOps) prints a warning at import; the CLI's JSON on stdout must not see it."""
    import sys

    from solvopt.transport.exact import import_pot
    fake = tmp_path / "ot"
    fake.mkdir()
    (fake / "__init__.py").write_text("print('[backend] warning at import')\nMARK = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ot", raising=False)
    module = import_pot()
    monkeypatch.delitem(sys.modules, "ot", raising=False)     # the real POT again for later tests
    assert module.MARK == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "warning at import" in err
