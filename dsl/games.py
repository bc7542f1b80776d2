"""Pseudo-games (generalized Nash equilibrium problems) and Fisher / Arrow-Debreu markets.

A :class:`PseudoGame` has players whose actions are DSL variables (``game.player(...)`` returns a
:class:`~solvopt.dsl.model.Var`); each player maximises a utility (or minimises a cost) that is

- a DSL expression, linear or quadratic (``34 * x1 - x1 * x1 - (8 / 3) * x1 * x2``);
- a library form of its own action (:mod:`solvopt.dsl.utilities`: linear, Cobb-Douglas, CES,
  Leontief, log);
- or a user callable of the joint action with a user-given exact gradient.

Constraints are linear: a player's own (``game.constrain(x, ...)``), which may involve the other
players' actions too (a *player-specific coupled* row: it binds that player only, with the others'
actions as data), and shared ones (``game.share(...)``: one jointly convex set that binds every
player), plus variable bounds. Beside them, *convex nonlinear* constraints g(a) <= 0 of the joint
action (:class:`ConvexConstraint`): quadratic DSL constraints (``x[0] * x[0] + y <= 4``) in
``game.constrain`` / ``game.share``, or callables with exact gradients
(``game.constrain_convex`` / ``game.share_convex``). A player's must be convex in its own action,
a shared one jointly convex; such games are solved by gnep-kkt. Player i's feasible set given the others is
X_i(a_-i) = {b_i : bounds, its own rows and the shared rows with a_-i fixed}. The equilibrium
sought (:attr:`GameData.concept`): the variational equilibrium (``"VE"``) when every coupled row is
shared, a generalized Nash equilibrium (``"GNE"``) when some row is player-specific. The game compiles into flat
arrays over the joint action vector a (see :meth:`PseudoGame.data`), which the solvers read.

:class:`FisherMarket` (buyers with budgets) and :class:`ArrowDebreuMarket` (consumers with
endowments) hold one utility form per market with one row of parameters per consumer.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from solvopt.core.errors import ModelError

from .arrays import FloatArray, real_array
from .expr import Constraint, LinExpr, QuadExpr
from .family import FamilyModel
from .model import Model, Var
from .utilities import UtilityForm

IntArray: TypeAlias = npt.NDArray[np.int64]
# a utility function or its gradient over the joint action
JointFn: TypeAlias = Callable[[FloatArray], Any]
# what a player's utility was stated as: an expression, a library form or (value, gradient)
UtilitySpec: TypeAlias = LinExpr | QuadExpr | UtilityForm | tuple[JointFn, JointFn]


# --- utilities of the joint action --------------------------------------------------------
class JointUtility:
    """u(a) of one player over the joint action vector a (n,), with its exact gradient (n,)."""

    quadratic = False

    def value(self, a: FloatArray) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def gradient(self, a: FloatArray) -> FloatArray:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class QuadraticUtility(JointUtility):
    """u(a) = 0.5 a'Qa + c'a + k with Q symmetric (sparse)."""

    Q: sp.csr_matrix
    c: FloatArray
    k: float = 0.0
    quadratic = True

    def value(self, a: FloatArray) -> float:
        return float(0.5 * a @ (self.Q @ a) + self.c @ a + self.k)

    def gradient(self, a: FloatArray) -> FloatArray:
        return np.asarray(self.Q @ a).ravel() + self.c


@dataclass
class FormUtility(JointUtility):
    """A library form applied to the player's own columns."""

    form: UtilityForm
    columns: IntArray
    n: int

    def value(self, a: FloatArray) -> float:
        return float(self.form.value(a[self.columns]))

    def gradient(self, a: FloatArray) -> FloatArray:
        g = np.zeros(self.n)
        g[self.columns] = self.form.gradient(a[self.columns])
        return g


