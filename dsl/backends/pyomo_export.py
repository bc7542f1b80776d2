"""Export a DSL model to a Pyomo ConcreteModel, so any Pyomo solver solves the very same model.

Each variable array becomes one indexed Pyomo variable with the DSL name; each constraint
array one indexed constraint; quadratic terms stay quadratic. Building Pyomo objects is
Python-loop work by nature: this is the export path, not the fast path.
"""
from __future__ import annotations

import math

import numpy as np

from solvopt.core.errors import BackendUnavailable

from ..expr import QuadExpr, _widen


def to_pyomo(model):
    try:
        import pyomo.environ as pyo
    except ImportError:
        raise BackendUnavailable("Pyomo is not installed: pip install pyomo") from None
    pm = pyo.ConcreteModel(name=model.name)
    columns: list = [None] * model.num_vars
    for v in model.vars:
        index = list(np.ndindex(*v.shape)) if v.shape else [None]
        domain = {"continuous": pyo.Reals, "binary": pyo.Binary, "integer": pyo.Integers}[v.vtype]
        if v.shape:
            pv = pyo.Var(index, domain=domain)
        else:
            pv = pyo.Var(domain=domain)
        setattr(pm, v.name, pv)
        for k, idx in enumerate(index):
            comp = pv[idx] if idx is not None else pv
            lb, ub = v.lb[k], v.ub[k]
            comp.setlb(None if not math.isfinite(lb) else float(lb))
            comp.setub(None if not math.isfinite(ub) else float(ub))
            columns[v.start + k] = comp
    n = model.num_vars

    def rows_of(expr):
        """Pyomo expressions for every element of a LinExpr or QuadExpr."""
        lin = expr.lin if isinstance(expr, QuadExpr) else expr
        coef = _widen(lin.coef, n).tocsr()
        out = []
        for e in range(lin.size):
            lo, hi = coef.indptr[e], coef.indptr[e + 1]
            out.append(sum(float(a) * columns[j] for j, a in zip(coef.indices[lo:hi], coef.data[lo:hi]))
                       + float(lin.const[e]))
        if isinstance(expr, QuadExpr):
            for e, i, j, q in zip(expr.elem, expr.vi, expr.vj, expr.q):
                out[e] = out[e] + float(q) * columns[i] * columns[j]
        return out

    for con in model.constraints:
        body = rows_of(con.body)
        cl = pyo.ConstraintList()
        setattr(pm, con.name, cl)
        for b in body:
            if con.sense == "<=":
                cl.add(b <= 0)
            elif con.sense == ">=":
                cl.add(b >= 0)
            else:
                cl.add(b == 0)
    if model.objective is not None:
        (obj,) = rows_of(model.objective)
        pm.objective = pyo.Objective(expr=obj, sense=pyo.minimize if model.sense > 0 else pyo.maximize)
    return pm


def read_pyomo_values(model, pm) -> np.ndarray:
    """The full variable vector from a solved Pyomo export (None values become NaN)."""
    x = np.full(model.num_vars, np.nan)
    for v in model.vars:
        pv = getattr(pm, v.name)
        index = list(np.ndindex(*v.shape)) if v.shape else [None]
        for k, idx in enumerate(index):
            val = (pv[idx] if idx is not None else pv).value
            if val is not None:
                x[v.start + k] = float(val)
    return x
