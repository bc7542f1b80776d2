"""The transport family's default method ``auto``: picks by measured cost.

- points on the line (dimension 1, a named metric), every p including inf: ``1d``, the exact
  quantile formula;
- p = inf on points with a named metric: ``bottleneck``, exact W_inf on spatial trees (faster than
  ``approx`` and the dense search at every size measured, uniform or general masses);
- otherwise ``exact`` on the full matrix while n x m is at most :data:`DENSE_PAIRS` (finite p,
  points with a named metric: the dense network simplex), :data:`MATRIX_PAIRS` (finite p, a cost
  matrix or callable metric) or :data:`EXACT_PAIRS` (p = inf: the dense bottleneck search);
- beyond, for points with a named metric and finite p <= 8: ``sparse-exact`` (exact, certified
  over all pairs without the n x m matrix) up to :data:`SPARSE_EXACT_PAIRS`, where it was both
  faster than ``approx`` with its default certificate and exact;
- ``approx`` beyond, and for cost matrices and callables: the constant-factor approximation, except
  for point clouds of 10^9 pairs and more in d <= 3 (finite p <= 8), where its default is the
  multiscale pricing, whose gap is certified a posteriori (no a-priori factor).

The limits are the crossover measured by ``benchmarks/transport_auto.py`` (the table is in
``benchmarks/results/transport_auto.md``). ``auto`` takes the union of its methods' options and
hands each to the method it runs when that method takes it (``centres`` only to ``approx``, an
``engine`` only to a method that has that engine); an option the chosen method does not take is
listed in ``stats["auto_unused"]``, never silently dropped. ``stats["auto_method"]`` and
``stats["auto_reason"]`` say which method ran and why.
"""
from __future__ import annotations

import math

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register

from .approx import Approx
from .bottleneck import BottleneckTransport, tree_path
from .exact import ExactTransport
from .one_d import OneDTransport, on_the_line
from .sparse_exact import SparseExact, supported

# Largest n x m for which ``auto`` runs ``exact`` (finite p, the dense network simplex): points with a
# named metric (beyond: sparse-exact; and beyond DENSE_CHECKED_PAIRS only while the matrix and its
# work arrays fit in half of the memory available), and cost matrices or callable metrics (beyond:
# approx). Measured in one process beside ot.emd (benchmarks/transport_exact_scale.py --inprocess;
# benchmarks/results/transport_exact_scale.md): on uniform clouds exact and sparse-exact are level
# at n = 5000 (d = 3, p = 2: 2.9 / 3.1 s; d = 2, p = 1: 4.3 / 3.9 s; ot.emd 16-23 s), while on the
# real colours of two images sparse-exact's rounds stalled then (n = 3000, p = 1: 47 s against 2.1 s
# for exact and 3.3 s for ot.emd). With the pricing rounds' spread doubling they no longer do
# (benchmarks/transport_dense_limit.py; exact / sparse-exact CPU time, one process, medians of 2,
# uniform d = 2 / uniform d = 3 / two photos' colours, p = 1 and 2, load about 1): n = 3000: 1.39,
# 0.96 / 0.60, 0.78 / 0.93, 1.49; n = 4000: 1.63, 1.70 / 0.86, 0.94 / 1.31, 1.71; n = 5000: 1.66,
# 2.08 / 0.90, 1.35 / 1.36, 2.51 (all optimal). The crossover lies between 3000 and 4000.
DENSE_PAIRS = 3500 * 3500
DENSE_CHECKED_PAIRS = 2500 * 2500
MATRIX_PAIRS = 2500 * 2500
# p = inf off the spatial-tree path (cost matrices, callable metrics): the dense bottleneck search
# (random masses, n = 700: 3.8 s against 11.0 s for approx; benchmarks/results/transport_auto.md).
EXACT_PAIRS = 1200 * 1200
# Largest n x m for which ``auto`` runs ``sparse-exact`` (beyond the limits above). Measured against
# approx with its default (dual) certificate, 2-D uniform points, n = m, one run each on a loaded
# 2-core machine: n = 3000: sparse-exact 1.6 / 0.7 s (p = 1 / 2), approx 3.7 / 2.1 s; 6000: 3.3 /
# 1.8 s against 4.0 / 3.9 s; 10^4: 4.1 / 4.4 s, both optimal, against 8.5 / 7.8 s, feasible within
# gap; 10^5 (benchmarks/results/transport_exact_scale.md): 561 / 284 s, optimal, against 390 / 302 s
# for approx with gaps 20% / 0.11%.
SPARSE_EXACT_PAIRS = 100_000 * 100_000