@dataclass
class CallableUtility(JointUtility):
    """User callables u(a) and grad u(a) (exact, the user's promise) over the joint action.

    What they return is checked on every call: the value one finite real number, the gradient
    ``n`` finite real numbers (the joint action's size). Anything else (a wrong shape, NaN, an
    infinite or a complex value, something that is not a number) is a one-line ModelError.
    """

    fn: JointFn
    grad: JointFn
    n: int
    name: str = ""

    def _who(self) -> str:
        return f" of player {self.name!r}" if self.name else ""

    def value(self, a: FloatArray) -> float:
        arr = real_array(self.fn(a), f"the utility{self._who()}", allow_inf=True)
        if arr.size != 1:
            raise ModelError(f"the utility{self._who()} must return one number, got shape {arr.shape}")
        v = float(arr.reshape(()))
        if not np.isfinite(v):
            raise ModelError(f"the utility{self._who()} returned NaN or an infinite value")
        return v

    def gradient(self, a: FloatArray) -> FloatArray:
        g = real_array(self.grad(a), f"the utility gradient{self._who()}", allow_inf=True)
        if g.size != self.n or g.ndim > 1 and g.squeeze().ndim > 1:
            raise ModelError(f"the utility gradient{self._who()} must return {self.n} numbers (the joint action's "
                             f"size), got shape {g.shape}")
        g = g.ravel()
        if not np.all(np.isfinite(g)):
            raise ModelError(f"the utility gradient{self._who()} returned NaN or infinite values")
        return g


@dataclass
class ConvexConstraint:
    """g(a) <= 0 over the joint action a, with its exact gradient (n,); ``owner``: a player index or -1 (shared).

    Convex in the owner's action (a shared one: jointly convex): ``convexity`` says whether that is
    ``"proven"`` (quadratic forms, expression trees by the curvature rules) or ``"vouched"`` (a user
    callable: the user's promise; the certificates check it along the points they evaluate). What
    ``value`` / ``gradient`` return is checked: one finite number, ``n`` finite numbers.
    """

    fn: JointFn
    grad: JointFn
    n: int
    owner: int = -1
    name: str = ""
    convexity: str = "vouched"

    def _who(self) -> str:
        return f" {self.name!r}" if self.name else ""

    def value(self, a: FloatArray) -> float:
        arr = real_array(self.fn(a), f"the constraint{self._who()}", allow_inf=True)
        if arr.size != 1:
            raise ModelError(f"the constraint{self._who()} must return one number, got shape {arr.shape}")
        v = float(arr.reshape(()))
        if not np.isfinite(v):
            raise ModelError(f"the constraint{self._who()} returned NaN or an infinite value")
        return v

    def gradient(self, a: FloatArray) -> FloatArray:
        g = real_array(self.grad(a), f"the constraint gradient{self._who()}", allow_inf=True).ravel()
        if g.size != self.n:
            raise ModelError(f"the constraint gradient{self._who()} must return {self.n} numbers (the joint "
                             f"action's size), got {g.size}")
        if not np.all(np.isfinite(g)):
            raise ModelError(f"the constraint gradient{self._who()} returned NaN or infinite values")
        return g


@dataclass
class GameData:
    """A pseudo-game as flat arrays over the joint action vector (what the solvers read)."""

    names: list[str]
    blocks: list[IntArray]              # columns of each player's action in a
    utilities: list[JointUtility]
    lb: FloatArray
    ub: FloatArray
    A: sp.csr_matrix                    # linear rows lo <= A a <= hi
    lo: FloatArray
    hi: FloatArray
    owner: npt.NDArray[np.int_]         # per row: the player it belongs to, -1 for shared
    shapes: list[tuple[int, ...]] = field(default_factory=list)
    nonlinear: list[ConvexConstraint] = field(default_factory=list)   # convex g(a) <= 0, owned or shared

    @property
    def n(self) -> int:
        return self.lb.size

    @property
    def all_quadratic(self) -> bool:
        return all(u.quadratic for u in self.utilities)

    @functools.cached_property
    def coupled_rows(self) -> npt.NDArray[np.int_]:
        """Rows owned by one player that also involve other players' actions (player-specific coupling)."""
        block_of = np.full(self.n, -1)
        for i, cols in enumerate(self.blocks):
            block_of[cols] = i
        coo = self.A.tocoo()
        nonzero = coo.data != 0
        rows, cols = coo.row[nonzero], coo.col[nonzero]
        owner = self.owner[rows]
        return np.unique(rows[(owner >= 0) & (block_of[cols] != owner)]).astype(int)

    @property
    def concept(self) -> str:
        """"GNE" when some row or nonlinear constraint is player-specific and coupled (a nonlinear one of
        one player counts as coupled: its dependence on the others is not known), else "VE"."""
        return "GNE" if self.coupled_rows.size or any(c.owner >= 0 for c in self.nonlinear) else "VE"


