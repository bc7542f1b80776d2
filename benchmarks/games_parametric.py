"""Markov games with a continuous state (affine-gda): exploitability against wall time.

Random linear-quadratic games (seeded): N players with one action each, z in R^c, S finite
states, discount 0.9, noise covariance 0.05 I, open-loop dynamics scaled to spectral radius 0.9,
rewards strictly concave in (z, own action) with random couplings. Sizes: 2 x c2 x S1, 3 x c5 x S2,
5 x c10 x S3 (players x continuous dims x finite states).

- exact path (no action bounds): affine-gda to exploitability 1e-10 (exact: Riccati best
  responses), against iterated best responses (each player's exact Riccati best response to the
  others, all at once: the classical way to solve coupled Riccati equations) on the same games,
  plus a small strongly coupled game where iterated best responses diverge;
- sampled path (action boxes [-1, 1]) on the smallest size: the exploitability ESTIMATE (relative
  to clipped affine policies) and its standard error over time.

Usage: python benchmarks/games_parametric.py [--time-limit 60] [--quick]
Writes benchmarks/results/games_parametric.{md,json,png}.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    # a multithreaded LU of 363 x 363 took 30-170 ms on the loaded 2 cores, 4 ms on one
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402  (after the thread settings)

from solvopt.core.errors import ModelError  # noqa: E402
from solvopt.dsl import LinearQuadraticMarkovGame  # noqa: E402
from solvopt.games import parametric as pm  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = ((2, 2, 1), (3, 5, 2), (5, 10, 3))
TOL = 1e-10


def random_lq_game(players, continuous, states, seed=0, bounds=None):
    rng = np.random.default_rng(seed)
    N, c, S, D = players, continuous, states, players
    A = rng.normal(size=(S, c, c))
    A *= 0.9 / np.abs(np.linalg.eigvals(A)).max(axis=-1)[:, None, None]
    B = rng.normal(size=(S, c, D)) / np.sqrt(c)
    quad = np.zeros((N, S, D, D))
    for i in range(N):
        M = rng.normal(size=(S, D, D)) * 0.2
        quad[i] = M + np.swapaxes(M, -1, -2)
        quad[i][:, i, i] = -2.0
    Zm = rng.normal(size=(N, S, c, c))
    Z = -np.einsum("ksab,kscb->ksac", Zm, Zm) / c - 0.5 * np.eye(c)
    P = rng.random((S, S)) + np.eye(S)
    return LinearQuadraticMarkovGame(
        [1] * N, rng.normal(size=(N, S, D)), P / P.sum(axis=1, keepdims=True), 0.9, A, B, quadratic=quad,
        state_linear=rng.normal(size=(N, S, c)), state_quadratic=Z, cross=rng.normal(size=(N, S, D, c)) * 0.3,
        state_offset=rng.normal(size=(S, c)) * 0.1, noise_cov=np.stack([0.05 * np.eye(c)] * S),
        initial_state=rng.normal(size=c), initial_cov=0.1 * np.eye(c),
        lower=None if bounds is None else -bounds, upper=None if bounds is None else bounds)


def iterated_best_responses(game, time_limit):
    """Simultaneous exact best responses (Jacobi on the coupled Riccati equations): the history."""
    data = pm.lq_data(game)
    G = pm.zero_policy(game)
    start, history = time.perf_counter(), []
    while True:
        try:
            value = pm.exploitability(data, G).value
        except ModelError:            # diverged past what the values can hold
            history.append((time.perf_counter() - start, None))
            break
        history.append((time.perf_counter() - start, value))
        if value <= TOL or time.perf_counter() - start > time_limit:
            break
        G = G.copy()
        responses = [pm.best_response(data, G, i).gains for i in range(game.n_players)]
        for sl, rows in zip(game.slices, responses):
            G[:, sl] = rows
    return history


def coupled_game():
    """Best-response slopes -3/2 each (the test suite's game): iterated best responses diverge."""
    lin = np.array([[[10.0, 0.0]], [[0.0, 5.0]]])
    quad = np.zeros((2, 1, 2, 2))
    quad[0, 0, 0, 0] = quad[1, 0, 1, 1] = -2.0
    quad[:, 0, 0, 1] = quad[:, 0, 1, 0] = -3.0
    return LinearQuadraticMarkovGame([1, 1], lin, [[1.0]], 0.5, [[[0.5]]], np.zeros((1, 1, 2)), quadratic=quad,
                                     noise_cov=[[[1.0]]], initial_cov=[[1.0]])


def exact_case(name, game, time_limit):
    result = game.solve(tolerance=TOL, time_limit=time_limit)
    hist = [(float(t), float(v)) for _, t, v, *rest in result.stats["history"]]
    ibr = iterated_best_responses(game, time_limit)
    first = next((t for t, v in hist if v <= 1e-6), None)
    ibr_first = next((t for t, v in ibr if v is not None and v <= 1e-6), None)
    return {"size": name, "termination": result.termination.value,
            "seconds": result.stats["wall_time"], "iterations": result.stats["iterations"],
            "exploitability": result.objective, "perfect_residual": result.stats.get("perfect_residual"),
            "time_to_1e-6": first, "history": hist, "ibr_history": ibr, "ibr_time_to_1e-6": ibr_first,
            "ibr_final": next(v for _, v in reversed(ibr) if v is not None), "ibr_overflowed": ibr[-1][1] is None}


def sampled_case(time_limit, samples):
    game = random_lq_game(2, 2, 2, bounds=1.0)
    result = game.solve(samples=samples, time_limit=time_limit, seed=0)
    s = result.stats
    return {"size": "2x2x2 (bounds [-1, 1])", "termination": result.termination.value, "seconds": s["wall_time"],
            "iterations": s["iterations"], "samples": samples, "horizon": s["horizon"],
            "estimate": s["exploitability_estimate"], "stderr": s["exploitability_stderr"],
            "history": [[float(t), float(v), float(e)] for _, t, v, e in s["history"]]}


def markdown(meta, rows, sampled) -> str:
    out = [f"# Markov games with a continuous state (affine-gda) — {meta['date']}", "",
           f"Machine: {meta['machine']}, {meta['cores']} cores (shared with other jobs), Python {meta['python']}. "
           f"Time limit {meta['time_limit']} s per run, one BLAS thread. Commit {meta['commit']}.", "",
           "Exact path (no action bounds): exploitability is exact (Riccati best responses over all policies). "
           "Sizes are players x continuous dims x finite states. IBR = iterated simultaneous exact best responses "
           "(the classical coupled-Riccati iteration), same games.", "",
           "| size | status | seconds | iterations | exploitability | perfect residual | time to 1e-6 (s) | "
           "IBR time to 1e-6 (s) | IBR final |", "|---|---|---|---|---|---|---|---|---|"]

    def fmt(t):
        return "—" if t is None else f"{t:.2f}"

    for r in rows:
        out.append(f"| {r['size']} | {r['termination']} | {r['seconds']:.2f} | {r['iterations']} | "
                   f"{r['exploitability']:.2g} | {r['perfect_residual']:.2g} | {fmt(r['time_to_1e-6'])} | "
                   f"{fmt(r['ibr_time_to_1e-6'])} | "
                   f"{r['ibr_final']:.2g}{' then overflow' if r['ibr_overflowed'] else ''} |")
    if sampled:
        out += ["", "Sampled path (action boxes): an ESTIMATE of the exploitability relative to clipped affine "
                "policies, on batches independent of GDA's training batch (each deviation fitted by L-BFGS-B on the "
                "batch and measured there; the reported point re-estimated on a third batch). Not a bound. At GDA's "
                "fixed point it is mostly the training batch's sampling error.", "",
                "| size | status | seconds | iterations | samples x horizon | estimate | stderr |",
                "|---|---|---|---|---|---|---|",
                f"| {sampled['size']} | {sampled['termination']} | {sampled['seconds']:.1f} | "
                f"{sampled['iterations']} | "
                f"{sampled['samples']} x {sampled['horizon']} | {sampled['estimate']:.3g} | {sampled['stderr']:.2g} |"]
    return "\n".join(out) + "\n"


def plot(rows, sampled, path):
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from plots import pyplot_or_none
    plt = pyplot_or_none()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2 if sampled else 1, figsize=(11 if sampled else 6.5, 4.2), squeeze=False)
    ax = axes[0, 0]
    for r, colour in zip(rows, ("tab:blue", "tab:green", "tab:red", "tab:purple")):
        for key, style, label in (("history", "-", "affine-gda"), ("ibr_history", "--", "IBR")):
            pts = [(max(t, 1e-3), max(v, 1e-16)) for t, v in r[key] if v is not None]
            if pts:
                t, v = zip(*pts)
                ax.plot(t, np.minimum.accumulate(v), style, color=colour, label=f"{r['size']} {label}")
    ax.set(xscale="log", yscale="log", xlabel="wall time (s)", ylabel="exact exploitability (best so far)",
           title="no action bounds: exact")
    ax.legend(fontsize=7)
    if sampled:
        ax = axes[0, 1]
        t, v, e = map(np.array, zip(*sampled["history"]))
        ax.errorbar(np.maximum(t, 1e-3), v, yerr=2 * e, fmt="o-", ms=3)
        ax.axhline(0, color="k", lw=0.8)
        ax.set(xscale="log", yscale="symlog", xlabel="wall time (s)", ylabel="exploitability estimate (+- 2 se)",
               title=f"action boxes: sampled ({sampled['size']})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="the smallest size only, 10 s")
    args = ap.parse_args(argv)
    limit = 10.0 if args.quick else args.time_limit
    sizes = SIZES[:1] if args.quick else SIZES
    rows = []
    cases = [("x".join(map(str, size)), random_lq_game(*size)) for size in sizes]
    if not args.quick:
        cases.append(("2x1x1 coupled (BR slopes -3/2)", coupled_game()))
    for name, game in cases:
        rows.append(exact_case(name, game, min(limit, 20.0) if "coupled" in name else limit))
        r = rows[-1]
        print(f"{r['size']}: {r['termination']} {r['seconds']:.2f}s exploitability {r['exploitability']:.2g} "
              f"(IBR final {r['ibr_final']:.2g})", flush=True)
    sampled = sampled_case(limit, args.samples)
    print(f"sampled: {sampled['termination']} estimate {sampled['estimate']:.3g} +- {sampled['stderr']:.2g}",
          flush=True)
    commit = os.popen("git -C " + str(Path(__file__).resolve().parent) + " rev-parse --short HEAD").read().strip()
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "time_limit": limit, "commit": commit}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "games_parametric.json").write_text(json.dumps({"meta": meta, "exact": rows, "sampled": sampled},
                                                              indent=1, default=float))
    (RESULTS / "games_parametric.md").write_text(markdown(meta, rows, sampled))
    plot(rows, sampled, RESULTS / "games_parametric.png")
    print(markdown(meta, rows, sampled))


if __name__ == "__main__":
    main()
