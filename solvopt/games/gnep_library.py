"""The Facchinei-Kanzow GNEP test library: the problems solvopt's pseudo-game model can state.

F. Facchinei, C. Kanzow, "Penalty methods for the solution of generalized Nash equilibrium
problems", SIAM J. Optim. 20(5), 2228-2253, 2010, appendix A (the test problems A.1-A.18).
Nine of its eighteen families have linear constraints that are either a player's own or shared
by all players (jointly convex): A.1, A.11-A.18, twelve instances with the four variants A.16a-d
(:func:`problems`). A.3, A.4, A.5, A.7 and A.8 have player-specific coupled rows (``GENERAL``,
generalized Nash equilibria). A.6, A.9a and A.9b have player-specific convex nonlinear
constraints (``NONLINEAR``, stated as :class:`Convex`: NumPy functions with exact gradients and
expression trees). A.2's costs are not convex in the own action (``NONCONCAVE``: a
``scalar_game``, :mod:`solvopt.games.gnep_library_extra`). :func:`write_instances` writes all
twenty-one as JSON.

Every problem is stated once, as plain data: each player's cost theta_i(x) over the joint
action x (players' actions concatenated in order; every player *minimises* its cost) with its
exact gradient, the variable bounds, the linear rows ``lo <= A x <= hi`` and the nonlinear
constraints, each owned by one player or shared. From that one statement come

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

from collections.abc import Callable

import numpy as np

from solvopt.core.errors import ModelError

from .gnep_problem import GNEP, SOURCE, Convex, Rows  # noqa: F401 - the library's public layout


# --- quadratic helpers -----------------------------------------------------------------------
def _quadratic(Qs, cs, ks=None):
    """Cost callables and gradients of 0.5 x'Qx + c'x + k, plus the (Q, c, k) list."""
    ks = ks or [0.0] * len(Qs)
    Qs = [np.asarray(Q, float) for Q in Qs]
    cs = [np.asarray(c, float) for c in cs]
    costs = [(lambda x, Q=Q, c=c, k=k: 0.5 * x @ Q @ x + c @ x + k) for Q, c, k in zip(Qs, cs, ks)]
    grads = [(lambda x, Q=Q, c=c: Q @ x + c) for Q, c in zip(Qs, cs)]
    return costs, grads, list(zip(Qs, cs, ks))


def _box(n: int, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
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
    links: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    for k, l in ((0, 1), (0, 2), (1, 2)):
        links.append(-b[k] * T[k] + b[l] * T[l])      # S_k - S_l = (a_k - a_l) + this . x
        lo.append(-1.0 - (a[k] - a[l]))
        hi.append(1.0 - (a[k] - a[l]))
    rows.append(Rows(np.array(links), np.array(lo), np.array(hi)))
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
    factory = FACTORIES.get(name) or GENERAL.get(name) or NONLINEAR.get(name) or NONCONCAVE.get(name)
    if factory is None:
        raise ModelError(f"unknown problem {name!r}; the library has "
                         f"{', '.join(NAMES + list(GENERAL) + list(NONLINEAR) + list(NONCONCAVE))}")
    return factory()


def problems() -> list[GNEP]:
    """All twelve problems, in the appendix's order."""
    return [FACTORIES[n]() for n in NAMES]


def write_instances(folder) -> list[str]:
    """Write the JSON instance of every problem (the twelve, the ``GENERAL``, ``NONLINEAR`` and
    ``NONCONCAVE`` ones) into ``folder``; returns the paths."""
    import json
    import pathlib
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for p in problems() + [factory() for factory in (*GENERAL.values(), *NONLINEAR.values(), *NONCONCAVE.values())]:
        path = folder / (p.file_stem + ".json")
        path.write_text(json.dumps(p.instance(), indent=1) + "\n")
        paths.append(str(path))
    return paths


__all__ = ["GNEP", "Rows", "Convex", "NAMES", "FACTORIES", "GENERAL", "NONLINEAR", "NONCONCAVE", "problem",
           "problems", "write_instances", "a1", "a11", "a12", "a13", "a14", "a15", "a16", "a17", "a18", "a3", "a4",
           "a5", "a6", "a7", "a8", "a9"]


# --- the generalized Nash problems proper: player-specific coupled rows (A.3-A.5, A.7, A.8) ----------
# Each row below binds one player only while it involves the others' actions: the player's
# feasible set moves with them. These compute a generalized Nash equilibrium (``concept="GNE"``,
# default method gnep-kkt). Statements as in the appendix (read alongside the public Python port
# andrespty/GNEProblems, whose rows disagree with its own gradients in places: where they do,
# the variant of which the published point is an equilibrium is kept, and ``notes`` says so).
def _block_quadratic(blocks, Amats, Bmats, bvecs, n):
    """theta_i = 0.5 x_i'A_i x_i + x_i'(B_i x_-i + b_i) as (Q, c) over the joint action (x_-i in order)."""
    Qs, cs = [], []
    for cols, Ai, Bi, bi in zip(blocks, Amats, Bmats, bvecs):
        others = np.setdiff1d(np.arange(n), cols)
        Q, c = np.zeros((n, n)), np.zeros(n)
        Q[np.ix_(cols, cols)] = Ai
        Q[np.ix_(cols, others)] = Bi
        Q[np.ix_(others, cols)] = np.asarray(Bi).T
        c[cols] = bi
        Qs.append(Q)
        cs.append(c)
    return _quadratic(Qs, cs)


def _row(n, coefs: dict, rhs: float, owner: int) -> Rows:
    """One row sum coefs[j] x_j <= rhs of player ``owner`` (joint indices)."""
    A = np.zeros((1, n))
    for j, v in coefs.items():
        A[0, j] = v
    return Rows(A, np.array([-np.inf]), np.array([float(rhs)]), owner=owner)


def _three_players(name, title, Amats, Bmats, bvecs, lb, ub, rows, published, notes):
    sizes, n = [3, 2, 2], 7
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    blocks = [np.arange(offsets[i], offsets[i + 1]) for i in range(3)]
    costs, grads, quad = _block_quadratic(blocks, [np.array(A, float) for A in Amats],
                                          [np.array(B, float) for B in Bmats], [np.array(b, float) for b in bvecs], n)
    return GNEP(name, title, sizes, np.full(n, float(lb)), np.full(n, float(ub)), rows, costs, grads,
                np.array(published), quadratic=quad, concept="GNE", unique=False, notes=notes)


