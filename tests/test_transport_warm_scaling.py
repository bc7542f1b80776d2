"""Warm cost scaling to a resolution (the multiscale approximation's flows) against independent
references: HiGHS's exact flow on random bipartite transport problems, within the stated error,
from any starting potentials and from a last round's flow on grown arcs; the repaired potentials'
c-transform bound below the optimum; the Z order of the points."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import solvopt.transport.sparse_exact as se
from solvopt.core.errors import ModelError
from solvopt.transport.flow import min_cost_flow, tight_potentials, warm_cost_scaling
from solvopt.transport.multiscale import morton_codes, spatial_order, unordered


def bipartite(seed, n, m, k, units):
    """Sources and targets in the plane, each source joined to its k nearest targets and to every
    target of a north-west plan (so the supplies fit), costs the squared distances."""
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, 2)), rng.random((m, 2))
    a = rng.integers(1, units + 1, n).astype(float)
    a[0] += max(0.0, m - a.sum())                                         # every target can get 1
    b = (rng.multinomial(int(a.sum()) - m, np.full(m, 1.0 / m)) + 1).astype(float)
    k = min(k, m)
    d = cdist(x, y) ** 2
    near = np.argsort(d, axis=1)[:, :k]
    tails, heads = np.repeat(np.arange(n), k), near.ravel()
    # north-west corner pairs: a feasible plan lives on the arcs
    i = j = 0
    ra, rb = a.copy(), b.copy()
    extra = []
    while i < n and j < m:
        extra.append((i, j))
        step = min(ra[i], rb[j])
        ra[i] -= step
        rb[j] -= step
        if ra[i] <= 0:
            i += 1
        if rb[j] <= 0:
            j += 1
    pairs = np.unique(np.concatenate([np.column_stack([tails, heads]), np.array(extra)]), axis=0)
    tails, heads = pairs[:, 0], pairs[:, 1]
    costs = d[tails, heads]
    supplies = np.concatenate([a, -b])
    return tails, heads + n, costs, supplies, n + m, d


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 40), m=st.integers(2, 40), k=st.integers(1, 5),
       units=st.integers(1, 4), share=st.sampled_from([1e-4, 1e-2, 0.1]), cold=st.booleans())
def test_the_flow_is_within_its_stated_error_of_the_optimum(seed, n, m, k, units, share, cold):
    """From zero or random potentials, at any resolution: a feasible flow whose cost is within
    abs_error (3 |f| resolution) of HiGHS's optimum on the same arcs."""
    tails, heads, costs, supplies, nodes, _ = bipartite(seed, n, m, k, units)
    exact = min_cost_flow(tails, heads, costs, supplies, n_nodes=nodes, engine="highs")
    resolution = share * float(costs.mean())
    rng = np.random.default_rng(seed)
    start = np.zeros(nodes) if cold else rng.normal(0.0, 3.0 * float(costs.max()), nodes)
    sol = warm_cost_scaling(tails, heads, costs, supplies, start, resolution, n_nodes=nodes)
    assert sol.flow.min() >= 0
    net = np.bincount(tails, sol.flow, nodes) - np.bincount(heads, sol.flow, nodes)
    np.testing.assert_allclose(net, supplies, atol=1e-9)
    assert sol.abs_error == pytest.approx(3.0 * supplies[supplies > 0].sum() * resolution)
    assert exact.cost - 1e-9 <= sol.cost <= exact.cost + sol.abs_error + 1e-9


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(3, 40), units=st.integers(1, 3))
def test_a_second_round_on_grown_arcs_and_the_repaired_bound(seed, n, units):
    """Round two of the pricing: from the last round's repaired potentials on more arcs, a flow
    within the error of the new optimum; the repaired potentials make every arc price out >= 0,
    and their double c-transform (over all pairs) is a lower bound on the full optimum."""
    tails, heads, costs, supplies, nodes, d = bipartite(seed, n, n, 2, units)
    resolution = 1e-3 * float(costs.mean())
    first = warm_cost_scaling(tails, heads, costs, supplies, np.zeros(nodes), resolution, n_nodes=nodes)
    # grow: every pair of the full problem joins
    full_t, full_h = np.divmod(np.arange(n * n), n)
    full_h = full_h + n
    full_c = d[full_t, full_h - n]
    again = tight_potentials(tails, heads, costs, first.potentials)
    second = warm_cost_scaling(full_t, full_h, full_c, supplies, again, resolution, n_nodes=nodes)
    exact = min_cost_flow(full_t, full_h, full_c, supplies, n_nodes=nodes, engine="highs")
    assert exact.cost - 1e-9 <= second.cost <= exact.cost + second.abs_error + 1e-9
    tight = tight_potentials(full_t, full_h, full_c, second.potentials)
    reduced = full_c - tight[full_t] + tight[full_h]
    assert reduced.min() >= -1e-9 * max(1.0, float(full_c.max()))
    a, b = supplies[:n], -supplies[n:]
    u = tight[:n]
    v = (d - u[:, None]).min(axis=0)                # the c-transform of the repaired potentials
    u2 = (d - v[None, :]).min(axis=1)
    assert a @ u2 + b @ v <= exact.cost * (1 + 1e-9) + 1e-12


