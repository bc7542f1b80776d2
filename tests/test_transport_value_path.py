"""The value-only path of ``wasserstein`` (small inputs that ``auto`` solves exactly): the same value as
the full solve's OPTIMAL Result, and the full solve wherever it does not apply."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.result import Termination
from solvopt.dsl.transport import Transport
from solvopt.transport import exact as exact_module
from solvopt.transport.api import wasserstein


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(1, 30), d=st.integers(1, 3), p=st.sampled_from([1.0, 1.5, 2.0, 3.0]),
       metric=st.sampled_from(["euclidean", "cityblock", "chebyshev"]), zeros=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_value_path_matches_the_full_exact_solve(n, m, d, p, metric, zeros, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    a, b = rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m)
    if zeros and n > 1:
        a[0] = 0.0
    b *= a.sum() / b.sum()
    value = wasserstein(x, y, p, a, b, metric=metric)
    full = Transport(x, y, a=a, b=b, p=p, metric=metric).solve("exact")
    assert full.termination is Termination.OPTIMAL
    assert value == pytest.approx(full.objective, rel=1e-12, abs=1e-300)


def test_value_path_is_taken_and_falls_back(monkeypatch):
    from solvopt.transport import small
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=(40, 2)), rng.uniform(size=(40, 2))
    reference = Transport(x, y, p=2).solve("exact").objective
    calls = []
    real = exact_module.certified_value
    monkeypatch.setattr(exact_module, "certified_value", lambda model: calls.append(1) or real(model))
    assert wasserstein(x, y, 2) == pytest.approx(reference, rel=1e-12)
    assert calls == []                       # plain float arrays: the fused kernel answers, no model
    assert wasserstein(x.tolist(), y, 2) == pytest.approx(reference, rel=1e-12)
    assert calls == [1]                      # a list: the model's checks, then the value path
    # a value it cannot certify: the full solve answers (same value)
    monkeypatch.setattr(small, "certified_points", lambda *args: calls.append(3) or None)
    monkeypatch.setattr(exact_module, "certified_value", lambda model: calls.append(2) or None)
    assert wasserstein(x, y, 2) == pytest.approx(reference, rel=1e-12)
    assert calls == [1, 3, 2]
    # a Result asked for, an option, another method: never the value path; method exact and the line:
    # the fused kernel is asked (it declines the line: auto runs the quantile formula there), the
    # model's value path is not
    for call in (lambda: wasserstein(x, y, 2, return_result=True), lambda: wasserstein(x, y, 2, time_limit=5),
                 lambda: wasserstein(x, y, 2, method="approx"), lambda: wasserstein(x, y, 2, method="exact"),
                 lambda: wasserstein(x[:, :1], y[:, :1], 2)):
        call()
    assert calls == [1, 3, 2, 3, 3]


def test_value_path_declines_what_it_does_not_cover():
    rng = np.random.default_rng(2)
    x, y = rng.uniform(size=(10, 2)), rng.uniform(size=(12, 2))
    b = np.full(12, 10 / 12)
    assert exact_module.certified_value(Transport(x, y, b=b, p=2)) is not None
    for n, p in ((50, 1.0), (50, 2.0), (200, 1.0)):          # random masses: a bound a rounding above the value
        r = np.random.default_rng(0)
        u, v = r.random((n, 2)), r.random((n, 2))
        wa, wb = r.random(n) + 0.1, r.random(n) + 0.1
        model = Transport(u, v, a=wa / wa.sum(), b=wb / wb.sum(), p=p)
        assert exact_module.certified_value(model) == pytest.approx(model.solve("exact").objective, rel=1e-12)
    assert exact_module.certified_value(Transport(x, y, b=b, p=200)) is None          # large p: its own frame
    assert exact_module.certified_value(Transport(x, x, p=2)) is None                 # W_p = 0
    assert wasserstein(x, x, 2) == 0.0


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 25), m=st.integers(1, 25), shift=st.sampled_from([0.0, -0.5]), seed=st.integers(0, 2**32 - 1))
def test_emd2_value_path_matches_the_full_exact_solve(n, m, shift, seed):
    from solvopt.transport.api import emd2
    rng = np.random.default_rng(seed)
    M = rng.uniform(size=(n, m)) + shift
    a, b = rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m)
    b *= a.sum() / b.sum()
    value = emd2(a, b, M)
    full, result = emd2(a, b, M, return_result=True)
    assert result.termination is Termination.OPTIMAL
    assert value == pytest.approx(full, rel=1e-12, abs=1e-12)
