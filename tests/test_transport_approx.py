"""Method ``approx`` against exact references (T2's ``exact`` and ``bottleneck`` methods, and a
brute force over permutations): the plan is within the proven factor, its bound is below the
optimum, its marginals are a and b; on every kind of input, p in {1, 1.5, 2, 3, 10, inf}."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport import approx as approx_module
from solvopt.transport.graph import Distances, build_two_hop

P_VALUES = [1, 1.5, 2, 3, 10, math.inf]
TOL = 1e-7


def inputs(kind, seed=0):
    """(x, y, a, b, metric) of one kind of test input."""
    rng = np.random.default_rng(seed)
    a = b = None
    metric = "euclidean"
    if kind == "uniform":
        x, y = rng.random((40, 2)), rng.random((40, 2))
    elif kind == "gaussian-mixture":
        centres = rng.normal(scale=5, size=(4, 3))
        x = centres[rng.integers(0, 4, 45)] + rng.normal(size=(45, 3))
        y = centres[rng.integers(0, 4, 35)] + rng.normal(size=(35, 3))
    elif kind == "clustered":           # two far clusters, unequal sizes on the two sides
        x = np.vstack([rng.random((30, 2)), rng.random((10, 2)) + 100])
        y = np.vstack([rng.random((12, 2)), rng.random((28, 2)) + 100])
    elif kind == "collinear":
        x, y = rng.random((40, 1)) * np.ones((1, 2)), rng.random((33, 1)) * np.ones((1, 2))
    elif kind == "duplicates":
        x = np.repeat(rng.random((8, 2)), 5, axis=0)
        y = np.vstack([x[:20], np.repeat(rng.random((4, 2)), 5, axis=0)])
    elif kind == "cityblock-weighted":
        x, y = rng.random((35, 2)), rng.random((25, 2))
        a, b = rng.random(35) + 0.1, rng.random(25) + 0.1
        b *= a.sum() / b.sum()
        metric = "cityblock"
    else:
        raise ValueError(kind)
    return x, y, a, b, metric


KINDS = ["uniform", "gaussian-mixture", "clustered", "collinear", "duplicates", "cityblock-weighted"]


def reference(model):
    return model.solve(method="bottleneck" if math.isinf(model.p) else "exact").objective


def check_against(model, result, optimum):
    assert result.solution["plan"].shape == (model.n, model.m)
    plan = result.solution["plan"]
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), model.a, atol=1e-9 * model.mass)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), model.b, atol=1e-9 * model.mass)
    factor = result.stats["factor"]
    assert factor is not None and factor <= 3.0 + 1e-6
    assert result.objective <= factor * optimum * (1 + TOL) + TOL
    assert result.objective >= optimum * (1 - TOL) - TOL       # no plan beats the optimum
    assert result.bound <= optimum * (1 + TOL) + TOL            # the bound is certified
    assert result.bound * factor >= result.objective * (1 - TOL) or result.bound > 0


@pytest.mark.parametrize("kind", KINDS)
def test_within_the_factor_on_every_kind_of_input(kind):
    x, y, a, b, metric = inputs(kind)
    for p in P_VALUES:
        model = Transport(x, y, a=a, b=b, p=p, metric=metric)
        result = model.solve(method="approx")
        check_against(model, result, reference(model))


def brute_force_bottleneck(x, y):
    d = np.sqrt(((x[:, None] - y[None]) ** 2).sum(-1))
    return min(max(d[i, s] for i, s in enumerate(perm)) for perm in itertools.permutations(range(len(y))))


def test_bottleneck_against_permutations():
    rng = np.random.default_rng(5)
    for _ in range(4):
        x, y = rng.random((6, 2)), rng.random((6, 2))
        result = Transport(x, y, p="inf").solve(method="approx")
        optimum = brute_force_bottleneck(x, y)
        assert optimum * (1 - TOL) <= result.objective <= 3 * optimum * (1 + TOL)
        assert result.bound <= optimum * (1 + TOL)


def test_plain_two_hop_plan_without_improve_keeps_the_factor():
    x, y, a, b, metric = inputs("gaussian-mixture", seed=3)
    for p in (1, 2, math.inf):
        model = Transport(x, y, p=p)
        result = model.solve(method="approx", improve=False)
        check_against(model, result, reference(model))


@pytest.mark.parametrize("engine", ["simplex", "highs", "ortools"])
def test_engines_give_the_same_flow_cost(engine):
    pytest.importorskip("ortools") if engine == "ortools" else None
    x, y, *_ = inputs("uniform", seed=2)
    model = Transport(x, y, p=2)
    result = model.solve(method="approx", engine=engine, improve=False)
    baseline = model.solve(method="approx", engine="highs", improve=False)
    assert result.stats["flow_cost_p"] == pytest.approx(baseline.stats["flow_cost_p"], rel=1e-6)


def test_metric_cost_matrix_and_callable_metric():
    rng = np.random.default_rng(7)
    x, y = rng.random((30, 2)), rng.random((25, 2))
    cost = np.sqrt(((x[:, None] - y[None]) ** 2).sum(-1))

    def euclid(xb, yb):
        return np.sqrt(((xb[:, None] - yb[None]) ** 2).sum(-1))

    for p in (1, 2, math.inf):
        optimum = reference(Transport(x, y, p=p))
        for model in (Transport(distance=cost, p=p), Transport(x, y, p=p, metric=euclid)):
            check_against(model, model.solve(method="approx"), optimum)


def test_non_metric_cost_matrix_states_a_factor_only_when_it_holds():
    rng = np.random.default_rng(8)
    cost = rng.random((20, 20)) ** 4 * 10             # far from a metric
    for p in (1, 2, math.inf):
        model = Transport(distance=cost, p=p)
        result = model.solve(method="approx", improve=False)
        optimum = reference(model)
        if result.stats["factor"] is not None:
            assert result.objective <= result.stats["factor"] * optimum * (1 + TOL)
        if result.bound is not None:
            assert result.bound <= optimum * (1 + TOL) + TOL


def test_numpy_and_numba_kernels_build_the_same_graph():
    x, y, *_ = inputs("duplicates", seed=1)
    model = Transport(x, y, p=2, metric="chebyshev")
    one = build_two_hop(Distances(model, "numpy"), 6, np.random.default_rng(4))
    two = build_two_hop(Distances(model, "numba"), 6, np.random.default_rng(4))
    for field in ("centres", "hub_of", "radius", "bunch_indptr", "bunch_cols", "bunch_dist", "hub_dist"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field), err_msg=field)


def test_the_proof_of_lemma_2_and_3_on_the_graph():
    """Every two-hop path costs at least d(a, b)^p; every optimal pair has a path of cost <= 3^p d^p."""
    x, y, *_ = inputs("gaussian-mixture", seed=4)
    model = Transport(x, y, p=3)
    graph = build_two_hop(Distances(model), 7, np.random.default_rng(0))
    d = model.distance_block(slice(None))
    p = model.p
    leg = 3.0 ** (p - 1) * graph.radius[:, None] ** p + 1.5 ** (p - 1) * graph.hub_dist[graph.hub_of] ** p
    assert np.all(leg >= d ** p * (1 - 1e-12))
    in_bunch = np.zeros_like(d, dtype=bool)
    rows = np.repeat(np.arange(model.n), np.diff(graph.bunch_indptr))
    in_bunch[rows, graph.bunch_cols] = True
    assert np.all(in_bunch | (leg <= 3.0 ** p * d ** p * (1 + 1e-12)))


def test_time_limit_before_the_flow_returns_the_quick_plan_and_bound():
    x, y, *_ = inputs("uniform")
    model = Transport(x, y, p=2)
    result = model.solve(method="approx", time_limit=1e-9)
    assert result.termination is Termination.TIME_LIMIT
    assert result.solution_status.value == "feasible" and result.stats["factor"] is None
    exact = model.solve("exact").objective
    assert result.bound <= exact * (1 + 1e-9) <= result.objective * (1 + 1e-9)


def test_interrupt_after_the_flow_returns_the_pairing_plan(monkeypatch):
    x, y, *_ = inputs("uniform")
    model = Transport(x, y, p=2)
    flow_done = []
    real_flow = approx_module.min_cost_flow

    def flow_then_interrupt(*args, **kwargs):
        sol = real_flow(*args, **kwargs)
        flow_done.append(True)
        return sol

    monkeypatch.setattr(approx_module, "min_cost_flow", flow_then_interrupt)
    monkeypatch.setattr(approx_module, "stop_reason",
                        lambda deadline=None: Termination.INTERRUPTED if flow_done else None)
    result = model.solve(method="approx", graph="two-hop")
    assert result.termination is Termination.INTERRUPTED
    assert "improve_time" not in result.stats                      # stopped before the re-solve
    check_against(model, result, reference(model))


def test_seed_changes_only_the_graph():
    x, y, *_ = inputs("uniform", seed=9)
    model = Transport(x, y, p=1)
    optimum = reference(model)
    for seed in range(3):
        check_against(model, model.solve(method="approx", seed=seed, centres=4, graph="two-hop"), optimum)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 14), st.integers(1, 14), st.sampled_from([1, 2, 4, math.inf]),
       st.booleans())
def test_random_weighted_cases(seed, n, m, p, weighted):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
    a = b = None
    if weighted:
        a, b = rng.random(n) + 0.05, rng.random(m) + 0.05
        b *= a.sum() / b.sum()
    model = Transport(x, y, a=a, b=b, p=p)
    check_against(model, model.solve(method="approx", seed=seed % 7), reference(model))


@pytest.mark.parametrize("steps", [0, 1, 2])
def test_stopped_bottleneck_search_certifies_only_what_it_proved(monkeypatch, steps):
    x, y, *_ = inputs("uniform", seed=11)
    model = Transport(x, y, p="inf")
    optimum = reference(model)
    calls = iter([None] + [None] * steps + [Termination.INTERRUPTED] * 100)
    monkeypatch.setattr(approx_module, "stop_reason", lambda deadline=None: next(calls))
    result = model.solve(method="approx", graph="two-hop")
    assert result.termination is Termination.INTERRUPTED
    assert result.bound is None or result.bound <= optimum * (1 + TOL)
    if result.stats["factor"] is None:           # nothing proven yet (the smallest threshold is 0)
        assert result.guarantee is None
    else:
        assert result.objective <= result.stats["factor"] * result.bound * (1 + TOL)
    assert result.objective >= optimum * (1 - TOL)


@pytest.mark.gpu
def test_gpu_kernels_give_the_cpu_answer():
    x, y, *_ = inputs("gaussian-mixture", seed=6)
    model = Transport(x, y, p=2)
    on_gpu = model.solve(method="approx", device="gpu")
    on_cpu = model.solve(method="approx", device="cpu")
    assert on_gpu.stats["kernels"] == "cuda" and on_cpu.stats["kernels"] == "numba"
    assert on_gpu.objective == on_cpu.objective and on_gpu.bound == on_cpu.bound


def test_a_graph_beyond_the_memory_budget_is_refused_before_it_is_built(monkeypatch):
    from solvopt.core.errors import ModelError
    from solvopt.transport import graph as graph_module
    monkeypatch.setattr(graph_module, "BYTES_PER_ARC", 1 << 40)
    x, y, *_ = inputs("uniform")
    with pytest.raises(ModelError, match="more than half this machine's memory"):
        Transport(x, y, p=2).solve(method="approx", graph="two-hop")


# --- the auction on the full matrix (graph="dense": n = m, uniform masses, up to DENSE_MAX_PAIRS pairs)
@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 30), st.sampled_from([1, 1.5, 2, 3, 8]), st.integers(1, 3),
       st.sampled_from(["euclidean", "cityblock", "chebyshev"]), st.sampled_from([0, 2, 5]))
def test_dense_auction_is_certified_against_the_exact_optimum(seed, n, p, dim, metric, ties):
    """The default for an assignment problem on points: exact marginals, a bound never above the
    optimum, a proven factor (the plan's W_p over that bound) within the 1% target, and OPTIMAL
    only when the bound meets the plan; ``ties`` > 0 draws the points from that few distinct
    colours-like positions (exact repeats, as pixel colours)."""
    from solvopt.transport import approx_dense
    rng = np.random.default_rng(seed)
    if ties:
        palette = rng.integers(0, 4, size=(ties + 3, dim)) / 3.0
        x, y = palette[rng.integers(0, len(palette), n)], palette[rng.integers(0, len(palette), n)]
    else:
        x, y = rng.random((n, dim)), rng.random((n, dim)) * 2.0
    model = Transport(x, y, p=p, metric=metric)
    result = model.solve(method="approx")
    optimum = reference(model)
    check_against(model, result, optimum)
    if result.stats["graph"] != "dense":        # the auction gave up (price wars): the two-hop graph solved
        assert "dense_gave_up" in result.stats and result.stats["graph"] == "two-hop"
        return
    assert result.stats["engine"] == "auction"
    assert result.stats["factor"] <= approx_dense.TARGET * (1 + 1e-6)
    if result.termination is Termination.OPTIMAL:
        assert result.objective <= optimum * (1 + 1e-6) + 1e-9
    else:
        assert result.termination is Termination.FEASIBLE_WITHIN_GAP


@pytest.mark.parametrize("p", [1, 2, 3, 8])
def test_dense_auction_on_a_palette_of_repeated_points(p):
    """300 points drawn from 12 positions on each side (ties everywhere, as pixel colours): the
    auction, not its fallback, within its target, checked against the exact optimum."""
    from solvopt.transport import approx_dense
    rng = np.random.default_rng(1)
    palette = rng.random((12, 3))
    x, y = palette[rng.integers(0, 12, 300)], palette[rng.integers(0, 12, 300)]
    model = Transport(x, y, p=p)
    result = model.solve(method="approx")
    assert result.stats["graph"] == "dense" and "dense_gave_up" not in result.stats
    assert result.stats["factor"] <= approx_dense.TARGET * (1 + 1e-6)
    check_against(model, result, reference(model))


@pytest.mark.parametrize("seed", range(4))
def test_auction_phase_ends_in_eps_complementary_slackness(seed):
    """Every person holds one object, no two the same, each within eps of its best at the final
    prices (ties included: integer costs)."""
    from solvopt.transport.kernels_dense import DONE, auction_phase
    rng = np.random.default_rng(seed)
    n = 25
    C = rng.integers(0, 4, size=(n, n)).astype(np.float64)
    price = np.zeros(n)
    assign, owner, flag = np.empty(n, np.int64), np.empty(n, np.int64), np.zeros(1, np.int8)
    for eps in (1.0, 0.1, 0.01):
        bids, status = auction_phase(C, price, eps, assign, owner, flag, 10**6)
        assert status == DONE and bids >= n
        assert sorted(assign) == list(range(n)) and np.all(owner[assign] == np.arange(n))
        held = C[np.arange(n), assign] + price[assign]
        assert np.all(held <= (C + price).min(axis=1) + eps * (1 + 1e-12))


def test_dense_auction_that_gives_up_leaves_the_two_hop_graph(monkeypatch):
    from solvopt.transport import approx_dense
    monkeypatch.setattr(approx_dense, "BID_CAP", 0)
    x, y, *_ = inputs("uniform", seed=4)
    model = Transport(x, y, p=2)
    result = model.solve(method="approx")
    assert result.stats["graph"] == "two-hop" and "bids per person" in result.stats["dense_gave_up"]
    check_against(model, result, reference(model))


def test_dense_auction_stopped_between_phases_keeps_its_plan_and_certificate(monkeypatch):
    """A stop after the first phase: that phase's assignment, its certified bound and the factor it
    proves, with the stop as termination."""
    from solvopt.transport import approx_dense, kernels_dense
    phases = []
    real_phase = kernels_dense.auction_phase

    def counted(*args):
        out = real_phase(*args)
        phases.append(out)
        return out
    monkeypatch.setattr(kernels_dense, "auction_phase", counted)
    monkeypatch.setattr(approx_dense, "START_SHARE", 10.0)          # a coarse first phase: the target is not met
    monkeypatch.setattr(approx_dense, "stop_reason", lambda deadline=None: Termination.INTERRUPTED if phases else None)
    x, y, *_ = inputs("uniform", seed=5)
    model = Transport(x, y, p=1)
    result = model.solve(method="approx")
    assert len(phases) == 1 and result.termination is Termination.INTERRUPTED
    assert result.stats["graph"] == "dense" and result.stats["factor"] is not None
    check_against(model, result, reference(model))


def test_dense_graph_where_it_does_not_apply_is_refused():
    from solvopt.core.errors import ModelError
    x, y, *_ = inputs("clustered")                 # 40 x 40 points, but unequal masses below
    with pytest.raises(ModelError, match="graph='dense'"):
        Transport(x, y, a=np.arange(1, 41.0), b=np.full(40, 20.5), p=2).solve(method="approx", graph="dense")
    with pytest.raises(ModelError, match="graph='dense'"):
        Transport(x, y, p=math.inf).solve(method="approx", graph="dense")
    weighted = Transport(x, y, a=np.arange(1, 41.0), b=np.full(40, 20.5), p=2).solve(method="approx")
    assert weighted.stats["graph"] == "two-hop"          # auto: the graph where the auction does not apply


@pytest.mark.parametrize("factor", [1e-12, 1e-3, 1e9])
def test_dense_auction_status_and_values_in_any_units(factor):
    """Points (or masses) times f: the auction's objective and bound scale as W_p does (f, or
    f^(1/p)), and the status does not change."""
    rng = np.random.default_rng(11)
    x, y = rng.random((50, 2)), rng.random((50, 2))
    for p in (1, 2):
        base = Transport(x, y, p=p).solve(method="approx")
        moved = Transport(x * factor, y * factor, p=p).solve(method="approx")
        heavy = Transport(x, y, a=np.full(50, factor), b=np.full(50, factor), p=p).solve(method="approx")
        assert base.stats["graph"] == moved.stats["graph"] == heavy.stats["graph"] == "dense"
        assert moved.termination is base.termination is heavy.termination
        assert moved.objective == pytest.approx(base.objective * factor, rel=1e-9)
        assert moved.bound == pytest.approx(base.bound * factor, rel=1e-6)
        assert heavy.objective == pytest.approx(base.objective * (50 * factor) ** (1 / p), rel=1e-9)
        assert heavy.bound == pytest.approx(base.bound * (50 * factor) ** (1 / p), rel=1e-6)


def test_dense_auction_sees_a_stop_while_its_kernels_load(monkeypatch):
    """The kernels' first load (a compilation: seconds) runs in a watched thread: a time limit
    during it returns the quick plan at once."""
    import time

    from helpers import PROMPT

    from solvopt.transport import approx_dense
    real = approx_dense._load_kernels
    # a load far longer than the suite's promptness bound: a stop not seen during it fails clearly
    monkeypatch.setattr(approx_dense, "_load_kernels", lambda args: (time.sleep(PROMPT + 5), real(args)))
    x, y, *_ = inputs("uniform", seed=6)
    model = Transport(x, y, p=2)
    start = time.perf_counter()
    result = model.solve(method="approx", time_limit=0.2)
    assert time.perf_counter() - start < PROMPT
    assert result.termination is Termination.TIME_LIMIT and result.stats["factor"] is None
    assert result.bound <= reference(model) * (1 + 1e-9) <= result.objective * (1 + 1e-9)


def test_tied_arc_costs_send_the_two_hop_flow_to_cost_scaling():
    """engine="auto" on the two-hop graph: cost scaling when many arc costs tie (points on a
    lattice, as 8-bit colours), the network simplex otherwise; the same flow cost either way."""
    from solvopt.transport.approx import TIED_SHARE, tied_share
    rng = np.random.default_rng(12)
    lattice_x, lattice_y = rng.integers(0, 6, (300, 3)) / 5.0, rng.integers(0, 6, (280, 3)) / 5.0
    spread_x, spread_y = rng.random((300, 3)), rng.random((280, 3))
    assert tied_share(np.arange(100.0)) == 0.0 and tied_share(np.ones(100)) == 1.0
    for (x, y), engine in (((lattice_x, lattice_y), "costscaling"), ((spread_x, spread_y), "simplex")):
        model = Transport(x, y, p=2)
        result = model.solve(method="approx", improve=False, certificate="factor")
        assert result.stats["graph"] == "two-hop" and result.stats["engine"] == engine
        exact_flow = model.solve(method="approx", improve=False, certificate="factor", engine="highs")
        assert result.stats["flow_cost_p"] == pytest.approx(exact_flow.stats["flow_cost_p"], rel=1e-6)
        check_against(model, result, reference(model))
    assert TIED_SHARE > 0.01


def test_auto_takes_the_auction_beyond_its_size_only_when_distances_tie(monkeypatch):
    """graph="auto": the auction up to DENSE_PAIRS pairs; beyond, up to DENSE_MAX_PAIRS, only when
    sampled pair distances tie (points on a lattice), else the two-hop graph."""
    from solvopt.transport import approx_dense
    monkeypatch.setattr(approx_dense, "DENSE_PAIRS", 100)
    rng = np.random.default_rng(13)
    spread = Transport(rng.random((40, 3)), rng.random((40, 3)), p=1)
    lattice = Transport(rng.integers(0, 9, (40, 3)) / 8.0, rng.integers(0, 9, (40, 3)) / 8.0, p=1)
    assert spread.solve(method="approx").stats["graph"] == "two-hop"
    assert lattice.solve(method="approx").stats["graph"] == "dense"
    assert spread.solve(method="approx", graph="dense").stats["graph"] == "dense"     # asked for: it applies
    monkeypatch.setattr(approx_dense, "DENSE_PAIRS", 10**6)
    assert spread.solve(method="approx").stats["graph"] == "dense"