def test_refusals():
    tails, heads, costs, supplies, nodes, _ = bipartite(0, 5, 5, 2, 1)
    with pytest.raises(ModelError, match="resolution"):
        warm_cost_scaling(tails, heads, costs, supplies, np.zeros(nodes), 0.0, n_nodes=nodes)
    with pytest.raises(ModelError, match="multiples"):
        drawn = np.concatenate([np.random.default_rng(1).random(5), np.zeros(5)])
        drawn[5:] = -drawn[:5].sum() / 5
        warm_cost_scaling(tails, heads, costs, drawn, np.zeros(nodes), 0.1, n_nodes=nodes)
    with pytest.raises(ModelError, match="overflow"):
        warm_cost_scaling(tails, heads, costs, supplies, np.zeros(nodes), 1e-300, n_nodes=nodes)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 300), d=st.integers(1, 4))
def test_the_z_order_is_a_permutation_and_the_plan_comes_back(seed, n, d):
    rng = np.random.default_rng(seed)
    pts = rng.random((n, d))
    order = spatial_order(pts)
    assert sorted(order.tolist()) == list(range(n))
    import scipy.sparse as sp
    plan = sp.random(n, n, density=0.05, random_state=seed, format="csr")
    back = unordered(plan, order, order)
    dense, original = back.toarray(), plan.toarray()
    np.testing.assert_array_equal(dense[np.ix_(order, order)], original)


def test_morton_codes_interleave_the_bits():
    index = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [2, 0], [3, 3]])
    np.testing.assert_array_equal(morton_codes(index, 2), [0, 1, 2, 3, 4, 15])


def test_a_kernel_failure_is_raised_not_read_as_a_stop():
    """A kernel run in its worker thread (so that a stop is seen at once) that fails raises its
    own error; only the stop flag or a missing result means FlowStopped."""
    from solvopt.transport.flow_types import FlowStopped, run_stoppable

    def broken(flag):
        raise ZeroDivisionError("in the kernel")
    with pytest.raises(ZeroDivisionError, match="in the kernel"):
        run_stoppable(broken, (), (), lambda: False)

    def ends(flag):
        return 7
    assert run_stoppable(ends, (), (), lambda: False) == 7
    with pytest.raises(FlowStopped):
        run_stoppable(ends, (), (), lambda: True)


def test_a_stop_ends_the_warm_kernel():
    """The stop reaches the kernel (its worker thread's flag): FlowStopped, before or during the run."""
    from solvopt.transport.flow_types import FlowStopped
    tails, heads, costs, supplies, nodes, _ = bipartite(3, 300, 300, 4, 1)
    with pytest.raises(FlowStopped):
        warm_cost_scaling(tails, heads, costs, supplies, np.zeros(nodes), 1e-6 * float(costs.mean()),
                          n_nodes=nodes, stop=lambda: True)
    calls = []

    def later():                     # false at the first look, then true: the flag is set mid-run
        calls.append(1)
        return len(calls) > 1
    try:
        sol = warm_cost_scaling(tails, heads, costs, supplies, np.zeros(nodes), 1e-9 * float(costs.mean()),
                                n_nodes=nodes, stop=later)
    except FlowStopped:
        return
    assert sol.flow.sum() == pytest.approx(supplies[supplies > 0].sum())    # it finished before the flag


