"""Static games and Fisher markets: certified exploitability against wall time.

    python benchmarks/games.py                # everything (a few minutes on 2 cores)
    python benchmarks/games.py --quick        # smaller market, for a smoke run
    python benchmarks/games.py --part large   # 10^4 consumers x 100 goods (10^6 variables), 60 s each

- Harker's game and the river-basin game: extragradient and nested to exploitability 1e-10 (and
  VE gap 1e-10), certified every 5 (extragradient) or every (nested) iteration, the curve recorded.
  Anchor: nashopt (KKT system by Powell's hybrid method / Levenberg-Marquardt, variational GNE) when
  installed: its wall time and the *same* certified exploitability and VE gap evaluated at its answer.
  PATH through pyomo.mpec is not compared: the PATH binary does not install through pip here.
- A 1000 x 1000 linear Fisher market (uniform random valuations and budgets): eisenberg-gale
  (proportional response + exact polish) and plain proportional response to relative
  exploitability 1e-6; a 1000 x 1000 CES (rho = 0.5) market by eisenberg-gale (convex dual).
  The polish before/after, side by side in this process on the same markets (200 x 200 and
  1000 x 1000): "before" is the polish of commit BEFORE (a forest of the largest bids at two
  guessed slacks, polished at 1.25x-growing iterations), its functions read from git history
  (skipped outside a git checkout); "after" the active-set polish of solvopt.games.polish.
- Linear exchange (Arrow-Debreu) markets, 50 x 50, 200 x 200 and 1000 x 1000 (uniform random
  utilities and endowments): linear-exchange to its default tolerance (exploitability 1e-9 of the
  total value p . s = 1): time to the exact equilibrium and its certified exploitability.

- Large markets (``--part large``), 10^4 consumers x 100 goods, time limit 60 s, tolerance 1e-6
  relative: linear exchange markets by linear-exchange (sparse: each consumer likes 10% of the
  goods plus one, owns one good, every good liked and owned by someone; dense: uniform
  utilities and endowments), exchange markets with Cobb-Douglas and CES (rho = 0.5 and -1)
  utilities by tatonnement, and a linear Fisher market of the same size by eisenberg-gale.

Results: benchmarks/results/games.json, games.md, games.png (exploitability vs time, log scale).
Timings are single runs on a shared machine (noted in the file); each method reports its own
certified exploitability from the same code.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from dp import cpu_name

from solvopt.dsl.games import ArrowDebreuMarket, FisherMarket
from solvopt.dsl.utilities import CES, CobbDouglas, Linear
from solvopt.games.exploitability import static_exploitability, ve_gap

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = 240     # seconds per market run
LARGE_TIME_LIMIT = 60  # seconds per large market run
BEFORE = "c706dff"   # the last commit with the bid-forest polish of linear Fisher markets


def games():
    from test_games_static import harker, river_basin  # the test suite's own definitions of the two games
    return {"harker": harker, "river_basin": river_basin}


def time_to(history, target):
    """Seconds until the certified exploitability (and VE gap) first reached ``target`` (None if never)."""
    for row in history:
        if max(row[2:]) <= target:
            return row[1]
    return None


def run_static(name, make):
    rows = []
    for method in ("extragradient", "nested"):
        start = time.perf_counter()
        r = make().solve(method=method, tolerance=1e-10, check_every=5 if method == "extragradient" else 1,
                         iteration_limit=5000)
        wall = time.perf_counter() - start
        rows.append({"game": name, "method": method, "termination": str(r.termination), "wall_s": wall,
                     "exploitability": r.objective, "ve_gap": r.stats.get("ve_gap"),
                     "iterations": r.stats["iterations"], "actions": r.solution["actions"].tolist(),
                     "time_to_1e-8": time_to(r.stats["history"], 1e-8),
                     "time_to_1e-10": time_to(r.stats["history"], 1e-10),
                     "history": r.stats["history"]})
        print(f"{name:12s} {method:14s} {r.termination} exploitability {r.objective:.2e} "
              f"VE gap {r.stats.get('ve_gap'):.2e} {wall:.2f}s {r.stats['iterations']} iterations", flush=True)
    anchor = run_nashopt(name, make)
    if anchor is not None:
        rows.append(anchor)
    return rows


def run_nashopt(name, make):
    """nashopt's variational GNE on the same game (costs from the compiled game's quadratic data)."""
    try:
        import jax
        import jax.numpy as jnp
        from nashopt import GNEP
    except Exception as exc:
        print(f"nashopt not available ({type(exc).__name__}: {exc}); skipped", flush=True)
        return None
    jax.config.update("jax_enable_x64", True)
    game = make().data()
    Q = [jnp.asarray(u.Q.toarray()) for u in game.utilities]
    c = [jnp.asarray(u.c) for u in game.utilities]
    costs = [(lambda x, Qi=Qi, ci=ci: -(0.5 * x @ (Qi @ x) + ci @ x)) for Qi, ci in zip(Q, c)]
    A = game.A.toarray()
    rows = np.flatnonzero(np.isfinite(game.hi))
    G, h = jnp.asarray(A[rows]), jnp.asarray(game.hi[rows])
    lb = np.where(np.isfinite(game.lb), game.lb, -np.inf)
    ub = np.where(np.isfinite(game.ub), game.ub, np.inf)
    out = []
    for attempt in ("first call (JIT)", "second call"):
        start = time.perf_counter()
        problem = GNEP([len(b) for b in game.blocks], costs, g=lambda x: G @ x - h, ng=len(rows), lb=lb, ub=ub,
                       variational=True)
        sol = problem.solve(x0=np.clip(np.zeros(game.n), lb, ub), verbose=0)
        wall = time.perf_counter() - start
        x = np.clip(np.asarray(sol.x, dtype=float), game.lb, game.ub)
        e, v = static_exploitability(game, x), ve_gap(game, x)
        out.append({"attempt": attempt, "wall_s": wall, "exploitability": e.value, "ve_gap": v.value,
                    "violation": e.violation, "actions": x.tolist()})
    best = out[-1]
    print(f"{name:12s} {'nashopt':14s} exploitability {best['exploitability']:.2e} VE gap {best['ve_gap']:.2e} "
          f"violation {best['violation']:.1e} {best['wall_s']:.2f}s (first call {out[0]['wall_s']:.2f}s)", flush=True)
    from importlib.metadata import version

    import nashopt
    return {"game": name, "method": f"nashopt {version('nashopt')} (variational, KKT root finding)",
            "termination": "-", "wall_s": best["wall_s"], "first_call_s": out[0]["wall_s"],
            "exploitability": best["exploitability"], "ve_gap": best["ve_gap"], "violation": best["violation"],
            "actions": best["actions"], "history": [], "time_to_1e-8": None, "time_to_1e-10": None,
            "module": nashopt.__name__}


def run_markets(size, seed=2026):
    rng = np.random.default_rng(seed)
    n = m = size
    B = rng.uniform(0.5, 1.5, n)
    linear = FisherMarket(Linear(rng.uniform(0.0, 1.0, (n, m))), B)
    ces = FisherMarket(CES(rng.uniform(0.0, 1.0, (n, m)), 0.5), B)
    return [market_row(f"{label} {n}x{m}", market, method, float(B.sum()), tolerance=1e-6)
            for label, market, method in (("linear", linear, "eisenberg-gale"),
                                          ("linear", linear, "proportional-response"),
                                          ("ces0.5", ces, "eisenberg-gale"))]


def market_row(label, market, method, scale=1.0, time_limit=TIME_LIMIT, **options):
    """Solve one market, timed; its row (relative exploitability history) for the tables and the plot."""
    start = time.perf_counter()
    r = market.solve(method=method, time_limit=time_limit, **options)
    wall = time.perf_counter() - start
    hist = [[h[0], h[1], h[2] / scale] for h in r.stats["history"]]
    row = {"market": label, "method": method, "termination": str(r.termination), "wall_s": wall,
           "relative_exploitability": r.stats.get("relative_exploitability"),
           "iterations": r.stats["iterations"], "history": hist}
    print(f"{label} {method:22s} {r.termination} relative exploitability "
          f"{r.stats.get('relative_exploitability'):.2e} {wall:.1f}s {r.stats['iterations']} iterations", flush=True)
    return row


def polish_before():
    """The polish of commit BEFORE as a replacement ``EisenbergGale._check`` (None outside a git checkout)."""
    try:
        source = subprocess.run(["git", "show", f"{BEFORE}:solvopt/games/markets.py"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    wanted = {"polish_linear", "_route_budgets"}
    module = ast.Module([node for node in ast.parse(source).body
                         if isinstance(node, ast.FunctionDef) and node.name in wanted], type_ignores=[])
    space = {"np": np}
    exec(compile(module, f"{BEFORE}:solvopt/games/markets.py", "exec"), space)
    polish = space["polish_linear"]

    def check(self, run, model, it, x, p):             # the check of BEFORE: two slacks, 1.25x-growing iterations
        if self.certify(run, model, it, x, p):
            return True
        if it < getattr(self, "_before_next", 0):
            return False
        self._before_next = max(it + 1, int(1.25 * it))
        for slack in (1e-2, 1e-5):
            polished = polish(model, x * p, slack)
            if polished is not None and self.certify(run, model, it, *polished):
                return True
        return False
    return check


def run_polish(sizes, seed=2026):
    """Linear Fisher eisenberg-gale with the polish of BEFORE and the current one, same markets, same process."""
    from solvopt.games.markets import EisenbergGale
    before = polish_before()
    rows = []
    for size in sizes:
        rng = np.random.default_rng(seed)
        B = rng.uniform(0.5, 1.5, size)
        market = FisherMarket(Linear(rng.uniform(0.0, 1.0, (size, size))), B)
        label = f"linear {size}x{size}"
        after = market_row(label, market, "eisenberg-gale", float(B.sum()), tolerance=1e-6)
        after["polish"] = "after"
        rows.append(after)
        if before is None:
            print("not a git checkout: the polish before is not measured", flush=True)
            continue
        # BEFORE's polish swapped in for one solve: the method is private, the comparison is the point
        current = EisenbergGale._check  # noqa: SLF001
        EisenbergGale._check = before  # noqa: SLF001
        try:
            row = market_row(label, market, "eisenberg-gale", float(B.sum()), tolerance=1e-6)
        finally:
            EisenbergGale._check = current  # noqa: SLF001
        row["polish"] = f"before ({BEFORE})"
        rows.append(row)
    return rows


def run_exchange(sizes, seed=2026):
    """Random linear exchange markets by linear-exchange to its default tolerance (exact equilibria).

    Dense: uniform utilities and endowments. Sparse: each consumer owns one good (a random
    amount) and likes 5% of the goods plus one more, so that every good is liked.
    """
    rows = []
    for size in sizes:
        rng = np.random.default_rng(seed + size)
        market = ArrowDebreuMarket(Linear(rng.uniform(0.0, 1.0, (size, size))), rng.uniform(0.0, 1.0, (size, size)))
        rows.append(market_row(f"exchange {size}x{size}", market, "linear-exchange"))
    for size in sizes[1:]:
        rng = np.random.default_rng(seed + size)
        v = rng.uniform(0.0, 1.0, (size, size)) * (rng.random((size, size)) < 0.05)
        v[np.arange(size), rng.permutation(size)] += rng.uniform(0.1, 1.0, size)
        e = np.eye(size)[rng.permutation(size)] * rng.uniform(0.5, 2.0, size)[:, None]
        rows.append(market_row(f"exchange sparse {size}x{size}", ArrowDebreuMarket(Linear(v), e), "linear-exchange"))
    return rows


A10E_NOTE = (
    "Facchinei-Kanzow A.10e (row `A.10e production`: 7 firms, 40 consumers and a price player, 12 goods) is an "
    "Arrow-Debreu economy *with production*: firm f maximises p . y over {y >= 0, |y|^2 <= 10 f}, consumers have "
    "shifted logarithmic utilities sum_j w_kj log(x_j + c_kj), the price player maximises p . (sum x - sum y - "
    "sum e) over the simplex, and profits are paid to no one (the library's reading), so every good ends with the "
    "same excess supply, the total profit. `ProductionEconomy` states it (`solvopt.games.production_library`); "
    "`production-root` takes the firms' and consumers' exact best responses (y_f = r_f p / |p|, water-filling "
    "demands) and solves the price player's condition z_j(p) = z_m(p) by Powell's hybrid method. Its exploitability "
    "is in money (consumers' utility gains divided by their marginal utility of money, an upper bound on the "
    "compensating variation) and relative to the economy's money scale (the endowments' value plus the firms' "
    "largest profit). No published equilibrium point of A.10e was "
    "at hand to compare with; scipy's independent best responses confirm it (tests/test_games_production.py).")


def run_large(n=10000, m=100, seed=2026):
    """10^4 consumers x 100 goods: exchange markets (linear, Cobb-Douglas, CES) and a linear Fisher market."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.0, 1.0, (n, m)) * (rng.random((n, m)) < 0.1)
    v[np.arange(n), rng.integers(0, m, n)] += rng.uniform(0.1, 1.0, n)          # every consumer likes a good
    v[rng.integers(0, n, m), np.arange(m)] += rng.uniform(0.1, 1.0, m)          # every good is liked
    e = np.zeros((n, m))
    e[np.arange(n), rng.integers(0, m, n)] = rng.uniform(0.5, 2.0, n)           # each consumer owns one good
    e[rng.integers(0, n, m), np.arange(m)] += 1.0                               # every good is owned
    dense_v, dense_e = rng.uniform(0.0, 1.0, (n, m)), rng.uniform(0.0, 1.0, (n, m))
    a = rng.uniform(0.1, 1.0, (n, m))
    B = rng.uniform(0.5, 1.5, n)
    cases = [(f"exchange linear sparse {n}x{m}", ArrowDebreuMarket(Linear(v), e), "linear-exchange", 1.0),
             (f"exchange linear dense {n}x{m}", ArrowDebreuMarket(Linear(dense_v), dense_e), "linear-exchange", 1.0),
             (f"exchange cobb-douglas {n}x{m}", ArrowDebreuMarket(CobbDouglas(a / a.sum(axis=1, keepdims=True)), e),
              "tatonnement", 1.0),
             (f"exchange ces0.5 {n}x{m}", ArrowDebreuMarket(CES(a, 0.5), e), "tatonnement", 1.0),
             (f"exchange ces-1 {n}x{m}", ArrowDebreuMarket(CES(a, -1.0), e), "tatonnement", 1.0),
             (f"fisher linear sparse {n}x{m}", FisherMarket(Linear(v), B), "eisenberg-gale", float(B.sum()))]
    rows = []
    for label, market, method, scale in cases:
        row = market_row(label, market, method, scale, time_limit=LARGE_TIME_LIMIT, tolerance=1e-6)
        row["load"] = os.getloadavg()[0]
        rows.append(row)
    from solvopt.games.production_library import a10e
    row = market_row("A.10e production 40x12, 7 firms", a10e(), "production-root", time_limit=LARGE_TIME_LIMIT,
                     tolerance=1e-9)
    row["load"] = os.getloadavg()[0]
    rows.append(row)
    return rows