class PseudoGame(FamilyModel):
    """A static pseudo-game: players, utilities, own and shared linear constraints (see the module doc)."""

    family = "games"

    @property
    def default_method(self) -> str:
        """extragradient (a variational equilibrium) unless some row is player-specific or some constraint is
        nonlinear: then gnep-kkt."""
        d = self.data()
        return "gnep-kkt" if d.concept == "GNE" or d.nonlinear else "extragradient"

    def __init__(self, name: str = "game"):
        self.name = name
        self.model = Model(name)
        self._players: list[Var] = []
        self._utilities: dict[str, tuple[float, UtilitySpec]] = {}
        self._own: list[tuple[int, Constraint]] = []
        self._shared: list[Constraint] = []
        self._convex: list[tuple[int, Any]] = []     # (owner or -1, quadratic Constraint or (value, gradient))
        self._data: GameData | None = None

    # --- building ---------------------------------------------------------------------------
    def player(self, name: str, shape: int | tuple[int, ...] = (), lb: Any = -np.inf, ub: Any = np.inf) -> Var:
        """Add a player whose action is a variable array of ``shape`` within [lb, ub]."""
        var = self.model.add_var(shape, lb=lb, ub=ub, name=name)
        self._players.append(var)
        self._data = None
        return var

    def _index(self, var: object) -> int:
        for i, v in enumerate(self._players):
            if v is var:
                return i
        raise ModelError("utilities and constraints are attached to a player's action (the Var from game.player)")

    def maximize(self, player: Var, utility: LinExpr | QuadExpr | UtilityForm) -> None:
        """Player ``player`` maximises ``utility``: a linear/quadratic expression or a library form."""
        self._index(player)                 # a player of this game, else ModelError
        if not isinstance(utility, (LinExpr, QuadExpr, UtilityForm)):
            raise ModelError("a utility is a DSL expression or a library form (solvopt.dsl.utilities); "
                             "for a callable use game.utility(player, value, gradient)")
        if isinstance(utility, UtilityForm) and utility.shape != (player.size,):
            raise ModelError(f"the utility form has shape {utility.shape}, player {player.name!r} has "
                             f"{player.size} goods")
        self._utilities[player.name] = (1.0, utility)
        self._data = None

    def minimize(self, player: Var, cost: LinExpr | QuadExpr) -> None:
        """Player ``player`` minimises ``cost`` (a linear or quadratic expression): utility = -cost."""
        if not isinstance(cost, (LinExpr, QuadExpr)):
            raise ModelError("a cost is a linear or quadratic DSL expression")
        self._index(player)
        self._utilities[player.name] = (-1.0, cost)
        self._data = None

    def utility(self, player: Var, value: JointFn, gradient: JointFn) -> None:
        """A user utility u(a) of the joint action a (a flat array) with its exact gradient (same size).

        It must be concave in the player's own action (the solvers' convergence and the
        certificates rely on it; it cannot be checked).
        """
        self._index(player)
        if not (callable(value) and callable(gradient)):
            raise ModelError("game.utility needs two callables: value(a) and gradient(a)")
        self._utilities[player.name] = (1.0, (value, gradient))
        self._data = None

    def constrain(self, player: Var, constraint: Constraint) -> None:
        """A linear constraint of ``player`` alone: it bounds that player's action and may involve the others'.

        A row that involves other players' actions is player-specific and coupled: it binds only
        ``player`` (the others' actions enter it as data), so the game becomes a generalized Nash
        problem proper and its default method computes a generalized Nash equilibrium (gnep-kkt).
        The row must involve at least one of ``player``'s own variables. A quadratic constraint
        (``<=`` of a form convex in the player's action, ``>=`` of a concave one) is a nonlinear
        constraint of that player (see :meth:`constrain_convex`).
        """
        who = self._index(player)
        if self._checked(constraint).is_quadratic:
            self._convex.append((who, constraint))
        else:
            self._own.append((who, constraint))
        self._data = None

    def share(self, constraint: Constraint) -> None:
        """A constraint shared by every player: linear, or quadratic and jointly convex (a variational
        equilibrium exists)."""
        if self._checked(constraint).is_quadratic:
            self._convex.append((-1, constraint))
        else:
            self._shared.append(constraint)
        self._data = None

    def constrain_convex(self, player: Var, value: JointFn, gradient: JointFn, *, name: str = "",
                         proven: bool = False) -> None:
        """A nonlinear constraint value(a) <= 0 of ``player`` over the joint action a, with its exact gradient.

        It binds ``player`` only (the others' actions enter as data: a generalized Nash problem) and
        must be convex in that player's action: the user's promise, which the certificates check
        (convexity's tangent inequality) at the points they evaluate. ``name`` appears in errors;
        ``proven`` records that the caller proved convexity (the JSON reader's curvature rules).
        """
        self._convex.append((self._index(player), self._callables(value, gradient) + (name, proven)))
        self._data = None

    def share_convex(self, value: JointFn, gradient: JointFn, *, name: str = "", proven: bool = False) -> None:
        """A jointly convex constraint value(a) <= 0 binding every player (the user's promise, checked as above)."""
        self._convex.append((-1, self._callables(value, gradient) + (name, proven)))
        self._data = None

    @staticmethod
    def _callables(value: object, gradient: object) -> tuple[JointFn, JointFn]:
        if not (callable(value) and callable(gradient)):
            raise ModelError("a convex constraint needs two callables: value(a) (<= 0 where feasible) and gradient(a)")
        return value, gradient

    @staticmethod
    def _checked(constraint: object) -> Constraint:
        if not isinstance(constraint, Constraint):
            raise ModelError("a game constraint is built with <=, >= or == on DSL expressions")
        if constraint.is_quadratic and constraint.sense == "==":
            raise ModelError("a quadratic equality is not a convex constraint (state it with <= or >=)")
        return constraint

    # --- compiling --------------------------------------------------------------------------
    def data(self) -> GameData:
        """The game as flat arrays (validated: concavity in own actions, finiteness, ownership)."""
        if self._data is None:
            self._data = self._compile()
        return self._data

    def _compile(self) -> GameData:
        if not self._players:
            raise ModelError("the game has no players")
        n = self.model.num_vars
        blocks = [v.columns for v in self._players]
        missing = [v.name for v in self._players if v.name not in self._utilities]
        if missing:
            raise ModelError(f"player(s) {', '.join(missing)} have no utility")
        utilities = [self._joint_utility(i, v, n) for i, v in enumerate(self._players)]
        lb = np.concatenate([v.lb for v in self._players])
        ub = np.concatenate([v.ub for v in self._players])
        rows, lo, hi, owner = [], [], [], []
        for who, con in [(i, c) for i, c in self._own] + [(-1, c) for c in self._shared]:
            body = con.body
            assert isinstance(body, LinExpr)  # quadratic constraints went to self._convex
            coef = sp.csr_matrix(body.coef, shape=(body.coef.shape[0], n)) if body.coef.shape[1] < n else body.coef
            if who >= 0:
                empty = np.flatnonzero(np.asarray(abs(coef[:, blocks[who]]).sum(axis=1)).ravel() == 0)
                if len(empty):
                    raise ModelError(f"a constraint of player {self._players[who].name!r} (game.constrain) does not "
                                     "involve any of its own variables: it cannot bind that player (state a "
                                     "condition on other players with their own game.constrain, or game.share)")
            rhs = -body.const
            rows.append(coef)
            lo.append(rhs if con.sense in (">=", "==") else np.full(rhs.size, -np.inf))
            hi.append(rhs if con.sense in ("<=", "==") else np.full(rhs.size, np.inf))
            owner.append(np.full(rhs.size, who))
        A = sp.vstack(rows, format="csr") if rows else sp.csr_matrix((0, n))
        data = GameData([v.name for v in self._players], blocks, utilities, lb, ub, A,
                        np.concatenate(lo) if lo else np.zeros(0), np.concatenate(hi) if hi else np.zeros(0),
                        np.concatenate(owner).astype(int) if owner else np.zeros(0, dtype=int),
                        [v.shape for v in self._players])
        if not np.all(np.isfinite(A.data)) or np.any(np.isnan(data.lo)) or np.any(np.isnan(data.hi)):
            raise ModelError("the game's constraints contain NaN or infinite coefficients")
        for who, con in self._convex:
            name = "shared" if who < 0 else self._players[who].name
            if isinstance(con, Constraint):
                data.nonlinear.extend(_quadratic_constraints(con, n, None if who < 0 else blocks[who], who, name))
            else:
                data.nonlinear.append(ConvexConstraint(con[0], con[1], n, who,
                                                       con[2] or f"{name} #{len(data.nonlinear)}",
                                                       "proven" if con[3] else "vouched"))
        return data

    def _joint_utility(self, i: int, var: Var, n: int) -> JointUtility:
        sign, u = self._utilities[var.name]
        if isinstance(u, UtilityForm):
            return FormUtility(u, var.columns, n)
        if isinstance(u, tuple):
            return CallableUtility(u[0], u[1], n, var.name)
        lin = u.lin if isinstance(u, QuadExpr) else u
        c = sign * np.asarray(sp.csr_matrix(lin.coef, shape=(1, n)).toarray()).ravel()
        k = sign * float(lin.const[0])
        if isinstance(u, QuadExpr):
            pairs = (np.concatenate([u.vi, u.vj]), np.concatenate([u.vj, u.vi]))
            Q = sp.coo_matrix((np.concatenate([u.q, u.q]) * sign, pairs), shape=(n, n)).tocsr()
        else:
            Q = sp.csr_matrix((n, n))
        if not (np.all(np.isfinite(c)) and np.isfinite(k) and np.all(np.isfinite(Q.data))):
            raise ModelError(f"the utility of player {var.name!r} contains NaN or infinite coefficients")
        own = Q[var.columns][:, var.columns].toarray()
        if own.size and np.max(np.linalg.eigvalsh(own)) > 1e-10 * max(1.0, float(np.max(np.abs(own)))):
            raise ModelError(f"the utility of player {var.name!r} is not concave in its own action "
                             "(its Hessian block has a positive eigenvalue); equilibria methods need concavity")
        return QuadraticUtility(Q, c, k)

    def action_dict(self, a: npt.ArrayLike) -> dict[str, FloatArray]:
        """The joint action split per player, shaped like each player's variable."""
        d = self.data()
        return {name: np.asarray(a)[cols].reshape(shape) for name, cols, shape in zip(d.names, d.blocks, d.shapes)}


