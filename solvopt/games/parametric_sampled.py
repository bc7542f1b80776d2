"""Clipped affine policies in a :class:`~solvopt.dsl.markov_games.LinearQuadraticMarkovGame` with
action bounds: values over a fixed batch of rollouts, exact pathwise gradients, and an
exploitability ESTIMATE.

With bounds the policy a = clip(k(s) + K(s) z, lower(s), upper(s)) keeps every action feasible by
construction, but its value is no longer quadratic in z, so it is estimated:

- a :class:`Batch` fixes the common random numbers: the finite-state paths (the chain ignores the
  actions), z_0 and the noise, over ``horizon`` steps (gamma^horizon < 1e-8 by default);
- :meth:`SampledEngine.evaluate` rolls every path forward; the objective sum_i w_i J_i (the batch
  mean of the discounted sums) is a deterministic function of the gains, and
  :meth:`SampledEngine.gradient` is its EXACT gradient by reverse accumulation (the adjoint of the
  linear dynamics through the clip, whose derivative is 1 inside the box (bounds included: the
  derivative from inside), 0 outside — where a bound depends on z the clipped action follows it),
  then
  divided by the sample occupancy moments Y(s) as in the exact engine;
- :func:`estimate`: on a batch INDEPENDENT of the one GDA trains on, each player's best response
  within the clipped affine class by L-BFGS-B (the gradient above) and its gain on that batch
  (common random numbers across policies): the exploitability of the policy in that sampled game,
  with the standard error of the mean gain. It is relative to the policy class; fitting the
  deviation to the batch makes it err high, while the responses being local optima of L-BFGS-B
  makes it err low; no bound is claimed.

The method that drives GDA over three such batches and builds the Result is
:func:`solvopt.games.parametric_solvers.solve_sampled`; this module knows nothing of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvopt.core.backend import select_kernels
from solvopt.core.errors import ModelError

from .parametric import best_response, evaluate, lq_data, own_curvature

TAIL = 1e-8                 # default horizon: gamma^horizon below this
MAX_HORIZON = 5000
ENGINE_KERNELS = ("numpy", "numba")   # the engine's own methods (reference), solvopt.games.parametric_kernels
BR_ITERATIONS = 60          # L-BFGS-B iterations per best response of the estimate


@dataclass
class Batch:
    """Common random numbers: states (T + 1, B), z_0 (B, c), noise (T, B, c) already scaled by W(s_t)^(1/2)."""

    states: np.ndarray
    z0: np.ndarray
    noise: np.ndarray

    @property
    def size(self) -> int:
        return self.z0.shape[0]


def default_horizon(game) -> int:
    if game.discount == 0:
        return 1
    return int(min(MAX_HORIZON, max(1, math.ceil(math.log(TAIL) / math.log(game.discount)))))


def _psd_root(M) -> np.ndarray:
    w, V = np.linalg.eigh(M)
    return V * np.sqrt(np.clip(w, 0.0, None))[..., None, :]


def draw_batch(game, size: int, horizon: int, seed: int) -> Batch:
    """``size`` rollouts of length ``horizon`` from the generator seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    S, c = game.n_states, game.n_continuous
    states = np.empty((horizon + 1, size), dtype=np.int64)
    states[0] = rng.choice(S, size=size, p=game.initial)
    cdf = np.cumsum(game.transitions, axis=1)
    for t in range(horizon):
        u = rng.random(size)
        states[t + 1] = np.minimum((u[:, None] > cdf[states[t]]).sum(axis=1), S - 1)
    z0 = game.initial_state + rng.standard_normal((size, c)) @ _psd_root(game.initial_cov).T
    root = _psd_root(game.noise_cov)                                 # (S, c, c)
    noise = np.einsum("tbcd,tbd->tbc", root[states[:-1]], rng.standard_normal((horizon, size, c)))
    return Batch(states, z0, noise)


