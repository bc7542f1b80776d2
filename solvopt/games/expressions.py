"""Utility expressions in game files: a small JSON tree compiled to a value and an exact gradient.

A pseudo-game player's ``utility`` / ``cost`` may hold, beside (or instead of) its quadratic part,
an ``expression`` over the joint action a (the players' actions concatenated in file order)::

    3.5                                      a constant
    {"var": k}                               a[k] (0-based index into the joint action)
    {"linear": [w_0, ..., w_n-1], "constant": b}     w . a + b ("constant" optional)
    {"op": "add", "args": [e1, e2, ...]}     e1 + e2 + ...
    {"op": "mul", "args": [e1, e2, ...]}     e1 * e2 * ...
    {"op": "pow", "args": [e, p]}            e ** p, p a number (non-integer p: e >= 0; p < 0: e != 0)
    {"op": "log", "args": [e]}               natural log, e > 0

A player's ``nonlinear_constraints`` (and the game's ``shared_nonlinear_constraints``) hold the
same trees: ``{"expression": e, "sense": "<=" | ">=", "rhs": b}`` with e convex (``<=``) or
concave (``>=``) in the player's own action (jointly, when shared), which the rules below must
prove (:func:`convex_constraint`).

Nothing is evaluated as text: the tree is parsed once into nodes, each returning its value and its
gradient over the joint action (forward mode: sums, the product rule, the power and log rules), so
the gradient is exact. A point outside an operation's domain is a one-line ModelError naming the
node, which the solvers treat as outside the utility's domain (the start is moved inside).

Concavity in the player's own action (what the equilibrium certificates assume) is checked by
curvature rules (constant, affine, convex, concave, as in disciplined convex programming, with
the other players' actions held fixed; signs of linear forms come from the variables' bounds).
A product h * g^p of two affine forms that both move with the player's action (the library's
x_i S^-1, x_i S^(-1/gamma)) is decided exactly on the bounds' box. A utility proven convex and
not affine in its own action (a cost proven concave) is refused. Where the rules cannot decide
(other products, a power of a form whose sign the bounds do not fix) the user vouches for
concavity; the solvers still check the supergradient inequality along their best responses and
stop with an error where it fails.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError

OPS = ("add", "mul", "pow", "log")
MAX_DEPTH = 64


def field_name(parts) -> str:
    """A JSON path as people write it: players[0].cost.expression.args[1]."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _error(parts, message: str) -> ModelError:
    return ModelError(f"field {field_name(parts)}: {message}")


