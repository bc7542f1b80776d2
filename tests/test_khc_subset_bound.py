"""k-HC2 subset bound (OPT(all) >= sum of the groups' optima) and the partition-bound method.

References: brute force over every assignment (tests/khc_reference.py) on tiny instances, bnb's
proven optimum on small ones; the partition's properties are checked directly.
"""
from __future__ import annotations

import importlib.util
import json
import pickle
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from khc_planted import planted
from khc_reference import brute_force

from solvopt.cli import main
from solvopt.core.errors import ModelError
from solvopt.core.interrupt import clear_stop, request_stop
from solvopt.core.result import Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.khc.subset_bound import GroupTask, solve_group, spatial_order, stratified_partition, subset_bound


def bnb_optimum(points: np.ndarray, k: int) -> float:
    r = HyperplaneClustering(points, k).solve("bnb")
    assert r.termination is Termination.OPTIMAL
    return r.objective


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(6, 10), group_size=st.integers(3, 6),
       scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_the_subset_bound_never_exceeds_the_brute_force_optimum(seed, m, group_size, scale):
    pts = np.random.default_rng(seed).uniform(-1, 1, (m, 2)) * scale
    optimum = brute_force(pts, 2)
    out = subset_bound(pts, 2, group_size=group_size, partitions=2, seed=seed)
    assert 0.0 <= out.bound <= optimum * (1 + 1e-9) + 1e-12 * scale ** 2
    assert out.bound == max(out.partition_bounds) and len(out.partition_bounds) == 2
    assert out.stopped is None and out.groups_proven == out.groups == max(m // group_size, 1)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), planted_points=st.booleans())
def test_the_subset_bound_never_exceeds_the_optimum_bnb_proves(seed, planted_points):
    rng = np.random.default_rng(seed)
    pts = planted(24, 2, 2, 0.05, seed)[0] if planted_points else rng.uniform(0, 1, (24, 2))
    optimum = bnb_optimum(pts, 2)
    out = subset_bound(pts, 2, group_size=8, partitions=3, seed=seed)
    assert out.bound <= optimum * (1 + 1e-6)
    assert out.groups == 3 and out.groups_proven == 3


@pytest.mark.parametrize("time_limit", [None, 20.0])
def test_the_calibrated_group_size_gives_a_valid_bound(time_limit):
    pts = planted(120, 2, 2, 0.05, 11)[0]
    optimum = bnb_optimum(pts, 2)
    out = subset_bound(pts, 2, group_seconds=0.05, partitions=1, time_limit=time_limit)
    assert 3 * 2 * 2 <= out.group_size <= 120 and out.groups == 120 // out.group_size
    assert 0.0 < out.bound <= optimum * (1 + 1e-6)


def test_each_group_value_is_its_proven_optimum():
    pts = np.random.default_rng(4).uniform(0, 1, (9, 2))
    out = solve_group(GroupTask(pts, 2, None, None, 0))
    assert out.proven and out.bound == pytest.approx(brute_force(pts, 2), rel=1e-6, abs=1e-12)
    assert solve_group(GroupTask(pts[:4], 2, None, None, 0)) == solve_group(GroupTask(pts[:4], 2, None, None, 1))
    assert solve_group(GroupTask(pts[:4], 2, None, None, 0)).bound == 0.0   # k n points: k planes fit them


@pytest.mark.parametrize("m,groups", [(10, 3), (103, 10), (64, 64), (7, 1)])
def test_stratified_groups_partition_the_points_and_sample_every_block(m, groups):
    pts = np.random.default_rng(m).normal(size=(m, 2))
    order = spatial_order(pts)
    assert sorted(order) == list(range(m))
    parts = stratified_partition(order, groups, np.random.default_rng(0))
    assert len(parts) == groups
    assert sorted(np.concatenate(parts)) == list(range(m))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    for p in parts:   # one point from each block of `groups` consecutive points in the order
        blocks = rank[p] // groups
        assert len(set(blocks.tolist())) == len(p)


def test_the_spatial_order_keeps_neighbours_together():
    pts = np.random.default_rng(1).uniform(0, 1, (400, 2))
    order = spatial_order(pts)
    steps = np.linalg.norm(np.diff(pts[order], axis=0), axis=1)
    random_steps = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    assert np.median(steps) < 0.3 * np.median(random_steps)
    high = np.random.default_rng(2).normal(size=(50, 12))   # more than 8 dimensions: principal axis
    assert sorted(spatial_order(high)) == list(range(50))


def test_planted_groups_give_a_tight_bound():
    """Groups that sample the whole set evenly keep the planted structure: the bound is close."""
    pts = planted(600, 2, 2, 0.01, 7)[0]
    r = HyperplaneClustering(pts, 2).solve("partition-bound", group_size=120, partitions=2, restarts=4)
    assert r.termination is Termination.ITERATION_LIMIT and r.bound <= r.objective
    assert r.gap < 0.1
    assert r.stats["groups"] == 5 and r.stats["groups_proven"] == 5
    assert r.stats["partitions_solved"] == 2 and max(r.stats["partition_bounds"]) == pytest.approx(r.bound)


def test_points_on_k_lines_are_proven_optimal():
    t = np.linspace(0, 1, 30)
    pts = np.concatenate([np.c_[t, 2 * t], np.c_[t, 1 - t]])
    r = HyperplaneClustering(pts, 2).solve("partition-bound", group_size=10, partitions=1)
    assert r.termination is Termination.OPTIMAL and r.objective == pytest.approx(0, abs=1e-20)


def test_partition_bound_is_equivariant_under_similarities():
    pts = planted(200, 3, 2, 0.02, 3)[0]
    base = HyperplaneClustering(pts, 2).solve("partition-bound", group_size=25, partitions=1, seed=5)
    assert base.bound <= base.objective
    s = 2.0 ** 10    # scaling: objective and bound by s^2, the same assignment
    scaled = HyperplaneClustering(pts * s, 2).solve("partition-bound", group_size=25, partitions=1, seed=5)
    assert scaled.objective == pytest.approx(base.objective * s * s, rel=1e-9)
    assert scaled.bound == pytest.approx(base.bound * s * s, rel=1e-9)
    assert np.array_equal(scaled.solution["assignment"], base.solution["assignment"])
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))   # rotation and translation
    moved = HyperplaneClustering(pts @ q.T + np.array([5.0, -3.0, 100.0]), 2).solve(
        "partition-bound", group_size=25, partitions=1, seed=5)
    assert moved.objective == pytest.approx(base.objective, rel=1e-6)
    assert moved.bound <= moved.objective
    assert moved.bound == pytest.approx(base.bound, rel=0.05)   # the spatial order changes with the frame


