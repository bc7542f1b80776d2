"""Scale-out on dask.distributed: the same answers as in one process, and no result lost.

- the task map in one process (no dask): completion, a failing task as TaskError;
- on a LocalCluster of 2 worker processes (one per module, kept short): a batch's results equal
  the sequential ones; an input that raises is an ERROR Result and the rest complete; a worker
  killed with os.kill mid-batch loses no result; the SAA estimate (stochastic split) and the
  inventory DP's statistics are bit-identical for 1 (in process), 2 and 4 workers; a deadline
  returns what merged with the scenarios done;
- the CLI on --workers 2: SIGINT prints the finished instances' lines (the same answers as in
  one process), writes their --out files, lists the others and exits 130.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO

import solvopt
from solvopt.core.chunks import ChunkPlan, run_chunks
from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.core.tasks import TaskError, map_tasks, use_client
from solvopt.dsl import StochasticSplit
from solvopt.dsl.inventory import InventoryReinsertion
from solvopt.io import read_instance

KHC = sorted((REPO / "instances" / "khc").glob("*.dat"))
CVRP = sorted((REPO / "instances" / "cvrp").glob("*.vrp"))


def _square(x):
    if x == 3:
        raise ValueError("three is not allowed\nsecond line")
    return x * x


def split_model(scenarios=6000) -> StochasticSplit:
    rng = np.random.default_rng(9)
    xy = rng.uniform(0, 100, (25, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    demands = rng.integers(0, 7, 25)
    demands[0] = 0
    return StochasticSplit(dist, demands, 15, rng.permutation(np.arange(1, 25)), scenarios=scenarios)


def inventory_model() -> InventoryReinsertion:
    rng = np.random.default_rng(3)
    costs = [rng.integers(0, 20, 3).astype(float) for _ in range(4)]
    return InventoryReinsertion(horizon=4, max_level=6, start_level=2, holding_cost=1.0, insertion_costs=costs,
                                route_slack=[rng.integers(-3, 7, 3).astype(float) for _ in costs],
                                supplier_holding_cost=0.3, stockout_penalty=20.0, capacity_penalty=4.0,
                                demand=rng.integers(0, 9, (3000, 4)))


# --- in one process (no dask) ------------------------------------------------------------------
def test_the_task_map_in_process_reports_a_failing_task_and_runs_the_rest():
    pairs = dict(map_tasks(_square, range(6), return_exceptions=True))
    assert [pairs[i] for i in (0, 1, 2, 4, 5)] == [0, 1, 4, 16, 25]
    assert isinstance(pairs[3], TaskError) and pairs[3].index == 3
    assert pairs[3].message == "ValueError: three is not allowed"
    with pytest.raises(TaskError, match="task 3: ValueError"):
        list(map_tasks(_square, range(6)))
    with pytest.raises(ModelError, match="not both"):
        map_tasks(_square, [1], client=object(), workers=2)


def test_an_input_that_raises_is_an_error_result_in_process():
    results = solvopt.solve_list([KHC[0], REPO / "no-such-file.dat", KHC[1]])
    assert [r.termination for r in results] == [Termination.OPTIMAL, Termination.ERROR, Termination.OPTIMAL]
    assert "no such file" in results[1].message and results[1].objective is None
    assert [r.stats["batch_index"] for r in results] == [0, 1, 2]


def test_a_scenario_chunk_pickles_light_and_is_safe_to_share_between_threads():
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    from solvopt.core.backend import gpu_available
    from solvopt.cvrp.solvers import compile_split
    from solvopt.cvrp.stochastic import ScenarioChunks
    compiled = compile_split(split_model(4000))
    plan = ChunkPlan(4000, 250)
    chunk = ScenarioChunks(compiled, 5, "numba", plan.size, 1)
    copy = pickle.loads(pickle.dumps(chunk))
    assert len(pickle.dumps(chunk)) < len(pickle.dumps(compiled)) + 1000     # no buffers, no device arrays
    with ThreadPoolExecutor(4) as pool:                                       # one buffer per thread
        parts = list(pool.map(lambda i: copy(i, *plan.bounds(i)), range(plan.count)))
    for index, part in enumerate(parts):
        ref = chunk(index, *plan.bounds(index))
        assert (part.mean, part.m2, part.count) == (ref.mean, ref.m2, ref.count)
    auto = ScenarioChunks(compiled, 5, "auto", plan.size, 1)
    assert auto.backend.name == ("cuda" if gpu_available() else "numba")



def test_under_device_auto_with_workers_each_worker_picks_its_kernel(monkeypatch):
    """split under device='auto' with chunks on a client builds them with backend 'auto' (each worker
    takes CUDA where it sees a GPU, else Numba); without a client, or with device='cpu', Numba."""
    import solvopt.cvrp.solvers as solvers
    seen = []
    real = solvers.run_scenarios

    def spy(compiled, **kwargs):
        seen.append(kwargs["backend"])
        return real(compiled, **dict(kwargs, backend="numba"))     # run here: the spy stands in for workers

    monkeypatch.setattr(solvers, "run_scenarios", spy)
    monkeypatch.setattr("solvopt.core.tasks._current_client", [object()])   # as inside use_client(client)
    auto = split_model(2000).solve(method="split")
    cpu = split_model(2000).solve(method="split", device="cpu")
    monkeypatch.setattr("solvopt.core.tasks._current_client", [])
    alone = split_model(2000).solve(method="split")
    assert seen == ["auto", "numba", "numba"]
    assert auto.stats["device"] == "per worker" and cpu.stats["device"] == alone.stats["device"] == "cpu"
    assert auto.objective == cpu.objective == alone.objective


def test_a_result_lost_with_its_worker_after_finishing_is_awaited_not_reported_as_an_error(monkeypatch):
    """as_completed hands over a future whose worker then dies: the future is pending again (the
    scheduler recomputes it); the task map must wait for it, not report 'task pending' as an error."""
    distributed = pytest.importorskip("distributed")

    class Future:
        def __init__(self, key, statuses):
            self.key, self._statuses = key, list(statuses)

        @property
        def status(self):
            return self._statuses[0]

        def result(self):
            return self.key * 10

        def release(self):
            pass

    lost = Future(1, ["pending", "finished"])        # read once as pending (lost), then finished again
    futures = [Future(0, ["finished"]), lost]

    class Completed:
        def __init__(self, fs):
            self.queue = list(fs)

        def has_ready(self):
            return bool(self.queue)

        def next_batch(self, block=False):
            batch, self.queue = self.queue, []
            return batch

        def add(self, future):                       # recomputed: it finishes again
            future._statuses.pop(0)
            self.queue.append(future)

    class Client:
        def map(self, fn, items, pure=False):
            return futures

        def cancel(self, fs):
            raise AssertionError("nothing is left to cancel")

    monkeypatch.setattr(distributed, "as_completed", Completed)
    assert sorted(map_tasks(None, [0, 1], client=Client())) == [(0, 0), (1, 10)]

# --- on a LocalCluster of 2 worker processes ----------------------------------------------------
@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from solvopt.dist import local_client
    with local_client(2) as c:
        yield c


def _same(a, b):
    assert (a.termination, a.objective, a.bound, a.method, a.message) == (b.termination, b.objective, b.bound,
                                                                         b.method, b.message)
    assert a.to_dict()["solution"] == b.to_dict()["solution"]


def test_a_batch_on_two_workers_equals_the_sequential_results(client):
    inputs = [*KHC, *CVRP, REPO / "no-such-file.dat", split_model(2000)]
    sequential = solvopt.solve_list(inputs, seed=3)
    finished = list(solvopt.solve_many(inputs, client, seed=3))
    assert sorted(r.stats["batch_index"] for r in finished) == list(range(len(inputs)))   # each once
    for r in finished:
        _same(r, sequential[r.stats["batch_index"]])
    assert sequential[len(KHC) + len(CVRP)].termination is Termination.ERROR


def test_a_worker_killed_mid_batch_loses_no_result(client):
    inputs = [*KHC] * 4          # enough tasks that some are still assigned when the first result is in
    expected = [r.objective for r in solvopt.solve_list(inputs)]
    got, killed = {}, None
    for result in solvopt.solve_many(inputs, client):
        got[result.stats["batch_index"]] = result
        busy = [address for address, keys in client.processing().items() if keys]
        if killed is None and busy:  # kill a worker while it runs a task (the nanny restarts it; the task reruns)
            killed = client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(killed, signal.SIGKILL)
    assert killed is not None
    assert sorted(got) == list(range(len(inputs)))
    assert [(got[i].termination, got[i].objective) for i in range(len(inputs))] == [
        (Termination.OPTIMAL, objective) for objective in expected]


@pytest.mark.parametrize("where", ["here", "cluster"])
def test_a_stop_request_ends_the_batch_with_what_has_finished(where, request):
    from solvopt.core.interrupt import request_stop
    client = request.getfixturevalue("client") if where == "cluster" else None
    inputs = [*KHC, *KHC, *KHC]
    finished = []
    for result in solvopt.solve_many(inputs, client):
        finished.append(result)
        request_stop()                       # what Ctrl-C does inside a batch
    assert 1 <= len(finished) < len(inputs)
    assert all(r.termination in (Termination.OPTIMAL, Termination.INTERRUPTED) for r in finished)


def test_the_saa_estimate_is_bit_identical_for_1_2_and_4_workers(client):
    from distributed import Client, LocalCluster
    model = split_model()
    one = model.solve(seed=11, chunk=500)                      # one process, no cluster
    with use_client(client):
        two = model.solve(seed=11, chunk=500)
    # 4 workers as threads of this process: quick to start, and each chunk is still its own task
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as four_client, use_client(four_client):
        four = model.solve(seed=11, chunk=500)
    for r in (two, four):
        assert r.objective == one.objective
        assert r.solution["std_error"] == one.solution["std_error"]
        assert r.solution["ci95"] == one.solution["ci95"]
        assert r.stats["chunks"] == 12 and r.solution["scenarios"] == 6000


def test_the_inventory_dp_fans_its_chunks_out_with_the_same_statistics(client):
    model = inventory_model()
    lock, lines = threading.Lock(), []

    def log(line):  # holds a lock: does not pickle, and need not (it stays in this process)
        with lock:
            lines.append(line)
    one = model.solve("numba", chunk=400)
    with use_client(client):
        two = model.solve("numba", chunk=400, log=log)
    assert two.stats["chunks"] == one.stats["chunks"] == 8
    assert (two.objective, two.solution["ci95"]) == (one.objective, one.solution["ci95"])


def test_at_a_deadline_what_has_merged_is_the_answer(client):
    from solvopt.cvrp.solvers import compile_split
    from solvopt.cvrp.stochastic import ScenarioChunks
    # 100,000 scenarios: all of them take seconds even on two free cores (20,000 took 0.7 s there,
    # close enough to the 0.5 s deadline to finish before it)
    compiled = compile_split(split_model(100_000))
    plan = ChunkPlan(100_000, 100)
    chunk = ScenarioChunks(compiled, 1, "numpy", plan.size, 1)
    run = run_chunks(plan, chunk, client=client, deadline=time.perf_counter() + 0.5)
    assert run.stopped is Termination.TIME_LIMIT
    assert 0 < run.done < 100_000 and run.stats.scenarios == run.done and run.chunks == run.done // 100


# --- the CLI ------------------------------------------------------------------------------------
def _cli(args, **kwargs):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "solvopt.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _points(path: Path, seed: int, m: int) -> None:
    """m uniform points in 3-D; with k = 3, bnb proves m = 8 at once and m = 60 in minutes."""
    pts = np.random.default_rng(seed).uniform(0, 10, (m, 3))
    path.write_text("x1,x2,x3\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in pts) + "\n")


def test_sigint_on_a_worker_batch_prints_the_finished_and_exits_130(tmp_path):
    pytest.importorskip("distributed")
    quick = [tmp_path / "q1.csv", tmp_path / "q2.csv"]
    hard = [tmp_path / "h1.csv", tmp_path / "h2.csv"]
    for i, p in enumerate(quick + hard):
        _points(p, i, 8 if p in quick else 60)
    args = ["solve", *map(str, quick), *map(str, hard), "--workers", "2", "--json", "--k", "3",
            "--out", str(tmp_path / "out")]
    proc = _cli(args)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    first = [lines.get(timeout=90) for _ in range(2)]           # the two quick instances have finished
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the CLI did not stop within 60 s of SIGINT")
    err = proc.stderr.read()
    assert proc.returncode == 130, err
    records = {r["instance"]: r for r in map(json.loads, first)}
    assert sorted(records) == ["q1", "q2"]
    for p in quick:  # the same answer as a solve in this process
        ref = solvopt.solve_list([read_instance(str(p), k=3)])[0]
        assert records[p.stem]["objective"] == ref.objective and records[p.stem]["termination"] == "optimal"
    assert lines.empty() or all(not line.strip() for line in list(lines.queue))
    assert "skipped 2 instance(s) not finished" in err and str(hard[0]) in err and "Traceback" not in err
    assert sorted(os.listdir(tmp_path / "out")) == ["q1.json", "q2.json"]
