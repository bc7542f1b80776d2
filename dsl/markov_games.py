"""Markov pseudo-games over finite states, and Markov exchange economies (family "games").

:class:`MarkovPseudoGame` is the tabular linear-quadratic form: players with continuous
actions, finitely many states, at each state player i's reward

    r_i(s, a) = c_i(s) . a + 1/2 a' Q_i(s) a          (concave in player i's own action),

feasible actions coupled through shared linear constraints A(s) a <= b(s) within a box,
transitions affine in the actions p(s' | s, a) = P0(s, s') + P1(s, s', :) . a, a discount and an
initial distribution. Policies are tables: one joint action per state. Rewards concave in the
own action and transitions affine in it make every best response a concave program per state,
solved exactly (see :mod:`solvopt.games.markov`).

:class:`MarkovExchangeEconomy`: consumers with homogeneous utilities (linear, Cobb-Douglas,
Leontief, CES) over goods, endowments that depend on an exogenous world state (a Markov chain),
assets paying returns in the next world state, borrowing and holding limits, and an auctioneer who
sets prices. Its recursive Radner equilibria are the generalized Markov perfect equilibria of that
Markov pseudo-game (:mod:`solvopt.games.economy`).

The consumer's problem, precisely (what a certificate must bound; W world states, chain T, initial
mu, discount gamma). The Markov state is s = (v, w), v the previous world state (none at a start
state, drawn from mu), w the current one. Consumer i at s, facing goods prices p(s) (>= 0, summing
to price_sum) and asset prices q(s) (in [0, asset_price_max]), holding y_i(v) bought at v:

- goods it owns: g_i(s) = e_i(w) + sum_k y_ik(v) b_k(w) for assets paying bundles b_k(w) (goods,
  ``asset_returns`` of shape (W, K, M)), clipped to [endowment_floor, endowment_cap] goodwise when
  those are given; g_i(s) = e_i(w) at a start state (nothing carried, nothing clipped);
- wealth: W_i(s) = p(s) . g_i(s) + sum_k R_k(w) y_ik(v) - q(s) . y_i(s) for money returns R
  (``asset_returns`` of shape (W, K); bundle assets: that term is 0, their payout is in g_i);
- choice: a bundle x_i(s) >= 0 with p(s) . x_i(s) <= W_i(s), holdings -borrowing_limit <= y_i(s)
  <= holding_limit, and W_i(s) >= 0 (no default);
- reward: u_i(x_i(s))^degree (u_i the degree-1 form; with degree 1 the best bundle is worth
  beta_i(p) W, so the value is linear in wealth; with degree h < 1 it is (beta_i(p) W)^h, concave);
- objective: E sum_{t < horizon} gamma^t reward_t from mu (horizon None: infinite);
- goods supply at s: sum_i g_i(s) (bundle payouts are delivered goods); asset supply 0.

With ``endowment_shocks`` the world state is the pair (base world state, shock), expanded into
the chain itself (see the class), so everything above holds with that chain. The equilibrium
methods take degree 1, no floors or caps and an infinite horizon (:meth:`method_support`).

:class:`LinearQuadraticMarkovGame` adds a continuous state component z in R^c to the finite state
s: linear dynamics z' = A(s) z + B(s) a + b(s) + w (w Gaussian, covariance W(s), or none), rewards
linear-quadratic in (z, a), action boxes. Its policies are parametric (affine in [1, z] per finite
state, clipped to the box); see :mod:`solvopt.games.parametric`.

This module imports only NumPy and solvopt.core / the DSL core.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray, real_array
from .family import FamilyModel

if TYPE_CHECKING:
    from .utilities import UtilityForm

STOCHASTIC_TOL = 1e-9     # rows of a transition matrix must sum to 1 within this
CONCAVITY_TOL = 1e-10     # largest eigenvalue allowed in a player's own quadratic block


def _array(value: Any, name: str, shape: tuple[int | None, ...] | None = None) -> FloatArray:
    """A float64 array of the given shape (None entries of ``shape`` are free), without NaN (inf allowed)."""
    return real_array(value, name, shape, allow_inf=True)


def _finite(arr: FloatArray, name: str) -> FloatArray:
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{name} must be finite")
    return arr


def _discount(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < 1:
        raise ModelError(f"discount must be a number in [0, 1), got {value!r}")
    return float(value)


def _stochastic(P: FloatArray, name: str) -> FloatArray:
    if np.any(P < 0) or np.any(np.abs(P.sum(axis=-1) - 1) > STOCHASTIC_TOL):
        raise ModelError(f"{name} must have rows of non-negative probabilities summing to 1")
    return P


def _initial(mu: Any, n: int) -> FloatArray:
    if mu is None:
        return np.full(n, 1.0 / n)
    dist = _finite(_array(mu, "initial distribution", (n,)), "initial distribution")
    if np.any(dist < 0) or abs(dist.sum() - 1) > STOCHASTIC_TOL:
        raise ModelError("the initial distribution must be non-negative and sum to 1")
    return dist


def _square_stochastic(transitions: Any) -> FloatArray:
    """An (S, S) row-stochastic matrix, checked."""
    P = _stochastic(_finite(_array(transitions, "transitions", (None, None)), "transitions"), "transitions")
    if P.shape[0] != P.shape[1]:
        raise ModelError(f"transitions must be square (S, S), got {P.shape}")
    return P


def _action_bounds(lower: Any, upper: Any, shape: tuple[int, ...]) -> tuple[FloatArray, FloatArray]:
    """(S, D) lower and upper action bounds (upper None: +inf), checked."""
    lo = np.broadcast_to(_array(lower, "lower"), shape).copy()
    hi = np.broadcast_to(_array(np.inf if upper is None else upper, "upper"), shape).copy()
    if np.any(lo == np.inf) or np.any(hi == -np.inf) or np.any(lo > hi):
        raise ModelError("action bounds must satisfy lower <= upper (lower < inf, upper > -inf)")
    return lo, hi


def _action_slices(action_sizes: Any) -> tuple[list[int], list[slice]]:
    """The players' action sizes and their slices of the joint action vector."""
    sizes = list(action_sizes) if not isinstance(action_sizes, (str, bytes)) else None
    if not sizes or any(isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 for k in sizes):
        raise ModelError("action_sizes must be a non-empty list of positive integers")
    sizes = [int(k) for k in sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return sizes, [slice(int(offsets[i]), int(offsets[i + 1])) for i in range(len(sizes))]


def _concave_quadratic(quadratic: Any, shape: tuple[int, ...], slices: Sequence[slice],
                       strict: Sequence[npt.NDArray[np.bool_]] | None = None) -> FloatArray:
    """The (N, S, D, D) reward matrices Q_i(s) (0 if None): symmetric, each player's own block
    negative semidefinite (negative definite on the coordinates flagged in ``strict``, (N, S, d_i)
    masks, where an unbounded action needs a unique maximiser)."""
    Q = np.zeros(shape) if quadratic is None else _finite(_array(quadratic, "quadratic", shape), "quadratic")
    if not _symmetric(Q):
        raise ModelError("each quadratic reward matrix Q_i(s) must be symmetric")
    for i, sl in enumerate(slices):
        top = np.linalg.eigvalsh(Q[i][:, sl, sl]).max()
        unit = float(np.max(np.abs(Q[i]), initial=0.0)) or 1.0     # tolerances relative: rewards in any units
        if top > CONCAVITY_TOL * unit:
            raise ModelError(f"player {i}'s reward is not concave in its own action (its quadratic block has "
                             f"eigenvalue {top:.3g} > 0): best responses would not be convex programs")
        if strict is not None:
            for s in range(shape[1]):
                free = strict[i][s]
                if free.any() and np.linalg.eigvalsh(Q[i, s][sl, sl][np.ix_(free, free)]).max() > -CONCAVITY_TOL * unit:
                    raise ModelError(f"player {i}'s reward at state {s} is not strictly concave in its unbounded "
                                     "actions: its best response would be unbounded or not unique")
    return Q


def _symmetric(M: FloatArray) -> bool:
    """True when every matrix of the stack M (..., n, n) is symmetric (to 1e-12 of its largest entry)."""
    unit = float(np.max(np.abs(M), initial=0.0)) or 1.0
    return bool(np.allclose(M, np.swapaxes(M, -1, -2), rtol=0, atol=1e-12 * unit))


def _symmetric_psd(M: FloatArray, message: str) -> FloatArray:
    """M, each matrix of the stack checked symmetric positive semidefinite (ModelError ``message``)."""
    if not _symmetric(M) or np.linalg.eigvalsh(M).min() < -1e-12:
        raise ModelError(message)
    return M


def _player_names(players: Any, n: int) -> list[Any]:
    """The players' names (default player0, player1, ...), one per player."""
    names = list(players) if players is not None else [f"player{i}" for i in range(n)]
    if len(names) != n:
        raise ModelError(f"players names {len(names)} != {n} players")
    return names


DEGREE_TOL = 1e-6    # Cobb-Douglas rows whose sums agree to this (relative) are one degree of homogeneity


def _cobb_douglas_rows(weights: Any) -> Any:
    """Cobb-Douglas exponent rows that all sum to 1 within DEGREE_TOL (float32 data), scaled to sum to
    1 exactly; other rows unchanged (their common sum, if any, is the degree: :func:`_degree_one`)."""
    a = np.asarray(weights, dtype=float)
    if a.ndim == 2 and a.size and np.all(np.isfinite(a)):
        total = a.sum(axis=-1)
        if np.all(total > 0) and np.all(np.abs(total - 1.0) <= DEGREE_TOL):
            return a / total[:, None]
    return weights


def _degree_one(utility: UtilityForm, degree: Any) -> tuple[UtilityForm, float]:
    """(the degree-1 form, its degree h): u_i = base_i^h. Cobb-Douglas exponents whose rows share a
    sum t (to DEGREE_TOL, e.g. float32 data summing to 1 - 1e-9) are normalised to sum to 1, with
    h = t (prod x^a = (prod x^(a/t))^t exactly); ``degree`` (in (0, 1]) scales any degree-1 form."""
    from .utilities import CobbDouglas
    h = None
    if isinstance(utility, CobbDouglas) and not utility.homogeneous:
        total = utility.weights.sum(axis=-1)
        t = float(total.mean())
        if np.any(np.abs(total - t) > DEGREE_TOL * t):
            raise ModelError("Cobb-Douglas exponents must sum to the same total for every consumer (the "
                             f"utilities' degree of homogeneity); row sums range over [{total.min():.6g}, "
                             f"{total.max():.6g}]")
        h = 1.0 if abs(t - 1.0) <= DEGREE_TOL else t
        if h != 1.0 and degree is None:
            raise ModelError(f"Cobb-Douglas exponents summing to {t:.6g} make a utility homogeneous of degree "
                             f"{t:.6g}, not 1: give degree={t:.6g} to state it (or scale them to sum to 1)")
        utility = CobbDouglas(utility.weights / total[..., None])
    if not getattr(utility, "homogeneous", False):
        raise ModelError(f"{type(utility).__name__} utility is not homogeneous (the economy's exact best "
                         "responses rely on it)")
    if degree is not None:
        if isinstance(degree, bool) or not isinstance(degree, numbers.Real) or not 0 < float(degree) <= 1:
            raise ModelError(f"degree must be a number in (0, 1], got {degree!r}")
        if h is not None and h != 1.0 and abs(h - float(degree)) > DEGREE_TOL * h:
            raise ModelError(f"degree {degree} disagrees with the Cobb-Douglas exponents, which sum to {h:.6g}")
        h = float(degree)
    return utility, (1.0 if h is None else h)


class MarkovPseudoGame(FamilyModel):
    """A tabular linear-quadratic Markov pseudo-game (see the module docstring).

    Parameters (S states, N players, D = sum of the action sizes):

    - ``action_sizes``: list of N positive ints, player i owns the slice ``game.slices[i]`` of a;
    - ``linear``: (N, S, D) reward coefficients c_i(s); ``quadratic``: (N, S, D, D) symmetric Q_i(s),
      optional (0); each player's own block must be negative semidefinite (concave reward);
    - ``lower``, ``upper``: (S, D) or (D,) action bounds (default 0 and +inf);
    - ``shared_matrix`` (S, m, D) and ``shared_rhs`` (S, m): shared constraints A(s) a <= b(s);
    - ``transitions``: (S, S) P0; ``transition_slopes``: (S, S, D) P1 (optional, each (s, :, d)
      summing to 0, and P0 + P1 . a >= 0 over the action box);
    - ``discount`` in [0, 1); ``initial``: (S,) distribution mu (default uniform).
    """

    family = "games"
    default_method = "gda"          # what the family's "auto" runs (generalized Markov perfect equilibria)

    def __init__(self, action_sizes: Any, linear: Any, transitions: Any, discount: Any, *, quadratic: Any = None,
                 lower: Any = None, upper: Any = None, shared_matrix: Any = None, shared_rhs: Any = None,
                 transition_slopes: Any = None, initial: Any = None, players: Any = None):
        self.action_sizes, self.slices = _action_slices(action_sizes)
        N, D = len(self.action_sizes), int(sum(self.action_sizes))
        self.transitions = _square_stochastic(transitions)
        S = self.transitions.shape[0]
        self.n_players, self.n_states, self.n_actions = N, S, D
        self.linear = _finite(_array(linear, "linear", (N, S, D)), "linear")
        self.quadratic = _concave_quadratic(quadratic, (N, S, D, D), self.slices)
        self.lower, self.upper = _action_bounds(0.0 if lower is None else lower, upper, (S, D))
        if (shared_matrix is None) != (shared_rhs is None):
            raise ModelError("shared_matrix and shared_rhs go together")
        if shared_matrix is None:
            self.shared_matrix, self.shared_rhs = np.zeros((S, 0, D)), np.zeros((S, 0))
        else:
            self.shared_matrix = _finite(_array(shared_matrix, "shared_matrix", (S, None, D)), "shared_matrix")
            m = self.shared_matrix.shape[1]
            self.shared_rhs = _finite(_array(shared_rhs, "shared_rhs", (S, m)), "shared_rhs")
        if transition_slopes is None:
            self.transition_slopes = np.zeros((S, S, D))
        else:
            P1 = _finite(_array(transition_slopes, "transition_slopes", (S, S, D)), "transition_slopes")
            if np.any(np.abs(P1.sum(axis=1)) > STOCHASTIC_TOL):
                raise ModelError("transition_slopes must sum to 0 over next states (probabilities keep summing to 1)")
            used = P1 != 0
            if np.any(~np.isfinite(np.where(used, self.lower[:, None, :], 0.0))) or \
                    np.any(~np.isfinite(np.where(used, self.upper[:, None, :], 0.0))):
                raise ModelError("actions that move transition probabilities need finite bounds")
            low = self.transitions + np.sum(np.minimum(np.where(used, P1 * self.lower[:, None, :], 0.0),
                                                       np.where(used, P1 * self.upper[:, None, :], 0.0)), axis=-1)
            if np.any(low < -STOCHASTIC_TOL):
                raise ModelError("transition probabilities P0 + P1 . a go negative somewhere in the action box")
            self.transition_slopes = P1
        self.discount = _discount(discount)
        self.initial = _initial(initial, S)
        self.players = _player_names(players, N)

    @property
    def action_independent(self) -> bool:
        """True when no action moves the transition probabilities."""
        return not np.any(self.transition_slopes)


def _endowment_bounds(floor: Any, cap: Any, M: int, bundles: bool) -> tuple[FloatArray | None, FloatArray | None]:
    """(M,) floor and cap of the endowments after payouts (None: none), checked."""
    if floor is None and cap is None:
        return None, None
    if not bundles:
        raise ModelError("endowment_floor / endowment_cap clip the goods endowment after the payouts of assets "
                         "paying bundles of goods: give asset_returns as (world states, assets, goods)")
    lo = np.zeros(M) if floor is None else np.broadcast_to(_finite(_array(floor, "endowment_floor"),
                                                                   "endowment_floor"), (M,)).copy()
    hi = np.full(M, np.inf) if cap is None else np.broadcast_to(_array(cap, "endowment_cap"), (M,)).copy()
    if np.any(lo < 0) or np.any(lo > hi):
        raise ModelError("endowment bounds must satisfy 0 <= endowment_floor <= endowment_cap")
    return lo, hi


def _horizon(horizon: Any) -> int | None:
    if horizon is None:
        return None
    if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1:
        raise ModelError(f"horizon must be None (infinite) or a positive number of periods, got {horizon!r}")
    return int(horizon)


# the economy's arrays indexed by world state first
WORLD_ARRAYS = ("endowments", "_asset_returns", "asset_bundles", "base_world", "shock")


class MarkovExchangeEconomy(FamilyModel):
    """An exchange economy over an exogenous Markov chain of world states (module docstring).

    Parameters (W world states, N consumers, M goods, K assets):

    - ``utility``: a degree-1 homogeneous :class:`solvopt.dsl.utilities.UtilityForm` with weights
      of shape (N, M) (one row per consumer), or ``(kind, weights)`` with kind linear /
      cobb_douglas / leontief (Cobb-Douglas rows summing to 1 within 1e-6 are normalised);
    - ``degree`` h in (0, 1] (default 1): consumer i's utility is u_i(x)^h, u_i the degree-1 form
      (Cobb-Douglas exponent rows that all sum to h < 1 state the same thing and need ``degree=h``);
    - ``endowments``: (W, N, M) goods each consumer receives in each world state (>= 0, every good
      present in every state);
    - ``transitions``: (W, W) the world-state chain; ``initial``: (W,) (default uniform);
    - ``discount`` in [0, 1); ``horizon``: None (infinite) or the number of periods T >= 1;
    - ``asset_returns``: (W, K) the money one unit of asset k pays in world state w, or (W, K, M)
      the bundle of goods it pays there (delivered to the holder and valued at that state's goods
      prices); paid in the world state after the purchase; ``borrowing_limit`` b >= 0 (holdings
      >= -b), ``holding_limit`` (holdings <= it), ``asset_price_max`` (asset prices in [0, it]);
    - ``endowment_floor``, ``endowment_cap``: a number or (M,) per good: after the payouts of
      bundle assets each consumer's goods endowment is clipped to [floor, cap] (every state but
      the start states, where nothing is paid out yet);
    - ``endowment_shocks``: (Z, N, M) additive endowment draws, one drawn every period
      independently of everything else with ``shock_probabilities`` (Z,) (default uniform). The
      economy is built on the product chain: world state w * Z + z is (w, shock z), endowment
      e(w) + shock(z) (>= 0), transitions T(w, w') P(z'), initial mu(w) P(z), the returns of w;
      ``base_world`` and ``shock`` give each world state's two parts;
    - ``price_sum``: goods prices lie on the simplex scaled to it (prices are relative).
    """

    family = "games"

    @property
    def default_method(self) -> str:
        """markov-horizon for an economy with a finite horizon (it refuses what it cannot take, in one
        line); otherwise markov-newton (the one that converges at the paper's large size), but
        markov-tatonnement for linear utilities, where it reaches 1e-4 in seconds at 10 x 10 and
        Newton's smoothing is slow (use markov-newton for large linear economies; docs/markov_games.md)."""
        if self.horizon is not None:
            return "markov-horizon"
        return "markov-tatonnement" if self.utility.kind == "linear" else "markov-newton"

    def __init__(self, utility: Any, endowments: Any, transitions: Any, discount: Any = 0.9, *, initial: Any = None,
                 asset_returns: Any = None, borrowing_limit: Any = 1.0, holding_limit: Any = 1.0,
                 asset_price_max: Any = 10.0, price_sum: Any = 10.0, degree: Any = None, endowment_floor: Any = None,
                 endowment_cap: Any = None, endowment_shocks: Any = None, shock_probabilities: Any = None,
                 horizon: Any = None):
        from .utilities import UtilityForm, utility_from_params
        if isinstance(utility, tuple) and len(utility) == 2:
            kind, weights = utility
            key = {"linear": "values", "cobb_douglas": "exponents", "leontief": "requirements"}.get(kind, "weights")
            if kind == "cobb_douglas":
                weights = _cobb_douglas_rows(weights)
            utility = utility_from_params(kind, {key: weights})
        if not isinstance(utility, UtilityForm):
            raise ModelError("utility must be a UtilityForm or a (kind, weights) pair")
        utility, self.degree = _degree_one(utility, degree)
        endowments = _finite(_array(endowments, "endowments", (None, None, None)), "endowments")
        W, N, M = endowments.shape
        if utility.shape != (N, M):
            raise ModelError(f"utility weights must have shape (consumers, goods) = ({N}, {M}), got {utility.shape}")
        self.utility = utility
        transitions = _stochastic(_finite(_array(transitions, "transitions", (W, W)), "transitions"), "transitions")
        self.discount = _discount(discount)
        initial = _initial(initial, W)
        self.asset_bundles: FloatArray | None = None
        R: FloatArray | None
        if asset_returns is None:
            R = np.zeros((W, 0))
        else:
            R = _finite(_array(asset_returns, "asset_returns"), "asset_returns")
            if R.ndim == 3 and R.shape[0] == W and R.shape[2] == M:
                if np.any(R < 0):
                    raise ModelError("asset_returns given as bundles of goods must be >= 0")
                self.asset_bundles, R = R, None
            elif R.ndim != 2 or R.shape[0] != W:
                raise ModelError(f"asset_returns must have shape (world states, assets) = ({W}, K) (money) or "
                                 f"({W}, K, {M}) (bundles of goods), got {R.shape}")
        self._asset_returns = R
        K = (R if R is not None else np.asarray(self.asset_bundles)).shape[1]
        self.borrowing_limit = np.broadcast_to(_finite(_array(borrowing_limit, "borrowing_limit"), "borrowing_limit"),
                                               (K,)).copy()
        self.holding_limit = np.broadcast_to(_finite(_array(holding_limit, "holding_limit"), "holding_limit"),
                                             (K,)).copy()
        if np.any(self.borrowing_limit < 0) or np.any(self.holding_limit < 0):
            raise ModelError("borrowing_limit and holding_limit must be >= 0")
        for name in ("asset_price_max", "price_sum"):
            v = _finite(_array(locals()[name], name, ()), name)
            if v <= 0:
                raise ModelError(f"{name} must be > 0")
            setattr(self, name, float(v))
        self.endowment_floor, self.endowment_cap = _endowment_bounds(endowment_floor, endowment_cap, M,
                                                                     self.asset_bundles is not None)
        self.horizon = _horizon(horizon)
        # endowment shocks: the product chain (world state, shock)
        Z, P = 1, np.ones(1)
        if endowment_shocks is not None:
            shocks = _finite(_array(endowment_shocks, "endowment_shocks", (None, N, M)), "endowment_shocks")
            Z = shocks.shape[0]
            if Z < 1:
                raise ModelError("endowment_shocks needs at least one draw")
            P = _initial(shock_probabilities, Z) if shock_probabilities is not None else np.full(Z, 1.0 / Z)
            endowments = (endowments[:, None] + shocks[None]).reshape(W * Z, N, M)
            transitions = np.kron(transitions, np.tile(P, (Z, 1)))
            initial = np.kron(initial, P)
            if R is not None:
                self._asset_returns = np.repeat(R, Z, axis=0)
            if self.asset_bundles is not None:
                self.asset_bundles = np.repeat(self.asset_bundles, Z, axis=0)
        elif shock_probabilities is not None:
            raise ModelError("shock_probabilities goes with endowment_shocks")
        self.n_shocks, self.shock_probabilities = Z, P
        self.base_world, self.shock = np.repeat(np.arange(W), Z), np.tile(np.arange(Z), W)
        if np.any(endowments < 0) or np.any(endowments.sum(axis=1) <= 0):
            raise ModelError("endowments (plus any endowment shock) must be >= 0 with every good present in every "
                             "world state")
        self.endowments, self.transitions, self.initial = endowments, transitions, initial
        self.n_world, self.n_consumers, self.n_goods, self.n_assets = W * Z, N, M, K

    @property
    def asset_returns(self) -> FloatArray:
        """(W, K) the money each asset pays in each world state; a ModelError for assets that pay
        bundles of goods, whose money return depends on the prices (:meth:`returns_at`)."""
        if self._asset_returns is None:
            raise ModelError("this economy's assets pay bundles of goods: their money return depends on the goods "
                             "prices (MarkovExchangeEconomy.returns_at)")
        return self._asset_returns

    def returns_at(self, world: npt.ArrayLike, prices: npt.ArrayLike) -> FloatArray:
        """(S, K) the money one unit of each asset pays at S states with world states ``world`` (S,)
        and goods prices ``prices`` (S, M): the money returns, or the bundles valued at the prices."""
        at = np.asarray(world, dtype=int)
        if self.asset_bundles is None:
            money: FloatArray = self.asset_returns[at]
            return money
        valued: FloatArray = np.einsum("skm,sm->sk", self.asset_bundles[at], np.asarray(prices, dtype=float))
        return valued

    def payouts_at(self, world: npt.ArrayLike) -> FloatArray:
        """(S, K, M) the goods one unit of each asset delivers at world states ``world`` (zero for
        money assets, whose payouts are not goods)."""
        at = np.asarray(world, dtype=int)
        if self.asset_bundles is None:
            return np.zeros((len(at), self.n_assets, self.n_goods))
        goods: FloatArray = self.asset_bundles[at]
        return goods

    OPTION_KEYS = ("initial", "asset_returns", "borrowing_limit", "holding_limit", "asset_price_max", "price_sum",
                   "degree", "endowment_floor", "endowment_cap", "endowment_shocks", "shock_probabilities", "horizon")

    @classmethod
    def from_dict(cls, data: dict[str, Any], drop: Sequence[str] = ()) -> MarkovExchangeEconomy:
        """The economy of a ``markov_exchange_economy`` instance (parsed JSON): ``utility`` ({"kind":
        ..., its parameter rows}), ``endowments``, ``transitions``, ``discount`` and the options of
        OPTION_KEYS (null or absent: default); other fields (name, description, source) are
        ignored. ``drop``: options to leave out (e.g. the ones a method does not take)."""
        from .utilities import utility_from_params
        spec = dict(data["utility"])
        kind = spec.pop("kind")
        if kind == "cobb_douglas" and "exponents" in spec:
            spec["exponents"] = _cobb_douglas_rows(spec["exponents"])
        options = {key: data[key] for key in cls.OPTION_KEYS if data.get(key) is not None and key not in drop}
        return cls(utility_from_params(kind, spec), data["endowments"], data["transitions"], data.get("discount", 0.9),
                   **options)

    def method_support(self) -> list[tuple[str, bool]]:
        """(option, supported by the economy methods) for each model option this economy uses beyond
        the base model; a method refuses the economy (one-line ModelError) on an unsupported one."""
        out: list[tuple[str, bool]] = []
        if self.degree != 1.0:
            out.append((f"utilities homogeneous of degree {self.degree:.6g} (only degree 1: consumers "
                        "risk-neutral in wealth, portfolio best responses LPs; markov-horizon takes it with a "
                        "horizon)", False))
        if self.endowment_floor is not None:
            out.append(("endowment floors / caps after payouts (the consumer's problem is then not convex; "
                        "markov-horizon takes them with a horizon)", False))
        if self.horizon is not None:
            out.append((f"a finite horizon ({self.horizon} periods; stationary policies only: markov-horizon "
                        "solves it, on a deterministic or stochastic chain)", False))
        if self.asset_bundles is not None:
            out.append(("assets paying bundles of goods", True))
        if self.n_shocks > 1:
            out.append(("endowment shocks (product chain)", True))
        return out

    def restricted(self, worlds: npt.ArrayLike) -> MarkovExchangeEconomy:
        """The same economy on the world states ``worlds`` only (indices; the chain must not leave
        them: the world states it can reach from the initial distribution, for instance)."""
        import copy
        kept = np.asarray(worlds, dtype=int)
        T = self.transitions[np.ix_(kept, kept)]
        if np.any(np.abs(T.sum(axis=1) - 1) > STOCHASTIC_TOL) or abs(self.initial[kept].sum() - 1) > STOCHASTIC_TOL:
            raise ModelError("restricted(): the chain leaves the given world states")
        out = copy.copy(self)
        out.transitions, out.initial = T, self.initial[kept]
        for name in WORLD_ARRAYS:
            value = getattr(self, name, None)
            if value is not None:
                setattr(out, name, value[kept])
        out.n_world = len(kept)
        return out


class LinearQuadraticMarkovGame(FamilyModel):
    """A Markov game whose state has a finite part s and a continuous part z in R^c (module docstring).

    Parameters (S finite states, N players, D = sum of the action sizes, c continuous components):

    - ``action_sizes``: list of N positive ints (player i owns ``game.slices[i]`` of a);
    - ``linear`` (N, S, D) c_i(s), ``quadratic`` (N, S, D, D) Q_i(s) (optional, own blocks negative
      semidefinite, definite where the action is unbounded), ``state_linear`` (N, S, c) e_i(s),
      ``state_quadratic`` (N, S, c, c) Z_i(s), ``cross`` (N, S, D, c) C_i(s), all optional: player
      i's reward is  r_i(s, z, a) = c_i(s).a + 1/2 a'Q_i(s)a + e_i(s).z + 1/2 z'Z_i(s)z + a'C_i(s)z;
    - ``transitions`` (S, S) for s (the finite chain does not depend on the actions), ``discount``
      in [0, 1), ``initial`` (S,) (default uniform);
    - ``state_matrix`` (S, c, c) A(s), ``input_matrix`` (S, c, D) B(s), ``state_offset`` (S, c) b(s)
      (default 0), ``noise_cov`` (S, c, c) W(s) positive semidefinite (default 0: deterministic):
      z' = A(s) z + B(s) a + b(s) + w, w ~ N(0, W(s)), and s' ~ transitions[s];
    - ``initial_state`` (c,) mean and ``initial_cov`` (c, c) covariance of z_0 (default 0, 0);
    - ``lower``, ``upper``: (S, D) or (D,) action bounds (default unbounded: -inf, +inf);
      ``lower_slope``, ``upper_slope``: (S, D, c) optional, making a finite bound depend on the state:
      lower(s) + lower_slope(s) z <= a <= upper(s) + upper_slope(s) z (e.g. a harvest at most the
      stock); the bounds must not cross where the game goes (checked in the rollouts).

    Shared constraints coupling the players are not part of this class (see docs/markov_parametric.md).
    """

    family = "games"
    default_method = "affine-gda"

    def __init__(self, action_sizes: Any, linear: Any, transitions: Any, discount: Any, state_matrix: Any,
                 input_matrix: Any, *, quadratic: Any = None, state_linear: Any = None, state_quadratic: Any = None,
                 cross: Any = None, state_offset: Any = None, noise_cov: Any = None, lower: Any = None,
                 upper: Any = None, lower_slope: Any = None, upper_slope: Any = None, initial: Any = None,
                 initial_state: Any = None, initial_cov: Any = None, players: Any = None):
        self.action_sizes, self.slices = _action_slices(action_sizes)
        N, D = len(self.action_sizes), int(sum(self.action_sizes))
        self.transitions = _square_stochastic(transitions)
        S = self.transitions.shape[0]
        self.state_matrix = _finite(_array(state_matrix, "state_matrix", (S, None, None)), "state_matrix")
        c = self.state_matrix.shape[1]
        if self.state_matrix.shape != (S, c, c) or c < 1:
            raise ModelError(f"state_matrix must have shape (states, c, c) with c >= 1, got {self.state_matrix.shape}")
        self.n_players, self.n_states, self.n_actions, self.n_continuous = N, S, D, c

        def part(value: Any, name: str, shape: tuple[int, ...]) -> FloatArray:
            return np.zeros(shape) if value is None else _finite(_array(value, name, shape), name)

        self.input_matrix = part(input_matrix, "input_matrix", (S, c, D))
        self.state_offset = part(state_offset, "state_offset", (S, c))
        self.noise_cov = _symmetric_psd(part(noise_cov, "noise_cov", (S, c, c)),
                                        "noise_cov must hold symmetric positive semidefinite matrices")
        self.lower, self.upper = _action_bounds(-np.inf if lower is None else lower, upper, (S, D))
        unbounded = ~(np.isfinite(self.lower) & np.isfinite(self.upper))
        self.lower_slope = part(lower_slope, "lower_slope", (S, D, c))
        self.upper_slope = part(upper_slope, "upper_slope", (S, D, c))
        for name, slope, bound in (("lower", self.lower_slope, self.lower), ("upper", self.upper_slope, self.upper)):
            if np.any(np.any(slope != 0, axis=-1) & ~np.isfinite(bound)):
                raise ModelError(f"{name}_slope moves a {name} bound that is infinite: give the bound a finite value")
        self.linear = part(linear, "linear", (N, S, D))
        self.quadratic = _concave_quadratic(quadratic, (N, S, D, D), self.slices,
                                            strict=[unbounded[:, sl] for sl in self.slices])
        self.state_linear = part(state_linear, "state_linear", (N, S, c))
        self.state_quadratic = part(state_quadratic, "state_quadratic", (N, S, c, c))
        if not _symmetric(self.state_quadratic):
            raise ModelError("each state_quadratic matrix Z_i(s) must be symmetric")
        self.cross = part(cross, "cross", (N, S, D, c))
        self.discount = _discount(discount)
        self.initial = _initial(initial, S)
        self.initial_state = part(initial_state, "initial_state", (c,))
        self.initial_cov = _symmetric_psd(part(initial_cov, "initial_cov", (c, c)),
                                          "initial_cov must be symmetric positive semidefinite")
        self.players = _player_names(players, N)

    @property
    def constrained(self) -> bool:
        """True when some action has a finite bound (values are then estimated by rollouts)."""
        return bool(np.any(np.isfinite(self.lower)) or np.any(np.isfinite(self.upper)))
