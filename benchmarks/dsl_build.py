"""Build + load into HiGHS: our DSL vs linopy vs highspy with prebuilt arrays vs Pyomo, against size.

Two models, each built the way a user of each tool writes it, then handed to a ``highspy.Highs``
(nothing is solved):
- transport: a transportation LP, n x n variables (n^2 up to 5*10^6: 10^7 nonzeros), 2n rows;
  ours ``x.sum(axis=1) <= supply``, linopy ``x.sum(dim=...)``, Pyomo indexed rules;
- packing: ``A x <= b`` with 0 <= x <= 1, 1000 nonzeros per row, 100 columns per row
  (10^4 .. 10^7 nonzeros); ours a scipy CSR matrix ``A @ x``, linopy ``coef * x.isel(j=idx)``
  summed over the term axis, Pyomo one rule per row.
"ours" is ``Model`` build + ``Model.to_highspy()``; "linopy" its build + ``Model.to_highspy()``;
"highspy prebuilt" is the floor: the arrays already built column-wise, one ``passModel`` call.
Pyomo (build + appsi HiGHS ``set_instance``) runs at the small sizes only.

A second table times the ways of handing HiGHS prebuilt arrays (the choice behind
``solvopt.dsl.highs_export``). Times are medians of repeats in one process; the machine may be
shared, so read the ratios.

    python benchmarks/dsl_build.py             # ~4-6 min; writes benchmarks/results/dsl_build.{md,json,png}
    python benchmarks/dsl_build.py --quick     # small sizes, a smoke run (writes nothing)
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

RESULTS = Path(__file__).resolve().parent / "results"
TOOLS = ("ours", "linopy", "highspy_prebuilt", "pyomo")
PACK_TERMS = 1000          # nonzeros per packing row
PACK_COLS_PER_ROW = 100    # columns = 100 x rows


# --- data ---------------------------------------------------------------------------------------
def transport_data(n, seed=0):
    rng = np.random.default_rng(seed)
    cost = rng.uniform(1, 10, size=(n, n))
    supply = rng.uniform(5, 10, size=n)
    demand = rng.uniform(1, 5, size=n) * supply.sum() / (5 * n)
    return cost, supply, demand


def packing_data(nnz, seed=0):
    """Row i holds PACK_TERMS distinct columns idx[i] (sorted) with coefficients coef[i]."""
    rows = max(1, nnz // PACK_TERMS)
    cols = PACK_COLS_PER_ROW * rows
    k = min(PACK_TERMS, cols)
    rng = np.random.default_rng(seed)
    stride = cols // k
    idx = (rng.integers(0, cols, size=(rows, 1)) + np.arange(k) * stride
           + rng.integers(0, stride, size=(rows, k))) % cols
    idx.sort(axis=1)
    coef = rng.uniform(0, 1, size=(rows, k))
    b = rng.uniform(0.2, 0.4, size=rows) * k
    c = rng.uniform(0, 1, size=cols)
    return idx, coef, b, c


def packing_matrix(idx, coef, cols):
    rows, k = idx.shape
    return sp.csr_matrix((coef.ravel(), idx.ravel(), np.arange(0, rows * k + 1, k)), shape=(rows, cols))


# --- ours ---------------------------------------------------------------------------------------
def ours_transport(cost, supply, demand):
    from solvopt.dsl import Model
    m = Model()
    x = m.add_var(shape=cost.shape, lb=0, name="x")
    m.add(x.sum(axis=1) <= supply, name="supply")
    m.add(x.sum(axis=0) >= demand, name="demand")
    m.minimize((cost * x).sum())
    return m.to_highspy()


def ours_packing(idx, coef, b, c):
    from solvopt.dsl import Model
    A = packing_matrix(idx, coef, len(c))
    m = Model()
    x = m.add_var(shape=len(c), lb=0, ub=1, name="x")
    m.add(A @ x <= b, name="pack")
    m.maximize(c @ x)
    return m.to_highspy()


# --- linopy -------------------------------------------------------------------------------------
def _quiet_linopy_highs(m):
    # linopy's Highs prints HiGHS' banner and log: keep stdout clean while it loads
    from solvopt.dsl.highs_export import _quiet_stdout
    with _quiet_stdout():
        return m.to_highspy()


def linopy_transport(cost, supply, demand):
    import linopy
    import pandas as pd
    import xarray as xr
    n1, n2 = cost.shape
    m = linopy.Model()
    x = m.add_variables(lower=0, coords=[pd.RangeIndex(n1, name="i"), pd.RangeIndex(n2, name="j")], name="x")
    m.add_constraints(x.sum(dim="j") <= xr.DataArray(supply, dims="i"), name="supply")
    m.add_constraints(x.sum(dim="i") >= xr.DataArray(demand, dims="j"), name="demand")
    m.add_objective((xr.DataArray(cost, dims=["i", "j"]) * x).sum())
    return _quiet_linopy_highs(m)


def linopy_packing(idx, coef, b, c):
    import linopy
    import pandas as pd
    import xarray as xr
    m = linopy.Model()
    x = m.add_variables(lower=0, upper=1, coords=[pd.RangeIndex(len(c), name="j")], name="x")
    terms = x.isel(j=xr.DataArray(idx, dims=["i", "term"]))
    lhs = (xr.DataArray(coef, dims=["i", "term"]) * terms).sum("term")
    m.add_constraints(lhs <= xr.DataArray(b, dims="i"), name="pack")
    m.add_objective((xr.DataArray(c, dims="j") * x).sum(), sense="max")
    return _quiet_linopy_highs(m)


# --- highspy with prebuilt arrays (the floor) -------------------------------------------------------
def prebuilt_transport(cost, supply, demand):
    n1, n2 = cost.shape
    rows = np.concatenate([np.repeat(np.arange(n1), n2), n1 + np.tile(np.arange(n2), n1)])
    cols = np.concatenate([np.arange(n1 * n2), np.arange(n1 * n2)])
    A = sp.csr_matrix((np.ones(2 * n1 * n2), (rows, cols)), shape=(n1 + n2, n1 * n2))
    lo = np.concatenate([np.full(n1, -np.inf), demand])
    hi = np.concatenate([supply, np.full(n2, np.inf)])
    return _arrays(cost.ravel(), A, lo, hi, np.zeros(n1 * n2), np.full(n1 * n2, np.inf), 1)


def prebuilt_packing(idx, coef, b, c):
    A = packing_matrix(idx, coef, len(c))
    return _arrays(c, A, np.full(A.shape[0], -np.inf), b, np.zeros(len(c)), np.ones(len(c)), -1)


def _arrays(c, A, lo, hi, lb, ub, sense):
    csc, csr = A.tocsc(), A.tocsr()
    return {"c": np.ascontiguousarray(c, dtype=float), "lo": lo, "hi": hi, "lb": lb, "ub": ub, "sense": sense,
            "csc": (csc.indptr.astype(np.int32), csc.indices.astype(np.int32), csc.data),
            "csr": (csr.indptr.astype(np.int32), csr.indices.astype(np.int32), csr.data),
            "m": A.shape[0], "nnz": A.nnz, "integrality": np.zeros(len(c), dtype=np.int32)}


def _highs():
    from solvopt.dsl.highs_export import new_highs
    return new_highs()


def load_pointers(a, fmt="csc", index_dtype=np.int32):
    """One passModel on the arrays (what ours does): column-wise, int32."""
    import highspy
    start, index, value = a[fmt]
    fmt_code = highspy.MatrixFormat.kColwise if fmt == "csc" else highspy.MatrixFormat.kRowwise
    h = _highs()
    h.passModel(len(a["c"]), a["m"], a["nnz"], int(fmt_code), int(a["sense"]), 0.0, a["c"], a["lb"], a["ub"],
                a["lo"], a["hi"], start.astype(index_dtype, copy=False), index.astype(index_dtype, copy=False),
                value, a["integrality"])
    return h


def load_highslp(a, fmt="csc"):
    """A HighsLp filled field by field, then passModel (the former way)."""
    import highspy
    start, index, value = a[fmt]
    h = _highs()
    lp = highspy.HighsLp()
    n = len(a["c"])
    lp.num_col_, lp.num_row_ = n, a["m"]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = a["c"], a["lb"], a["ub"]
    lp.row_lower_, lp.row_upper_ = a["lo"], a["hi"]
    lp.sense_ = highspy.ObjSense.kMaximize if a["sense"] < 0 else highspy.ObjSense.kMinimize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise if fmt == "csc" else highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, a["m"]
    h.passModel(lp)
    return h


def load_addcols(a):
    """Empty rows, then every column with its entries in one addCols."""
    start, index, value = a["csc"]
    h = _highs()
    h.addRows(a["m"], a["lo"], a["hi"], 0, np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    h.addCols(len(a["c"]), a["c"], a["lb"], a["ub"], a["nnz"], start, index, value)
    return h


def load_addrows(a):
    """linopy's way: addVars, changeColsCost, then every row in one addRows."""
    start, index, value = a["csr"]
    n = len(a["c"])
    h = _highs()
    h.addVars(n, a["lb"], a["ub"])
    h.changeColsCost(n, np.arange(n, dtype=np.int32), a["c"])
    h.addRows(a["m"], a["lo"], a["hi"], a["nnz"], start, index, value)
    return h