def a3() -> GNEP:
    """Problem A.3: three players (3 + 2 + 2 variables), quadratic costs, player-specific coupled rows.

    theta_i = 0.5 x_i'A_i x_i + x_i'(B_i x_-i + b_i), -10 <= x <= 10; player 1:
    x11 + x12 + x13 <= 20 and x11 + x12 - x13 <= x21 - x32 + 5; player 2:
    x21 - x22 <= x12 + x13 - x31 + 7; player 3: x32 <= x11 + x13 - x21 + 4.
    """
    rows = [_row(7, {0: 1, 1: 1, 2: 1}, 20, 0), _row(7, {0: 1, 1: 1, 2: -1, 3: -1, 6: 1}, 5, 0),
            _row(7, {3: 1, 4: -1, 1: -1, 2: -1, 5: 1}, 7, 1), _row(7, {6: 1, 0: -1, 2: -1, 3: 1}, 4, 2)]
    return _three_players(
        "A.3", "Three players (3 + 2 + 2 variables), quadratic costs, player-specific coupled rows",
        [[[20, 5, 3], [5, 5, -5], [3, -5, 15]], [[11, -1], [-1, 9]], [[48, 39], [39, 53]]],
        [[[-6, 10, 11, 20], [10, -4, -17, 9], [15, 8, -22, 21]], [[20, 1, -3, 12, 1], [10, -4, 8, 16, 21]],
         [[10, -2, 22, 12, 16], [9, 19, 21, -4, 20]]],
        [[1, -1, 1], [1, 0], [-1, 2]], -10, 10, rows,
        [-0.38046562696258, -0.12266997083581, -0.99322817120517, 0.39034789080544, 1.16385412687962,
         0.05039533464000, 0.01757740533460],
        "no row is active at the published point: it is the interior Nash point of the costs (one linear system)")


def a5() -> GNEP:
    """Problem A.5: A.3's structure with other matrices and 0 <= x <= 10.

    Player 1: x11 + ... + x32 <= 20 (all seven variables) and x11 + x12 - x13 <= x21 - x32 + 5;
    player 2: x21 + x22 <= x12 + x13 - x31 + 7 ... as stated by the rows below (see ``notes``).
    """
    rows = [_row(7, dict.fromkeys(range(7), 1), 20, 0), _row(7, {0: 1, 1: 1, 2: -1, 3: -1, 6: 1}, 5, 0),
            _row(7, {3: 1, 4: 1, 1: -1, 2: -1, 5: 1}, 7, 1), _row(7, {6: 1, 0: -1, 2: -1, 3: 1}, 4, 2)]
    return _three_players(
        "A.5", "Three players (3 + 2 + 2 variables), quadratic costs, player-specific coupled rows, 0 <= x <= 10",
        [[[20, 6, 0], [6, 6, -1], [0, -1, 8]], [[11, 1], [1, 7]], [[28, 14], [14, 29]]],
        [[[-1, -2, -4, -3], [0, -3, 0, -4], [0, 1, 9, 6]], [[-1, 0, 0, -7, 4], [-2, -3, 1, 4, 11]],
         [[-4, 0, 9, -7, 4], [-3, -4, 6, 4, 11]]],
        [[1, -1, 1], [1, 0], [-1, 2]], 0, 10, rows,
        [-0.00006229891126, 0.20279012064850, -0.00003469558295, -0.00028322020054, 0.07258934064261,
         0.02531280162415, -0.00007396699835],
        "the published point lies up to 2.8e-4 below the bounds 0 (the penalty method's inexact point); the exact "
        "GNE has those coordinates at 0")


# (player, own coordinate k, the other variable j): in A.4 and A.6 the diagonal entry k of A_i grows by x_j^2
_STATE_TERMS = [(0, 0, 3), (0, 1, 4), (1, 3, 5), (2, 6, 0)]


def _state_dependent(quadratic):
    """Costs 0.5 x'Q_i x + c_i'x + sum of 0.5 x_k^2 x_j^2 over player i's _STATE_TERMS (A.4, A.6): NumPy
    costs, gradients and the expression trees of the added terms."""
    Q = [np.asarray(q, float) for q, _, _ in quadratic]
    c = [np.asarray(v, float) for _, v, _ in quadratic]

    def cost(x, i):
        v = 0.5 * x @ Q[i] @ x + c[i] @ x
        return v + sum(0.5 * x[k] ** 2 * x[j] ** 2 for p, k, j in _STATE_TERMS if p == i)

    def grad(x, i):
        g = Q[i] @ x + c[i]
        for p, k, j in _STATE_TERMS:
            if p == i:
                g[k] += x[k] * x[j] ** 2
                g[j] += x[j] * x[k] ** 2
        return g

    def expression(i):                           # sum of 0.5 x_k^2 x_j^2 over the player's terms
        return {"op": "add", "args": [{"op": "mul", "args": [0.5, {"op": "pow", "args": [{"var": k}, 2]},
                                                             {"op": "pow", "args": [{"var": j}, 2]}]}
                                      for p, k, j in _STATE_TERMS if p == i]}

    players = range(len(quadratic))
    return ([(lambda x, i=i: cost(x, i)) for i in players], [(lambda x, i=i: grad(x, i)) for i in players],
            [expression(i) for i in players])