def _quadratic_constraints(con: Constraint, n: int, own: IntArray | None, owner: int,
                           name: str) -> list[ConvexConstraint]:
    """One :class:`ConvexConstraint` per element of a quadratic DSL constraint (``<=``: body <= 0,
    ``>=``: -body <= 0), its Hessian checked positive semidefinite on ``own`` (all columns: shared)."""
    body = con.body
    assert isinstance(body, QuadExpr)
    sign = 1.0 if con.sense == "<=" else -1.0
    lin = sp.csr_matrix(body.lin.coef, shape=(body.lin.coef.shape[0], n)) if body.lin.coef.shape[1] < n \
        else sp.csr_matrix(body.lin.coef)
    out = []
    for e in range(lin.shape[0]):
        pick = body.elem == e
        vi, vj, q = body.vi[pick], body.vj[pick], body.q[pick] * sign
        Q = sp.coo_matrix((np.concatenate([q, q]), (np.concatenate([vi, vj]), np.concatenate([vj, vi]))),
                          shape=(n, n)).tocsr()
        c = sign * np.asarray(lin[e].toarray()).ravel()
        k = sign * float(body.lin.const[e])
        if not (np.all(np.isfinite(Q.data)) and np.all(np.isfinite(c)) and np.isfinite(k)):
            raise ModelError(f"a quadratic constraint of {name} contains NaN or infinite coefficients")
        cols = np.arange(n) if own is None else own
        block = Q[cols][:, cols].toarray()
        if block.size and np.min(np.linalg.eigvalsh(block)) < -1e-10 * max(1.0, float(np.max(np.abs(block)))):
            what = "jointly convex" if own is None else "convex in the player's own action"
            raise ModelError(f"a quadratic constraint of {name} is not {what} (a <= side must be convex, a >= "
                             "side concave)")
        out.append(ConvexConstraint(functools.partial(_quadratic_value, Q, c, k),
                                    functools.partial(_quadratic_gradient, Q, c), n, owner,
                                    f"{name} quadratic #{e}", "proven"))
    return out