@pytest.mark.parametrize("factor", [1e-12, 1e12])
def test_the_warm_engine_gives_the_same_answer_in_any_units(factor):
    """Points (and masses) scaled by 10^-12 or 10^12: the same status, and W_p and its bound moved
    by the law (times the point factor, times the mass factor^(1/p)) up to the flow's resolution:
    the costs are rounded in a frame relative to the plan's own cost, so the same problem gives
    the same integers up to ties at half a unit (a different plan within the stated error), and
    both certified intervals hold the same optimum."""
    from solvopt.dsl import Transport
    rng = np.random.default_rng(11)
    x, y = rng.random((900, 2)), rng.random((800, 2))
    a, b = rng.integers(1, 4, 900).astype(float), rng.integers(1, 4, 800).astype(float)
    b *= a.sum() / b.sum()
    base = Transport(x, y, a=a, b=b, p=2).solve("approx", graph="multiscale", engine="costscaling")
    for points, masses in ((factor, 1.0), (1.0, factor)):
        r = Transport(x * points, y * points, a=a * masses, b=b * masses, p=2).solve(
            "approx", graph="multiscale", engine="costscaling")
        law = points * masses ** 0.5
        assert r.termination == base.termination
        assert r.objective == pytest.approx(base.objective * law, rel=3 * se.SCALING_SHARE)
        assert r.bound <= base.objective * law * (1 + 1e-9) and base.bound * law <= r.objective * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 20), m=st.integers(1, 20), k=st.integers(1, 120), seed=st.integers(0, 10**6))
def test_bipartite_caps_are_the_transit_caps(n, m, k, seed):
    """The direct bound min(supply of the tail, demand of the head) is the general transit bound on
    a transport graph (zero and wrong-signed supplies included), and the general count is used
    where a node is both a tail and a head."""
    from solvopt.transport.cost_scaling import narrow, transit_caps
    from solvopt.transport.flow import bipartite_caps
    rng = np.random.default_rng(seed)
    supplies = np.concatenate([rng.integers(-1, 5, n), -rng.integers(-1, 5, m)]).astype(np.int64)
    tails, heads = rng.integers(0, n, k), rng.integers(n, n + m, k)
    np.testing.assert_array_equal(bipartite_caps(tails, heads, supplies), transit_caps(tails, heads, supplies))
    chain = np.concatenate([tails, heads[:1]]), np.concatenate([heads, [min(n + m - 1, heads[0] + 1)]])
    np.testing.assert_array_equal(bipartite_caps(*chain, supplies), transit_caps(*chain, supplies))
    wide = np.concatenate([supplies, [2**40]])                  # (all drawn supplies may be 0)
    assert narrow(supplies).dtype == np.int32 and narrow(wide).dtype == np.int64


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("p", [1.0, 2.0, 3.5])
def test_pair_costs_kernel_matches_the_model_distances(metric, p):
    from solvopt.dsl import Transport
    from solvopt.transport.dual import pair_costs
    rng = np.random.default_rng(4)
    model = Transport(rng.random((30, 3)), rng.random((40, 3)), p=p, metric=metric)
    rows, cols = rng.integers(0, 30, 500), rng.integers(0, 40, 500)
    np.testing.assert_allclose(pair_costs(model, rows, cols, 0.3), (model.pair_distances(rows, cols) / 0.3) ** p,
                               rtol=1e-14)
    wrapped = Transport(distance=cdist(model.x, model.y, metric), p=p)        # a matrix: the model's own
    np.testing.assert_allclose(pair_costs(wrapped, rows, cols, 0.3), pair_costs(model, rows, cols, 0.3), rtol=1e-12)