def a4() -> GNEP:
    """Problem A.4: A.3's data with 1 <= x <= 10, player 1's rows over all seven variables and costs whose
    quadratic part depends on the others: A_1 + diag(x21^2, x22^2, 0), A_2 + diag(x31^2, 0),
    A_3 + diag(0, x11^2) (convex in the player's own action; see ``notes``)."""
    base = a3()
    assert base.quadratic is not None            # A.3's costs are quadratic
    n = 7
    costs, grads, expressions = _state_dependent(base.quadratic)
    rows = [_row(n, dict.fromkeys(range(7), 1), 20, 0), _row(n, {0: 1, 1: 1, 2: -1, 3: -1, 6: 1}, 5, 0),
            _row(n, {3: 1, 4: 1, 1: -1, 2: -1, 5: 1}, 7, 1), _row(n, {6: 1, 0: -1, 2: -1, 3: 1}, 4, 2)]
    published = np.array([0.99982626069210, 0.99996267821636, 0.99987070414176, 0.99985869062731, 0.99983447394048,
                          0.99991824127925, 0.99991381820076])
    return GNEP("A.4", "A.3's players with state-dependent quadratic costs and player-specific rows, 1 <= x <= 10",
                [3, 2, 2], np.ones(n), np.full(n, 10.0), rows, costs, grads, published, start=np.full(n, 2.0),
                concept="GNE", unique=False, expressions=expressions, expression_quadratic=base.quadratic,
                notes="costs as the public port's gradients state them (its cost of player 2 omits the x31^2 term its "
                      "gradient has); under either reading every cost gradient is positive at x = 1 and no row binds "
                      "there, so x = (1, ..., 1) is the GNE; the published point lies up to 1.7e-4 below the bounds 1")


_A7_MATRIX = np.array([
    [110, -3, 22, -14, -27, 1, 9, 19, -2, 23, -7, -20, -4, 22, -19, 22, 3, 13, -12, 18],
    [-3, 79, -9, -21, 18, 61, 0, 14, 58, -11, 4, -16, 20, -19, 13, -17, -1, 24, 22, 5],
    [22, -9, 90, 28, 22, -9, -21, -1, -5, 29, 15, -7, 4, 30, 2, 9, -1, -19, -60, 4],
    [-14, -21, 28, 106, 11, -33, -42, 14, 28, -10, 3, 6, 13, 22, -8, 6, -3, 15, -3, 0],
    [-27, 18, 22, 11, 134, 4, -4, -29, 39, -62, 74, 2, 4, -34, -1, 13, 8, 18, 12, 35],
    [1, 61, -9, -33, 4, 119, -14, 12, 12, -6, -23, -14, 16, -4, 15, -2, 8, 16, 9, -9],
    [9, 0, -21, -42, -4, -14, 72, -14, 6, -9, 12, 2, -24, 13, 29, 17, 13, -1, 19, 21],
    [19, 14, -1, 14, -29, 12, -14, 92, -10, 5, 8, 0, -4, 23, 8, -50, -11, 48, -8, 3],
    [-2, 58, -5, 28, 39, 12, 6, -10, 124, -39, -4, -16, 24, -18, 26, 4, 13, 29, 43, 23],
    [23, -11, 29, -10, -62, -6, -9, 5, -39, 130, -42, -21, 21, 68, -24, -21, -30, -54, -23, 9],
    [-7, 4, 15, 3, 74, -23, 12, 8, -4, -42, 138, -4, -24, -12, -27, 24, 21, 2, -10, 18],
    [-20, -16, -7, 6, 2, -14, 2, 0, -16, -21, -4, 89, -11, -14, -16, -32, -7, -5, 13, -4],
    [-4, 20, 4, 13, 4, 16, -24, -4, 24, 21, -24, -11, 107, 31, -3, -2, -22, 17, 4, 22],
    [22, -19, 30, 22, -34, -4, 13, 23, -18, 68, -12, -14, 31, 116, -1, 5, -18, -16, -43, 27],
    [-19, 13, 2, -8, -1, 15, 29, 8, 26, -24, -27, -16, -3, -1, 98, -4, -2, 50, 23, 8],
    [22, -17, 9, 6, 13, -2, 17, -50, 4, -21, 24, -32, -2, 5, -4, 102, 46, -29, -17, -1],
    [3, -1, -1, -3, 8, 8, 13, -11, 13, -30, 21, -7, -22, -18, -2, 46, 110, -16, 24, 12],
    [13, 24, -19, 15, 18, 16, -1, 48, 29, -54, 2, -5, 17, -16, 50, -29, -16, 102, 45, 14],
    [-12, 22, -60, -3, 12, 9, 19, -8, 43, -23, -10, 13, 4, -43, 23, -17, 24, 45, 119, 21],
    [18, 5, 4, 0, 35, -9, 21, 3, 23, 9, 18, -4, 22, 27, 8, -1, 12, 14, 21, 59]], dtype=float)


def a7() -> GNEP:
    """Problem A.7: four players with five variables each, theta_i = 0.5 x_i'M_ii x_i + x_i'M_i,-i x_-i.

    M is the appendix's 20 x 20 matrix, 1 <= x <= 5, and one player-specific coupled row each
    (its own variables and some of the others'), as stated below.
    """
    n, M = 20, _A7_MATRIX
    blocks = [np.arange(5 * i, 5 * i + 5) for i in range(4)]
    Qs, cs = [], []
    for cols in blocks:
        Q = np.zeros((n, n))
        Q[cols, :] = M[cols, :]
        Q[:, cols] = M[cols, :].T
        Q[np.ix_(cols, cols)] = M[np.ix_(cols, cols)]
        Qs.append(Q)
        cs.append(np.zeros(n))
    costs, grads, quad = _quadratic(Qs, cs)
    rows = [_row(n, {0: 1, 1: 2, 2: -1, 3: 3, 4: -4, 6: 1, 7: -3}, 2, 0),
            _row(n, {5: -1, 6: 3, 7: -2, 8: 1, 9: 3, 10: 1, 14: -3, 17: 2}, 4, 1),
            _row(n, {10: -2, 11: 3, 12: 1, 13: -1, 14: -2, 0: 1, 19: -4}, 4, 2),
            _row(n, {15: 4, 16: -2, 17: -3, 18: -6, 19: 5, 0: 1, 1: 1, 5: -1, 6: -1}, 3, 3)]
    published = np.array([0.99988245735506, 0.99985542095046, 0.99989138444537, 0.99988866261891, 0.99984494662577,
                          0.99986703246906, 0.99986897052169, 0.99992059068103, 0.99981225576918, 1.00013812006334,
                          0.99987211313045, 1.84253230021096, 0.99986555230493, 0.99987070302597, 0.99987574778109,
                          0.99993185140789, 0.99988068741824, 0.99984157413000, 0.99986193178624, 0.99983143496263])
    return GNEP("A.7", "Four players x 5 variables, quadratic costs, player-specific coupled rows, 1 <= x <= 5",
                [5, 5, 5, 5], np.ones(n), np.full(n, 5.0), rows, costs, grads, published, quadratic=quad,
                concept="GNE", unique=False,
                notes="the published point lies up to 1.9e-4 below the bounds 1 (the penalty method's inexact point); "
                      "player 2's row is the port's gradient (its function repeats x22 where the gradient has x21), "
                      "player 1's row the port's function (its gradient has -3 on x22, the function +1 on x22 and -3 "
                      "on x23); player 2's row binds at the GNE (exactly 4 at x = 1 under either reading)")


