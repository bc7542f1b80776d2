"""Rigorous enclosures of an expression tree's own derivative on an interval (interval arithmetic).

A one-variable player whose utility is not concave needs, for its certified global best response
(:mod:`solvopt.games.scalar_global`), an enclosure [d_lo, d_hi] of du/da_k over a_k in [l, r] with
the rest of the joint action a fixed. :func:`own_derivative_range` derives it from the parsed tree
(:mod:`solvopt.games.expressions`) in forward mode: every node returns an interval of its value and
one of its derivative in a_k (sums, the product rule, the power and log rules on intervals). Powers
are monotone on each side of zero, so their ranges come from the interval's ends (and 0 inside).
Every bound is rounded outward after each operation (one step for +, *, /, two for ** and log,
which the C library computes within an ulp), so the enclosure holds in exact arithmetic. An
interval that leaves an operation's domain (a log reaching 0, a negative power of an interval
holding 0) is a one-line ModelError naming the node.
"""
from __future__ import annotations

import math

import numpy as np

from solvopt.core.errors import ModelError

from .expressions import Add, Const, Linear, Log, Mul, Node, Payoff, Pow, Var, field_name

Interval = tuple[float, float]
_EPS = np.finfo(float).eps


def _out(lo: float, hi: float, steps: int = 1) -> Interval:
    """[lo, hi] widened by ``steps`` ulps each way (rounding of the operation that made it)."""
    for _ in range(steps):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
    return lo, hi


def _add(a: Interval, b: Interval) -> Interval:
    return _out(a[0] + b[0], a[1] + b[1])


def _mul(a: Interval, b: Interval) -> Interval:
    if a == (0.0, 0.0) or b == (0.0, 0.0):
        return 0.0, 0.0
    p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _out(min(p), max(p))


def _power(a: Interval, p: float, node: Node) -> Interval:
    """{v^p : v in a}: monotone on each side of 0, so the ends (and 0 when inside) bound it."""
    if p == 0.0:
        return 1.0, 1.0
    lo, hi = a
    if not p.is_integer() and lo < 0.0:
        raise ModelError(f"{field_name(node.where)}: power {p:g} of an interval reaching {lo:.6g} < 0")
    if p < 0.0 and lo <= 0.0 <= hi:
        raise ModelError(f"{field_name(node.where)}: power {p:g} of an interval holding 0 ([{lo:.6g}, {hi:.6g}])")
    try:
        values = [lo ** p, hi ** p] + ([0.0] if lo < 0.0 < hi else [])
    except OverflowError:
        raise ModelError(f"{field_name(node.where)}: power {p:g} of [{lo:.6g}, {hi:.6g}] overflows") from None
    return _out(min(values), max(values), 2)


def enclose(node: Node, a: np.ndarray, k: int, lo: float, hi: float) -> tuple[Interval, Interval]:
    """(value interval, derivative-in-a_k interval) of ``node`` over a_k in [lo, hi], the rest at ``a``."""
    if isinstance(node, Const):
        return (node.v, node.v), (0.0, 0.0)
    if isinstance(node, Var):
        if node.k == k:
            return (lo, hi), (1.0, 1.0)
        fixed = float(a[node.k])
        return (fixed, fixed), (0.0, 0.0)
    if isinstance(node, Linear):
        w = node.w
        rest = np.delete(w * a, k)
        s = float(np.sum(rest)) + node.b
        # a sum of n terms is within n eps of their absolute sum (any order of summation)
        err = (w.size + 2) * _EPS * (float(np.sum(np.abs(rest))) + abs(node.b))
        own = _mul((float(w[k]), float(w[k])), (lo, hi))
        value = _add(_out(s - err, s + err), own)
        return value, (float(w[k]), float(w[k]))
    if isinstance(node, Add):
        value, deriv = (0.0, 0.0), (0.0, 0.0)
        for arg in node.args:
            v, d = enclose(arg, a, k, lo, hi)
            value, deriv = _add(value, v), _add(deriv, d)
        return value, deriv
    if isinstance(node, Mul):
        parts = [enclose(arg, a, k, lo, hi) for arg in node.args]
        value = (1.0, 1.0)
        for v, _ in parts:
            value = _mul(value, v)
        deriv = (0.0, 0.0)
        for j, (_, d) in enumerate(parts):           # the product rule: d_j times the other factors
            if d == (0.0, 0.0):
                continue
            term = d
            for m, (v, _) in enumerate(parts):
                if m != j:
                    term = _mul(term, v)
            deriv = _add(deriv, term)
        return value, deriv
    if isinstance(node, Pow):
        v, d = enclose(node.base, a, k, lo, hi)
        p = node.p
        if p == 0.0:
            return (1.0, 1.0), (0.0, 0.0)
        value = _power(v, p, node)
        if d == (0.0, 0.0):
            return value, (0.0, 0.0)
        if p == 1.0:
            return value, d
        if 0.0 < p < 1.0 and v[0] <= 0.0:
            raise ModelError(f"{field_name(node.where)}: the power {p:g} has no finite derivative on an interval "
                             f"reaching {v[0]:.6g}")
        slope = _mul((p, p), _power(v, p - 1.0, node))
        return value, _mul(slope, d)
    if isinstance(node, Log):
        v, d = enclose(node.arg, a, k, lo, hi)
        if v[0] <= 0.0:
            raise ModelError(f"{field_name(node.where)}: log of an interval reaching {v[0]:.6g} <= 0")
        value = _out(math.log(v[0]), math.log(v[1]), 2)
        if d == (0.0, 0.0):
            return value, (0.0, 0.0)
        return value, _mul(d, _out(1.0 / v[1], 1.0 / v[0]))
    raise ModelError(f"{field_name(node.where)}: no interval rule for {type(node).__name__}")  # pragma: no cover


def own_derivative_range(payoff: Payoff, a, k: int, lo: float, hi: float) -> Interval:
    """An enclosure of d payoff / d a_k over a_k in [lo, hi] (the rest of the joint action at ``a``):
    the tree's by :func:`enclose`, plus the quadratic part's (Q a)_k + c_k, affine in a_k."""
    a = np.asarray(a, dtype=float).ravel()
    _, d = enclose(payoff.expr, a, k, lo, hi)
    c = float(payoff.c[k])
    d = _add(d, (c, c))
    if payoff.Q is not None:
        row = payoff.Q[k]
        rest = np.delete(row * a, k)
        s = float(np.sum(rest))
        err = (row.size + 2) * _EPS * float(np.sum(np.abs(rest)))
        d = _add(d, _add(_out(s - err, s + err), _mul((float(row[k]), float(row[k])), (lo, hi))))
    sign = payoff.sign
    return (d[0], d[1]) if sign > 0 else (-d[1], -d[0])


__all__ = ["enclose", "own_derivative_range"]