@dataclass
class Rollout:
    """One joint policy on one batch: states x_t, pre-clip actions, clip masks, returns (B, N), moments Y."""

    G: np.ndarray
    z: np.ndarray          # (T + 1, B, c)
    actions: np.ndarray    # (T, B, D) clipped
    inside: np.ndarray     # (T, B, D) 1 where the clip is inactive
    above: np.ndarray      # (T, B, D) 1 where the action sits on its upper bound (1 - inside - above: lower)
    returns: np.ndarray    # (B, N) discounted sums per rollout
    Y: np.ndarray          # (S, n, n) sample occupancy moments

    @property
    def J(self) -> np.ndarray:
        return self.returns.mean(axis=0)


class SampledEngine:
    """What :func:`solvopt.games.parametric.gda` needs, from rollouts on one fixed batch."""

    def __init__(self, game, batch: Batch, kernel: str = "auto"):
        self.game, self.batch = game, batch
        self.kernel = select_kernels(kernel, ENGINE_KERNELS)     # auto: numba when installed
        self.numba = None
        if self.kernel == "numba":
            from . import parametric_kernels
            self.numba = parametric_kernels
        self.slices = list(game.slices)
        self.disc = game.discount ** np.arange(batch.noise.shape[0])
        self.onehot = np.eye(game.n_states)[batch.states[:-1]]         # (T, B, S)
        self.lq = lq_data(game)
        self.curvature = [self._reward_curvature(i) for i in range(game.n_players)]
        # the range k(s) is kept in: the constant bounds, open where a bound moves with z
        self.fixed_bounds = (np.where(np.any(game.lower_slope, axis=-1), -np.inf, game.lower),
                             np.where(np.any(game.upper_slope, axis=-1), np.inf, game.upper))

    def _reward_curvature(self, i) -> np.ndarray:
        """Q_ii(s), made negative definite where it is only semidefinite (bounded actions)."""
        sl = self.slices[i]
        Q = self.game.quadratic[i][:, sl, sl]
        scale = max(float(np.max(np.abs(Q), initial=0.0)), 1.0)
        return Q - 1e-6 * scale * np.eye(Q.shape[-1])

    def evaluate(self, G, what="policy") -> Rollout:
        G = np.ascontiguousarray(G, dtype=float)
        if self.numba is not None:
            g, b = self.game, self.batch
            with np.errstate(over="ignore", invalid="ignore"):
                z, acts, inside, above, returns, Y, crossed = self.numba.rollout(
                    G, b.states, b.z0, b.noise, g.lower, g.upper, g.lower_slope, g.upper_slope, g.state_matrix,
                    g.input_matrix, g.state_offset, g.linear, g.quadratic, g.state_linear, g.state_quadratic, g.cross,
                    self.disc)
            _check_finite(z, returns, what)
            if crossed:
                raise ModelError(CROSSED)
            return Rollout(G, z, acts, inside, above, returns, Y)
        return self.evaluate_numpy(G, what)

    def evaluate_numpy(self, G, what="policy") -> Rollout:
        """The NumPy reference of the rollout (vectorised over the batch, a loop over time)."""
        g, b = self.game, self.batch
        G = np.asarray(G, dtype=float)
        T, B = b.noise.shape[:2]
        z = np.empty((T + 1, B, g.n_continuous))
        z[0] = b.z0
        acts = np.empty((T, B, g.n_actions))
        inside = np.empty((T, B, g.n_actions))
        above = np.empty((T, B, g.n_actions))
        returns = np.zeros((B, g.n_players))
        sloped = bool(np.any(g.lower_slope) or np.any(g.upper_slope))
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(T):
                s = b.states[t]
                u = G[s, :, 0] + np.einsum("bdc,bc->bd", G[s, :, 1:], z[t])
                lo, hi = g.lower[s], g.upper[s]
                if sloped:
                    lo = lo + np.einsum("bdc,bc->bd", g.lower_slope[s], z[t])
                    hi = hi + np.einsum("bdc,bc->bd", g.upper_slope[s], z[t])
                    if np.any(lo > hi):
                        raise ModelError(CROSSED)
                a = np.clip(u, lo, hi)
                inside[t] = (u >= lo) & (u <= hi)      # on a bound: the derivative from inside
                above[t] = u > hi
                acts[t] = a
                returns += self.disc[t] * _rewards(g, s, z[t], a)
                z[t + 1] = (np.einsum("bcd,bd->bc", g.state_matrix[s], z[t])
                            + np.einsum("bcd,bd->bc", g.input_matrix[s], a)
                            + g.state_offset[s] + b.noise[t])
        _check_finite(z, returns, what)
        x = np.concatenate([np.ones((T, B, 1)), z[:-1]], axis=-1)
        Y = np.einsum("t,tbs,tbn,tbm->snm", self.disc, self.onehot, x, x) / B
        return Rollout(G, z, acts, inside, above, returns, Y)

    def _weighted(self, weights):
        """The reward coefficients of sum_i weights_i r_i, per state: lin, Q, e, Z, C."""
        g = self.game
        return tuple(np.ascontiguousarray(np.tensordot(weights, arr, axes=1))
                     for arr in (g.linear, g.quadratic, g.state_linear, g.state_quadratic, g.cross))

    def raw_gradient(self, ro: Rollout, weights) -> np.ndarray:
        """(S, D, n): the exact gradient of the batch mean of sum_i weights_i (discounted return of i)."""
        if self.numba is not None:
            g, b = self.game, self.batch
            return self.numba.reverse(ro.G, b.states, ro.z, ro.actions, ro.inside, ro.above, g.state_matrix,
                                      g.input_matrix, g.lower_slope, g.upper_slope,
                                      *self._weighted(np.asarray(weights, dtype=float)), self.disc)
        return self.raw_gradient_numpy(ro, weights)

    def raw_gradient_numpy(self, ro: Rollout, weights) -> np.ndarray:
        """The NumPy reference of the reverse pass."""
        g, b = self.game, self.batch
        T, B = b.noise.shape[:2]
        lin, Q, e, Z, C = self._weighted(np.asarray(weights, dtype=float))
        lam = np.zeros((B, g.n_continuous))                 # dJ / dz_{t+1}
        grad = np.zeros_like(ro.G)
        for t in range(T - 1, -1, -1):
            s, z, a = b.states[t], ro.z[t], ro.actions[t]
            da = self.disc[t] * (lin[s] + np.einsum("bde,be->bd", Q[s], a) + np.einsum("bdc,bc->bd", C[s], z)) \
                + np.einsum("bcd,bc->bd", g.input_matrix[s], lam)
            du = da * ro.inside[t]
            dz = self.disc[t] * (e[s] + np.einsum("bce,be->bc", Z[s], z) + np.einsum("bdc,bd->bc", C[s], a)) \
                + np.einsum("bcd,bc->bd", g.state_matrix[s], lam) + np.einsum("bdc,bd->bc", ro.G[s, :, 1:], du) \
                + np.einsum("bd,bdc->bc", da * ro.above[t], g.upper_slope[s]) \
                + np.einsum("bd,bdc->bc", da * (1.0 - ro.inside[t] - ro.above[t]), g.lower_slope[s])
            x = np.concatenate([np.ones((B, 1)), z], axis=-1)
            grad += np.einsum("bs,bd,bn->sdn", self.onehot[t], du, x)
            lam = dz
        return grad / B

    def gradient(self, ro: Rollout, weights) -> np.ndarray:
        """The gradient per unit of occupancy, raw_gradient Y(s)^+ (as E in the exact engine)."""
        grad = self.raw_gradient(ro, weights)
        return np.einsum("sdn,snm->sdm", grad, np.linalg.pinv(ro.Y, rcond=1e-10, hermitian=True))

    def project(self, G, sl=slice(None)) -> np.ndarray:
        """The constant terms k(s) clamped into the action box (for the rows ``sl``): a constant policy
        beyond a bound acts as the bound but has a zero pathwise gradient, a trap for ascent."""
        G = np.array(G, dtype=float, copy=True)
        lo, hi = self.fixed_bounds
        G[:, :, 0] = np.clip(G[:, :, 0], lo[:, sl], hi[:, sl])
        return G

    def scaled(self, ro, i, E_own) -> np.ndarray:
        """-H(s)^{-1} E with H player i's own-action curvature from the exact engine of the same game
        without bounds at the unclipped gains (the clip only removes curvature), the last such H
        when those gains are unstable without the clip, -Q_ii(s) before any."""
        try:
            ev = evaluate(self.lq, ro.G)
            H = own_curvature(self.lq, ev, i)
            if np.all(np.linalg.eigvalsh(0.5 * (H + np.swapaxes(H, -1, -2))).max(axis=-1) < 0):
                self.curvature[i] = H
        except ModelError:
            pass
        H = self.curvature[i]
        return np.linalg.solve(-0.5 * (H + np.swapaxes(H, -1, -2)), E_own)