def a8() -> GNEP:
    """Problem A.8: three one-variable players; players 1 and 2 each have x1 + x2 <= 1 and x3 <= x1 + x2.

    theta_1 = -x1, theta_2 = (x2 - 1/2)^2, theta_3 = (x3 - 3/2 x1)^2, x1, x2 in [0, 100],
    x3 in [0, 2]. The GNEs form the segment {(t, 1 - t, 3t/2) : 1/2 <= t <= 2/3}.
    """
    costs, grads, quad = _quadratic([np.zeros((3, 3)), np.diag([0.0, 2.0, 0.0]),
                                     np.array([[4.5, 0, -3], [0, 0, 0], [-3, 0, 2]])],
                                    [[-1.0, 0, 0], [0, -1.0, 0], [0, 0, 0]], [0.0, 0.25, 0.0])
    rows = []
    for owner in (0, 1):
        rows.append(_row(3, {0: 1, 1: 1}, 1, owner))
        rows.append(_row(3, {2: 1, 0: -1, 1: -1}, 0, owner))
    return GNEP("A.8", "Three one-variable players, rows of players 1 and 2 coupling all three", [1, 1, 1],
                np.zeros(3), np.array([100.0, 100.0, 2.0]), rows, costs, grads,
                np.array([0.62503131162143, 0.37500031253875, 0.93754579549990]), quadratic=quad,
                concept="GNE", unique=False,
                notes="the GNEs form the segment {(t, 1 - t, 3t/2) : 1/2 <= t <= 2/3}; the published point (5/8, 3/8, "
                      "15/16) is on it up to 4.6e-5; x3 <= x1 + x2 binds players 1 and 2 only (player 3 is free in "
                      "[0, 2])")


GENERAL: dict[str, Callable[[], GNEP]] = {"A.3": a3, "A.4": a4, "A.5": a5, "A.7": a7, "A.8": a8}
"""The generalized Nash problems proper (player-specific coupled rows); ``problem`` finds them too."""


# --- convex nonlinear constraints (A.6, A.9a, A.9b) --------------------------------------------------
# A player's constraints g(x) <= 0 may be nonlinear: convex in its own action (the others' actions as
# data). Stated once as NumPy callables with exact gradients (the model, scipy's check) and as JSON
# expression trees (the instance files, proven convex there by the curvature rules).
def _var(j):
    return {"var": j}


def _affine(n, coefs: dict, constant: float = 0.0) -> dict:
    w = np.zeros(n)
    for j, v in coefs.items():
        w[j] = v
    return {"linear": w.tolist(), "constant": float(constant)} if constant else {"linear": w.tolist()}


def _sum(*args):
    return {"op": "add", "args": list(args)}


def _times(*args):
    return {"op": "mul", "args": list(args)}


def _power(e, p):
    return {"op": "pow", "args": [e, float(p)]}


def _unit(n, j):
    e = np.zeros(n)
    e[j] = 1.0
    return e


def a6() -> GNEP:
    """Problem A.6: A.4's players and costs with other data and nonlinear player-specific constraints.

    theta_i = 0.5 x_i'(A_i + D_i) x_i + x_i'(B_i x_-i + b_i), A_i as in A.3, D_i the diagonal
    terms of A.4 (x21^2, x22^2 for player 1, x31^2 for player 2, x11^2 for player 3), 1 <= x <= 10.
    Player 1: x11 + x12 + x13 <= 20, x11 + x12 - x13 - x21 + x32 <= 3.7, x11^4 + x31 x12 - x21 <= 2;
    player 2: x21 - x22 - x12 - x13 + x31 <= 7, (x21 - 2)^2 + x22^2 - x11^2 <= 0.75;
    player 3: x32 - x11 - x13 + x21 <= 4, 2 x31^2 + (x32 - 2)^2 - x21 x31 <= 1.5.
    """
    n, sizes = 7, [3, 2, 2]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    blocks = [np.arange(offsets[i], offsets[i + 1]) for i in range(3)]
    A = [np.array([[20, 5, 3], [5, 5, -5], [3, -5, 15]], float), np.array([[11, -1], [-1, 9]], float),
         np.array([[48, 39], [39, 53]], float)]
    B = [np.array([[-2, 0, 1, 2], [1, -4, -7, 9], [-3, 8, 22, 21]], float),
         np.array([[-2, 1, -3, -12, -1], [0, -4, 8, 16, 21]], float),
         np.array([[1, -7, 22, -12, 16], [2, -9, 21, -1, 21]], float)]
    b = [np.array([1, -2, -3], float), np.array([1, 2], float), np.array([1, -2], float)]
    _, _, quad = _block_quadratic(blocks, A, B, b, n)
    costs, grads, expressions = _state_dependent(quad)
    rows = [_row(n, {0: 1, 1: 1, 2: 1}, 20, 0), _row(n, {0: 1, 1: 1, 2: -1, 3: -1, 6: 1}, 3.7, 0),
            _row(n, {3: 1, 4: -1, 1: -1, 2: -1, 5: 1}, 7, 1), _row(n, {6: 1, 0: -1, 2: -1, 3: 1}, 4, 2)]
    curved = [
        Convex(0, lambda x: x[0] ** 4 + x[5] * x[1] - x[3] - 2.0,
               lambda x: 4 * x[0] ** 3 * _unit(n, 0) + x[5] * _unit(n, 1) - _unit(n, 3) + x[1] * _unit(n, 5),
               _sum(_power(_var(0), 4), _times(_var(5), _var(1)), _affine(n, {3: -1.0})), "<=", 2.0),
        Convex(1, lambda x: (x[3] - 2.0) ** 2 + x[4] ** 2 - x[0] ** 2 - 0.75,
               lambda x: 2 * (x[3] - 2.0) * _unit(n, 3) + 2 * x[4] * _unit(n, 4) - 2 * x[0] * _unit(n, 0),
               _sum(_power(_affine(n, {3: 1.0}, -2.0), 2), _power(_var(4), 2), _times(-1.0, _power(_var(0), 2))),
               "<=", 0.75),
        Convex(2, lambda x: 2 * x[5] ** 2 + (x[6] - 2.0) ** 2 - x[3] * x[5] - 1.5,
               lambda x: (4 * x[5] - x[3]) * _unit(n, 5) + 2 * (x[6] - 2.0) * _unit(n, 6) - x[5] * _unit(n, 3),
               _sum(_times(2.0, _power(_var(5), 2)), _power(_affine(n, {6: 1.0}, -2.0), 2),
                    _times(-1.0, _var(3), _var(5))), "<=", 1.5)]
    published = np.array([0.99987722673822, 2.31570964703584, 0.99989251930167, 1.31499923583926, 0.99989852480755,
                          0.99992298465841, 1.09709158271764])
    return GNEP("A.6", "A.4's players with other data and nonlinear player-specific constraints, 1 <= x <= 10",
                sizes, np.ones(n), np.full(n, 10.0), rows, costs, grads, published, concept="GNE", unique=False,
                expressions=expressions, expression_quadratic=quad, nonlinear=curved, notes=A6_NOTES)


