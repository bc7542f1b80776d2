"""Affine policies in a :class:`~solvopt.dsl.markov_games.LinearQuadraticMarkovGame`: exact values,
gradients, best responses and exploitability (no action bounds), and two-time-scale GDA.

State (s, z), x = [1; z] (n = 1 + c). An affine policy is a gain table G (S, D, n): a = G(s) x.
Under it x' = F(s) x + [0; w] with F(s) = Abar(s) + Bbar(s) G(s), Abar = [[1, 0], [b, A]],
Bbar = [[0], [B]], and player i's reward is 1/2 x' M_i(s) x. Everything is quadratic in x:

- value: V_i(s, x) = 1/2 x' P_i(s) x where P solves the coupled Lyapunov equations
  P(s) = M(s) + gamma F(s)' Pbar(s) F(s) + gamma tr(Pbar(s) W(s)) e0 e0', Pbar(s) = sum_s' p(s, s') P(s')
  — one linear system (I - gamma T) P = M of size S n^2. It has a finite solution for every reward
  iff the spectral radius of gamma T is < 1 (T is a positive operator: checked by solving with
  M = I and testing that P is positive definite); otherwise the value is infinite (ModelError);
- occupancy moments Y(s) = sum_t gamma^t E[1{s_t = s} x_t x_t'] solve the adjoint system, and
  J_i = V_i(mu, z_0) = 1/2 sum_s <M_i(s), Y(s)>;
- exact policy gradient: dJ_i / dG(s) = E_i(s) Y(s), with E_i(s) = R_ax + Q G(s) + gamma Bbar' Pbar_i(s) F(s)
  the derivative of player i's Q-function in the action (per unit of occupancy);
- best response of player i: policy iteration (Hewer's method), G_i(s) <- G_i(s) - H(s)^{-1} E_i(s)[rows i]
  with H = Q_ii + gamma B_i' Pbar_i B_i negative definite. Against affine policies the best response
  over ALL policies is affine (the problem is a Markov-jump LQ control problem), so the
  exploitability sum_i [J_i^* - J_i] is exact, not relative to a policy class; the Riccati residual
  max |E_i[rows i]| at the response is reported with it.

:func:`gda` is the paper's two-time-scale method on psi(G, G') = sum_i [J_i(G'_i, G_-i) - J_i(G)],
with the per-occupancy gradients E (a preconditioner that makes the fixed points the feedback
equilibria at every state, visited or not) and Newton scaling by -H^{-1}.
Bounded actions are handled by :mod:`solvopt.games.parametric_sampled`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError

from .exploitability import Exploitability

BR_TOL = 1e-12            # policy iteration stops when the value gain is below this (relative)
BR_MAX_ROUNDS = 100


@dataclass
class LQData:
    """The game in augmented coordinates x = [1; z] (see the module docstring)."""

    Abar: np.ndarray      # (S, n, n)
    Bbar: np.ndarray      # (S, n, D)
    Wbar: np.ndarray      # (S, n, n) the noise covariance in the z block
    Rxx: np.ndarray       # (N, S, n, n)
    Rax: np.ndarray       # (N, S, D, n)
    Q: np.ndarray         # (N, S, D, D)
    P: np.ndarray         # (S, S) finite-state transitions
    gamma: float
    start: np.ndarray     # (S, n, n) mu(s) E[x_0 x_0']
    slices: list


def lq_data(game) -> LQData:
    S, c, D, N = game.n_states, game.n_continuous, game.n_actions, game.n_players
    n = 1 + c
    Abar = np.zeros((S, n, n))
    Abar[:, 0, 0] = 1.0
    Abar[:, 1:, 0] = game.state_offset
    Abar[:, 1:, 1:] = game.state_matrix
    Bbar = np.zeros((S, n, D))
    Bbar[:, 1:, :] = game.input_matrix
    Wbar = np.zeros((S, n, n))
    Wbar[:, 1:, 1:] = game.noise_cov
    Rxx = np.zeros((N, S, n, n))
    Rxx[:, :, 0, 1:] = game.state_linear
    Rxx[:, :, 1:, 0] = game.state_linear
    Rxx[:, :, 1:, 1:] = game.state_quadratic
    Rax = np.concatenate([game.linear[..., None], game.cross], axis=-1)
    m = game.initial_state
    x0 = np.zeros((n, n))
    x0[0, 0], x0[0, 1:], x0[1:, 0] = 1.0, m, m
    x0[1:, 1:] = game.initial_cov + np.outer(m, m)
    return LQData(Abar, Bbar, Wbar, Rxx, Rax, game.quadratic, game.transitions, game.discount,
                  game.initial[:, None, None] * x0, list(game.slices))


def zero_policy(game) -> np.ndarray:
    """The gain table of the policy a = 0 (the default start)."""
    return np.zeros((game.n_states, game.n_actions, 1 + game.n_continuous))


def closed_loop(data: LQData, G) -> np.ndarray:
    return data.Abar + data.Bbar @ G


def stage_matrices(data: LQData, G) -> np.ndarray:
    """(N, S, n, n): M_i(s) with r_i(s, z, G(s) x) = 1/2 x' M_i(s) x."""
    GtR = np.einsum("sdn,ksdm->ksnm", G, data.Rax)
    return data.Rxx + GtR + np.swapaxes(GtR, -1, -2) + np.einsum("sdn,ksde,sem->ksnm", G, data.Q, G)