def _quadratic_value(Q: sp.csr_matrix, c: FloatArray, k: float, a: FloatArray) -> float:
    return 0.5 * float(a @ (Q @ a)) + float(c @ a) + k


def _quadratic_gradient(Q: sp.csr_matrix, c: FloatArray, a: FloatArray) -> FloatArray:
    out: FloatArray = np.asarray(Q @ a).ravel() + c
    return out


# --- markets ----------------------------------------------------------------------------
def _real(value: Any, what: str) -> FloatArray:
    """``value`` as a float array; complex, text and objects refused in one line (never cut to a real part)."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be an array of numbers") from None
    if raw.dtype.kind not in "biuf":
        raise ModelError(f"{what} must be real numbers, got dtype {raw.dtype}")
    return raw.astype(float)


def _positive_vector(value: Any, what: str, size: int | None = None, allow_zero: bool = False) -> FloatArray:
    arr = _real(value, what)
    if arr.ndim != 1 or (size is not None and arr.size != size):
        length = size if size is not None else ">= 1"
        raise ModelError(f"{what} must be a vector of length {length}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} contains NaN or infinite values")
    if np.any(arr < 0) or (not allow_zero and np.any(arr <= 0)):
        raise ModelError(f"{what} must be {'>= 0' if allow_zero else '> 0'}")
    return arr



def _endowments(value: Any, utility: UtilityForm) -> FloatArray:
    """Endowments (consumers, goods) of the utility's parameter shape, finite and >= 0."""
    e = _real(value, "endowments")
    if e.shape != utility.shape:
        raise ModelError(f"endowments must have shape {utility.shape}, got {e.shape}")
    if not np.all(np.isfinite(e)) or np.any(e < 0):
        raise ModelError("endowments must be finite and >= 0")
    return e