METHODS = {s.name: s for s in (OneDTransport, BottleneckTransport, ExactTransport, SparseExact, Approx)}


def _union_options() -> tuple[Option, ...]:
    """Every option of the methods ``auto`` runs, once: choices merged, the help naming who takes it."""
    merged: dict[str, Option] = {}
    helps: dict[str, dict[str, list[str]]] = {}
    for solver in (Approx, ExactTransport, SparseExact, BottleneckTransport):
        for opt in solver.options:
            helps.setdefault(opt.name, {}).setdefault(opt.help, []).append(solver.name)
            old = merged.setdefault(opt.name, opt)
            if old.type is not opt.type or old.default != opt.default:
                raise RuntimeError(f"transport option {opt.name!r} differs in type or default between methods")
            if old.choices is not None:
                merged[opt.name] = Option(old.name, old.type, old.default, old.help, old.choices + tuple(
                    c for c in opt.choices or () if c not in old.choices))
    return tuple(Option(o.name, o.type, o.default,
                        "; ".join(f"{', '.join(names)}: {text}" for text, names in helps[o.name].items()), o.choices)
                 for o in merged.values())


def auto_decision(model) -> tuple[str, str]:
    """(the method ``auto`` runs for ``model``, why) — see the module's docstring."""
    if on_the_line(model):
        return "1d", "points on the line: the exact quantile formula"
    pairs = model.n * model.m
    if math.isinf(model.p) and tree_path(model):
        return "bottleneck", "p = inf on points with a named metric: exact W_inf on spatial trees"
    points = supported(model) is None
    if math.isinf(model.p):
        limit, what = EXACT_PAIRS, "the bottleneck search"
    else:
        limit, what = (DENSE_PAIRS if points else MATRIX_PAIRS), "the dense network simplex"
    if pairs <= limit and (pairs <= DENSE_CHECKED_PAIRS or _dense_fits(pairs)):
        return "exact", f"{pairs:,} pairs <= {limit:,}: exact on the full matrix ({what}) is the cheaper"
    if points and pairs <= SPARSE_EXACT_PAIRS:
        return "sparse-exact", (f"{pairs:,} pairs > {limit:,}, points with a named metric: exact by pricing on "
                                "candidate pairs is the cheaper")
    return "approx", f"{pairs:,} pairs > {limit:,}: the approximation (with a certified gap) is the cheaper"


def _dense_fits(pairs: int) -> bool:
    """The dense simplex's matrix and work arrays for ``pairs`` fit in half of the available memory."""
    from solvopt.core.memory import memory_budget

    from .exact import PAIR_BYTES
    return pairs * PAIR_BYTES["dense"] <= memory_budget()


def auto_choice(model) -> str:
    """The method ``auto`` runs for ``model``."""
    return auto_decision(model)[0]


@register
class AutoTransport(Solver):
    family = "transport"
    name = "auto"
    description = (f"the default: picks by measured cost: '1d' on the line; 'bottleneck' for p = inf on points with "
                   f"a named metric; 'exact' up to {DENSE_PAIRS:,} pairs for points ({MATRIX_PAIRS:,} for cost "
                   f"matrices, {EXACT_PAIRS:,} for p = inf); 'sparse-exact' beyond for points with a named metric and "
                   "finite p <= 8, up to "
                   f"{SPARSE_EXACT_PAIRS:,} pairs; 'approx' beyond (stats['auto_method'] and stats['auto_reason'] say "
                   "which and why)")
    default = True
    options = _union_options()
    honours = frozenset().union(*(s.honours for s in METHODS.values()))

    def solve(self, model, options):
        name, reason = auto_decision(model)
        solver = METHODS[name]
        given = dict(options.extra)
        extra, unused = {o.name: o.default for o in solver.options}, []
        for key, value in given.items():
            if value == self.option(key).default:
                continue
            opt = solver.option(key)
            if opt is None:
                unused.append(f"{key}={value!r} ({name} has no such option)")
                continue
            try:
                extra[key] = opt.convert(value, f"transport/{name}")
            except ModelError:
                unused.append(f"{key}={value!r} (not a choice of {name}: {', '.join(map(str, opt.choices or ()))})")
        for key in sorted(self.honours - solver.honours):     # common options the chosen method does not act on
            value = getattr(options, key)
            if value is not None and not (key == "device" and value in ("auto", "cpu")):
                unused.append(f"{key}={value!r} ({name} does not act on it)")
        options.extra = extra
        result = solver().solve(solver.compile(model), options)
        result.stats["auto_method"] = name
        result.stats["auto_reason"] = reason
        if unused:
            result.stats["auto_unused"] = unused
        return result
