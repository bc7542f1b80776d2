"""Build + load into HiGHS: our DSL vs Pyomo vs highspy with prebuilt arrays (vs linopy if installed).

Two models, built the way a user writes them:
- transport: a transportation LP with n1 x n2 variables (10^6 by default), n1 + n2 rows;
- dense: a packing LP with `rows` constraints over `cols` variables at `density` (a dense-ish
  random matrix given as a scipy CSR matrix).
Times are medians of repeats, measured in one process; nothing is solved (load only).

    python benchmarks/dsl_build.py                # full sizes, writes benchmarks/results/dsl_build.{md,json}
    python benchmarks/dsl_build.py --quick        # small sizes, a smoke run
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

RESULTS = Path(__file__).resolve().parent / "results"


def transport_data(n1, n2, seed=0):
    rng = np.random.default_rng(seed)
    cost = rng.uniform(1, 10, size=(n1, n2))
    supply = rng.uniform(5, 10, size=n1)
    demand = rng.uniform(1, 5, size=n2) * supply.sum() / (5 * n2)
    return cost, supply, demand


def dense_data(rows, cols, density, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(rows, cols, density=density, format="csr", random_state=rng, data_rvs=lambda k: rng.uniform(0, 1, k))
    return A, rng.uniform(1, 2, size=rows) * cols * density, rng.uniform(0, 1, size=cols)


# --- ours --------------------------------------------------------------------------------------
def ours_transport(cost, supply, demand):
    from solvopt.dsl import Model
    from solvopt.dsl.backends.highs import load_standard_form, new_highs
    m = Model()
    x = m.add_var(shape=cost.shape, lb=0, name="x")
    m.add(x.sum(axis=1) <= supply, name="supply")
    m.add(x.sum(axis=0) >= demand, name="demand")
    m.minimize((cost * x).sum())
    h = new_highs()
    load_standard_form(h, m.compile())
    return h


def ours_dense(A, b, c):
    from solvopt.dsl import Model
    from solvopt.dsl.backends.highs import load_standard_form, new_highs
    m = Model()
    x = m.add_var(shape=A.shape[1], lb=0, ub=1, name="x")
    m.add(A @ x <= b, name="pack")
    m.maximize(c @ x)
    h = new_highs()
    load_standard_form(h, m.compile())
    return h


# --- highspy with prebuilt arrays ----------------------------------------------------------------
def prebuilt_transport(cost, supply, demand):
    n1, n2 = cost.shape
    rows = np.concatenate([np.repeat(np.arange(n1), n2), n1 + np.tile(np.arange(n2), n1)])
    cols = np.concatenate([np.arange(n1 * n2), np.arange(n1 * n2)])
    A = sp.csr_matrix((np.ones(2 * n1 * n2), (rows, cols)), shape=(n1 + n2, n1 * n2))
    lo = np.concatenate([np.full(n1, -np.inf), demand])
    hi = np.concatenate([supply, np.full(n2, np.inf)])
    return cost.ravel(), A, lo, hi, np.zeros(n1 * n2), np.full(n1 * n2, np.inf), 1


def prebuilt_dense(A, b, c):
    return c, A.tocsr(), np.full(A.shape[0], -np.inf), b, np.zeros(A.shape[1]), np.ones(A.shape[1]), -1


def highspy_load(arrays):
    import highspy
    from solvopt.dsl.backends.highs import new_highs
    c, A, lo, hi, lb, ub, sense = arrays
    h = new_highs()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(c), A.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = c, lb, ub
    lp.row_lower_, lp.row_upper_ = lo, hi
    lp.sense_ = highspy.ObjSense.kMaximize if sense < 0 else highspy.ObjSense.kMinimize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = len(c), A.shape[0]
    h.passModel(lp)
    return h


# --- Pyomo ------------------------------------------------------------------------------------
def pyomo_transport(cost, supply, demand):
    import pyomo.environ as pyo
    n1, n2 = cost.shape
    m = pyo.ConcreteModel()
    m.I, m.J = pyo.RangeSet(0, n1 - 1), pyo.RangeSet(0, n2 - 1)
    m.x = pyo.Var(m.I, m.J, domain=pyo.NonNegativeReals)
    m.supply = pyo.Constraint(m.I, rule=lambda m, i: sum(m.x[i, j] for j in m.J) <= float(supply[i]))
    m.demand = pyo.Constraint(m.J, rule=lambda m, j: sum(m.x[i, j] for i in m.I) >= float(demand[j]))
    m.obj = pyo.Objective(expr=sum(float(cost[i, j]) * m.x[i, j] for i in m.I for j in m.J))
    return _pyomo_load(m)


def pyomo_dense(A, b, c):
    import pyomo.environ as pyo
    m = pyo.ConcreteModel()
    m.J = pyo.RangeSet(0, A.shape[1] - 1)
    m.x = pyo.Var(m.J, bounds=(0, 1))
    A = A.tocsr()
    m.pack = pyo.Constraint(pyo.RangeSet(0, A.shape[0] - 1), rule=lambda m, i: sum(
        float(v) * m.x[int(j)] for j, v in zip(A.indices[A.indptr[i]:A.indptr[i + 1]],
                                               A.data[A.indptr[i]:A.indptr[i + 1]])) <= float(b[i]))
    m.obj = pyo.Objective(expr=sum(float(c[j]) * m.x[j] for j in m.J), sense=pyo.maximize)
    return _pyomo_load(m)


def _pyomo_load(m):
    from pyomo.contrib.appsi.solvers import Highs
    opt = Highs()
    opt.set_instance(m)
    return opt


# --- linopy (optional) ------------------------------------------------------------------------
def linopy_transport(cost, supply, demand):
    import linopy
    import xarray as xr
    m = linopy.Model()
    x = m.add_variables(lower=0, coords=[range(cost.shape[0]), range(cost.shape[1])], name="x")
    m.add_constraints(x.sum(dim="dim_1") <= xr.DataArray(supply, dims="dim_0"))
    m.add_constraints(x.sum(dim="dim_0") >= xr.DataArray(demand, dims="dim_1"))
    m.add_objective((xr.DataArray(cost, dims=["dim_0", "dim_1"]) * x).sum())
    return m.to_highspy()


def timed(fn, *args, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--pyomo-repeats", type=int, default=1, help="Pyomo is slow: fewer repeats")
    p.add_argument("--no-pyomo", action="store_true")
    args = p.parse_args(argv)
    n1, n2 = (100, 100) if args.quick else (1000, 1000)
    rows, cols, density = (100, 10_000, 0.01) if args.quick else (1000, 100_000, 0.01)
    cases = {
        f"transport {n1}x{n2} ({n1 * n2} vars, {n1 + n2} rows)": (
            transport_data(n1, n2), ours_transport, prebuilt_transport, pyomo_transport, linopy_transport),
        f"dense {rows}x{cols} at {density} ({int(rows * cols * density)} nonzeros)": (
            dense_data(rows, cols, density), ours_dense, prebuilt_dense, pyomo_dense, None),
    }
    try:
        import linopy  # noqa: F401
        have_linopy = True
    except ImportError:
        have_linopy = False
    records = []
    for name, (data, ours, prebuilt, pyomo_fn, linopy_fn) in cases.items():
        arrays = prebuilt(*data)
        rec = {"case": name}
        rec["ours_s"], _ = timed(ours, *data, repeats=args.repeats)
        rec["highspy_prebuilt_s"], _ = timed(highspy_load, arrays, repeats=args.repeats)
        if not args.no_pyomo:
            rec["pyomo_s"], _ = timed(pyomo_fn, *data, repeats=args.pyomo_repeats)
        if have_linopy and linopy_fn is not None:
            rec["linopy_s"], _ = timed(linopy_fn, *data, repeats=args.repeats)
        rec["ours_vs_highspy"] = rec["ours_s"] / rec["highspy_prebuilt_s"]
        if "pyomo_s" in rec:
            rec["pyomo_vs_ours"] = rec["pyomo_s"] / rec["ours_s"]
        records.append(rec)
        print(json.dumps(rec), flush=True)
    meta = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "machine": platform.processor() or platform.machine(), "cores": __import__("os").cpu_count(),
            "repeats": args.repeats, "pyomo_repeats": args.pyomo_repeats, "quick": args.quick,
            "linopy": have_linopy}
    lines = [f"# DSL build + load into HiGHS ({meta['date']}, {meta['cores']} cores, Python {meta['python']})", "",
             "Medians of repeats; load only (no solve). Ratios: Pyomo time / ours (goal >= 10), "
             "ours / highspy with prebuilt arrays (goal <= 2).", "",
             "| model | ours (s) | highspy prebuilt (s) | Pyomo (s) | linopy (s) | Pyomo / ours | ours / highspy |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        def f(k):
            return f"{r[k]:.3f}" if k in r else "-"
        lines.append(f"| {r['case']} | {f('ours_s')} | {f('highspy_prebuilt_s')} | {f('pyomo_s')} | {f('linopy_s')} | "
                     f"{r.get('pyomo_vs_ours', float('nan')):.1f} | {r['ours_vs_highspy']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "dsl_build.md").write_text(text)
        (RESULTS / "dsl_build.json").write_text(json.dumps({"meta": meta, "records": records}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