A6_NOTES = ("data as the public port andrespty/GNEProblems states it, where its two versions disagree the one that "
            "fits the published point: B_1, B_2, B_3 of its unbounded version (at the published point player 2's "
            "x21 is interior and stationary only with B_2[1, 4] = -12), player 3's constraint with +(x32 - 2)^2 "
            "as its gradient states (its function has -(x32 - 2)^2, not convex; with the plus sign the constraint "
            "binds at the published point and player 3's KKT conditions hold there). At the published point "
            "player 1's cost still falls along -x12 (derivative 12.1, no constraint of player 1 binds that way): "
            "it is not a GNE of this statement, whose GNE the solver computes instead")


# A.9: power allocation over K parallel channels (Pang, Scutari, Facchinei, Wang): N = 7 transmitter-
# receiver pairs; row mu*K + k, column nu of _A9 is the gain from transmitter mu to receiver nu on channel k.
_A9A = np.array([
    [0.0362, 0.0008, 0.0018, 0.0022, 0.0085, 0.0008, 0.0060],
    [0.2211, 0.0003, 0.0014, 0.0074, 0.0005, 0.0037, 0.0006],
    [0.3356, 0.0032, 0.0027, 0.0043, 0.0007, 0.0012, 0.0003],
    [0.0077, 0.0039, 0.0032, 0.0073, 0.0089, 0.0006, 0.0002],
    [0.0036, 0.0019, 0.0032, 0.0014, 0.0017, 0.0038, 0.0046],
    [0.1811, 0.0013, 0.0014, 0.0024, 0.0010, 0.0000, 0.0121],
    [0.0442, 0.0093, 0.0002, 0.0036, 0.0096, 0.0031, 0.0042],
    [0.3507, 0.0017, 0.0004, 0.0042, 0.0034, 0.0061, 0.0129],
    [0.0145, 0.1487, 0.0001, 0.0013, 0.0001, 0.0005, 0.0008],
    [0.0035, 0.1341, 0.0021, 0.0001, 0.0000, 0.0001, 0.0000],
    [0.0042, 0.3074, 0.0024, 0.0002, 0.0001, 0.0004, 0.0004],
    [0.0006, 0.3358, 0.0017, 0.0008, 0.0002, 0.0004, 0.0022],
    [0.0007, 0.0083, 0.0045, 0.0003, 0.0002, 0.0000, 0.0019],
    [0.0024, 0.2214, 0.0011, 0.0000, 0.0001, 0.0006, 0.0016],
    [0.0034, 0.1261, 0.0079, 0.0002, 0.0002, 0.0007, 0.0001],
    [0.0032, 0.0288, 0.0059, 0.0004, 0.0001, 0.0001, 0.0014],
    [0.0040, 0.0051, 0.1475, 0.0042, 0.0002, 0.0000, 0.0005],
    [0.0030, 0.0002, 0.0300, 0.0003, 0.0000, 0.0001, 0.0001],
    [0.0046, 0.0014, 0.2207, 0.0089, 0.0000, 0.0001, 0.0003],
    [0.0059, 0.0005, 0.3028, 0.0024, 0.0002, 0.0001, 0.0002],
    [0.0037, 0.0002, 0.0828, 0.0008, 0.0003, 0.0001, 0.0001],
    [0.0023, 0.0003, 0.0167, 0.0009, 0.0014, 0.0001, 0.0002],
    [0.0009, 0.0001, 0.0956, 0.0001, 0.0005, 0.0000, 0.0003],
    [0.0006, 0.0028, 0.0566, 0.0018, 0.0000, 0.0001, 0.0002],
    [0.0005, 0.0002, 0.0004, 0.0991, 0.0057, 0.0000, 0.0003],
    [0.0000, 0.0000, 0.0016, 0.0377, 0.0003, 0.0002, 0.0003],
    [0.0014, 0.0001, 0.0002, 0.8100, 0.0035, 0.0001, 0.0000],
    [0.0019, 0.0002, 0.0016, 0.3608, 0.0141, 0.0000, 0.0000],
    [0.0013, 0.0005, 0.0014, 0.0617, 0.0014, 0.0006, 0.0000],
    [0.0016, 0.0003, 0.0004, 0.0723, 0.0016, 0.0005, 0.0001],
    [0.0007, 0.0000, 0.0028, 0.3314, 0.0126, 0.0002, 0.0000],
    [0.0011, 0.0001, 0.0002, 0.0953, 0.0026, 0.0000, 0.0001],
    [0.0001, 0.0000, 0.0001, 0.0009, 0.0993, 0.0015, 0.0001],
    [0.0002, 0.0003, 0.0003, 0.0013, 0.1702, 0.0210, 0.0000],
    [0.0007, 0.0000, 0.0002, 0.0024, 1.1062, 0.0033, 0.0004],
    [0.0012, 0.0002, 0.0006, 0.0014, 0.2817, 0.0091, 0.0004],
    [0.0003, 0.0003, 0.0004, 0.0008, 0.5208, 0.0024, 0.0001],
    [0.0001, 0.0001, 0.0001, 0.0006, 0.3959, 0.0010, 0.0001],
    [0.0004, 0.0001, 0.0011, 0.0009, 0.1057, 0.0029, 0.0004],
    [0.0000, 0.0001, 0.0000, 0.0020, 0.0932, 0.0058, 0.0006],
    [0.0002, 0.0010, 0.0006, 0.0001, 0.0001, 0.3905, 0.0028],
    [0.0004, 0.0001, 0.0000, 0.0001, 0.0009, 0.1322, 0.0032],
    [0.0001, 0.0009, 0.0001, 0.0003, 0.0018, 0.3691, 0.0130],
    [0.0004, 0.0007, 0.0003, 0.0001, 0.0018, 0.1142, 0.0022],
    [0.0009, 0.0010, 0.0002, 0.0001, 0.0019, 0.1127, 0.0046],
    [0.0017, 0.0014, 0.0000, 0.0001, 0.0022, 0.1665, 0.0015],
    [0.0009, 0.0001, 0.0000, 0.0002, 0.0015, 0.0066, 0.0042],
    [0.0004, 0.0006, 0.0005, 0.0001, 0.0022, 0.2389, 0.0026],
    [0.0008, 0.0054, 0.0004, 0.0001, 0.0001, 0.0040, 0.1110],
    [0.0005, 0.0013, 0.0008, 0.0004, 0.0000, 0.0006, 0.0834],
    [0.0033, 0.0063, 0.0001, 0.0004, 0.0000, 0.0013, 0.4948],
    [0.0012, 0.0079, 0.0000, 0.0000, 0.0001, 0.0029, 0.0355],
    [0.0002, 0.0095, 0.0002, 0.0002, 0.0001, 0.0003, 0.3045],
    [0.0010, 0.0018, 0.0000, 0.0002, 0.0003, 0.0009, 0.5359],
    [0.0003, 0.0045, 0.0002, 0.0001, 0.0002, 0.0007, 0.0328],
    [0.0005, 0.0035, 0.0006, 0.0000, 0.0008, 0.0008, 0.2950],
])

