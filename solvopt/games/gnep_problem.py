"""The data layout of a GNEP test problem: players' costs, bounds, linear rows and convex constraints.

:class:`GNEP` states one problem as plain data and builds from it the JSON instance and the
:class:`~solvopt.dsl.PseudoGame` / :class:`~solvopt.dsl.ScalarGame`; :class:`Rows` and :class:`Convex`
are its constraints. The problems themselves live in :mod:`solvopt.games.gnep_library` and
:mod:`solvopt.games.gnep_library_extra`, which both build on this module.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from solvopt.core.errors import ModelError

SOURCE = ("F. Facchinei, C. Kanzow, Penalty methods for the solution of generalized Nash equilibrium "
          "problems, SIAM J. Optim. 20 (2010), appendix")


@dataclass
class Rows:
    """Linear rows lo <= A x <= hi over the joint action; ``owner`` is a player index or -1 (shared)."""

    A: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    owner: int = -1


@dataclass
class Convex:
    """A nonlinear constraint ``expression sense rhs`` over the joint action, owned by one player (-1: shared).

    ``fn`` / ``grad`` are g(x) = +-(expression - rhs) <= 0 and its exact gradient as plain NumPy (what
    the model and scipy's check use); ``expression`` is the same function as a JSON tree
    (:mod:`solvopt.games.expressions`), what the instance file states. ``<=``: convex, ``>=``: concave
    in the owner's action.
    """

    owner: int
    fn: Callable
    grad: Callable
    expression: dict
    sense: str = "<="
    rhs: float = 0.0

    def json(self) -> dict:
        out: dict = {"expression": self.expression, "sense": self.sense}
        if self.rhs:
            out["rhs"] = float(self.rhs)
        return out


@dataclass
class GNEP:
    """One test problem: players minimise ``cost(i, x)`` over bounds and linear rows (see the module doc).

    ``quadratic`` holds, per player, (Q, c, constant) with cost 0.5 x'Qx + c'x + constant when
    every cost is quadratic, else None; ``expressions`` then holds, per player, its cost as a
    JSON expression tree (what the instance file states), to which ``expression_quadratic``
    (per player (Q, c, constant), or None) adds a quadratic part. ``unique``
    says whether the equilibrium the default method computes (the variational equilibrium) is
    unique, so that a computed point can be compared with ``published``. ``nonconcave``: one-variable
    players whose costs are not convex in their own action, stated as a ``scalar_game`` (solved with
    certified global best responses).
    """

    name: str
    title: str
    sizes: list[int]
    lb: np.ndarray
    ub: np.ndarray
    rows: list[Rows]
    costs: list[Callable]
    gradients: list[Callable]
    published: np.ndarray | None
    start: np.ndarray | None = None
    quadratic: list[tuple] | None = None
    expressions: list[dict] | None = None
    expression_quadratic: list[tuple] | None = None
    unique: bool = True
    concept: str = "VE"
    notes: str = ""
    player_names: list[str] = field(default_factory=list)
    nonlinear: list[Convex] = field(default_factory=list)
    nonconcave: bool = False

    # --- plain data -------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return int(sum(self.sizes))

    @property
    def blocks(self) -> list[np.ndarray]:
        offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        return [np.arange(offsets[i], offsets[i + 1]) for i in range(len(self.sizes))]

    @property
    def names(self) -> list[str]:
        return self.player_names or [f"p{i + 1}" for i in range(len(self.sizes))]

    def cost(self, i: int, x) -> float:
        return float(self.costs[i](np.asarray(x, dtype=float)))

    def cost_gradient(self, i: int, x) -> np.ndarray:
        return np.asarray(self.gradients[i](np.asarray(x, dtype=float)), dtype=float).ravel()

    def rows_of(self, i: int) -> list[Rows]:
        """The rows that bind player i: its own and the shared ones."""
        return [r for r in self.rows if r.owner in (-1, i)]

    # --- an independent check --------------------------------------------------------------------
    def scipy_regrets(self, x) -> np.ndarray:
        """Per player, theta_i(x) - the best cost scipy finds over its original feasible set (others fixed).

        SLSQP over the player's bounds, rows and nonlinear constraints (its own and the shared ones,
        the others' actions fixed) with the plain cost and gradient, from the point itself and a second start; it
        uses nothing of solvopt's solvers, so it checks their answers from outside. A local
        method on a convex problem: the value is the true regret up to SLSQP's accuracy.
        """
        from scipy.optimize import LinearConstraint, NonlinearConstraint, minimize
        x = np.asarray(x, dtype=float)
        regrets = []
        for i, cols in enumerate(self.blocks):
            others = np.setdiff1d(np.arange(self.n), cols)

            def joint(y, cols=cols):
                z = x.copy()
                z[cols] = y
                return z

            f = lambda y, i=i: self.cost(i, joint(y))                              # noqa: E731
            g = lambda y, i=i, cols=cols: self.cost_gradient(i, joint(y))[cols]     # noqa: E731
            cons = []
            for r in self.rows_of(i):
                shift = r.A[:, others] @ x[others]
                cons.append(LinearConstraint(r.A[:, cols], r.lo - shift, r.hi - shift))
            curved = [NonlinearConstraint(lambda y, c=c: c.fn(joint(y)), -np.inf, 0.0,
                                          jac=lambda y, c=c, cols=cols: np.atleast_2d(c.grad(joint(y))[cols]))
                      for c in self.nonlinear if c.owner in (-1, i)]
            bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
                      for lo, hi in zip(self.lb[cols], self.ub[cols])]
            here = f(x[cols])
            best = here
            box = np.clip(np.zeros(len(cols)), self.lb[cols], self.ub[cols])
            for y0 in (x[cols], 0.5 * (box + x[cols])):
                res = minimize(f, y0, jac=g, bounds=bounds, constraints=cons + curved, method="SLSQP",
                               options={"ftol": 1e-15, "maxiter": 500})
                y = res.x
                ok = all(np.all(c.A @ y >= c.lb - 1e-9) and np.all(c.A @ y <= c.ub + 1e-9) for c in cons) and \
                    all(c.fun(y) <= 1e-9 for c in curved)
                if ok and np.all(y >= self.lb[cols] - 1e-9) and np.all(y <= self.ub[cols] + 1e-9):
                    best = min(best, f(y))
            regrets.append(here - best)
        return np.array(regrets)

    # --- solvopt's model and instance ----------------------------------------------------------
    @property
    def coupled(self) -> bool:
        """True when some row owned by one player involves other players' actions (a GNEP proper)."""
        blocks = self.blocks
        return any(r.owner >= 0 and np.any(np.delete(r.A, blocks[r.owner], axis=1) != 0) for r in self.rows) or \
            any(c.owner >= 0 for c in self.nonlinear)

    def instance(self) -> dict:
        """The JSON instance (``kind: pseudo_game``, ``scalar_game`` when ``nonconcave``): quadratic costs as
        Q, c; the others as expressions.

        A player's rows go to its ``constraints`` (over its own action) when they involve only its
        own variables, else to its ``joint_constraints`` (over the joint action); shared rows to
        ``shared_constraints``.
        """
        if self.quadratic is None and self.expressions is None:
            raise ModelError(f"problem {self.name}: its costs have no JSON statement (use GNEP.model())")
        blocks = self.blocks
        players = []
        for i, cols in enumerate(blocks):
            spec = {"name": self.names[i], "size": int(len(cols)),
                    "lb": _bound_list(self.lb[cols]), "ub": _bound_list(self.ub[cols])}
            quadratic = self.quadratic[i] if self.quadratic is not None else (
                self.expression_quadratic[i] if self.expression_quadratic is not None else None)
            spec["cost"] = {}
            if quadratic is not None:
                Q, c, k = quadratic
                spec["cost"] = {"c": np.asarray(c, float).tolist()}
                if np.any(np.asarray(Q, float) != 0):              # a linear cost states no Q
                    spec["cost"] = {"Q": np.asarray(Q, float).tolist(), **spec["cost"]}
                if k:
                    spec["cost"]["constant"] = float(k)
            if self.quadratic is None:
                assert self.expressions is not None
                spec["cost"]["expression"] = self.expressions[i]
            own, joint = [], []
            others = np.setdiff1d(np.arange(self.n), cols)
            for r in self.rows:
                if r.owner == i:
                    coupled = np.any(r.A[:, others] != 0, axis=1)
                    own.extend(_rows_json(r.A[~coupled][:, cols], r.lo[~coupled], r.hi[~coupled]))
                    joint.extend(_rows_json(r.A[coupled], r.lo[coupled], r.hi[coupled]))
            if own:
                spec["constraints"] = own
            if joint:
                spec["joint_constraints"] = joint
            curved = [c.json() for c in self.nonlinear if c.owner == i]
            if curved:
                spec["nonlinear_constraints"] = curved
            players.append(spec)
        shared = []
        for r in self.rows:
            if r.owner == -1:
                shared.extend(_rows_json(r.A, r.lo, r.hi))
        reference = {"source": SOURCE + f", problem {self.name}",
                     "published_solution": None if self.published is None else self.published.tolist(),
                     "equilibrium": self.concept, "unique": self.unique}
        if self.notes:
            reference["notes"] = self.notes
        if self.start is not None:
            reference["start"] = self.start.tolist()
        data = {"kind": "scalar_game" if self.nonconcave else "pseudo_game", "name": self.file_stem,
                "description": self.title, "reference": reference, "players": players}
        if shared:
            data["shared_constraints"] = shared
        curved = [c.json() for c in self.nonlinear if c.owner == -1]
        if curved:
            data["shared_nonlinear_constraints"] = curved
        return data

    @property
    def file_stem(self) -> str:
        return "fk_" + self.name.replace(".", "").lower()

    def model(self):
        """The problem as a :class:`~solvopt.dsl.PseudoGame` (a :class:`~solvopt.dsl.ScalarGame` when
        ``nonconcave``; a new one on every call)."""
        if self.nonconcave:
            from .scalar_instance import scalar_game_from_json
            return scalar_game_from_json(self.instance())
        if self.quadratic is not None and not self.coupled and not self.nonlinear:
            from .instance import game_from_json
            return game_from_json(self.instance())
        from solvopt.dsl import PseudoGame
        game = PseudoGame(self.file_stem)
        blocks = self.blocks
        vars_ = [game.player(self.names[i], (len(cols),), self.lb[cols], self.ub[cols])
                 for i, cols in enumerate(blocks)]

        def joint(A):
            return sum(A[:, cols] @ v for cols, v in zip(blocks, vars_))

        for i, var in enumerate(vars_):
            if self.quadratic is not None:            # a quadratic expression of the joint action
                Q, c, k = self.quadratic[i]
                X = joint(np.eye(self.n))
                game.minimize(var, 0.5 * (X * (np.asarray(Q, float) @ X)).sum() + np.asarray(c, float) @ X + k)
            else:
                game.utility(var, (lambda x, i=i: -self.cost(i, x)), (lambda x, i=i: -self.cost_gradient(i, x)))
        for r in self.rows:
            for con in _dsl_rows(joint(r.A), r.lo, r.hi):
                (game.share(con) if r.owner == -1 else game.constrain(vars_[r.owner], con))
        for k, c in enumerate(self.nonlinear):                # convex by construction (the JSON rules prove it)
            if c.owner == -1:
                game.share_convex(c.fn, c.grad, name=f"{self.name} shared #{k}", proven=True)
            else:
                game.constrain_convex(vars_[c.owner], c.fn, c.grad, name=f"{self.name} {self.names[c.owner]} #{k}",
                                      proven=True)
        return game


def _bound_list(v):
    v = np.asarray(v, float)
    if np.all(v == v[0]):
        return None if not np.isfinite(v[0]) else float(v[0])
    return [float(x) for x in v]          # pragma: no cover - the library's bounds are finite where mixed


def _rows_json(A, lo, hi) -> list[dict]:
    A, lo, hi = np.atleast_2d(np.asarray(A, float)), np.asarray(lo, float), np.asarray(hi, float)
    out = []
    eq = lo == hi
    if np.any(eq):
        out.append({"coefficients": A[eq].tolist(), "sense": "==", "rhs": hi[eq].tolist()})
    up = ~eq & np.isfinite(hi)
    if np.any(up):
        out.append({"coefficients": A[up].tolist(), "sense": "<=", "rhs": hi[up].tolist()})
    down = ~eq & np.isfinite(lo)
    if np.any(down):
        out.append({"coefficients": A[down].tolist(), "sense": ">=", "rhs": lo[down].tolist()})
    return out


def _dsl_rows(expr, lo, hi):
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if np.all(lo == hi):
        return [expr == hi]
    out = []
    if np.all(np.isfinite(hi)):
        out.append(expr <= hi)
    if np.all(np.isfinite(lo)):
        out.append(expr >= lo)
    return out