LOADERS = {
    "passModel(arrays), column-wise, int32 (ours)": lambda a: load_pointers(a, "csc"),
    "passModel(arrays), column-wise, int64 indices": lambda a: load_pointers(a, "csc", np.int64),
    "passModel(arrays), row-wise, int32": lambda a: load_pointers(a, "csr"),
    "passModel(HighsLp), column-wise": lambda a: load_highslp(a, "csc"),
    "passModel(HighsLp), row-wise (before)": lambda a: load_highslp(a, "csr"),
    "addRows(empty) + addCols": load_addcols,
    "addVars + changeColsCost + addRows (linopy)": load_addrows,
}


# --- Pyomo --------------------------------------------------------------------------------------
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


def pyomo_packing(idx, coef, b, c):
    import pyomo.environ as pyo
    m = pyo.ConcreteModel()
    m.J = pyo.RangeSet(0, len(c) - 1)
    m.x = pyo.Var(m.J, bounds=(0, 1))
    m.pack = pyo.Constraint(pyo.RangeSet(0, idx.shape[0] - 1), rule=lambda m, i: sum(
        float(v) * m.x[int(j)] for j, v in zip(idx[i], coef[i])) <= float(b[i]))
    m.obj = pyo.Objective(expr=sum(float(c[j]) * m.x[j] for j in m.J), sense=pyo.maximize)
    return _pyomo_load(m)