_A9B = np.array([
    [0.0129, 0.0010, 0.0015, 0.0008, 0.0005, 0.0088, 0.0048],
    [0.0037, 0.0062, 0.0020, 0.0044, 0.0043, 0.0040, 0.0029],
    [0.0514, 0.0114, 0.0024, 0.0094, 0.0063, 0.0057, 0.0045],
    [0.1382, 0.0087, 0.0096, 0.0113, 0.0040, 0.0144, 0.0114],
    [0.1824, 0.0026, 0.0180, 0.0068, 0.0054, 0.0140, 0.0157],
    [0.1193, 0.0002, 0.0135, 0.0007, 0.0094, 0.0043, 0.0132],
    [0.0290, 0.0002, 0.0033, 0.0019, 0.0116, 0.0016, 0.0089],
    [0.0188, 0.0020, 0.0016, 0.0075, 0.0192, 0.0065, 0.0105],
    [0.0550, 0.0074, 0.0038, 0.0070, 0.0270, 0.0076, 0.0157],
    [0.0642, 0.0134, 0.0024, 0.0020, 0.0194, 0.0056, 0.0136],
    [0.0495, 0.0166, 0.0004, 0.0019, 0.0052, 0.0058, 0.0041],
    [0.0318, 0.0160, 0.0009, 0.0042, 0.0017, 0.0067, 0.0001],
    [0.0287, 0.0098, 0.0050, 0.0027, 0.0030, 0.0050, 0.0027],
    [0.0585, 0.0025, 0.0102, 0.0004, 0.0010, 0.0020, 0.0021],
    [0.0843, 0.0001, 0.0092, 0.0002, 0.0002, 0.0027, 0.0000],
    [0.0586, 0.0002, 0.0032, 0.0001, 0.0002, 0.0077, 0.0027],
    [0.0028, 0.0288, 0.0208, 0.0004, 0.0000, 0.0002, 0.0011],
    [0.0066, 0.0136, 0.0127, 0.0000, 0.0001, 0.0000, 0.0006],
    [0.0088, 0.0500, 0.0094, 0.0001, 0.0002, 0.0003, 0.0017],
    [0.0039, 0.0251, 0.0125, 0.0000, 0.0002, 0.0006, 0.0010],
    [0.0016, 0.0091, 0.0147, 0.0000, 0.0001, 0.0003, 0.0003],
    [0.0061, 0.1168, 0.0130, 0.0005, 0.0000, 0.0001, 0.0005],
    [0.0098, 0.1155, 0.0088, 0.0009, 0.0001, 0.0002, 0.0002],
    [0.0121, 0.0029, 0.0044, 0.0006, 0.0001, 0.0001, 0.0008],
    [0.0142, 0.1913, 0.0019, 0.0001, 0.0003, 0.0000, 0.0021],
    [0.0106, 0.4811, 0.0009, 0.0001, 0.0004, 0.0001, 0.0011],
    [0.0035, 0.3142, 0.0017, 0.0002, 0.0004, 0.0003, 0.0002],
    [0.0004, 0.0131, 0.0044, 0.0000, 0.0003, 0.0006, 0.0016],
    [0.0002, 0.1289, 0.0049, 0.0002, 0.0002, 0.0007, 0.0014],
    [0.0009, 0.3551, 0.0038, 0.0009, 0.0001, 0.0004, 0.0002],
    [0.0031, 0.2986, 0.0099, 0.0014, 0.0001, 0.0001, 0.0017],
    [0.0034, 0.1287, 0.0202, 0.0010, 0.0000, 0.0003, 0.0029],
    [0.0023, 0.0011, 0.0609, 0.0017, 0.0002, 0.0001, 0.0002],
    [0.0028, 0.0021, 0.0588, 0.0012, 0.0001, 0.0004, 0.0002],
    [0.0025, 0.0071, 0.0554, 0.0028, 0.0001, 0.0004, 0.0001],
    [0.0008, 0.0096, 0.1574, 0.0099, 0.0000, 0.0002, 0.0000],
    [0.0007, 0.0045, 0.2024, 0.0192, 0.0002, 0.0001, 0.0000],
    [0.0036, 0.0003, 0.0726, 0.0165, 0.0005, 0.0000, 0.0001],
    [0.0051, 0.0025, 0.0497, 0.0032, 0.0004, 0.0000, 0.0004],
    [0.0024, 0.0038, 0.1986, 0.0029, 0.0004, 0.0001, 0.0004],
    [0.0000, 0.0016, 0.2281, 0.0205, 0.0005, 0.0002, 0.0002],
    [0.0008, 0.0005, 0.1334, 0.0312, 0.0004, 0.0004, 0.0000],
    [0.0012, 0.0007, 0.0762, 0.0231, 0.0003, 0.0006, 0.0001],
    [0.0006, 0.0005, 0.0209, 0.0103, 0.0004, 0.0004, 0.0001],
    [0.0021, 0.0005, 0.0115, 0.0042, 0.0002, 0.0001, 0.0001],
    [0.0043, 0.0004, 0.1096, 0.0032, 0.0000, 0.0003, 0.0001],
    [0.0041, 0.0005, 0.1429, 0.0034, 0.0002, 0.0004, 0.0001],
    [0.0026, 0.0012, 0.0759, 0.0028, 0.0004, 0.0001, 0.0002],
    [0.0006, 0.0001, 0.0016, 0.0492, 0.0066, 0.0011, 0.0002],
    [0.0002, 0.0002, 0.0014, 0.0128, 0.0003, 0.0008, 0.0002],
    [0.0007, 0.0002, 0.0013, 0.1154, 0.0011, 0.0000, 0.0001],
    [0.0005, 0.0001, 0.0018, 0.1459, 0.0010, 0.0003, 0.0001],
    [0.0011, 0.0000, 0.0010, 0.0509, 0.0017, 0.0005, 0.0005],
    [0.0016, 0.0000, 0.0001, 0.0136, 0.0077, 0.0001, 0.0006],
    [0.0017, 0.0000, 0.0000, 0.0487, 0.0095, 0.0001, 0.0002],
    [0.0014, 0.0000, 0.0003, 0.0591, 0.0041, 0.0004, 0.0000],
    [0.0003, 0.0002, 0.0017, 0.0434, 0.0016, 0.0002, 0.0003],
    [0.0003, 0.0004, 0.0030, 0.0570, 0.0015, 0.0001, 0.0005],
    [0.0027, 0.0004, 0.0016, 0.1731, 0.0001, 0.0004, 0.0003],
    [0.0030, 0.0001, 0.0005, 0.3232, 0.0019, 0.0003, 0.0000],
    [0.0007, 0.0000, 0.0025, 0.2794, 0.0055, 0.0001, 0.0001],
    [0.0019, 0.0001, 0.0030, 0.0914, 0.0076, 0.0002, 0.0002],
    [0.0051, 0.0002, 0.0008, 0.0519, 0.0119, 0.0000, 0.0001],
    [0.0039, 0.0001, 0.0004, 0.1091, 0.0139, 0.0004, 0.0000],
    [0.0000, 0.0001, 0.0000, 0.0003, 0.0301, 0.0023, 0.0003],
    [0.0003, 0.0001, 0.0000, 0.0010, 0.0167, 0.0070, 0.0002],
    [0.0008, 0.0000, 0.0001, 0.0018, 0.0398, 0.0089, 0.0009],
    [0.0007, 0.0001, 0.0003, 0.0021, 0.0606, 0.0049, 0.0021],
    [0.0004, 0.0003, 0.0005, 0.0014, 0.0857, 0.0010, 0.0015],
    [0.0002, 0.0001, 0.0002, 0.0003, 0.1207, 0.0012, 0.0003],
    [0.0002, 0.0001, 0.0001, 0.0002, 0.0936, 0.0021, 0.0005],
    [0.0005, 0.0008, 0.0003, 0.0007, 0.0217, 0.0026, 0.0007],
    [0.0004, 0.0011, 0.0005, 0.0008, 0.0188, 0.0035, 0.0002],
    [0.0001, 0.0005, 0.0003, 0.0003, 0.0808, 0.0027, 0.0003],
    [0.0004, 0.0000, 0.0001, 0.0002, 0.1234, 0.0007, 0.0003],
    [0.0007, 0.0001, 0.0000, 0.0006, 0.1248, 0.0013, 0.0000],
    [0.0004, 0.0000, 0.0002, 0.0007, 0.0850, 0.0029, 0.0011],
    [0.0002, 0.0000, 0.0003, 0.0003, 0.0287, 0.0024, 0.0022],
    [0.0005, 0.0001, 0.0002, 0.0000, 0.0210, 0.0009, 0.0015],
    [0.0003, 0.0001, 0.0000, 0.0000, 0.0432, 0.0002, 0.0005],
    [0.0001, 0.0002, 0.0001, 0.0002, 0.0008, 0.1341, 0.0150],
    [0.0004, 0.0003, 0.0001, 0.0002, 0.0027, 0.0507, 0.0035],
    [0.0006, 0.0002, 0.0000, 0.0001, 0.0016, 0.0187, 0.0001],
    [0.0004, 0.0001, 0.0000, 0.0001, 0.0001, 0.0037, 0.0008],
    [0.0003, 0.0003, 0.0001, 0.0001, 0.0020, 0.0046, 0.0019],
    [0.0007, 0.0005, 0.0000, 0.0001, 0.0032, 0.0153, 0.0121],
    [0.0005, 0.0006, 0.0000, 0.0000, 0.0014, 0.0351, 0.0198],
    [0.0001, 0.0005, 0.0000, 0.0000, 0.0001, 0.0956, 0.0113],
    [0.0006, 0.0005, 0.0001, 0.0003, 0.0001, 0.1673, 0.0011],
    [0.0011, 0.0007, 0.0002, 0.0003, 0.0006, 0.1522, 0.0008],
    [0.0008, 0.0009, 0.0002, 0.0002, 0.0020, 0.0527, 0.0034],
    [0.0006, 0.0007, 0.0002, 0.0002, 0.0022, 0.0005, 0.0057],
    [0.0006, 0.0003, 0.0001, 0.0004, 0.0004, 0.0801, 0.0051],
    [0.0003, 0.0000, 0.0000, 0.0003, 0.0003, 0.2297, 0.0004],
    [0.0000, 0.0000, 0.0000, 0.0001, 0.0011, 0.3127, 0.0043],
    [0.0001, 0.0000, 0.0001, 0.0001, 0.0003, 0.2574, 0.0162],
    [0.0009, 0.0038, 0.0000, 0.0000, 0.0003, 0.0018, 0.1630],
    [0.0024, 0.0009, 0.0000, 0.0001, 0.0006, 0.0052, 0.3698],
    [0.0035, 0.0016, 0.0001, 0.0001, 0.0007, 0.0053, 0.2515],
    [0.0021, 0.0019, 0.0002, 0.0001, 0.0003, 0.0016, 0.0571],
    [0.0003, 0.0017, 0.0002, 0.0002, 0.0000, 0.0005, 0.0774],
    [0.0004, 0.0016, 0.0003, 0.0003, 0.0001, 0.0019, 0.0623],
    [0.0013, 0.0018, 0.0007, 0.0001, 0.0001, 0.0012, 0.0244],
    [0.0015, 0.0054, 0.0012, 0.0001, 0.0001, 0.0000, 0.2083],
    [0.0015, 0.0094, 0.0010, 0.0002, 0.0000, 0.0004, 0.3246],
    [0.0009, 0.0066, 0.0004, 0.0003, 0.0001, 0.0007, 0.1571],
    [0.0001, 0.0011, 0.0000, 0.0003, 0.0007, 0.0005, 0.0440],
    [0.0004, 0.0003, 0.0000, 0.0003, 0.0012, 0.0004, 0.0953],
    [0.0007, 0.0022, 0.0000, 0.0002, 0.0009, 0.0003, 0.1190],
    [0.0002, 0.0045, 0.0000, 0.0001, 0.0004, 0.0009, 0.1166],
    [0.0001, 0.0082, 0.0001, 0.0001, 0.0001, 0.0015, 0.0703],
    [0.0004, 0.0085, 0.0001, 0.0000, 0.0001, 0.0008, 0.0079],
])


