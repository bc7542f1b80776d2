"""Export a DSL model to a Pyomo ConcreteModel, so any Pyomo solver solves the very same model.

Each variable array becomes one indexed Pyomo ``Var`` and each constraint array one indexed
``Constraint``, with the DSL's name and shape (index ``i`` for 1-D arrays, ``(i, j, ...)``
beyond); scalars stay scalar components. A DSL name that Pyomo reserves on a model (``name``,
``solve``, ...) or that is already taken gets trailing underscores; ``pm.solvopt_names`` maps
``("var" | "constraint" | "objective", dsl name)`` to the Pyomo component name. Quadratic terms
stay quadratic. Building Pyomo objects is Python-loop work by nature: this is the export path,
not the fast path. :func:`read_pyomo_values` and :func:`read_pyomo_duals` read a solved export
back (``Model.load_pyomo_solution``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import BackendUnavailable, ModelError

from ..expr import LinExpr, QuadExpr, widen

if TYPE_CHECKING:
    from ..model import Model


def _index(shape: tuple[int, ...]) -> list[Any]:
    """Pyomo indices of an array of ``shape`` in C order: ints for 1-D, tuples beyond."""
    if len(shape) == 1:
        return list(range(shape[0]))
    return list(np.ndindex(*shape))


def _component_name(pm: Any, name: str) -> str:
    """``name``, or ``name_``, ``name__``, ... when Pyomo reserves it or the model already holds it."""
    out = name
    while hasattr(pm, out):
        out += "_"
    return out


def to_pyomo(model: Model) -> Any:
    try:
        import pyomo.environ as pyo
    except ImportError:
        raise BackendUnavailable("the Pyomo export needs Pyomo, which is not installed: "
                                 "pip install 'solvopt[pyomo]'") from None
    pm = pyo.ConcreteModel(name=model.name)
    names: dict[tuple[str, str], str] = {}
    columns: list[Any] = [None] * model.num_vars
    for v in model.vars:
        domain = {"continuous": pyo.Reals, "binary": pyo.Binary, "integer": pyo.Integers}[v.vtype]
        index = _index(v.shape) if v.shape else [None]
        pv = pyo.Var(index, domain=domain) if v.shape else pyo.Var(domain=domain)
        names[("var", v.name)] = _component_name(pm, v.name)
        pm.add_component(names[("var", v.name)], pv)
        for k, idx in enumerate(index):
            comp = pv[idx] if idx is not None else pv
            lb, ub = v.lb[k], v.ub[k]
            comp.setlb(None if not math.isfinite(lb) else float(lb))
            comp.setub(None if not math.isfinite(ub) else float(ub))
            columns[v.start + k] = comp
    n = model.num_vars

    def rows_of(expr: LinExpr | QuadExpr) -> list[Any]:
        """Pyomo expressions for every element of a LinExpr or QuadExpr (floats where no variable is left)."""
        lin = expr.lin if isinstance(expr, QuadExpr) else expr
        coef = widen(lin.coef, n).tocsr()
        out = []
        for e in range(lin.size):
            lo, hi = coef.indptr[e], coef.indptr[e + 1]
            terms = [float(a) * columns[j] for j, a in zip(coef.indices[lo:hi], coef.data[lo:hi])]
            out.append(pyo.quicksum(terms) + float(lin.const[e]) if terms else float(lin.const[e]))
        if isinstance(expr, QuadExpr):
            for e, i, j, q in zip(expr.elem, expr.vi, expr.vj, expr.q):
                out[e] = out[e] + float(q) * columns[i] * columns[j]
        return out

    for con in model.constraints:
        body = rows_of(con.body)
        relations = [_relation(pyo, b, con.sense, f"{con.name}[{k}]") for k, b in enumerate(body)]
        if con.shape:
            index = _index(con.shape)
            pc = pyo.Constraint(index, rule=_rule(dict(zip(index, relations))))
        else:
            pc = pyo.Constraint(rule=_rule({None: relations[0]}))
        names[("constraint", con.name)] = _component_name(pm, con.name)
        pm.add_component(names[("constraint", con.name)], pc)
    if model.objective is not None:
        (obj,) = rows_of(model.objective)
        names[("objective", "objective")] = _component_name(pm, "objective")
        pm.add_component(names[("objective", "objective")],
                         pyo.Objective(expr=obj, sense=pyo.minimize if model.sense > 0 else pyo.maximize))
    pm.solvopt_names = names
    return pm


def _rule(by_index: dict[Any, Any]) -> Callable[..., Any]:
    """A Pyomo rule giving each index its prepared relation (a scalar constraint's index is None)."""
    return lambda _m, *i: by_index[i[0] if len(i) == 1 else i]


def _relation(pyo: Any, body: Any, sense: str, where: str) -> Any:
    """``body sense 0`` as a Pyomo relation; a row without variables is skipped when it holds."""
    if isinstance(body, float):
        holds = body <= 1e-9 if sense == "<=" else body >= -1e-9 if sense == ">=" else abs(body) <= 1e-9
        if not holds:
            raise ModelError(f"constraint {where} has no variables and cannot hold ({body:g} {sense} 0)")
        return pyo.Constraint.Skip
    if sense == "<=":
        return body <= 0
    if sense == ">=":
        return body >= 0
    return body == 0


def _component(model: Model, pm: Any, kind: str, name: str) -> Any:
    names = getattr(pm, "solvopt_names", None)
    if names is None:
        raise ModelError("this Pyomo model was not made by Model.to_pyomo() (it has no solvopt_names)")
    if (kind, name) not in names:
        raise ModelError(f"the Pyomo model has no {kind} {name!r}: was it exported from this model?")
    return getattr(pm, names[(kind, name)])


def read_pyomo_values(model: Model, pm: Any) -> npt.NDArray[np.float64]:
    """The full variable vector from a solved Pyomo export (None values become NaN)."""
    x = np.full(model.num_vars, np.nan)
    for v in model.vars:
        pv = _component(model, pm, "var", v.name)
        index = _index(v.shape) if v.shape else [None]
        for k, idx in enumerate(index):
            val = (pv[idx] if idx is not None else pv).value
            if val is not None:
                x[v.start + k] = float(val)
    return x


def read_pyomo_duals(model: Model, pm: Any) -> dict[str, npt.NDArray[np.float64]] | None:
    """Per linear constraint name, its flat duals from the export's ``dual`` Suffix (None without one).

    Rows Pyomo skipped (no variables) and rows without a dual read NaN.
    """
    import pyomo.environ as pyo
    suffix = getattr(pm, "dual", None)
    if not isinstance(suffix, pyo.Suffix):
        return None
    out = {}
    for con in model.constraints:
        if con.is_quadratic:
            continue
        pc = _component(model, pm, "constraint", con.name)
        index = _index(con.shape) if con.shape else [None]
        duals = np.full(len(index), np.nan)
        for k, idx in enumerate(index):
            data = pc if idx is None else pc[idx] if idx in pc else None
            if data is not None and data in suffix:
                duals[k] = float(suffix[data])
        out[con.name] = duals
    return out