def _operator(data: LQData, F) -> np.ndarray:
    """The matrix of T (row-major vec of each n x n block): T(P)(s) = F' Pbar F + tr(Pbar W) e0 e0'."""
    S, n = F.shape[0], F.shape[1]
    e0 = np.zeros(n * n)
    e0[0] = 1.0
    blocks = np.stack([np.kron(F[s].T, F[s].T) + np.outer(e0, data.Wbar[s].ravel()) for s in range(S)])
    T = data.P[:, None, :, None] * blocks[:, :, None, :]          # (s, row, s', col)
    return T.reshape(S * n * n, S * n * n)


@dataclass
class Evaluation:
    """One joint affine policy's exact values: P (N, S, n, n), occupancy moments Y (S, n, n), J (N,)."""

    G: np.ndarray
    F: np.ndarray
    P: np.ndarray
    Y: np.ndarray
    J: np.ndarray


def evaluate(data: LQData, G, what: str = "policy") -> Evaluation:
    """Values and occupancy moments of the joint policy G; a ModelError when its value is infinite."""
    F = closed_loop(data, G)
    S, n = F.shape[0], F.shape[1]
    L = np.eye(S * n * n) - data.gamma * _operator(data, F)
    with np.errstate(over="ignore", invalid="ignore"):
        M = stage_matrices(data, G)
    N = M.shape[0]
    rhs = np.concatenate([M.reshape(N, -1), np.tile(np.eye(n).ravel(), S)[None]]).T
    try:
        if not (np.all(np.isfinite(L)) and np.all(np.isfinite(rhs))):
            raise np.linalg.LinAlgError("overflow")
        sol = np.linalg.solve(L, rhs)
        probe = sol[:, -1].reshape(S, n, n)
        np.linalg.cholesky(0.5 * (probe + np.swapaxes(probe, -1, -2)))
        stable = bool(np.all(np.isfinite(sol)))
    except np.linalg.LinAlgError:
        stable = False
    if not stable:
        raise ModelError(f"the dynamics under the {what} are not mean-square stable at this discount (spectral "
                         "radius of gamma x the second-moment operator >= 1): its value is infinite")
    with np.errstate(over="ignore", invalid="ignore"):
        P = sol[:, :N].T.reshape(N, S, n, n)
        P = 0.5 * (P + np.swapaxes(P, -1, -2))
        Y = np.linalg.solve(L.T, data.start.ravel()).reshape(S, n, n)
        Y = 0.5 * (Y + np.swapaxes(Y, -1, -2))
        J = 0.5 * np.einsum("ksnm,snm->k", M, Y)
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(Y)) and np.all(np.isfinite(J))):
        raise ModelError(f"the values under the {what} overflow (gains or dynamics too large): not evaluable")
    return Evaluation(np.asarray(G, dtype=float), F, P, Y, J)


def q_gradients(data: LQData, ev: Evaluation) -> np.ndarray:
    """(N, S, D, n): E_i(s), the derivative of player i's Q-function in the action, per unit of x."""
    Pbar = np.einsum("st,ktnm->ksnm", data.P, ev.P)
    return (data.Rax + np.einsum("ksde,sen->ksdn", data.Q, ev.G)
            + data.gamma * np.einsum("snd,ksnm,smp->ksdp", data.Bbar, Pbar, ev.F))


def policy_gradients(data: LQData, ev: Evaluation) -> np.ndarray:
    """(N, S, D, n): dJ_i / dG(s) = E_i(s) Y(s), exact."""
    return np.einsum("ksdn,snm->ksdm", q_gradients(data, ev), ev.Y)