def write(static, markets, meta, polish=(), exchange=(), large=()):
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "games.json", "w") as fh:
        json.dump({"meta": meta, "static": static, "markets": markets, "polish": list(polish),
                   "exchange": list(exchange), "large": list(large)}, fh, indent=1)
    parts = meta.get("parts", {})
    lines = [f"# Games: certified exploitability against time ({meta['date']})", "",
             f"Machine: {meta['machine']} ({meta['cpus']} logical CPUs, shared: load average {meta['load']}). "
             "Single runs; every exploitability is the certified upper bound from "
             "`solvopt.games.exploitability`, the same code for every method and anchor.", ""]
    if parts:
        lines += ["Each part was run on its own (`--part`): " + "; ".join(
            f"{name} {when['date']} (load average {when['load']:.1f})"
            for name, when in sorted(parts.items())) + ".", ""]
    lines += [
             "## Static games (tolerance 1e-10 on exploitability and VE gap)", "",
             "| game | method | termination | exploitability | VE gap | iterations | time to 1e-8 (s) "
             "| time to 1e-10 (s) | wall (s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
    for r in static:
        lines.append(f"| {r['game']} | {r['method']} | {r['termination']} | {fmt(r['exploitability'])} | "
                     f"{fmt(r['ve_gap'])} | {r.get('iterations', '-')} | {fmt(r['time_to_1e-8'])} | "
                     f"{fmt(r['time_to_1e-10'])} | {fmt(r['wall_s'])} |")
    anchors = [r for r in static if r["method"].startswith("nashopt")]
    if anchors:
        lines += ["", "nashopt rows: wall time of its second call; each call builds a new `GNEP`, which JAX traces "
                  "and compiles again, so both include compilation (first calls: "
                  + ", ".join(f"{r['game']} {r['first_call_s']:.2f} s" for r in anchors)
                  + "). Its answer is clipped to the bounds and certified by our exploitability and VE gap."]
    lines += ["", "PATH through `pyomo.mpec`: not compared — the PATH binary is not installable through pip here.",
              "", f"## Fisher markets (tolerance: relative exploitability 1e-6, time limit {TIME_LIMIT} s)", "",
              "| market | method | termination | relative exploitability | iterations | wall (s) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in markets:
        lines.append(f"| {r['market']} | {r['method']} | {r['termination']} | {fmt(r['relative_exploitability'])} | "
                     f"{r['iterations']} | {fmt(r['wall_s'])} |")
    if polish:
        lines += ["", "## The linear Fisher polish, before and after (tolerance: relative exploitability 1e-6)", "",
                  f"Same market, same process, one after the other; before = the polish of commit {BEFORE}.", "",
                  "| market | polish | termination | relative exploitability | iterations | wall (s) |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for r in polish:
            lines.append(f"| {r['market']} | {r['polish']} | {r['termination']} | "
                         f"{fmt(r['relative_exploitability'])} | {r['iterations']} | {fmt(r['wall_s'])} |")
        for label in sorted({r["market"] for r in polish}):
            pair = {r["polish"].split()[0]: r for r in polish if r["market"] == label}
            if {"before", "after"} <= set(pair):
                lines.append(f"\n{label}: after / before wall time = "
                             f"{pair['after']['wall_s'] / pair['before']['wall_s']:.3g}")
    if exchange:
        lines += ["", "## Linear exchange (Arrow-Debreu) markets: linear-exchange, exact equilibria", "",
                  "Prices normalised to p . s = 1, so the exploitability is relative to the total value; "
                  "optimal = certified exploitability at most 1e-9.", "",
                  "| market | termination | exploitability | iterations | wall (s) |",
                  "| --- | --- | --- | --- | --- |"]
        for r in exchange:
            lines.append(f"| {r['market']} | {r['termination']} | {fmt(r['relative_exploitability'])} | "
                         f"{r['iterations']} | {fmt(r['wall_s'])} |")
    if large:
        lines += ["", f"## Large markets: 10^4 consumers x 100 goods (10^6 variables; time limit {LARGE_TIME_LIMIT} s, "
                  "tolerance: relative exploitability 1e-6)", "",
                  "`python benchmarks/games.py --part large`. Relative exploitability: certified, over the total "
                  "budget (Fisher) or the total value p . s = 1 (exchange). `optimal` needs 1e-9; "
                  "`feasible_within_gap` is within the requested 1e-6. Wall time includes building the result "
                  "(not the imports); load average after each run.", "",
                  "| market | method | termination | relative exploitability | iterations | wall (s) | load |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in large:
            lines.append(f"| {r['market']} | {r['method']} | {r['termination']} | "
                         f"{fmt(r['relative_exploitability'])} | {r['iterations']} | {fmt(r['wall_s'])} | "
                         f"{r['load']:.1f} |")
        lines += ["", A10E_NOTE]
    lines += ["", "![exploitability against time](games.png)", "", "![markets](games_markets.png)", "",
              "![exchange markets](games_exchange.png)", ""]
    (RESULTS / "games.md").write_text("\n".join(lines))
    plot(static, markets + list(polish) + list(exchange))


def plot(static, markets):
    """The figures, drawn by plots.py from games.json (written just before)."""
    from plots import figure, games_exchange, games_markets, games_static
    for fn, png in ((games_static, "games.png"), (games_markets, "games_markets.png"),
                    (games_exchange, "games_exchange.png")):
        figure(fn, RESULTS / "games.json", RESULTS / png)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 200 x 200 market instead of 1000 x 1000")
    parser.add_argument("--part", choices=("all", "static", "markets", "polish", "exchange", "large", "report"),
                        default="all",
                        help="run one part and keep the others from the existing games.json ('report': only redraw)")
    args = parser.parse_args(argv)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": cpu_name(), "cpus": os.cpu_count(), "load": os.getloadavg()[0],
            "python": platform.python_version()}
    old = json.loads((RESULTS / "games.json").read_text()) if (RESULTS / "games.json").exists() else {}
    static = ([row for name, make in games().items() for row in run_static(name, make)]
              if args.part in ("all", "static") else old.get("static", []))
    markets = run_markets(200 if args.quick else 1000) if args.part in ("all", "markets") else old.get("markets", [])
    polish = (run_polish((200,) if args.quick else (200, 1000)) if args.part in ("all", "polish")
              else old.get("polish", []))
    exchange = (run_exchange((50, 200) if args.quick else (50, 200, 1000)) if args.part in ("all", "exchange")
                else old.get("exchange", []))
    large = run_large() if args.part in ("all", "large") else old.get("large", [])
    if args.part == "report":
        meta = old.get("meta", meta)
    else:
        when = {"date": meta["date"], "load": meta["load"]}
        first = {"date": old.get("meta", {}).get("date"), "load": old.get("meta", {}).get("load", 0.0)}
        meta["parts"] = {part: (when if args.part in ("all", part)
                                else old.get("meta", {}).get("parts", {}).get(part, first))
                         for part in ("static", "markets", "polish", "exchange", "large")}
    write(static, markets, meta, polish, exchange, large)
    print(f"wrote {RESULTS / 'games.md'}")


if __name__ == "__main__":
    main()