def _pyomo_load(m):
    from pyomo.contrib.appsi.solvers import Highs
    opt = Highs()
    opt.set_instance(m)
    return opt


# --- timing -------------------------------------------------------------------------------------
def once(fn, *args):
    gc.collect()
    t0 = time.perf_counter()
    out = fn(*args)
    elapsed = time.perf_counter() - t0
    del out
    return elapsed


def interleaved(calls: dict, repeats: int) -> dict:
    """Median seconds of each call, the calls taking turns within each repeat (a shared machine's
    load then weighs on all of them alike)."""
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, (fn, args) in calls.items():
            times[name].append(once(fn, *args))
    return {name: statistics.median(t) for name, t in times.items()}


def check_same_model(name, hs):
    """Every tool loaded the same sizes into HiGHS (a sanity check, not a timing)."""
    sizes = {tool: (h.getNumCol(), h.getNumRow(), h.getNumNz()) for tool, h in hs.items()}
    if len(set(sizes.values())) != 1:
        raise SystemExit(f"{name}: the tools loaded different models: {sizes}")


MODELS = {
    "transport": dict(data=transport_data, ours=ours_transport, linopy=linopy_transport,
                      prebuilt=prebuilt_transport, pyomo=pyomo_transport,
                      sizes=[100, 316, 1000, 2236], quick=[30, 100], pyomo_max=316,
                      size=lambda n: {"variables": n * n, "rows": 2 * n, "nonzeros": 2 * n * n}),
    "packing": dict(data=packing_data, ours=ours_packing, linopy=linopy_packing,
                    prebuilt=prebuilt_packing, pyomo=pyomo_packing,
                    sizes=[10**4, 10**5, 10**6, 10**7], quick=[10**4, 10**5], pyomo_max=10**5,
                    size=lambda z: {"variables": PACK_COLS_PER_ROW * max(1, z // PACK_TERMS),
                                    "rows": max(1, z // PACK_TERMS), "nonzeros": z}),
}


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run; writes nothing)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--large-repeats", type=int, default=5, help="repeats from 5x10^6 nonzeros")
    p.add_argument("--no-pyomo", action="store_true")
    p.add_argument("--no-linopy", action="store_true")
    args = p.parse_args(argv)
    use_linopy = not args.no_linopy and have("linopy")
    use_pyomo = not args.no_pyomo and have("pyomo")
    start_load = _load()
    _highs()  # the banner once, outside the timings
    records = []
    for model, spec in MODELS.items():
        for size in spec["quick"] if args.quick else spec["sizes"]:
            data = spec["data"](size)
            dims = spec["size"](size)
            repeats = args.large_repeats if dims["nonzeros"] >= 5 * 10**6 else args.repeats
            arrays = spec["prebuilt"](*data)
            rec = {"model": model, **dims, "repeats": repeats}
            hs = {"ours": spec["ours"](*data), "highspy_prebuilt": load_pointers(arrays)}   # also warms up
            calls = {"ours": (spec["ours"], data), "highspy_prebuilt": (load_pointers, (arrays,))}
            if use_linopy:
                hs["linopy"] = spec["linopy"](*data)
                calls["linopy"] = (spec["linopy"], data)
            if use_pyomo and size <= spec["pyomo_max"]:
                calls["pyomo"] = (spec["pyomo"], data)
            medians = interleaved(calls, repeats)
            rec.update({f"{tool}_s": t for tool, t in medians.items()})
            if "linopy_s" in rec:
                rec["linopy_over_ours"] = rec["linopy_s"] / rec["ours_s"]
            if "pyomo_s" in rec:
                rec["pyomo_over_ours"] = rec["pyomo_s"] / rec["ours_s"]
            rec["ours_over_prebuilt"] = rec["ours_s"] / rec["highspy_prebuilt_s"]
            check_same_model(f"{model} {size}", hs)
            del hs, arrays, data
            records.append(rec)
            print(json.dumps(rec), flush=True)
    loads = []
    for model, size in (("transport", 100), ("packing", 10**5)) if args.quick else (("transport", 1000),
                                                                                    ("packing", 10**6)):
        spec = MODELS[model]
        arrays = spec["prebuilt"](*spec["data"](size))
        row = {"model": model, **spec["size"](size)}
        row.update(interleaved({name: (loader, (arrays,)) for name, loader in LOADERS.items()}, args.repeats))
        loads.append(row)
        print(json.dumps(row), flush=True)
    meta = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "repeats": args.repeats, "large_repeats": args.large_repeats, "quick": args.quick,
            "versions": {pkg: _version(pkg) for pkg in ("highspy", "linopy", "pyomo", "numpy", "scipy")},
            "load_average_at_start": start_load, "load_average_at_end": _load()}
    text = report(records, loads, meta)
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "dsl_build.md").write_text(text)
        (RESULTS / "dsl_build.json").write_text(json.dumps({"meta": meta, "records": records, "loads": loads},
                                                           indent=2))
        plot(records, RESULTS / "dsl_build.png")
    return 0


def _load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _version(pkg):
    try:
        from importlib.metadata import version
        return version(pkg)
    except Exception:
        return None


def report(records, loads, meta) -> str:
    def f(r, k, fmt="{:.3f}"):
        return fmt.format(r[k]) if k in r else "-"
    v = meta["versions"]
    lines = [f"# DSL build + load into HiGHS ({meta['date']}, {meta['cores']} cores, Python {meta['python']}, "
             f"highspy {v['highspy']}, linopy {v['linopy']}, Pyomo {v['pyomo']})", "",
             "Build the model and hand it to a `highspy.Highs` (no solve); medians of "
             f"{meta['repeats']} repeats ({meta['large_repeats']} from 5x10^6 nonzeros), the tools taking "
             f"turns within each repeat, on a shared machine (1-minute load average {meta['load_average_at_start']} "
             f"at the start, {meta['load_average_at_end']} at the end). "
             "ours = `Model` + `to_highspy()`; linopy = its model + `to_highspy()`; highspy prebuilt = "
             "the arrays already built, one column-wise `passModel` (the floor). "
             "Ratios: linopy / ours and Pyomo / ours (> 1: ours is faster), ours / prebuilt.", "",
             "| model | variables | nonzeros | ours (s) | linopy (s) | highspy prebuilt (s) | Pyomo (s) | "
             "linopy / ours | Pyomo / ours | ours / prebuilt |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in records:
        lines.append(f"| {r['model']} | {r['variables']:,} | {r['nonzeros']:,} | {f(r, 'ours_s')} | "
                     f"{f(r, 'linopy_s')} | {f(r, 'highspy_prebuilt_s')} | {f(r, 'pyomo_s')} | "
                     f"{f(r, 'linopy_over_ours', '{:.2f}')} | {f(r, 'pyomo_over_ours', '{:.0f}')} | "
                     f"{f(r, 'ours_over_prebuilt', '{:.2f}')} |")
    lines += ["", "## Handing HiGHS prebuilt arrays: the alternatives", "",
              "Seconds (medians) to load the same prebuilt arrays; the first row is what `to_highspy()` does.", "",
              "| way | " + " | ".join(f"{r['model']} ({r['nonzeros']:,} nonzeros)" for r in loads) + " |",
              "| --- |" + " ---: |" * len(loads)]
    for name in LOADERS:
        lines.append(f"| {name} | " + " | ".join(f"{r[name]:.3f}" for r in loads) + " |")
    lines += ["", "![build + load time against size](dsl_build.png)", ""]
    return "\n".join(lines)


def plot(records, path):
    from plots import pyplot_or_none
    plt = pyplot_or_none()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"ours": ("ours (solvopt.dsl)", "o-"), "linopy": ("linopy", "s--"),
              "highspy_prebuilt": ("highspy, prebuilt arrays", "^:"), "pyomo": ("Pyomo", "x-.")}
    for ax, model, xkey in ((axes[0], "transport", "variables"), (axes[1], "packing", "nonzeros")):
        rows = [r for r in records if r["model"] == model]
        for tool, (label, style) in styles.items():
            pts = [(r[xkey], r[f"{tool}_s"]) for r in rows if f"{tool}_s" in r]
            if pts:
                ax.loglog(*zip(*pts), style, label=label)
        ax.set_title(f"{model} LP: build + load into HiGHS")
        ax.set_xlabel(f"{xkey}")
        ax.set_ylabel("seconds (median)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