def own_curvature(data: LQData, ev: Evaluation, i: int) -> np.ndarray:
    """(S, d_i, d_i): H(s) = Q_ii(s) + gamma B_i' Pbar_i(s) B_i, the Hessian of player i's Q-function
    in its own action (negative definite where its best response is finite)."""
    sl = data.slices[i]
    Pbar = np.einsum("st,tnm->snm", data.P, ev.P[i])
    Bi = data.Bbar[:, :, sl]
    return data.Q[i][:, sl, sl] + data.gamma * np.einsum("snd,snm,sme->sde", Bi, Pbar, Bi)


def newton_direction(data: LQData, ev: Evaluation, i: int, E_own) -> np.ndarray:
    """-H(s)^{-1} E_own(s): the ascent direction of player i's gains scaled by its own curvature;
    a ModelError when H is not negative definite (player i's best response is unbounded)."""
    H = own_curvature(data, ev, i)
    Hs = 0.5 * (H + np.swapaxes(H, -1, -2))
    if np.any(np.linalg.eigvalsh(Hs).max(axis=-1) >= 0):
        raise ModelError(f"player {i}'s continuation value is not concave in its own action here: its best "
                         "response is unbounded (rewards convex in the state?)")
    return -np.linalg.solve(Hs, E_own)


def with_rows(G, rows, i_slice) -> np.ndarray:
    """G with the rows of player i's actions replaced."""
    out = np.array(G, dtype=float, copy=True)
    out[:, i_slice] = rows
    return out


@dataclass
class AffineResponse:
    gains: np.ndarray        # (S, d_i, n) player i's best-response gains
    value: float             # J_i at the response
    residual: float          # max |E_i[rows i]| at the response (0 for the exact Riccati solution)
    rounds: int
    converged: bool = True   # False: policy iteration stopped short (round limit, a step it could not take)


def best_response(data: LQData, G, i: int, tol: float = BR_TOL, max_rounds: int = BR_MAX_ROUNDS) -> AffineResponse:
    """Player i's exact best response to the others' affine policies (policy iteration from its own G)."""
    sl = data.slices[i]
    current = np.array(G, dtype=float, copy=True)
    ev = evaluate(data, current, "best-response candidate")
    converged = False
    rounds = 0
    for _ in range(max_rounds):
        rounds += 1
        E = q_gradients(data, ev)[i][:, sl]
        step = newton_direction(data, ev, i, E)
        candidate = current.copy()
        candidate[:, sl] += step
        try:
            new = evaluate(data, candidate)
        except ModelError:
            break
        gain = new.J[i] - ev.J[i]
        if gain < -1e-12 * max(1.0, abs(ev.J[i])):      # no progress left above rounding
            converged = True
            break
        current, ev = candidate, new
        if gain <= tol * max(1.0, abs(ev.J[i])):
            converged = True
            break
    residual = float(np.max(np.abs(q_gradients(data, ev)[i][:, sl]), initial=0.0))
    return AffineResponse(current[:, sl].copy(), float(ev.J[i]), residual, rounds, converged)


@dataclass
class AffineExploitability(Exploitability):
    """Exact exploitability of a joint affine policy (no action bounds): sum_i [J_i^* - J_i]."""

    values: np.ndarray | None = None        # (N,) J_i under the policy
    residual: float = 0.0                   # the largest Riccati residual of the best responses


def exploitability(data: LQData, G) -> AffineExploitability:
    """sum_i [max over ALL policies of J_i(., G_-i) - J_i(G)] (exact: the best responses are affine);
    ``value`` adds a rounding allowance of a few ulps of the values, ``lower`` subtracts it."""
    ev = evaluate(data, G)
    responses = [best_response(data, G, i) for i in range(len(data.slices))]
    best = np.array([r.value for r in responses])
    per_player = np.maximum(best - ev.J, 0.0)
    # the difference of two values is known to their rounding only: a few ulps of each, added to the
    # upper figure (else huge values, e.g. a diverging iteration's, would cancel to 0)
    rounding = 8 * np.finfo(float).eps * float(np.sum(np.abs(best) + np.abs(ev.J)))
    total = float(per_player.sum())
    exact = all(r.converged for r in responses)       # else the figure is only a lower one: not certified
    return AffineExploitability(total + rounding, max(0.0, total - rounding), per_player, responses,
                                0.0 if exact else np.inf, ev.J, max((r.residual for r in responses), default=0.0))


def perfect_residual(data: LQData, G) -> float:
    """max over players, finite states and entries of |E_i(s)[rows i]| at G: 0 iff every player's
    affine policy is optimal from EVERY state (s, z) (feedback / Markov perfect equilibrium), also
    where the initial distribution never leads (there the exploitability from mu cannot see it)."""
    E = q_gradients(data, evaluate(data, G))
    return max(float(np.max(np.abs(E[i][:, sl]), initial=0.0)) for i, sl in enumerate(data.slices))