def test_a_stopped_run_brackets_the_optimum():
    pts = np.random.default_rng(6).uniform(0, 1, (40, 2))
    optimum = bnb_optimum(pts, 2)
    r = HyperplaneClustering(pts, 2).solve("partition-bound", group_size=13, partitions=50, time_limit=0.5)
    assert r.termination in (Termination.TIME_LIMIT, Termination.ITERATION_LIMIT)
    assert r.bound <= optimum * (1 + 1e-6) <= r.objective * (1 + 1e-6)


def test_bad_arguments_are_model_errors():
    pts = np.random.default_rng(0).normal(size=(20, 2))
    for kwargs in ({"partitions": 0}, {"group_size": 0}, {"group_seconds": 0.0}, {"partitions": True}):
        with pytest.raises(ModelError):
            subset_bound(pts, 2, **kwargs)
    model = HyperplaneClustering(pts, 2)
    with pytest.raises(ModelError, match="group_seconds"):
        model.solve("partition-bound", group_seconds=-1)
    with pytest.raises(ModelError, match="rel_gap"):
        model.solve("partition-bound", rel_gap=0.1)


def test_a_group_task_pickles_for_a_worker_process():
    task = GroupTask(np.random.default_rng(0).normal(size=(9, 2)), 2, 1.0, None, 3)
    again = pickle.loads(pickle.dumps(task))
    assert pickle.loads(pickle.dumps(solve_group)) is solve_group
    assert solve_group(again).bound == pytest.approx(solve_group(task).bound, rel=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="needs dask.distributed")
def test_groups_run_through_a_dask_client_with_the_same_bound():
    from distributed import Client

    pts = planted(90, 2, 2, 0.05, 9)[0]
    here = subset_bound(pts, 2, group_size=15, partitions=1, seed=2)
    with Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        there = subset_bound(pts, 2, group_size=15, partitions=1, seed=2, client=client)
    assert there.bound == pytest.approx(here.bound, rel=1e-9)
    assert there.groups_proven == here.groups_proven == 6


def test_a_stop_request_returns_the_incumbent_and_a_valid_bound():
    pts = np.random.default_rng(6).uniform(0, 1, (40, 2))
    optimum = bnb_optimum(pts, 2)
    timer = threading.Timer(0.5, request_stop)
    timer.start()
    try:
        start = time.perf_counter()
        r = HyperplaneClustering(pts, 2).solve("partition-bound", group_size=13, partitions=10**6)
        seconds = time.perf_counter() - start
    finally:
        timer.cancel()
        timer.join()
        clear_stop()
    assert r.termination is Termination.INTERRUPTED and seconds < 30
    assert r.bound <= optimum * (1 + 1e-6) <= r.objective * (1 + 1e-6)


def test_the_cli_passes_the_partition_bound_flags(tmp_path, capsys):
    pts = planted(30, 2, 2, 0.05, 4)[0]
    path = str(tmp_path / "points.npy")
    np.save(path, pts)
    assert main(["solve", path, "--k", "2", "--method", "partition-bound", "--group-size", "10", "--partitions", "2",
                 "--group-seconds", "0.5", "--json"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["options"]["group_size"] == 10 and record["options"]["partitions"] == 2
    assert record["options"]["group_seconds"] == 0.5
    assert record["stats"]["group_size"] == 10 and record["stats"]["groups"] == 3
    assert record["stats"]["partitions_solved"] == 2
    assert record["bound"] <= bnb_optimum(pts, 2) * (1 + 1e-6) <= record["objective"] * (1 + 1e-6)
    assert main(["solve", path, "--k", "2", "--method", "partition-bound", "--group-size", "-1"]) == 1
    assert "group_size" in capsys.readouterr().err
    assert main(["solve", path, "--k", "2", "--method", "bnb", "--partitions", "2"]) == 1
    assert "--partitions does not apply to method 'bnb'" in capsys.readouterr().err