CROSSED = "the action bounds cross at a state the rollouts visit (lower + lower_slope z > upper + upper_slope z)"


def _check_finite(z, returns, what):
    if not (np.all(np.isfinite(returns)) and np.all(np.isfinite(z))):
        raise ModelError(f"the dynamics under the {what} diverge in the rollouts: its value is infinite")


def _rewards(g, s, z, a) -> np.ndarray:
    """(B, N): r_i(s_b, z_b, a_b)."""
    return (np.einsum("kbd,bd->bk", g.linear[:, s], a)
            + 0.5 * np.einsum("bd,kbde,be->bk", a, g.quadratic[:, s], a)
            + np.einsum("kbc,bc->bk", g.state_linear[:, s], z)
            + 0.5 * np.einsum("bc,kbce,be->bk", z, g.state_quadratic[:, s], z)
            + np.einsum("bd,kbdc,bc->bk", a, g.cross[:, s], z))


def sampled_best_response(engine: SampledEngine, G, i: int) -> np.ndarray:
    """Player i's best response within the clipped affine class on the engine's batch (L-BFGS-B from G_i)."""
    from scipy.optimize import minimize
    sl = engine.slices[i]
    weights = np.eye(len(engine.slices))[i]
    base = np.array(G, dtype=float, copy=True)
    shape = base[:, sl].shape

    def negative(theta):
        trial = base.copy()
        trial[:, sl] = theta.reshape(shape)
        try:
            ro = engine.evaluate(trial)
        except ModelError:
            return np.inf, np.zeros_like(theta)
        return -float(ro.J[i]), -engine.raw_gradient(ro, weights)[:, sl].ravel()

    starts = [base[:, sl].ravel()]
    try:                                                             # the best response without the bounds
        starts.append(best_response(engine.lq, base, i).gains.ravel())
    except ModelError:
        pass
    best, best_value = base[:, sl].copy(), negative(starts[0])[0]
    box = np.zeros(shape + (2,))                                    # k within the box, K free
    box[..., 0], box[..., 1] = -np.inf, np.inf
    box[:, :, 0, 0], box[:, :, 0, 1] = engine.fixed_bounds[0][:, sl], engine.fixed_bounds[1][:, sl]
    bounds = [(None if np.isinf(lo) else lo, None if np.isinf(hi) else hi) for lo, hi in box.reshape(-1, 2)]
    for theta in starts:
        theta = np.clip(theta, box.reshape(-1, 2)[:, 0], box.reshape(-1, 2)[:, 1])
        out = minimize(negative, theta, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": BR_ITERATIONS})
        if out.fun < best_value:
            best, best_value = out.x.reshape(shape), out.fun
    return best


@dataclass
class Estimate:
    value: float             # estimated sum_i [J_i(best deviation_i, G_-i) - J_i(G)] on the evaluation batch
    stderr: float
    per_player: np.ndarray
    deviations: list


def estimate(engine: SampledEngine, G) -> Estimate:
    """Exploitability estimate relative to clipped affine policies (module docstring): each player's
    best response is fitted on the engine's batch and its gain measured on the same batch — the
    exploitability of G in that sampled game. Use a batch independent of the one G was trained on:
    then the figure errs high (a deviation also fits the batch's noise), never low by fitting G."""
    base = engine.evaluate(G)
    diff = np.zeros(engine.batch.size)
    per_player, devs = [], []
    for i, sl in enumerate(engine.slices):
        rows = sampled_best_response(engine, G, i)
        dev = np.array(G, dtype=float, copy=True)
        dev[:, sl] = rows
        gain = engine.evaluate(dev).returns[:, i] - base.returns[:, i]
        diff += gain
        per_player.append(float(gain.mean()))
        devs.append(rows)
    return Estimate(float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size)), np.array(per_player), devs)