class FisherMarket(FamilyModel):
    """n buyers with budgets B and utilities (one form, one parameter row per buyer) over m goods of supply s."""

    family = "games"
    default_method = "eisenberg-gale"

    def __init__(self, utility: UtilityForm, budgets: Any, supplies: Any = None, name: str = "fisher"):
        if not isinstance(utility, UtilityForm):
            raise ModelError("a market's utility is a library form (solvopt.dsl.utilities) with one row per buyer")
        if len(utility.shape) != 2:
            raise ModelError(f"the utility parameters must be (buyers, goods), got shape {utility.shape}")
        n, m = utility.shape
        self.utility = utility
        self.budgets = _positive_vector(budgets, "budgets", n)
        self.supplies = np.ones(m) if supplies is None else _positive_vector(supplies, "supplies", m)
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        """(consumers, goods)."""
        return self.utility.shape


class ArrowDebreuMarket(FamilyModel):
    """n consumers with endowments e (n, m) and utilities; budgets are p . e_i at prices p."""

    family = "games"

    @property
    def default_method(self) -> str:
        """linear-exchange for linear utilities (whose demand is a set: tatonnement does not converge), else
        tatonnement."""
        return "linear-exchange" if self.utility.kind == "linear" else "tatonnement"

    def __init__(self, utility: UtilityForm, endowments: Any, name: str = "arrow_debreu"):
        if not isinstance(utility, UtilityForm) or len(utility.shape) != 2:
            raise ModelError("a market's utility is a library form with parameters of shape (consumers, goods)")
        e = _endowments(endowments, utility)
        if np.any(e.sum(axis=0) <= 0) or np.any(e.sum(axis=1) <= 0):
            raise ModelError("every good needs a positive total endowment and every consumer a positive endowment")
        self.utility, self.endowments, self.name = utility, e, name

    @property
    def shape(self) -> tuple[int, ...]:
        """(consumers, goods)."""
        return self.utility.shape

    @property
    def supplies(self) -> FloatArray:
        total: FloatArray = self.endowments.sum(axis=0)
        return total