def _number(value, parts) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(parts, f"expected a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:
        raise _error(parts, "number too large") from None
    if not math.isfinite(x):
        raise _error(parts, "NaN and infinite numbers are not allowed")
    return x


# --- curvature in the own action -------------------------------------------------------------
@dataclass(frozen=True)
class Curvature:
    """What the rules prove about a node with the other players' actions fixed (both True: affine)."""

    constant: bool      # does not move with the own action
    convex: bool
    concave: bool
    sign: int = 0       # +1 known >= 0, -1 known <= 0, 0 unknown (for products with constants)

    def scaled(self, sign: int) -> Curvature:
        if self.constant:
            return self
        if self.convex and self.concave:
            return Curvature(False, True, True)
        if sign > 0:
            return Curvature(False, self.convex, self.concave)
        if sign < 0:
            return Curvature(False, self.concave, self.convex)
        return Curvature(False, False, False)


CONST = Curvature(True, True, True)
AFFINE = Curvature(False, True, True)
UNKNOWN = Curvature(False, False, False)


@dataclass
class Frame:
    """Where curvature is judged: the player's own entries of the joint action and the variables' box."""

    own: np.ndarray     # bool mask over the joint action
    lb: np.ndarray
    ub: np.ndarray

    def range(self, w: np.ndarray, b: float) -> tuple[float, float]:
        """min and max of w . a + b over the box (exact: the form is affine)."""
        nz = w != 0.0
        w, lo, hi = w[nz], self.lb[nz], self.ub[nz]
        low = b + float(np.sum(np.where(w > 0, w * lo, w * hi)))
        high = b + float(np.sum(np.where(w > 0, w * hi, w * lo)))
        return low, high

    def sign(self, w: np.ndarray, b: float) -> int:
        low, high = self.range(w, b)
        return 1 if low >= 0.0 else (-1 if high <= 0.0 else 0)


# --- nodes -------------------------------------------------------------------------------------
class Node:
    """One parsed expression node: ``evaluate(a) -> (value, gradient or None when constant)``."""

    where: tuple = ()

    def evaluate(self, a):  # pragma: no cover - abstract
        raise NotImplementedError

    def curvature(self, frame: Frame) -> Curvature:  # pragma: no cover - abstract
        raise NotImplementedError

    def affine(self) -> tuple[np.ndarray, float] | None:
        """(w, b) when the node is the affine form w . a + b (a var or a linear node), else None."""
        return None

    def support(self) -> set:
        """The entries of the joint action the node depends on."""
        return set()

    def second(self, a, S):  # pragma: no cover - abstract
        """(value, gradient, Hessian) over the entries ``S`` (sorted indices holding the support): exact, forward
        mode; None for a gradient or Hessian that is zero."""
        raise NotImplementedError


@dataclass
class Const(Node):
    v: float

    def evaluate(self, a):
        return self.v, None

    def curvature(self, frame):
        return Curvature(True, True, True, int(np.sign(self.v)))

    def second(self, a, S):
        return self.v, None, None


@dataclass
class Linear(Node):
    w: np.ndarray
    b: float

    def evaluate(self, a):
        return float(self.w @ a) + self.b, self.w

    def curvature(self, frame):
        moving = bool(np.any(self.w[frame.own] != 0.0))
        return Curvature(not moving, True, True, frame.sign(self.w, self.b))

    def affine(self):
        return self.w, self.b

    def support(self):
        return set(np.flatnonzero(self.w).tolist())

    def second(self, a, S):
        return float(self.w @ a) + self.b, self.w[S], None


@dataclass
class Var(Node):
    k: int
    n: int

    e: np.ndarray | None = None            # the unit gradient, made at the first evaluation

    def evaluate(self, a):
        if self.e is None:
            self.e = np.zeros(self.n)
            self.e[self.k] = 1.0
        return float(a[self.k]), self.e

    def curvature(self, frame):
        k = self.k
        return Curvature(not frame.own[k], True, True,
                         1 if frame.lb[k] >= 0.0 else (-1 if frame.ub[k] <= 0.0 else 0))

    def affine(self):
        w = np.zeros(self.n)
        w[self.k] = 1.0
        return w, 0.0

    def support(self):
        return {self.k}

    def second(self, a, S):
        e = np.zeros(len(S))
        e[np.searchsorted(S, self.k)] = 1.0
        return float(a[self.k]), e, None


@dataclass
class Add(Node):
    args: list

    def evaluate(self, a):
        total, grad = 0.0, None
        for arg in self.args:
            v, g = arg.evaluate(a)
            total += v
            if g is not None:
                grad = g.copy() if grad is None else grad + g
        return total, grad

    def support(self):
        return set().union(*(arg.support() for arg in self.args))

    def second(self, a, S):
        total, grad, hess = 0.0, None, None
        for arg in self.args:
            v, g, H = arg.second(a, S)
            total += v
            grad = _plus(grad, g)
            hess = _plus(hess, H)
        return total, grad, hess

    def curvature(self, frame):
        cs = [arg.curvature(frame) for arg in self.args]
        signs = {c.sign for c in cs}
        return Curvature(all(c.constant for c in cs), all(c.convex for c in cs), all(c.concave for c in cs),
                         signs.pop() if len(signs) == 1 else 0)


@dataclass
class Mul(Node):
    args: list

    def evaluate(self, a):
        vals, grads = zip(*(arg.evaluate(a) for arg in self.args))
        value = math.prod(vals)
        grad = None
        for j, g in enumerate(grads):
            if g is not None:
                rest = math.prod(vals[:j]) * math.prod(vals[j + 1:])     # no division: zeros are fine
                grad = rest * g if grad is None else grad + rest * g
        return value, grad

    def support(self):
        return set().union(*(arg.support() for arg in self.args))

    def second(self, a, S):
        vals, grads, hessians = zip(*(arg.second(a, S) for arg in self.args))
        grad = hess = None
        for j, (g, H) in enumerate(zip(grads, hessians)):
            rest = math.prod(vals[:j]) * math.prod(vals[j + 1:])        # no division: zeros are fine
            if g is not None:
                grad = _plus(grad, rest * g)
            if H is not None:
                hess = _plus(hess, rest * H)
            for k in range(j + 1, len(vals)):                            # the cross terms g_j g_k' + g_k g_j'
                if g is not None and grads[k] is not None:
                    both = math.prod(v for i, v in enumerate(vals) if i not in (j, k)) * np.outer(g, grads[k])
                    hess = _plus(hess, both + both.T)
        return math.prod(vals), grad, hess

    def curvature(self, frame):
        cs = [arg.curvature(frame) for arg in self.args]
        sign = 1
        for c in cs:
            if c.constant:
                sign *= c.sign
        if any(isinstance(arg, Const) and arg.v == 0.0 for arg in self.args):
            return Curvature(True, True, True, 0)
        moving = [c for c in cs if not c.constant]
        if not moving:
            return Curvature(True, True, True, sign if all(c.sign for c in cs) else 0)
        if len(moving) == 2 and sign != 0:      # h * g^p, both affine in the own action: exact on the box
            kids = [arg for arg, c in zip(self.args, cs) if not c.constant]
            return _affine_times_power(kids, frame).scaled(sign)
        if len(moving) > 1:
            return UNKNOWN                       # another product of own-dependent factors: the user vouches
        return moving[0].scaled(sign)


@dataclass
class Pow(Node):
    base: Node
    p: float

    def _check(self, v: float) -> None:
        p = self.p
        if not p.is_integer() and v < 0.0:
            raise ModelError(f"{field_name(self.where)}: power {p:g} of a negative number ({v:.6g})")
        if p < 0.0 and v == 0.0:
            raise ModelError(f"{field_name(self.where)}: power {p:g} of zero")

    def evaluate(self, a):
        v, g = self.base.evaluate(a)
        p = self.p
        if p == 0.0:
            return 1.0, None
        self._check(v)
        try:
            value = v ** p
            if g is None:
                return value, None
            if v == 0.0 and p < 1.0:
                raise ModelError(f"{field_name(self.where)}: the power {p:g} has no finite derivative at zero")
            d = p * v ** (p - 1.0) if p != 1.0 else 1.0
        except OverflowError:
            raise ModelError(f"{field_name(self.where)}: power {p:g} of {v:.6g} overflows") from None
        return value, d * g

    def support(self):
        return self.base.support()

    def second(self, a, S):
        v, g, H = self.base.second(a, S)
        p = self.p
        if p == 0.0:
            return 1.0, None, None
        self._check(v)
        if g is None or p == 1.0:
            return v ** p, g, H
        if v == 0.0 and p < 2.0:
            raise ModelError(f"{field_name(self.where)}: the power {p:g} has no finite second derivative at zero")
        try:
            first, curve = p * v ** (p - 1.0), p * (p - 1.0) * v ** (p - 2.0)
        except OverflowError:
            raise ModelError(f"{field_name(self.where)}: power {p:g} of {v:.6g} overflows") from None
        hess = curve * np.outer(g, g)
        return v ** p, first * g, hess if H is None else hess + first * H

    def curvature(self, frame):
        c, p = self.base.curvature(frame), self.p
        integer, even = p.is_integer(), p.is_integer() and int(p) % 2 == 0
        nonneg = 1 if (not integer or even or c.sign > 0) else 0
        if c.constant or p == 0.0:
            return Curvature(True, True, True, nonneg)
        if p == 1.0:
            return c
        affine = c.convex and c.concave
        if 0.0 < p < 1.0:                         # concave, increasing on e >= 0
            return Curvature(False, False, c.concave, 1)
        if p > 1.0 and (not integer or c.sign > 0):   # convex, increasing on e >= 0
            return Curvature(False, c.convex, False, 1)
        if even and p > 0.0:                      # convex on the reals, not monotone
            return Curvature(False, affine, False, 1)
        if p < 0.0 and (not integer or c.sign > 0):   # convex, decreasing on e > 0
            return Curvature(False, c.concave, False, 1)
        return Curvature(False, False, False, nonneg)


@dataclass
class Log(Node):
    arg: Node

    def evaluate(self, a):
        v, g = self.arg.evaluate(a)
        if v <= 0.0:
            raise ModelError(f"{field_name(self.where)}: log of a non-positive number ({v:.6g})")
        return math.log(v), (None if g is None else g / v)

    def support(self):
        return self.arg.support()

    def second(self, a, S):
        v, g, H = self.arg.second(a, S)
        if v <= 0.0:
            raise ModelError(f"{field_name(self.where)}: log of a non-positive number ({v:.6g})")
        if g is None:
            return math.log(v), None, None
        hess = np.outer(g, g) / (-v * v)
        return math.log(v), g / v, hess if H is None else hess + H / v

    def curvature(self, frame):
        c = self.arg.curvature(frame)
        if c.constant:
            return CONST
        return Curvature(False, False, c.concave)


def _plus(total, term):
    """total + term, where None is zero (no copy of ``term`` is kept: the nodes never write into theirs)."""
    return term if total is None else (total if term is None else total + term)


def _affine_times_power(kids: list, frame: Frame) -> Curvature:
    """The curvature in the own action of h * g^p, h and g affine, on the box (UNKNOWN when undecided).

    With h's own gradient a multiple lambda of g's (always so for a single-variable player; else
    the Hessian is indefinite or the rule does not apply), the Hessian along the own action is
    delta delta' p g^(p-2) L with L = 2 lambda g + (p - 1) h, an affine function: its sign on the box
    is exact (min and max over the box's corners), and g^(p-2) >= 0 where the power is defined.
    This decides the library's x_i S^-1 and x_i S^(-1/gamma) forms from the variables' bounds.
    """
    power = next((k for k in kids if isinstance(k, Pow) and k.base.affine() is not None), None)
    other = next((k for k in kids if k is not power), None)
    h = None if other is None else other.affine()
    g = None if power is None else power.base.affine()
    if power is None or h is None or g is None:
        return UNKNOWN
    (wh, bh), (wg, bg), p = h, g, power.p
    alpha, delta = wh[frame.own], wg[frame.own]
    lam = float(alpha @ delta) / float(delta @ delta)
    if not np.allclose(alpha, lam * delta, rtol=0.0, atol=1e-12 * float(np.abs(alpha).max())):
        return UNKNOWN
    integer, even = p.is_integer(), p.is_integer() and int(p) % 2 == 0
    if integer and (p < 0.0 or not even) and frame.range(wg, bg)[0] < 0.0:
        return UNKNOWN                      # g^(p-2) changes sign with g, or the domain is split at g = 0
    low, high = frame.range(2.0 * lam * wg + (p - 1.0) * wh, 2.0 * lam * bg + (p - 1.0) * bh)
    concave = low >= 0.0 if p < 0.0 else high <= 0.0
    convex = high <= 0.0 if p < 0.0 else low >= 0.0
    return Curvature(False, convex, concave)


# --- parsing -----------------------------------------------------------------------------------
def parse(tree, n: int, where=("expression",), depth: int = 0) -> Node:
    """The node of a JSON expression over a joint action of ``n`` numbers; malformed: a one-line
    ModelError naming the field (``players[0].cost.expression.args[1]: ...``)."""
    where = tuple(where)
    if depth > MAX_DEPTH:
        raise _error(where, f"expression nested deeper than {MAX_DEPTH} levels")
    node: Node
    if not isinstance(tree, dict):
        if isinstance(tree, (list, str)) or tree is None:
            raise _error(where, "expected an expression: a number, {\"var\": k}, {\"linear\": [...]} or "
                                f"{{\"op\": ..., \"args\": [...]}} with op one of {', '.join(OPS)}")
        node = Const(_number(tree, where))
    elif "var" in tree:
        _keys(tree, {"var"}, where)
        k = tree["var"]
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
            raise _error(where + ("var",), f"expected an index into the joint action, 0 to {n - 1}, got {k!r}")
        node = Var(k, n)
    elif "linear" in tree:
        _keys(tree, {"linear", "constant"}, where)
        w = tree["linear"]
        if not isinstance(w, list) or len(w) != n:
            raise _error(where + ("linear",), f"expected {n} numbers (one per entry of the joint action)")
        node = Linear(np.array([_number(x, where + ("linear", j)) for j, x in enumerate(w)]),
                      _number(tree.get("constant", 0.0), where + ("constant",)))
    elif "op" in tree:
        _keys(tree, {"op", "args"}, where)
        op, args = tree["op"], tree.get("args")
        if not isinstance(op, str) or op not in OPS:
            shown = repr(op) if isinstance(op, str) and len(op) <= 40 else f"a {type(op).__name__}"
            raise _error(where + ("op",), f"unknown operation {shown}; expected one of {', '.join(OPS)}")
        if not isinstance(args, list) or not args:
            raise _error(where + ("args",), "expected a non-empty list of arguments")
        arity = {"pow": 2, "log": 1}.get(op)
        if arity is not None and len(args) != arity:
            raise _error(where + ("args",), f"{op} takes {arity} argument{'s' if arity > 1 else ''}, got {len(args)}")
        if op == "pow":
            node = Pow(parse(args[0], n, where + ("args", 0), depth + 1), _number(args[1], where + ("args", 1)))
        else:
            kids = [parse(x, n, where + ("args", j), depth + 1) for j, x in enumerate(args)]
            node = Log(kids[0]) if op == "log" else (Add(kids) if op == "add" else Mul(kids))
    else:
        raise _error(where, "expected one of the keys var, linear, op")
    node.where = where
    return node


def _keys(tree: dict, allowed: set, where) -> None:
    extra = sorted(set(tree) - allowed)
    if extra:
        raise _error(where + (extra[0],), f"unexpected key (this node takes {', '.join(sorted(allowed))})")


# --- a player's payoff -------------------------------------------------------------------------
class Payoff:
    """A player's utility from its JSON spec: ``sign * (0.5 a'Qa + c'a + constant + expression)``.

    ``sign`` is +1 for a ``utility``, -1 for a ``cost``. ``value`` and ``gradient`` are what
    :meth:`solvopt.dsl.PseudoGame.utility` takes; ``concavity`` says what the rules proved about
    the utility in the player's own action: ``"proven"`` or ``"vouched"`` (refused when disproved).
    """

    def __init__(self, Q, c, constant: float, expression: Node, sign: float, own: np.ndarray, lb=None, ub=None):
        self.Q, self.c, self.k, self.expr, self.sign = Q, c, float(constant), expression, float(sign)
        n = len(c)
        mask = np.zeros(n, bool)
        mask[own] = True
        lb = np.full(n, -np.inf) if lb is None else np.broadcast_to(np.asarray(lb, float), (n,))
        ub = np.full(n, np.inf) if ub is None else np.broadcast_to(np.asarray(ub, float), (n,))
        curv = expression.curvature(Frame(mask, lb, ub))
        quad = _quadratic_curvature(Q[np.ix_(own, own)]) if Q is not None else CONST
        total = Curvature(curv.constant and quad.constant, curv.convex and quad.convex, curv.concave and quad.concave)
        if sign < 0:
            total = total.scaled(-1)
        self.concavity = "proven" if total.concave else "vouched"
        self.disproved = total.convex and not total.concave

    def value(self, a) -> float:
        a = np.asarray(a, dtype=float).ravel()
        v, _ = self.expr.evaluate(a)
        if self.Q is not None:
            v += 0.5 * float(a @ (self.Q @ a))
        return self.sign * (v + float(self.c @ a) + self.k)

    def gradient(self, a) -> np.ndarray:
        a = np.asarray(a, dtype=float).ravel()
        _, g = self.expr.evaluate(a)
        out = self.c.copy() if g is None else self.c + g
        if self.Q is not None:
            out = out + self.Q @ a
        return self.sign * out


def _quadratic_curvature(own_block) -> Curvature:
    if not own_block.size or not np.any(own_block):
        return CONST if not own_block.size else AFFINE
    eig = np.linalg.eigvalsh(0.5 * (own_block + own_block.T))
    tol = 1e-10 * max(1.0, float(np.max(np.abs(own_block))))
    return Curvature(False, bool(eig.min() >= -tol), bool(eig.max() <= tol))


def payoff(spec: dict, n: int, own, sign: float, where, Q=None, c=None, lb=None, ub=None) -> Payoff:
    """The compiled payoff of one player's ``utility`` / ``cost`` spec holding an ``expression``.

    ``Q`` and ``c`` are the spec's quadratic part, already checked by the caller (None: absent);
    ``lb`` / ``ub`` the joint action's bounds (signs of linear forms, products decided on the box).
    A utility proven convex and not affine in the player's own action (a cost proven concave) is
    a ModelError naming the field.
    """
    node = parse(spec["expression"], n, tuple(where) + ("expression",))
    p = Payoff(Q, np.zeros(n) if c is None else np.asarray(c, float), spec.get("constant", 0.0), node, sign,
               np.asarray(own, int), lb, ub)
    if p.disproved:
        what = "cost is concave, not convex" if sign < 0 else "utility is convex, not concave"
        raise _error(tuple(where), f"the {what}, in the player's own action (a player maximises a concave "
                                   "utility / minimises a convex cost)")
    return p


# --- a nonlinear constraint ---------------------------------------------------------------------
class ConvexExpression:
    """A constraint ``expression <= rhs`` (convex) or ``expression >= rhs`` (concave) as g(a) <= 0.

    ``value`` and ``gradient`` are g and its exact gradient over the joint action, what
    :meth:`solvopt.dsl.PseudoGame.constrain_convex` takes.
    """

    def __init__(self, node: Node, sense: str, rhs: float):
        self.node, self.sign, self.rhs = node, (1.0 if sense == "<=" else -1.0), float(rhs)
        self.support: np.ndarray | None = None          # the entries the tree depends on (at the first hessian)

    def value(self, a) -> float:
        v, _ = self.node.evaluate(np.asarray(a, dtype=float).ravel())
        return self.sign * (v - self.rhs)

    def gradient(self, a) -> np.ndarray:
        a = np.asarray(a, dtype=float).ravel()
        _, g = self.node.evaluate(a)
        return np.zeros(a.size) if g is None else self.sign * g

    def hessian(self, a) -> np.ndarray:
        """The exact Hessian of g (n x n): second-order forward mode over the tree's support. A point where it
        is not finite (a power below 2 of zero) is a ModelError."""
        a = np.asarray(a, dtype=float).ravel()
        if self.support is None:
            self.support = np.array(sorted(self.node.support()), dtype=int)
        S = self.support
        out = np.zeros((a.size, a.size))
        _, _, H = self.node.second(a, S)
        if H is not None:
            if not np.all(np.isfinite(H)):
                raise ModelError("the constraint's Hessian is not finite here")
            out[np.ix_(S, S)] = self.sign * H
        return out


def convex_constraint(spec: dict, n: int, own, where, lb=None, ub=None) -> ConvexExpression:
    """The compiled ``{"expression": ..., "sense": "<=" | ">=", "rhs": number}`` of a nonlinear constraint.

    ``own``: the columns of the player it binds (None: shared, judged over the whole joint action,
    so it must be jointly convex). The curvature rules must *prove* it convex (``<=``) or concave
    (``>=``) in those columns on the variables' box: the certificates rely on it. Otherwise a
    ModelError names the field (state such a constraint as a Python callable instead).
    """
    where = tuple(where)
    sense, rhs = spec.get("sense"), spec.get("rhs", 0.0)
    if sense not in ("<=", ">="):
        raise _error(where + ("sense",), "a nonlinear constraint's sense is <= (convex side) or >= (concave side)")
    rhs = _number(rhs, where + ("rhs",))
    node = parse(spec.get("expression"), n, where + ("expression",))
    mask = np.ones(n, bool) if own is None else np.isin(np.arange(n), np.asarray(own, int))
    lb = np.full(n, -np.inf) if lb is None else np.broadcast_to(np.asarray(lb, float), (n,))
    ub = np.full(n, np.inf) if ub is None else np.broadcast_to(np.asarray(ub, float), (n,))
    curv = node.curvature(Frame(mask, lb, ub))
    if not (curv.convex if sense == "<=" else curv.concave):
        what = "jointly convex" if own is None else "convex in the player's own action"
        side = "convex" if sense == "<=" else "concave"
        raise _error(where, f"the constraint must be {what}: its expression is not proven {side} by the curvature "
                            "rules (a <= side must be convex, a >= side concave; state it as a Python callable "
                            "with game.constrain_convex to vouch for it)")
    return ConvexExpression(node, sense, rhs)


__all__ = ["parse", "payoff", "Payoff", "Curvature", "OPS", "ConvexExpression", "convex_constraint"]
