"""solvopt.warmup: compiles a family's kernels into the user's Numba cache, so a later process does not.

Each run is a fresh interpreter with its own empty NUMBA_CACHE_DIR (the test's tmp folder): the
first warms the dp family (the cheapest to compile), a second solves a dp model of another shape
and must compile nothing (every kernel comes from the cache), and a second warm-up says it found
everything cached. The compile time is read both from the result's stats and from
solvopt.core.jit_clock around the solve (which sees compiles in any thread, even when Numba is first
imported inside the solve). No timing thresholds: "nothing compiled" is exactly 0.0 seconds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solvopt.core.errors import ModelError
from solvopt.warmup import warmup

ROOT = Path(__file__).resolve().parents[1]

_WARM = r"""
import json, sys
from solvopt.warmup import warmup
lines = []
report = warmup(json.loads(sys.argv[1]), progress=lines.append)
print(json.dumps({"report": report, "lines": lines}))
"""

_SOLVE = r"""
import json
import numpy as np
from solvopt.core.jit_clock import compile_timer
from solvopt.dsl import LayeredDP
rng = np.random.default_rng(7)
states = [3, 4, 2, 5]                       # a shape the warm-up's cases do not use
layers = [rng.uniform(0.0, 5.0, size=(4, a, b)) for a, b in zip(states[:-1], states[1:])]
with compile_timer() as jit:
    result = LayeredDP(states, layers, final="per_scenario").solve("numba")
print(json.dumps({"compile_time": result.stats.get("compile_time"), "clock": jit.seconds,
                  "termination": result.termination.value}))
"""


def _run(code: str, cache: Path, *args: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_warmup_fills_the_cache_for_a_later_process(tmp_path):
    cache = tmp_path / "numba"
    first = _run(_WARM, cache, '["dp"]')
    dp = first["report"]["dp"]
    assert not dp["cached"] and dp["compile_time"] > 0.0
    assert dp["kernels"] and all(k["compiled"] >= 1 for k in dp["kernels"].values())
    assert all("error" not in s for s in dp["solves"].values()), dp["solves"]
    assert "numba" in " ".join(dp["solves"])          # every method of the scale cases ran
    assert len(first["lines"]) == 1 and first["lines"][0].startswith("dp:")
    assert any(cache.rglob("*.nbi")), "warmup wrote nothing into NUMBA_CACHE_DIR"

    later = _run(_SOLVE, cache)
    assert later["termination"] == "optimal"
    assert later["clock"] == 0.0                      # every kernel came from the cache
    assert later["compile_time"] in (None, 0.0)

    again = _run(_WARM, cache, '["dp"]')["report"]["dp"]
    assert again["cached"] and again["compile_time"] == 0.0
    assert all(k["compiled"] == 0 and k["from_cache"] >= 1 for k in again["kernels"].values())


def test_warmup_rejects_an_unknown_family():
    with pytest.raises(ModelError, match="unknown family 'nope'.*known: .*khc"):
        warmup(["nope"])


def test_warmup_of_a_family_without_kernels_solves_its_cases():
    lines = []
    report = warmup(["lp"], progress=lines.append)
    lp = report["lp"]
    assert lp["solves"] and all("error" not in s for s in lp["solves"].values())
    assert lp["kernels"] == {} and lp["cached"]
    assert lines and lines[0].startswith("lp:")


def test_families_of_a_batch():
    from solvopt.dist import families_of
    from solvopt.dsl import LayeredDP
    model = LayeredDP([2, 2], [[[1.0, 2.0], [3.0, 4.0]]])
    paths = [str(ROOT / "instances" / "khc" / "sr_10_2_2_1022.dat"), "no-such-file.dat",
             str(ROOT / "instances" / "khc" / "sr_12_3_2_1232.dat")]
    assert families_of(paths + [model]) == ["khc", "dp"]


def test_share_cache_points_every_worker_at_one_folder(tmp_path):
    pytest.importorskip("distributed")
    from solvopt.dist import local_client, share_cache, worker_cache_dirs
    folder = tmp_path / "shared-numba"
    with local_client(1) as client:
        assert share_cache(client, folder) == str(folder)
        dirs = worker_cache_dirs(client)
        assert list(dirs.values()) == [str(folder)]
        client.cluster.scale(2)                      # a worker that joins later gets it too
        client.wait_for_workers(2, timeout=60)
        assert sorted(worker_cache_dirs(client).values()) == [str(folder)] * 2


@pytest.mark.slow
def test_distributed_page_first_example_runs_as_a_script(tmp_path):
    """docs/distributed.md opens with a script guarded by ``if __name__ == "__main__":`` (the page's
    blocks run in one namespace whose ``__name__`` is not ``__main__``, so the guarded part is run
    here as the page says: saved as batch.py and run from the repository root)."""
    pytest.importorskip("distributed")
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_docs import blocks_of
    finally:
        sys.path.remove(str(ROOT / "tests"))
    script = next(b for b in blocks_of(ROOT / "docs" / "distributed.md") if b.kind == "python").source
    assert 'if __name__ == "__main__":' in script and "local_client" in script
    (tmp_path / "batch.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, str(tmp_path / "batch.py")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = sorted(line.split()[:2] for line in proc.stdout.splitlines())
    assert rows == [["no-such-file", "error"], ["sr_10_2_2_1022", "optimal"], ["sr_12_3_2_1232", "optimal"]]


def test_solve_list_warm_runs_the_warmup_first(monkeypatch):
    import numpy as np

    import solvopt
    import solvopt.warmup as warm
    from solvopt.dsl import Model
    seen = []
    real = warm.warmup
    monkeypatch.setattr(warm, "warmup", lambda families, progress=None: seen.append(families) or real(families))
    m = Model(name="tiny")
    x = m.add_var(shape=2, lb=0, name="x")
    m.add(np.ones(2) @ x <= 1.0)
    m.maximize(np.array([1.0, 2.0]) @ x)
    (result,) = solvopt.solve_list([m], warm=True)
    assert seen == [["lp"]] and result.termination.value == "optimal" and abs(result.objective - 2.0) < 1e-9


_CLOCK = r"""
import json, sys, threading, time
from solvopt.core.jit_clock import compile_timer
assert "numba" not in sys.modules
with compile_timer() as none_used:
    pass
