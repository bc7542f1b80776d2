"""Constants and helpers shared by the test files (``from helpers import REPO``).

pytest puts this folder on ``sys.path`` (the tests are not a package), so every test file can
import this module by name; fixtures live in ``conftest.py``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "instances"
# the public instance sets the package does not ship (as benchmarks/public_instances.py reads them)
SHARED_INSTANCES = Path(os.environ.get("SOLVOPT_INSTANCES") or REPO.parent / "shared" / "instances")
# how long a stopped run (time limit, Ctrl-C) may take to return: generous, since the machine
# running the tests may be loaded; a run that does not poll its stop takes minutes. A check that
# the stop is polled, not a speed test.
PROMPT = 15.0


def central_jacobian(eq, v, tau, h=1e-6):
    """Central differences of ``eq.evaluate(v, tau)`` (the smoothed economy's equations), column by column."""
    J = np.empty((len(v), len(v)))
    for c in range(len(v)):
        up, down = v.copy(), v.copy()
        up[c] += h
        down[c] -= h
        J[:, c] = (eq.evaluate(up, tau, jacobian=False)[0] - eq.evaluate(down, tau, jacobian=False)[0]) / (2 * h)
    return J


def check_smoothed_jacobian(eq, rng, *, level=False, tau=0.3):
    """The smoothed economy's analytic Jacobian against central differences at a random point, without
    and then with exact (active-set) rows; ``level``: the equations carry a price level per state."""
    S, M, W, K, N = eq.shape
    for exact in (False, True):
        extra = []
        if exact:
            free = rng.random((W, N, K)) < 0.4
            eq.exact(free, np.where(rng.random((W, N, K)) < 0.5, -1.0, 1.0))
            extra = [rng.uniform(-1, 1, free.sum())]
        parts = [rng.uniform(0.5, 1.5, S * M), rng.normal(np.log(0.9), 0.3 if level else 0.1, W * K)]
        if level:
            parts.append(rng.normal(0, 0.1, S))
        v = np.concatenate(parts + [rng.uniform(0, 1, eq.risk.sum())] + extra)
        F, J = eq.evaluate(v, tau)
        assert J.shape == (eq.n, eq.n) == (len(v), len(v)) == (len(F), len(v))
        assert np.allclose(J, central_jacobian(eq, v, tau), atol=1e-6, rtol=1e-6)


def transport_lp(cost, a, b) -> float:
    """The optimum of the dense transport LP (cost (n, m), supplies a, demands b) by HiGHS through
    SciPy's linprog: a reference independent of the package's engines. Its feasibility tolerances are
    tightened to 1e-10: at the defaults (1e-7) its optimum can sit 1e-8 above the true one, more than the
    tests' 1e-9 margins allow."""
    from scipy.optimize import linprog
    n, m = cost.shape
    rows = np.zeros((n + m, n * m))
    for i in range(n):
        rows[i, i * m:(i + 1) * m] = 1
    for j in range(m):
        rows[n + j, j::m] = 1
    res = linprog(cost.ravel(), A_eq=rows, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0
    return res.fun


# --- the min-plus engine's kernels, called directly on every backend (tests/test_dp_engine.py, test_gpu_kernels.py)
DP_SCHEDULES = {"numpy": (None,), "numba": ("blocks", "targets"), "cuda": ("scenarios", "warp")}


def dp_forward(backend: str, compiled, *, track: bool = True, schedule=None, tensors=None):
    """(values (Smax, W), slots) of one chunk (default: every scenario) of a CompiledDP, on the host."""
    from solvopt.dp.backends import KERNELS
    t = compiled.chunk(0, compiled.scenarios) if tensors is None else tensors
    shape = (compiled.n_layers, compiled.max_states, t.count) if track else (0, 0, 0)
    args = (t.initial, compiled.ptr, t.src, t.cost, t.choice, compiled.n_states, compiled.sentinel)
    kw = {} if schedule is None else {"schedule": schedule}
    forward = KERNELS.load(backend).forward
    xp = np
    if backend == "cuda":
        import cupy as xp
    out = xp.empty((compiled.max_states, t.count), compiled.dtype)
    slots = xp.empty(shape, compiled.slot_index_dtype)
    forward(*args, out, slots, **kw)
    if backend == "cuda":
        return xp.asnumpy(out), xp.asnumpy(slots)
    return out, slots


def solve_stopped_at_the_fine_level(model, **options):
    """``model.solve("approx", graph="multiscale", **options)`` with the time running out as its fine
    level (the model itself) starts: its first pricing round sees the stop, and from then on the
    method's clock reads TIME_LIMIT. Returns (result, whether the fine level was reached)."""
    from unittest.mock import patch

    import solvopt.transport.approx_multiscale as ams
    import solvopt.transport.sparse_exact as se
    from solvopt.core.result import Termination
    real, fine = se.price, []

    def stopped_price(small, *args, **kw):
        if small.n == model.n:
            fine.append(True)
            kw["stop"] = lambda: True
        return real(small, *args, **kw)
    with patch.object(se, "price", stopped_price), \
            patch.object(ams, "stop_reason", lambda deadline: Termination.TIME_LIMIT if fine else None):
        result = model.solve("approx", graph="multiscale", **options)
    return result, bool(fine)
