"""Tabular Markov pseudo-games: policy evaluation, exact best responses, exploitability, GDA.

A policy is a table ``(S, D)``: the joint action at every state. For a
:class:`~solvopt.dsl.markov_games.MarkovPseudoGame`:

- :func:`evaluate`: the value functions V_i = (I - gamma P_pi)^{-1} r_i^pi (one linear solve);
- :func:`best_response`: player i's optimal policy against the others' by policy iteration, each
  improvement step a concave QP per state over X_i(s, a_-i(s)) (HiGHS, polished); the answer is
  *certified*: the Frank-Wolfe gap g.(v - b) <= max_v of each per-state program bounds its optimum
  from above, and a Bellman residual delta = max_s (T V - V)(s) bounds V* <= V + delta / (1 - gamma)
  (T is a gamma-contraction and monotone), so the best-response value lies in [lower, upper];
- :func:`exploitability`: sum_i [V_i^*(mu; pi_-i) - V_i(mu; pi)] with those bounds: ``value`` is
  a certified upper bound, never below 0;
- :func:`gda`: the two-time-scale simultaneous gradient descent-ascent between a policy pi and a
  best-response adversary pi' on psi(pi, pi') = sum_i [V_i(mu; pi'_i, pi_-i) - V_i(mu; pi)], with exact
  deterministic policy gradients (d_mu^sigma(s) dQ_i/da at sigma(s)) and projections onto the
  feasible sets; certified exploitability is computed every few steps and the best iterate kept.

**Scale.** :func:`gda` runs on the game divided by its reward scale (:func:`reward_scale`: the
largest reward coefficient over (1 - gamma), the size of a value), so its steps, best responses
and stopping tests see values of about 1 in any units; exploitabilities are multiplied back and
the status is settled on exploitability / scale.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import numpy as np

from .exploitability import Exploitability
from .projection import Polyhedron, check_stop

BR_TOL = 1e-10            # policy iteration stops when its certified bounds are this close
BR_MAX_ROUNDS = 60


# --- evaluation ------------------------------------------------------------------------------
def transition_matrix(game, policy) -> np.ndarray:
    """P_pi(s, s') = P0(s, s') + P1(s, s', :) . pi(s)."""
    if game.action_independent:
        return game.transitions
    return game.transitions + np.einsum("std,sd->st", game.transition_slopes, policy)


def stage_rewards(game, policy) -> np.ndarray:
    """(N, S): r_i(s, pi(s))."""
    lin = np.einsum("nsd,sd->ns", game.linear, policy)
    quad = 0.5 * np.einsum("sd,nsde,se->ns", policy, game.quadratic, policy)
    return lin + quad


def reward_gradients(game, policy) -> np.ndarray:
    """(N, S, D): the gradient of r_i(s, .) at pi(s)."""
    return game.linear + np.einsum("nsde,se->nsd", game.quadratic, policy)


def _resolvent(game, policy) -> np.ndarray:
    S = game.n_states
    return np.eye(S) - game.discount * transition_matrix(game, policy)


def evaluate(game, policy) -> np.ndarray:
    """(N, S): every player's value function under the joint policy."""
    return np.linalg.solve(_resolvent(game, policy), stage_rewards(game, policy).T).T


def occupancy(game, policy) -> np.ndarray:
    """(S,): the discounted state occupancy d(s) = sum_t gamma^t Pr(s_t = s) from mu (sums to 1/(1-gamma))."""
    return np.linalg.solve(_resolvent(game, policy).T, game.initial)


def policy_gradient(game, policy, values=None, occ=None) -> np.ndarray:
    """(N, S, D): d V_i(mu; pi) / d pi(s) = d(s) [grad r_i(s, pi(s)) + gamma P1(s, :, :)' V_i] (exact)."""
    V = evaluate(game, policy) if values is None else values
    d = occupancy(game, policy) if occ is None else occ
    g = reward_gradients(game, policy)
    if not game.action_independent:
        g = g + game.discount * np.einsum("std,nt->nsd", game.transition_slopes, V)
    return d[None, :, None] * g


# --- feasible sets ---------------------------------------------------------------------------
def player_set(game, s: int, i: int, policy) -> Polyhedron:
    """X_i(s, a_-i(s)): player i's box and the shared rows with the others' actions moved right."""
    sl = game.slices[i]
    A = game.shared_matrix[s]
    if A.shape[0] == 0:
        return Polyhedron(game.lower[s, sl], game.upper[s, sl])
    others = A @ policy[s] - A[:, sl] @ policy[s, sl]
    return Polyhedron(game.lower[s, sl], game.upper[s, sl], A[:, sl], None, game.shared_rhs[s] - others)


def joint_set(game, s: int) -> Polyhedron:
    """X(s): the box and every shared row (the jointly convex feasible set)."""
    A = game.shared_matrix[s]
    if A.shape[0] == 0:
        return Polyhedron(game.lower[s], game.upper[s])
    return Polyhedron(game.lower[s], game.upper[s], A, None, game.shared_rhs[s])


def project(X: Polyhedron, z) -> np.ndarray:
    """The Euclidean projection onto X: closed forms for a box and a box cut by one halfspace
    (:func:`project_box_halfspace`), else X.project (HiGHS QP)."""
    if X.is_box:
        return X.project(z)
    if X.A.shape[0] != 1 or np.isfinite(X.lo[0]):
        return X.project(z)
    x = project_box_halfspace(z, X.lb, X.ub, X.A.toarray()[0], X.hi[0])
    return X.project(z) if x is None else x


def project_box_halfspace(z, lb, ub, a, b) -> np.ndarray | None:
    """The projection of z onto {lb <= x <= ub, a.x <= b} in closed form: clip(z - lam a) with lam >= 0
    found exactly among the breakpoints; None when the halfspace misses the box along that path
    (empty set or a degenerate row: the caller lets HiGHS decide). Dense arrays, no Polyhedron: the
    GDA projects every state and player at every step."""
    x = np.clip(z, lb, ub)
    if a @ x <= b:
        return x
    nz = a != 0
    brk = np.concatenate([(z[nz] - lb[nz]) / a[nz], (z[nz] - ub[nz]) / a[nz]])
    brk = np.unique(brk[np.isfinite(brk) & (brk > 0)])
    lo_lam = 0.0
    for lam in brk:                      # a . clip(z - lam a) is non-increasing in lam
        if a @ np.clip(z - lam * a, lb, ub) <= b:
            break
        lo_lam = lam
    else:
        return None
    x0 = np.clip(z - lo_lam * a, lb, ub)
    mid = z - 0.5 * (lo_lam + lam) * a  # which coordinates move between the two breakpoints
    free = (mid > lb) & (mid < ub) & nz
    slope = float(a[free] @ a[free])     # linear between breakpoints: a.x(lam) = a.x0 - (lam - lo_lam) slope
    lam = lo_lam + (a @ x0 - b) / slope if slope > 0 else lam
    return np.clip(z - lam * a, lb, ub)


def project_player(game, s: int, i: int, policy, z) -> np.ndarray:
    """The projection of z onto X_i(s, a_-i(s)) (:func:`player_set`)."""
    sl = game.slices[i]
    A = game.shared_matrix[s]
    own = A[:, sl]
    return _project_box_rows(z, game.lower[s, sl], game.upper[s, sl], own,
                             game.shared_rhs[s] - (A @ policy[s] - own @ policy[s, sl]),
                             lambda: player_set(game, s, i, policy))


def project_policy(game, policy) -> np.ndarray:
    """The policy with each state's joint action projected onto X(s)."""
    return np.stack([_project_box_rows(policy[s], game.lower[s], game.upper[s], game.shared_matrix[s],
                                       game.shared_rhs[s], lambda s=s: joint_set(game, s))
                     for s in range(game.n_states)])


def _project_box_rows(z, lb, ub, A, b, polyhedron) -> np.ndarray:
    """The projection of z onto {lb <= x <= ub, A x <= b} without building the polyhedron when A
    has at most one row (the common case: a box, or a box and one budget; the GDA projects every
    state and player at every step); else ``polyhedron()``'s (:func:`project`)."""
    if A.shape[0] == 0:
        return np.clip(z, lb, ub)
    if A.shape[0] == 1:
        x = project_box_halfspace(np.asarray(z, dtype=float), lb, ub, A[0], b[0])
        if x is not None:
            return x
    return project(polyhedron(), z)


def feasibility_violation(game, policy) -> float:
    return max(joint_set(game, s).violation(policy[s]) for s in range(game.n_states))


# --- exact best responses --------------------------------------------------------------------
@dataclass
class BestResponse:
    """Player i's best response to the others: its policy (S, d_i), and certified value bounds (S,)."""

    actions: np.ndarray
    lower: np.ndarray         # the value of ``actions`` (a feasible deviation): V_i^* >= lower
    upper: np.ndarray         # certified: V_i^* <= upper
    rounds: int


def _improve(game, i: int, policy, V) -> tuple[np.ndarray, np.ndarray]:
    """Per state, argmax over X_i(s, a_-i) of r_i(s, b, a_-i) + gamma sum_s' p(s'|s, b, a_-i) V(s'),
    and a certified upper bound on that max (value + Frank-Wolfe gap)."""
    sl = game.slices[i]
    actions = np.empty((game.n_states, sl.stop - sl.start))
    upper = np.empty(game.n_states)
    for s in range(game.n_states):
        a = policy[s]
        Qii = game.quadratic[i, s][sl, sl]
        lin = game.linear[i, s][sl] + game.quadratic[i, s][sl] @ a - Qii @ a[sl]   # terms linear in b
        if not game.action_independent:
            lin = lin + game.discount * game.transition_slopes[s][:, sl].T @ V
        X = player_set(game, s, i, policy)
        b = X.minimize_qp(-Qii, -lin) if np.any(Qii) else X.maximize_linear(lin)[0]
        grad = lin + Qii @ b
        gap = max(0.0, X.maximize_linear(grad)[1] - grad @ b)
        full = a.copy()
        full[sl] = b
        value = _state_q(game, i, s, full, V)
        actions[s], upper[s] = b, value + gap
    return actions, upper


def _state_q(game, i: int, s: int, action, V) -> float:
    """r_i(s, a) + gamma sum_s' p(s' | s, a) V(s')."""
    r = game.linear[i, s] @ action + 0.5 * action @ game.quadratic[i, s] @ action
    p = game.transitions[s] + (game.transition_slopes[s] @ action if not game.action_independent else 0.0)
    return float(r + game.discount * p @ V)


def best_response(game, policy, i: int, tol: float = BR_TOL, max_rounds: int = BR_MAX_ROUNDS) -> BestResponse:
    """Player i's exact best response by policy iteration, with certified bounds (module docstring)."""
    sl = game.slices[i]
    current = policy.copy()
    V = evaluate(game, current)[i]
    upper = np.full(game.n_states, np.inf)
    rounds = 0
    for _ in range(max_rounds):
        rounds += 1
        check_stop()
        actions, t_upper = _improve(game, i, current, V)
        delta = max(0.0, float(np.max(t_upper - V)))
        upper = np.minimum(upper, V + delta / (1.0 - game.discount))
        if np.all(upper - V <= tol * np.maximum(1.0, np.abs(V))):
            break
        candidate = current.copy()
        candidate[:, sl] = actions
        V_new = evaluate(game, candidate)[i]
        if game.initial @ V_new < game.initial @ V:   # no progress left above rounding: stop
            break
        current, V = candidate, V_new
    return BestResponse(current[:, sl].copy(), V, np.maximum(upper, V), rounds)


@dataclass
class MarkovExploitability(Exploitability):
    """A certified Markov exploitability: ``value`` (certified upper bound) >= phi >= ``lower``."""

    per_state: np.ndarray | None = None     # certified phi(s) = sum_i [upper_i(s) - V_i(s)] (0 at a GMPE)
    values: np.ndarray | None = None        # (N, S) V_i under the policy


def exploitability(game, policy, tol: float = BR_TOL) -> Exploitability:
    """sum_i [max over feasible deviations of V_i(mu) - V_i(mu)], by exact best responses."""
    V = evaluate(game, policy)
    responses = [best_response(game, policy, i, tol) for i in range(game.n_players)]
    up = np.stack([np.maximum(br.upper - V[i], 0.0) for i, br in enumerate(responses)])
    low = np.stack([br.lower - V[i] for i, br in enumerate(responses)])
    per_player = up @ game.initial
    return MarkovExploitability(float(per_player.sum()), float(max(0.0, (low @ game.initial).sum())), per_player,
                                responses, feasibility_violation(game, policy), up.sum(axis=0), V)


# --- two-time-scale GDA ----------------------------------------------------------------------
def _deviation(policy, adversary, game, i):
    sigma = policy.copy()
    sigma[:, game.slices[i]] = adversary[:, game.slices[i]]
    return sigma


def _project_adversary(game, policy, adversary):
    out = adversary.copy()
    for i, sl in enumerate(game.slices):
        for s in range(game.n_states):
            out[s, sl] = project_player(game, s, i, policy, adversary[s, sl])
    return out


def _per_state(game, policy, grad) -> np.ndarray:
    """A policy gradient divided by the occupancy of each state (floored): the per-state ascent
    direction, so that rarely visited states move as fast as frequent ones (a diagonal preconditioner)."""
    d = occupancy(game, policy)
    return grad / np.maximum(d, 1e-3 * d.max())[:, None]


def reward_scale(game) -> float:
    """The game's value scale: its largest reward coefficient (|c|, |Q|) over (1 - gamma); 1 if all are 0."""
    top = max(float(np.max(np.abs(game.linear), initial=0.0)), float(np.max(np.abs(game.quadratic), initial=0.0)))
    return top / (1.0 - game.discount) if np.isfinite(top) and top > 0 else 1.0


def normalised(game, scale: float):
    """The game with every reward divided by ``scale`` (same equilibria, values of about 1)."""
    out = copy.copy(game)
    out.linear = game.linear / scale
    out.quadratic = game.quadratic / scale
    return out


def _times(e, scale: float):
    """A certified exploitability of the normalised game in the user's reward units."""
    return replace(e, value=e.value * scale, lower=e.lower * scale, per_player=e.per_player * scale,
                   per_state=None if e.per_state is None else e.per_state * scale,
                   values=None if e.values is None else e.values * scale)


def gda(game, run, policy=None, **kwargs):
    """Two-time-scale GDA (:func:`gda_normalised`) on the game divided by its reward scale: the
    iterates do not depend on the rewards' units; ``run`` gets the scale and the exploitability in
    the user's units. Stops (deadline, Ctrl-C) reach every projection and best response."""
    scale = reward_scale(game)
    run.rescale(scale)
    with run.guard():
        gda_normalised(normalised(game, scale), run, policy, unit=scale, **kwargs)


def gda_normalised(game, run, policy=None, *, step=0.4, adversary_step=1.0, adversary_steps=1, check_every=20,
                   unit=1.0):
    """Two-time-scale GDA on psi(pi, pi'): the adversary takes ``adversary_steps`` projected ascent
    steps of ``adversary_step`` per projected descent step of ``step`` of the policy (steps are
    divided by the players' own reward curvature, and gradients by the state occupancy, so one
    setting fits most games). ``run`` (:class:`~solvopt.games.tracking.EquilibriumRun`) keeps the
    best certified iterate and says when to stop."""
    S, D = game.n_states, game.n_actions
    if policy is None:
        lo = np.where(np.isfinite(game.lower), game.lower, 0.0)
        hi = np.where(np.isfinite(game.upper), game.upper, lo + 1.0)
        policy = 0.5 * (lo + hi)
    from solvopt.dsl.arrays import real_array
    pi = real_array(policy, "start policy", allow_inf=True)
    if pi.size != S * D:
        from solvopt.core.errors import ModelError
        raise ModelError(f"start policy must have shape (states, actions) = {(S, D)}, got {pi.shape}")
    pi = project_policy(game, pi.reshape(S, D))
    adv = _project_adversary(game, pi, pi)
    curvature = max(float(np.max(np.abs(game.quadratic[i][:, sl, sl]), initial=0.0))
                    for i, sl in enumerate(game.slices))
    scale = curvature if curvature > 1e-12 else 1.0
    eta_x, eta_y = step / scale, adversary_step / scale

    def certified(pi):
        return _times(exploitability(game, pi), unit)

    from .projection import stopping_at
    with stopping_at(run.first_deadline()):            # the start's certificate: a returned policy
        first = run.record(0, pi, certified(pi))
    if first:
        return
    it = 0
    while True:
        it += 1
        for _ in range(adversary_steps):             # the fast time scale: the adversary ascends
            check_stop()
            grad_adv = np.zeros((S, D))
            for i, sl in enumerate(game.slices):
                sigma = _deviation(pi, adv, game, i)
                grad_adv[:, sl] = _per_state(game, sigma, policy_gradient(game, sigma)[i])[:, sl]
            moved = _project_adversary(game, pi, adv + eta_y * grad_adv)
            settled = np.max(np.abs(moved - adv), initial=0.0) <= 1e-14 * max(1.0, np.max(np.abs(adv), initial=0.0))
            adv = moved
            if settled:                                # at its projected optimum: more steps would not move it
                break
        grad = -policy_gradient(game, pi).sum(axis=0)   # d/dpi of -sum_i V_i(mu; pi) ...
        for i, sl in enumerate(game.slices):           # ... plus sum_i d/dpi_-i V_i(mu; pi'_i, pi_-i)
            g = policy_gradient(game, _deviation(pi, adv, game, i))[i]
            g[:, sl] = 0.0
            grad += g
        pi = project_policy(game, pi - eta_x * _per_state(game, pi, grad))
        adv = _project_adversary(game, pi, adv)
        if it % check_every == 0 and run.record(it, pi.copy(), certified(pi)):
            return
        if run.should_stop(it):
            if it % check_every:
                run.record(it, pi.copy(), certified(pi))
            return