# --- two-time-scale GDA ----------------------------------------------------------------------
class ExactEngine:
    """What :func:`gda` needs, from the exact Lyapunov / Riccati formulas (no action bounds)."""

    def __init__(self, data: LQData):
        self.data = data
        self.slices = data.slices

    def evaluate(self, G, what="policy"):
        return evaluate(self.data, G, what)

    def gradient(self, ev, weights) -> np.ndarray:
        """(S, D, n): sum_i weights_i E_i, the per-occupancy gradient of sum_i weights_i J_i."""
        return np.einsum("k,ksdn->sdn", weights, q_gradients(self.data, ev))

    def scaled(self, ev, i, E_own) -> np.ndarray:
        """Player i's ascent direction: -H^{-1} E (Newton in its own gains)."""
        return newton_direction(self.data, ev, i, E_own)

    def project(self, G, sl=slice(None)) -> np.ndarray:
        """Gains are unconstrained here."""
        return G


def _safe_evaluate(engine, G):
    try:
        return engine.evaluate(G)
    except ModelError:
        return None


def gda(engine, run, G, *, step=0.5, adversary_step=1.0, adversary_steps=2, check_every=10, decay=0.0,
        record=None) -> None:
    """Two-time-scale GDA between the joint gains G and the adversary's deviations G' on
    psi(G, G') = sum_i [J_i(G'_i, G_-i) - J_i(G)].

    The adversary (fast time scale) takes ``adversary_steps`` scaled ascent steps of size
    ``adversary_step`` on each J_i(G'_i, G_-i) (exact engine: at 1 each is a policy-iteration step);
    the policy (slow time scale) takes one scaled step of ``step`` against the per-occupancy gradient
    of psi, -sum_i E_i(G) + sum_i E_i(G'_i, G_-i) off player i's rows. A step that would make the
    dynamics unstable is halved; ``engine.project`` keeps the gains in their parameter set; steps
    are divided by 1 + ``decay`` x iteration.

    ``record(iteration, G)`` evaluates G (exploitability or its estimate) and returns (stop, score).
    Safeguard: when a check scores worse than the best so far, the policy step is halved and the
    iteration restarts from the best gains (strongly coupled games diverge at a fixed step: the
    exploitability's curvature is not the players' own); ``run.should_stop`` says when the limits
    are reached.
    """
    N = len(engine.slices)
    eye = np.eye(N)
    G = np.array(G, dtype=float, copy=True)
    ev = engine.evaluate(G, "start policy")
    adv = G.copy()
    stop, best_score = record(0, G)
    if stop:
        return
    best_G = G.copy()
    it = 0
    while True:
        it += 1
        shrink = 1.0 / (1.0 + decay * (it - 1))
        direction = -engine.gradient(ev, np.ones(N))
        for i, sl in enumerate(engine.slices):          # the fast time scale: each deviation ascends
            dv = _safe_evaluate(engine, with_rows(G, adv[:, sl], sl))
            if dv is None:                              # unstable against the new G: restart it at G
                adv[:, sl], dv = G[:, sl], ev
            for _ in range(adversary_steps):
                trial = engine.project(adv[:, sl] + shrink * adversary_step * engine.scaled(
                    dv, i, engine.gradient(dv, eye[i])[:, sl]), sl)
                nxt = _safe_evaluate(engine, with_rows(G, trial, sl))
                if nxt is None:
                    break
                adv[:, sl], dv = trial, nxt
            E = engine.gradient(dv, eye[i])
            E[:, sl] = 0.0
            direction += E
        move = np.zeros_like(G)
        for i, sl in enumerate(engine.slices):           # the slow time scale: the policy descends
            move[:, sl] = engine.scaled(ev, i, direction[:, sl])
        eta = step * shrink
        for _ in range(30):
            trial = engine.project(G - eta * move)
            nxt = _safe_evaluate(engine, trial)
            if nxt is not None:
                break
            eta *= 0.5
        else:
            return
        G, ev = trial, nxt
        checked = it % check_every == 0
        if checked:
            stop, score = record(it, G)
            if stop:
                return
            if score <= best_score:
                best_score, best_G = score, G.copy()
            else:                                        # the safeguard
                step *= 0.5
                G, adv = best_G.copy(), best_G.copy()
                ev = engine.evaluate(G)
        if run.should_stop(it):
            if not checked:
                record(it, G)
            return
