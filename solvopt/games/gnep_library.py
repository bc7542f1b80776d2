"""The Facchinei-Kanzow GNEP test library: the problems solvopt's pseudo-game model can state.

F. Facchinei, C. Kanzow, "Penalty methods for the solution of generalized Nash equilibrium
problems", SIAM J. Optim. 20(5), 2228-2253, 2010, appendix A (the test problems A.1-A.18).
Nine of its eighteen families have linear constraints that are either a player's own or shared
by all players (jointly convex), which is what :class:`solvopt.dsl.PseudoGame` states today:
A.1, A.11-A.18, twelve instances with the four variants A.16a-d. The other nine (A.2-A.10) need
player-specific coupled constraints or nonlinear constraints and are not here.

Every problem is stated once, as plain data: each player's cost theta_i(x) over the joint
action x (players' actions concatenated in order; every player *minimises* its cost) with its
exact gradient, the variable bounds and the linear rows ``lo <= A x <= hi``, each owned by one
player or shared. From that one statement come

- :meth:`GNEP.model`: a :class:`~solvopt.dsl.PseudoGame` (quadratic costs through the JSON
  instance reader, so the shipped files and the factories are one model; other costs as
  callables with exact gradients);
- :meth:`GNEP.instance`: the JSON instance (``kind: pseudo_game``), with the published solution
  in ``reference``: quadratic costs as ``Q``, ``c``; the others (A.1, A.14, A.16) as cost
  ``expression`` trees (:mod:`solvopt.games.expressions`) written from the same parameters;
- plain NumPy ``cost`` / ``cost_gradient`` and the constraint arrays, which the tests hand to
  scipy to compute each player's best response independently of solvopt.

``published`` is the point printed in the appendix (its digits, not ours): an approximate
solution of the penalty method. Where it is not an exact equilibrium (A.1's x1 lies 7.6e-4
below its bound 0.3; A.11's x1 + x2 exceeds 1 by 4.8e-5), the problem's ``notes`` say so.

Example::

    from solvopt.games.gnep_library import problem
    p = problem("A.13")
    result = p.model().solve(start=p.start, time_limit=5)
    print(result.solution["actions"], p.published)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

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
class GNEP:
    """One test problem: players minimise ``cost(i, x)`` over bounds and linear rows (see the module doc).

    ``quadratic`` holds, per player, (Q, c, constant) with cost 0.5 x'Qx + c'x + constant when
    every cost is quadratic, else None; ``expressions`` then holds, per player, its cost as a
    JSON expression tree (what the instance file states). ``unique``
    says whether the equilibrium the default method computes (the variational equilibrium) is
    unique, so that a computed point can be compared with ``published``.
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
    unique: bool = True
    concept: str = "VE"
    notes: str = ""
    player_names: list[str] = field(default_factory=list)

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

        SLSQP over the player's bounds and rows (its own and the shared ones, the others' actions
        fixed) with the plain cost and gradient, from the point itself and a second start; it
        uses nothing of solvopt's solvers, so it checks their answers from outside. A local
        method on a convex problem: the value is the true regret up to SLSQP's accuracy.
        """
        from scipy.optimize import LinearConstraint, minimize
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
            bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
                      for lo, hi in zip(self.lb[cols], self.ub[cols])]
            here = f(x[cols])
            best = here
            box = np.clip(np.zeros(len(cols)), self.lb[cols], self.ub[cols])
            for y0 in (x[cols], 0.5 * (box + x[cols])):
                res = minimize(f, y0, jac=g, bounds=bounds, constraints=cons, method="SLSQP",
                               options={"ftol": 1e-15, "maxiter": 500})
                y = res.x
                ok = all(np.all(c.A @ y >= c.lb - 1e-9) and np.all(c.A @ y <= c.ub + 1e-9) for c in cons)
                if ok and np.all(y >= self.lb[cols] - 1e-9) and np.all(y <= self.ub[cols] + 1e-9):
                    best = min(best, f(y))
            regrets.append(here - best)
        return np.array(regrets)

    # --- solvopt's model and instance ----------------------------------------------------------
    def instance(self) -> dict:
        """The JSON instance (``kind: pseudo_game``): quadratic costs as Q, c; the others as expressions."""
        if self.quadratic is None and self.expressions is None:
            raise ModelError(f"problem {self.name}: its costs have no JSON statement (use GNEP.model())")
        blocks = self.blocks
        players = []
        for i, cols in enumerate(blocks):
            spec = {"name": self.names[i], "size": int(len(cols)),
                    "lb": _bound_list(self.lb[cols]), "ub": _bound_list(self.ub[cols])}
            if self.quadratic is None:
                assert self.expressions is not None
                spec["cost"] = {"expression": self.expressions[i]}
            else:
                Q, c, k = self.quadratic[i]
                spec["cost"] = {"Q": np.asarray(Q, float).tolist(), "c": np.asarray(c, float).tolist()}
                if k:
                    spec["cost"]["constant"] = float(k)
            own = []
            for r in self.rows:
                if r.owner == i:
                    own.extend(_rows_json(r.A[:, cols], r.lo, r.hi))
            if own:
                spec["constraints"] = own
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
        data = {"kind": "pseudo_game", "name": self.file_stem, "description": self.title,
                "reference": reference, "players": players}
        if shared:
            data["shared_constraints"] = shared
        return data

    @property
    def file_stem(self) -> str:
        return "fk_" + self.name.replace(".", "").lower()

    def model(self):
        """The problem as a :class:`~solvopt.dsl.PseudoGame` (a new one on every call)."""
        if self.quadratic is not None:
            from .instance import game_from_json
            return game_from_json(self.instance())
        from solvopt.dsl import PseudoGame
        game = PseudoGame(self.file_stem)
        blocks = self.blocks
        vars_ = [game.player(self.names[i], (len(cols),), self.lb[cols], self.ub[cols]) for i, cols in enumerate(blocks)]

        def joint(A):
            return sum(A[:, cols] @ v for cols, v in zip(blocks, vars_))

        for i, var in enumerate(vars_):
            game.utility(var, (lambda x, i=i: -self.cost(i, x)), (lambda x, i=i: -self.cost_gradient(i, x)))
        for r in self.rows:
            for con in _dsl_rows(joint(r.A) if r.owner == -1 else r.A[:, blocks[r.owner]] @ vars_[r.owner], r.lo, r.hi):
                (game.share(con) if r.owner == -1 else game.constrain(vars_[r.owner], con))
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


# --- quadratic helpers -----------------------------------------------------------------------
def _quadratic(Qs, cs, ks=None):
    """Cost callables and gradients of 0.5 x'Qx + c'x + k, plus the (Q, c, k) list."""
    ks = ks or [0.0] * len(Qs)
    Qs = [np.asarray(Q, float) for Q in Qs]
    cs = [np.asarray(c, float) for c in cs]
    costs = [(lambda x, Q=Q, c=c, k=k: 0.5 * x @ Q @ x + c @ x + k) for Q, c, k in zip(Qs, cs, ks)]
    grads = [(lambda x, Q=Q, c=c: Q @ x + c) for Q, c in zip(Qs, cs)]
    return costs, grads, list(zip(Qs, cs, ks))


def _box(n, lo, hi):
    return np.full(n, float(lo)), np.full(n, float(hi))


# --- A.1 and A.14: the internet switching model ------------------------------------------------
def _switching(name, title, lb, ub, published, notes):
    """theta_i(x) = -(x_i / S)(1 - S / B), S = sum x, B = 1, with the shared capacity S <= B."""
    N, B = 10, 1.0

    def cost(x, i):
        S = x.sum()
        return -(x[i] / S) * (1.0 - S / B)

    def grad(x, i):
        S = x.sum()
        g = np.full(N, x[i] / S ** 2)
        g[i] = -(S - x[i]) / S ** 2 + 1.0 / B
        return g

    def expression(i):                           # -x_i S^-1 + x_i / B
        S = {"linear": [1.0] * N}
        return {"op": "add", "args": [{"op": "mul", "args": [-1.0, {"var": i}, {"op": "pow", "args": [S, -1.0]}]},
                                      {"op": "mul", "args": [1.0 / B, {"var": i}]}]}

    return GNEP(name, title, [1] * N, lb, ub, [Rows(np.ones((1, N)), np.array([-np.inf]), np.array([B]))],
                [(lambda x, i=i: cost(x, i)) for i in range(N)], [(lambda x, i=i: grad(x, i)) for i in range(N)],
                published, notes=notes, start=np.full(N, 0.1), expressions=[expression(i) for i in range(N)])


def a1() -> GNEP:
    """Problem A.1: the internet switching model of Kesselman et al. with player 1 bounded to [0.3, 0.5].

    Ten players (one variable each) minimise -(x_i / S)(1 - S / B), S = x_1 + ... + x_10, B = 1,
    subject to x_1 in [0.3, 0.5], x_i in [0.01, 1] (i > 1) and the shared capacity S <= B.
    The capacity is slack at the solution, so the equilibrium is a Nash point of the boxes.
    """
    lb, ub = _box(10, 0.01, 1.0)
    lb[0], ub[0] = 0.3, 0.5
    published = np.array([0.29923815223336] + [0.06951127617805] * 9)
    return _switching("A.1", "Internet switching model (Kesselman et al.), N = 10, B = 1, 0.3 <= x1 <= 0.5",
                      lb, ub, published,
                      "the published x1 = 0.29924 lies 7.6e-4 below its bound 0.3 (the penalty method's "
                      "inexact point); the exact equilibrium has x1 = 0.3 at its bound")


def a14() -> GNEP:
    """Problem A.14: the internet switching model of Kesselman et al. (ten symmetric players).

    Ten players minimise -(x_i / S)(1 - S / B), S = sum x, B = 1, over x_i in [0.01, 1] and the
    shared capacity S <= B; the equilibrium is x_i = B (N - 1) / N^2 = 0.09 (capacity slack).
    """
    lb, ub = _box(10, 0.01, 1.0)
    published = np.array([0.08999991899425, 0.08999991899426, 0.08999991899425, 0.08999991899425,
                          0.08999991899425, 0.08999991899425, 0.08999991899425, 0.08999991899426,
                          0.08999991899425, 0.08999991899425])
    return _switching("A.14", "Internet switching model (Kesselman et al.), N = 10, B = 1", lb, ub, published,
                      "the exact equilibrium is x_i = 0.09 for every player")


# --- A.11 ------------------------------------------------------------------------------------
def a11() -> GNEP:
    """Problem A.11: two players, theta_1 = (x1 - 1)^2, theta_2 = (x2 - 1/2)^2, shared x1 + x2 <= 1.

    The GNEs are the segment {(t, 1 - t) : 1/2 <= t <= 1}; the variational equilibrium is
    (3/4, 1/4), which the appendix reports.
    """
    costs, grads, quad = _quadratic([[[2, 0], [0, 0]], [[0, 0], [0, 2]]], [[-2, 0], [0, -1]], [1.0, 0.25])
    return GNEP("A.11", "Two players, (x1 - 1)^2 and (x2 - 1/2)^2, shared x1 + x2 <= 1",
                [1, 1], np.full(2, -np.inf), np.full(2, np.inf),
                [Rows(np.ones((1, 2)), np.array([-np.inf]), np.array([1.0]))], costs, grads,
                np.array([0.75002417863494, 0.2500241786374]), quadratic=quad,
                notes="GNEs: the segment {(t, 1 - t) : 1/2 <= t <= 1}; the VE (3/4, 1/4) is unique; the published "
                      "point violates x1 + x2 <= 1 by 4.8e-5")


# --- A.12 ------------------------------------------------------------------------------------
def a12() -> GNEP:
    """Problem A.12: a two-player Cournot game, theta_i = x_i (x_1 + x_2 - 16), x_i in [-10, 10].

    No coupled constraints: the unique Nash equilibrium is x_1 = x_2 = 16/3.
    """
    costs, grads, quad = _quadratic([[[2, 1], [1, 0]], [[0, 1], [1, 2]]], [[-16, 0], [0, -16]])
    return GNEP("A.12", "Two-player Cournot game x_i (x1 + x2 - 16), x_i in [-10, 10]", [1, 1],
                *_box(2, -10, 10), [], costs, grads, np.array([5.33331555561568, 5.33331555561]), quadratic=quad,
                concept="NE", notes="the exact equilibrium is (16/3, 16/3)")


# --- A.13: the river basin pollution game -----------------------------------------------------
def a13() -> GNEP:
    """Problem A.13: the river-basin pollution game of Krawczyk and Uryasev (three players).

    theta_i = x_i (c1_i + c2_i x_i - 3 + 0.01 S), S = x_1 + x_2 + x_3, x >= 0, and the shared
    pollution limits 3.25 x1 + 1.25 x2 + 4.125 x3 <= 100, 2.2915 x1 + 1.5625 x2 + 2.814 x3 <= 100.
    """
    c1, c2 = np.array([0.10, 0.12, 0.15]), np.array([0.01, 0.05, 0.01])
    Qs, cs = [], []
    for i in range(3):
        Q = np.zeros((3, 3))
        Q[i, :] = Q[:, i] = 0.01
        Q[i, i] = 2 * c2[i] + 0.02
        c = np.zeros(3)
        c[i] = c1[i] - 3.0
        Qs.append(Q)
        cs.append(c)
    costs, grads, quad = _quadratic(Qs, cs)
    A = np.array([[3.25, 1.25, 4.125], [2.2915, 1.5625, 2.814]])
    return GNEP("A.13", "River-basin pollution game (Krawczyk and Uryasev), 3 players, 2 shared limits", [1, 1, 1],
                np.zeros(3), np.full(3, np.inf), [Rows(A, np.full(2, -np.inf), np.full(2, 100.0))], costs, grads,
                np.array([21.14480155732168, 16.02785326538717, 2.7259709656438]), quadratic=quad,
                notes="the exact VE (KKT with the first limit active) is (21.1447960, 16.0278535, 2.7259627), "
                      "8.3e-6 from the published point; the game is only weakly monotone (modulus 0.03), so a VE gap "
                      "of 1e-9 still allows about 2e-4 in the actions")


# --- A.15: an electricity market (three generating companies) ----------------------------------
def a15() -> GNEP:
    """Problem A.15: an electricity market model, three companies with 1, 2 and 3 plants.

    Company nu minimises (2 S - 378.4) q_nu + sum over its plants k of (0.5 c_k x_k^2 + d_k x_k),
    q_nu = its plants' output, S = the total (the price is 378.4 - 2 S), with plant capacities
    x in [0, (80, 80, 50, 55, 30, 40)]; no coupled constraints (a Nash equilibrium problem).
    """
    cq = np.array([0.04, 0.035, 0.125, 0.0166, 0.05, 0.05])
    cl = np.array([2.0, 1.75, 1.0, 3.25, 3.0, 3.0])
    sizes = [1, 2, 3]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    Qs, cs = [], []
    for nu in range(3):
        own = np.zeros(6, bool)
        own[offsets[nu]:offsets[nu + 1]] = True
        Q = np.zeros((6, 6))
        Q[np.ix_(own, own)] = 4.0
        Q[np.ix_(own, ~own)] = 2.0
        Q[np.ix_(~own, own)] = 2.0
        Q[own, own] += cq[own]
        c = np.where(own, cl - 378.4, 0.0)
        Qs.append(Q)
        cs.append(c)
    costs, grads, quad = _quadratic(Qs, cs)
    return GNEP("A.15", "Electricity market, 3 companies with 1, 2, 3 plants and capacities", sizes,
                np.zeros(6), np.array([80.0, 80.0, 50.0, 55.0, 30.0, 40.0]), [], costs, grads,
                np.array([46.66150692423980, 32.15293850189938, 15.00419467998705, 22.10485810522063,
                          12.34076570922471, 12.34076570922471]), quadratic=quad, concept="NE",
                notes="the exact equilibrium (interior: one linear system) is (46.661622, 32.154030, 15.003129, "
                      "22.107190, 12.339587, 12.339587); the published point is 2.3e-3 from it along company 3's "
                      "nearly flat direction (modulus 0.028), where an exploitability of 1e-7 allows about 4e-3")


# --- A.16: the Outrata et al. oligopoly with a shared production cap --------------------------
_A16 = {"a": (75.0, [10.403965, 13.035817, 15.407354, 17.381556, 18.771308]),
        "b": (100.0, [14.050088, 17.798379, 20.907187, 23.111429, 24.132916]),
        "c": (150.0, [23.588799, 28.684248, 32.021533, 33.287258, 32.418182]),
        "d": (200.0, [35.785329, 40.748959, 42.802485, 41.966381, 38.696846])}


def a16(variant: str = "a") -> GNEP:
    """Problem A.16a-d: the five-firm oligopoly of Outrata, Kocvara and Zowe with a production cap P.

    Firm i minimises f_i(x_i) - x_i p(S): cost f_i(x) = c_i x + beta_i / (beta_i + 1) K_i^(-1/beta_i)
    x^((beta_i + 1) / beta_i), inverse demand p(S) = 5000^(1/gamma) S^(-1/gamma), S = sum x,
    c = (10, 8, 6, 4, 2), K_i = 5, beta = (1.2, 1.1, 1, 0.9, 0.8), gamma = 1.1, x >= 0, and the
    shared cap S <= P, P = 75, 100, 150, 200 for the variants a, b, c, d. The cost is undefined
    at S = 0: the start is the appendix's x_i = 10 (from the default start, all zeros, the solve
    moves the start inside the cost's domain first).
    """
    if variant not in _A16:
        raise ModelError(f"A.16 has the variants a, b, c, d (got {variant!r})")
    P, published = _A16[variant]
    c = np.array([10.0, 8.0, 6.0, 4.0, 2.0])
    beta = np.array([1.2, 1.1, 1.0, 0.9, 0.8])
    K, gamma = 5.0, 1.1
    scale = 5000.0 ** (1.0 / gamma)

    def cost(x, i):                              # arithmetic only: NumPy and JAX arrays alike
        S = x.sum()
        xi = x[i]
        f = c[i] * xi + beta[i] / (beta[i] + 1.0) * K ** (-1.0 / beta[i]) * xi ** ((beta[i] + 1.0) / beta[i])
        return f - xi * scale * S ** (-1.0 / gamma)

    def grad(x, i):
        S = x.sum()
        xi = max(x[i], 0.0)
        p = scale * S ** (-1.0 / gamma)
        dp = -(1.0 / gamma) * scale * S ** (-1.0 / gamma - 1.0)
        g = np.full(5, -xi * dp)
        g[i] = c[i] + K ** (-1.0 / beta[i]) * xi ** (1.0 / beta[i]) - p - xi * dp
        return g

    def expression(i):        # c_i x_i + b_i / (b_i + 1) K^(-1/b_i) x_i^((b_i + 1) / b_i) - scale x_i S^(-1/gamma)
        xi = {"var": i}
        return {"op": "add", "args": [
            {"op": "mul", "args": [float(c[i]), xi]},
            {"op": "mul", "args": [float(beta[i] / (beta[i] + 1.0) * K ** (-1.0 / beta[i])),
                                   {"op": "pow", "args": [xi, float((beta[i] + 1.0) / beta[i])]}]},
            {"op": "mul", "args": [-scale, xi, {"op": "pow", "args": [{"linear": [1.0] * 5}, -1.0 / gamma]}]}]}

    return GNEP(f"A.16{variant}", f"Oligopoly of Outrata et al., 5 firms, shared production cap P = {P:g}", [1] * 5,
                np.zeros(5), np.full(5, P), [Rows(np.ones((1, 5)), np.array([-np.inf]), np.array([P]))],
                [(lambda x, i=i: cost(x, i)) for i in range(5)], [(lambda x, i=i: grad(x, i)) for i in range(5)],
                np.array(published), start=np.full(5, 10.0), expressions=[expression(i) for i in range(5)],
                notes="the cap binds: the GNEs form a set, the VE is unique and is the published point")


# --- A.17 ------------------------------------------------------------------------------------
def a17() -> GNEP:
    """Problem A.17: player 1 with two variables, player 2 with one, two shared linear constraints.

    theta_1 = x1^2 + x1 x2 + x2^2 + (x1 + x2) x3 - 25 x1 - 38 x2, theta_2 = x3^2 + (x1 + x2) x3 - 25 x3,
    x >= 0, x1 + 2 x2 - x3 <= 14, 3 x1 + 2 x2 + x3 <= 30. The appendix reports (0, 11, 8).
    """
    costs, grads, quad = _quadratic([[[2, 1, 1], [1, 2, 1], [1, 1, 0]], [[0, 0, 1], [0, 0, 1], [1, 1, 2]]],
                                    [[-25, -38, 0], [0, 0, -25]])
    A = np.array([[1.0, 2.0, -1.0], [3.0, 2.0, 1.0]])
    return GNEP("A.17", "Two players (2 + 1 variables), two shared linear constraints", [2, 1], np.zeros(3),
                np.full(3, np.inf), [Rows(A, np.full(2, -np.inf), np.array([14.0, 30.0]))], costs, grads,
                np.array([0.00000737, 11.00002440, 7.99997560]), quadratic=quad)


# --- A.18: a two-company electricity market over three nodes ---------------------------------
def a18() -> GNEP:
    """Problem A.18: two companies, six variables each, three markets with linked prices.

    Company nu sells q_k = x_k + x_(k+3) in market k (two plants each); the prices are
    S_1 = 40 - (40/500) T_1, S_2 = 35 - (35/400) T_2, S_3 = 32 - (32/600) T_3 with T_k both companies'
    sales in market k, and company nu minimises sum_k (15 - S_k) q_k. Own rows:
    x_1 + x_2 + x_3 <= 100, x_4 + x_5 + x_6 <= 50, x >= 0; shared: |S_k - S_l| <= 1 for every pair.
    The costs see only the sums x_k + x_(k+3): the equilibria form a set (only the sales T_k are
    unique), so no single point is compared.
    """
    a = np.array([40.0, 35.0, 32.0])
    b = np.array([40 / 500, 35 / 400, 32 / 600])
    m = np.zeros((2, 3, 12))                     # m[nu, k] marks company nu's two variables of market k
    for nu in range(2):
        for k in range(3):
            m[nu, k, [6 * nu + k, 6 * nu + k + 3]] = 1.0
    Qs, cs = [], []
    for nu in range(2):
        Q, c = np.zeros((12, 12)), np.zeros(12)
        for k in range(3):
            own, other = m[nu, k], m[1 - nu, k]
            Q += b[k] * (2 * np.outer(own, own) + np.outer(own, other) + np.outer(other, own))
            c += (15.0 - a[k]) * own
        Qs.append(Q)
        cs.append(c)
    costs, grads, quad = _quadratic(Qs, cs)
    T = m.sum(axis=0)                            # T[k] . x = T_k
    rows = []
    for nu in range(2):
        A = np.zeros((2, 12))
        A[0, 6 * nu:6 * nu + 3] = 1.0
        A[1, 6 * nu + 3:6 * nu + 6] = 1.0
        rows.append(Rows(A, np.full(2, -np.inf), np.array([100.0, 50.0]), owner=nu))
    A, lo, hi = [], [], []
    for k, l in ((0, 1), (0, 2), (1, 2)):
        A.append(-b[k] * T[k] + b[l] * T[l])          # S_k - S_l = (a_k - a_l) + this . x
        lo.append(-1.0 - (a[k] - a[l]))
        hi.append(1.0 - (a[k] - a[l]))
    rows.append(Rows(np.array(A), np.array(lo), np.array(hi)))
    return GNEP("A.18", "Electricity market, 2 companies x 6 variables, 3 linked markets", [6, 6], np.zeros(12),
                np.full(12, np.inf), rows, costs, grads, None, quadratic=quad, unique=False,
                notes="the equilibria form a set (only the market sales are unique); no published point is "
                      "compared")


FACTORIES: dict[str, Callable[[], GNEP]] = {
    "A.1": a1, "A.11": a11, "A.12": a12, "A.13": a13, "A.14": a14, "A.15": a15,
    "A.16a": lambda: a16("a"), "A.16b": lambda: a16("b"), "A.16c": lambda: a16("c"), "A.16d": lambda: a16("d"),
    "A.17": a17, "A.18": a18,
}
NAMES = list(FACTORIES)


def problem(name: str) -> GNEP:
    """The library problem ``name`` (``"A.1"``, ``"A.11"`` ... ``"A.16a"`` ... ``"A.18"``)."""
    try:
        return FACTORIES[name]()
    except KeyError:
        raise ModelError(f"unknown problem {name!r}; the library has {', '.join(NAMES)}") from None


def problems() -> list[GNEP]:
    """All twelve problems, in the appendix's order."""
    return [FACTORIES[n]() for n in NAMES]


def write_instances(folder) -> list[str]:
    """Write the JSON instance of every problem into ``folder``; returns the paths."""
    import json
    import pathlib
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for p in problems():
        path = folder / (p.file_stem + ".json")
        path.write_text(json.dumps(p.instance(), indent=1) + "\n")
        paths.append(str(path))
    return paths


__all__ = ["GNEP", "Rows", "NAMES", "FACTORIES", "problem", "problems", "write_instances", "a1", "a11", "a12",
           "a13", "a14", "a15", "a16", "a17", "a18"]