start = time.perf_counter()
with compile_timer() as jit:                  # Numba first imported inside the block, used in a thread
    import numba
    imported = time.perf_counter()
    def work():
        f = numba.njit(lambda a: a * 2 + 1)
        g = numba.njit(lambda a: f(a) - 1)      # compiles f nested inside g: counted once
        g(3.0)
    t = threading.Thread(target=work)
    t.start(); t.join()
compiling = time.perf_counter() - imported      # nested compiles counted once: at most this long
with compile_timer() as again:
    numba.njit(lambda a: a)(1)
with compile_timer() as nothing:
    pass
print(json.dumps([none_used.seconds, jit.seconds, again.seconds, nothing.seconds, compiling]))
"""


def test_compile_clock_sees_numba_imported_mid_block_and_helper_threads(tmp_path):
    none_used, seconds, again, nothing, compiling = _run(_CLOCK, tmp_path / "numba")
    assert none_used is None                  # Numba never imported: no measurement, nothing imported
    assert 0.0 < seconds <= compiling and again > 0.0
    assert nothing == 0.0


@pytest.mark.slow
def test_warmup_compiles_the_games_kernels_and_a_second_run_loads_them(tmp_path):
    # the sampled rollouts (affine-gda, evaluation="sampled") and the one-asset deviation DP are
    # reached by no scale case: the warm-up's extra case and direct call must compile them
    cache = tmp_path / "numba"
    games = _run(_WARM, cache, '["games"]')["report"]["games"]
    assert all("error" not in s for s in games["solves"].values()), games["solves"]
    assert "linear-quadratic-sampled/affine-gda" in games["solves"] and "one-asset-deviation-dp" in games["solves"]
    wanted = {"solvopt.games.parametric_kernels.rollout", "solvopt.games.parametric_kernels.reverse",
              "solvopt.games.economy_deviation._nb_bellman"}
    assert wanted <= set(games["kernels"]), sorted(games["kernels"])
    assert all(games["kernels"][k]["compiled"] >= 1 for k in wanted)
    again = _run(_WARM, cache, '["games"]')["report"]["games"]
    assert again["cached"] and again["compile_time"] == 0.0
    assert wanted <= set(again["kernels"])
    assert all(again["kernels"][k]["compiled"] == 0 and again["kernels"][k]["from_cache"] >= 1 for k in wanted)