def a9(variant: str = "a") -> GNEP:
    """Problem A.9a / A.9b: seven players allocate power over K = 8 / 16 channels at least cost.

    Player nu minimises sum_k x_nu,k subject to its rate sum_k log2(1 + h_nu,nu,k x_nu,k / (sigma^2 +
    sum_{mu != nu} h_mu,nu,k x_mu,k)) >= L (L = 8 / 16 bits, sigma = 0.3162) and x >= 0: the rate is
    concave in its own powers (a log of an affine form), the interference makes each constraint
    player-specific and coupled (a GNEP proper).
    """
    if variant not in ("a", "b"):
        raise ModelError(f"A.9 has the variants a, b (got {variant!r})")
    H = _A9A if variant == "a" else _A9B
    N = 7
    K = H.shape[0] // N
    L = 8.0 if variant == "a" else 16.0
    noise = 0.3162 ** 2
    n = N * K
    ln2 = np.log(2.0)
    gains = [H[:, nu].reshape(N, K) for nu in range(N)]        # gains[nu][mu, k]

    def rate(x, nu):
        X = x.reshape(N, K)
        total = noise + (gains[nu] * X).sum(axis=0)
        rest = total - gains[nu][nu] * X[nu]
        with np.errstate(invalid="ignore", divide="ignore"):    # outside the domain: NaN, refused by the model
            return float(np.sum(np.log(total) - np.log(rest))) / ln2

    def rate_gradient(x, nu):
        X = x.reshape(N, K)
        total = noise + (gains[nu] * X).sum(axis=0)
        rest = total - gains[nu][nu] * X[nu]
        G = gains[nu] * (1.0 / total - 1.0 / rest)[None, :]
        G[nu] = gains[nu][nu] / total
        return G.ravel() / ln2

    def expression(nu):
        terms = []
        for k in range(K):
            w = np.zeros(n)
            w[np.arange(N) * K + k] = gains[nu][:, k]
            own = {"linear": w.tolist(), "constant": noise}
            w_rest = w.copy()
            w_rest[nu * K + k] = 0.0
            rest = {"linear": w_rest.tolist(), "constant": noise}
            terms.append(_sum({"op": "log", "args": [own]}, _times(-1.0, {"op": "log", "args": [rest]})))
        return _times(1.0 / ln2, _sum(*terms))

    curved = [Convex(nu, (lambda x, nu=nu: L - rate(x, nu)), (lambda x, nu=nu: -rate_gradient(x, nu)),
                     expression(nu), ">=", L) for nu in range(N)]
    sizes = [K] * N
    blocks = [np.arange(K * i, K * (i + 1)) for i in range(N)]
    Qs = [np.zeros((n, n)) for _ in range(N)]
    cs = [np.isin(np.arange(n), cols).astype(float) for cols in blocks]
    costs, grads, quad = _quadratic(Qs, cs)
    return GNEP(f"A.9{variant}", f"Power allocation, 7 players x {K} channels, rate >= {L:g} bits each", sizes,
                np.zeros(n), np.full(n, np.inf), [], costs, grads, None, quadratic=quad, concept="GNE",
                unique=False, nonlinear=curved, notes=A9_NOTES)


A9_NOTES = ("gains, noise and rate targets as the public port andrespty/GNEProblems states them (its unbounded "
            "version of A.9b: the bounded one lists 77 of the 112 gain rows; rate target 16 for A.9b as its "
            "constraint functions have it); x >= 0 without the port's upper bounds 100; the port's bounded "
            "constraint function states rate <= L, its unbounded one and the problem rate >= L. No published "
            "point is compared: the library states none for A.9")


NONLINEAR: dict[str, Callable[[], GNEP]] = {"A.6": a6, "A.9a": lambda: a9("a"), "A.9b": lambda: a9("b")}
"""The problems with convex nonlinear constraints (generalized Nash problems proper); ``problem`` finds them too."""


def _a2() -> GNEP:
    from .gnep_library_extra import a2  # built on gnep_problem's GNEP, as this module is
    return a2()


NONCONCAVE: dict[str, Callable[[], GNEP]] = {"A.2": _a2}
"""The problems whose costs are not convex in the own action (``scalar_game`` files, global best responses)."""
