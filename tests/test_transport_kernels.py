"""Transport distance kernels: the Numba and CUDA twins (the ``twin`` fixture of tests/conftest.py)
against the NumPy reference on the same inputs (bit-identical distances), and the reference against
SciPy's cdist."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from solvopt.transport import kernels_numpy
from solvopt.transport.graph import kernel_module

METRICS = list(kernels_numpy.METRICS)


def points(seed, n, m, d, duplicates=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = rng.normal(size=(m, d))
    if duplicates:              # ties: repeated points and sources sitting on targets
        y[: m // 2] = y[m // 2: 2 * (m // 2)]
        x[: min(n, m) // 2] = y[: min(n, m) // 2]
    return x, y


def run_all(k, x, y, centres, radius, metric):
    n, m = len(x), len(y)
    out = {"distances": np.empty((n, m)), "index": np.empty(n, dtype=np.int64), "dist": np.empty(n),
           "counts": np.empty(n, dtype=np.int64), "pairs": np.empty(3 * n)}
    k.distances(x, y, metric, out["distances"])
    i = np.arange(3 * n) % n
    j = (np.arange(3 * n) * 7) % m
    k.pair_distances(x, y, i, j, metric, out["pairs"])
    k.nearest(x, y[centres], metric, out["index"], out["dist"])
    k.bunch_counts(x, y, radius, metric, out["counts"])
    indptr = np.concatenate(([0], np.cumsum(out["counts"])))
    out["cols"], out["bunch"] = np.empty(indptr[-1], dtype=np.int64), np.empty(indptr[-1])
    k.bunch_fill(x, y, radius, metric, indptr, out["cols"], out["bunch"])
    return out


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("duplicates", [False, True])
def test_twins_match_the_reference_bit_for_bit(twin, metric, duplicates):
    x, y = points(0, 37, 53, 3, duplicates)
    centres = np.array([0, 5, 30, 52])
    code = kernels_numpy.METRICS[metric]
    ref = run_all(kernels_numpy, x, y, centres, np.zeros(37), code)
    radius = ref["dist"]                      # the construction's radii: distance to the nearest centre
    ref = run_all(kernels_numpy, x, y, centres, radius, code)
    got = run_all(kernel_module(twin), x, y, centres, radius, code)
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)


@pytest.mark.parametrize("metric", METRICS)
def test_reference_against_cdist(metric):
    x, y = points(1, 20, 30, 4)
    out = np.empty((20, 30))
    kernels_numpy.distances(x, y, kernels_numpy.METRICS[metric], out)
    np.testing.assert_allclose(out, cdist(x, y, metric), rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 12), st.integers(1, 12), st.integers(1, 4), st.sampled_from(METRICS))
def test_nearest_and_bunch_semantics(seed, n, m, d, metric):
    """nearest = argmin (first on ties); bunch row i = the j with d < radius[i], increasing j."""
    x, y = points(seed, n, m, d, duplicates=seed % 2 == 0)
    rng = np.random.default_rng(seed)
    centres = rng.choice(m, size=max(1, m // 3), replace=False)
    full = cdist(x, y, metric)
    code = kernels_numpy.METRICS[metric]
    k = kernel_module("numba")
    index, dist = np.empty(n, dtype=np.int64), np.empty(n)
    k.nearest(x, y[centres], code, index, dist)
    np.testing.assert_array_equal(index, np.argmin(full[:, centres], axis=1))
    radius = rng.random(n) * 3
    counts = np.empty(n, dtype=np.int64)
    k.bunch_counts(x, y, radius, code, counts)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    cols, bdist = np.empty(indptr[-1], dtype=np.int64), np.empty(indptr[-1])
    k.bunch_fill(x, y, radius, code, indptr, cols, bdist)
    for i in range(n):
        want = np.flatnonzero(full[i] < radius[i] * (1 - 1e-12))      # clear of float ties
        got = cols[indptr[i]:indptr[i + 1]]
        assert set(want) <= set(got) <= set(np.flatnonzero(full[i] < radius[i] * (1 + 1e-12)))
        assert np.all(np.diff(got) > 0)
        np.testing.assert_allclose(bdist[indptr[i]:indptr[i + 1]], full[i, got], rtol=1e-12)


def test_unknown_metric_has_no_kernel():
    with pytest.raises(ValueError, match="no distance kernel"):
        kernels_numpy.metric_code("minkowski")


@pytest.mark.parametrize("metric", METRICS)
def test_serial_and_parallel_builds_agree_to_the_bit(metric, monkeypatch):
    """Each distance kernel is built twice (parallel, serial) and called by its work: both builds
    give the same output, and the work threshold picks between them."""
    from solvopt.transport import kernels_numba as kn
    x, y = points(3, 40, 30, 3, duplicates=True)
    code = kernels_numpy.metric_code(metric)
    centres = np.array([0, 7, 11])
    radius = np.full(40, 1.0)
    outs = []
    for work in (0, 1 << 40):                      # everything parallel, then everything serial
        monkeypatch.setattr(kn, "SERIAL_WORK", work)
        out = run_all(kn, x, y, centres, radius, code)
        costs = np.empty(90)
        kn.pair_costs(x, y, np.arange(90) % 40, np.arange(90) % 30, code, 1.7, 1.5, costs)
        outs.append({**out, "costs": costs})
    for key in outs[0]:
        np.testing.assert_array_equal(outs[0][key], outs[1][key])
    called = []
    monkeypatch.setattr(kn, "SERIAL_WORK", 100)
    twin = kn.Twin(lambda *a: called.append("parallel"), lambda *a: called.append("serial"), kn._all_pairs)
    twin(x[:5], y[:5])
    twin(x[:20], y[:20])
    assert called == ["serial", "parallel"]
