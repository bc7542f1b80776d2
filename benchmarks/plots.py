"""Figures drawn from the recorded benchmark results (the JSON in results/); no solver runs here.

- ``time_vs_scenarios``: the DP benchmarks (``dp_split.json`` from dp.py, ``dp_engine.json`` from
  dp_engine.py): median wall time against the number of scenarios on log-log axes, one line per
  backend / method, one panel per instance (or case) and mode (kernel only, end to end);
- ``performance_profile``: a Dolan-More performance profile of a k-HC comparison (``khc.json``,
  ``khc_subset12_20s.json`` from khc.py): for each method, the share of instances it solved within
  a factor tau of the fastest method on that instance (unsolved: never), against log2 tau;
- ``transport_time`` / ``transport_ratio`` (``transport.json``): seconds against n for the
  approximation and the exact solvers, one panel per instance kind and p; the measured ratio to
  the exact optimum with the proven factor 3 for scale;
- ``transport_scaling`` (``transport.json``): seconds against n for p in {1, 2}, ours beside POT's
  ot.emd and GeomLoss, with n log n and n^2 guides;
- ``games_static`` / ``games_markets`` / ``games_exchange`` (``games.json``): certified
  exploitability against time for the static pseudo-games, the linear Fisher market (the exact
  polish against first-order methods) and the linear exchange markets.

One message per figure, labels readable at page width, legends without commit hashes.

matplotlib (the ``bench`` extra) is imported inside the functions only, with the Agg backend.

    python benchmarks/plots.py          # (re)draws every figure whose JSON is recorded; ~10 s
    python benchmarks/plots.py khc      # only the figures whose JSON name contains "khc"
"""
from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SOLVED_GAP = 1e-6        # khc.py's rule: proved optimal, or relative gap <= 1e-6

# the dp.py method labels -> (legend label, colour, marker)
SPLIT_METHODS = {
    "numpy": ("NumPy reference", "tab:gray", "s"),
    "anchor": ("straightforward Numba (baseline, 2 threads)", "tab:orange", "^"),
    "ours 1t": ("ours, 1 thread", "tab:blue", "o"),
    "ours 2t": ("ours, 2 threads", "tab:green", "D"),
    "cuda": ("CuPy (CUDA)", "tab:red", "v"),
}
ENGINE_BACKENDS = {
    "numpy": ("NumPy reference", "tab:gray", "s"),
    "numba-1t": ("Numba, 1 thread", "tab:blue", "o"),
    "numba-2t": ("Numba, 2 threads", "tab:green", "D"),
    "cuda": ("CuPy (CUDA)", "tab:red", "v"),
}
MODES = {"kernel": "kernel only", "e2e": "end to end"}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def pyplot_or_none():
    """matplotlib.pyplot on the Agg backend, or None (said on stderr) without the ``bench`` extra."""
    try:
        return _pyplot()
    except ImportError:
        print("matplotlib is not installed (the bench extra): tables only, no figure", file=sys.stderr)
        return None


def _machine(meta: dict) -> str:
    """The date and machine line of a results file, from whichever fields it has."""
    parts = [meta.get("date")]
    if "machine" in meta:
        parts.append(meta["machine"])
    else:
        cpu = meta.get("cpu")
        if cpu:
            parts.append(f"{cpu}, {meta['cores']} cores" if meta.get("cores") else cpu)
        for key in ("load_start", "load_average"):
            if isinstance(meta.get(key), (int, float)):
                parts.append(f"load average {meta[key]:.1f}" + (" at start" if key == "load_start" else ""))
        if meta.get("gpu"):
            parts.append(f"GPU: {meta['gpu']}")
    if meta.get("quick"):
        parts.append("QUICK run")
    return "; ".join(p for p in parts if p)


# --- the DP: time against scenarios ------------------------------------------------------------------------
def _dp_series(data: dict) -> tuple[str, dict, dict] | None:
    """(kind, {(mode, panel): {method: [(scenarios, seconds)]}}, styles) from either DP results file,
    or None when the rows carry no scenario counts."""
    rows = data.get("rows") or []
    panels: dict[tuple[str, str], dict[str, list]] = {}
    if rows and all("S" in r and "seconds" in r for r in rows):             # dp.py (dp_split.json)
        for r in rows:
            for label, seconds in r["seconds"].items():
                if seconds is None:                    # skipped: over the time budget or no room for the matrix
                    continue
                mode, method = label.split(" ", 1)
                panels.setdefault((mode, f"{r['instance']} (n = {r['n']})"), {}).setdefault(method, []).append(
                    (r["S"], seconds))
        return "split", panels, SPLIT_METHODS
    if rows and all("scenarios" in r and "ns_per_transition" in r and "transitions" in r for r in rows):
        for r in rows:                                 # dp_engine.py: median ns/transition x transitions = median s
            for backend, ns in r["ns_per_transition"].items():
                panels.setdefault((r["mode"], r["case"]), {}).setdefault(backend, []).append(
                    (r["scenarios"], ns * r["transitions"] * 1e-9))
        return "engine", panels, ENGINE_BACKENDS
    return None


def time_vs_scenarios(json_path, png_path) -> bool:
    """Median wall time against the number of scenarios (log-log) from dp_split.json or dp_engine.json:
    one row of panels per mode (kernel only, end to end), one panel per instance or case, one line per
    backend. Returns False (and says why) when the file has no scenario counts."""
    json_path, png_path = Path(json_path), Path(png_path)
    data = json.loads(json_path.read_text())
    found = _dp_series(data)
    if found is None:
        print(f"{json_path.name}: no rows with scenario counts; no figure", file=sys.stderr)
        return False
    kind, panels, styles = found
    plt = _pyplot()
    modes = [m for m in MODES if any(mode == m for mode, _ in panels)]
    columns = list(dict.fromkeys(panel for _, panel in panels))
    width = max(11.0, 3.4 * len(columns) + 0.6)           # a quick run has fewer panels: keep room for the legend
    fig, axes = plt.subplots(len(modes), len(columns), figsize=(width, 3.2 * len(modes) + 1.5),
                             sharex=True, sharey=True, squeeze=False)
    handles = {}
    for i, mode in enumerate(modes):
        for j, panel in enumerate(columns):
            ax = axes[i][j]
            for method, points in panels.get((mode, panel), {}).items():
                label, colour, marker = styles.get(method, (method, None, "x"))
                points.sort()
                (line,) = ax.loglog(*zip(*points), marker=marker, color=colour, label=label, markersize=5)
                handles.setdefault(label, line)
            ax.set_title(f"{panel}\n{MODES[mode]}", fontsize=9)
            ax.grid(True, which="major", alpha=0.4)
            ax.grid(True, which="minor", alpha=0.12)
            if j == 0:
                ax.set_ylabel("wall time, s (median)")
            if i == len(modes) - 1:
                ax.set_xlabel("scenarios")
    order = [s[0] for s in styles.values() if s[0] in handles] + [h for h in handles if h not in
                                                                 [s[0] for s in styles.values()]]
    fig.legend([handles[h] for h in order], order, loc="lower center", ncol=len(order), fontsize=9, frameon=False)
    meta = data.get("meta", {})
    if kind == "split":
        title = "Stochastic CVRP split (dp.py): time against scenarios"
        repeats = f"{meta['repeats']} repeats" if meta.get("repeats") else "repeats"
        note = (f"Medians of {repeats} (1 from 10^6 scenarios). Missing points: skipped, over the time budget or "
                "the demand matrix would not fit in memory (the fused kernel needs none).")
    else:
        title = "Min-plus DP engine (dp_engine.py): time against scenarios"
        note = ("Median seconds = recorded median ns per transition x transitions. Kernel-only runs with "
                "per-scenario costs stop at one chunk (16384 scenarios). The 2 cores are shared with other jobs: "
                "single points can be off by 2x.")
    chars = int(width * 12)
    fig.suptitle(f"{title}\n" + textwrap.fill(_machine(meta), chars), fontsize=10)
    fig.text(0.5, 0.055, textwrap.fill(note, int(width * 17)), ha="center", va="center", fontsize=8, color="0.3")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    print(f"wrote {png_path}")
    return True


# --- k-HC: performance profile -------------------------------------------------------------------------------
def _solved(row: dict) -> bool:
    return row.get("termination") == "optimal" or (row.get("gap") is not None and row["gap"] <= SOLVED_GAP)


def profile_ratios(runs: dict[str, dict[str, dict]], methods: list[str]) -> dict[str, list[float]]:
    """method -> its time / the best time on each instance (math.inf when it did not solve the instance,
    or when no method did)."""
    ratios = {m: [] for m in methods}
    for per_method in runs.values():
        times = {m: per_method[m]["time"] for m in methods if m in per_method and _solved(per_method[m])}
        best = min(times.values(), default=None)
        for m in methods:
            ratios[m].append(times[m] / best if m in times and best and best > 0 else
                             (1.0 if m in times else math.inf))
    return ratios


def performance_profile(json_path, png_path) -> bool:
    """Dolan-More performance profile of the methods of a khc.py results file: the share of instances each
    method solved within a factor tau of the fastest, against log2 tau (one step line per method)."""
    json_path, png_path = Path(json_path), Path(png_path)
    data = json.loads(json_path.read_text())
    runs = data.get("runs") or {}
    meta = data.get("meta", {})
    methods = meta.get("methods") or list(dict.fromkeys(m for per in runs.values() for m in per))
    if not runs or not methods:
        print(f"{json_path.name}: no runs; no figure", file=sys.stderr)
        return False
    plt = _pyplot()
    ratios = profile_ratios(runs, methods)
    n = len(runs)
    finite = [math.log2(r) for rs in ratios.values() for r in rs if math.isfinite(r)]
    right = max(1.0, math.ceil(max(finite, default=1.0))) + 0.5
    fig, ax = plt.subplots(figsize=(10, 5))
    styles = ["-", "--", "-.", ":"]
    colours = plt.get_cmap("tab10").colors
    for k, m in enumerate(methods):
        xs = sorted(math.log2(r) for r in ratios[m] if math.isfinite(r))
        solved = len(xs)
        # rho(tau) steps up by 1/n at each ratio; flat to the right edge; unsolved instances never count
        step_x = [0.0] + xs + [right]
        step_y = [0.0] + [(i + 1) / n for i in range(solved)] + [solved / n]
        ax.step(step_x, step_y, where="post", linestyle=styles[k % len(styles)], linewidth=2,
                color=colours[k % len(colours)],
                label=f"{m} ({solved}/{n} solved)")
    ax.set_xlim(-0.15, right)
    ax.set_ylim(0, 1.04)
    ax.set_xlabel(r"$\log_2 \tau$  (time within a factor $\tau$ of the fastest method on the instance)")
    ax.set_ylabel(r"share of instances, $\rho(\tau)$")
    ax.grid(True, alpha=0.35)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, title="method (solved in the limit)",
              title_fontsize=9, frameon=False)
    limit = meta.get("time_limit")
    head = f"k-HC2 exact methods: performance profile, {n} instances" + (f", {limit:g} s limit" if limit else "")
    threads = f", {meta['threads']} threads" if meta.get("threads") else ""
    ax.set_title(f"{head}{threads}\n{_machine(meta)}", fontsize=10)
    fig.text(0.5, 0.01, f"Solved: optimality proved or relative gap <= {SOLVED_GAP:g}; unsolved runs (time limit, "
             "errors) never count. Wall times on a shared 2-core machine.", ha="center", fontsize=8, color="0.3")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    print(f"wrote {png_path}")
    return True


# --- shared look: one message per figure, labels readable at page width --------------------------------------
READABLE = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "xtick.labelsize": 11,
            "ytick.labelsize": 11, "legend.fontsize": 11, "figure.titlesize": 14}


def _clean_label(text: str) -> str:
    """A legend label without commit hashes or other parenthesised provenance: 'before (c706dff)' -> 'before'."""
    import re
    text = re.sub(r"\s*\((?=[^)]*\b[0-9a-f]{7,40}\b)[^)]*\)", "", str(text))
    return re.sub(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", "", text).strip()


def _subtitle(fig, meta: dict) -> None:
    """The date and machine, short, at the foot of the figure."""
    machine = str(meta.get("machine") or "").split(";")[0].split(", Python")[0]
    line = _machine({"date": meta.get("date"), "machine": machine or None, "cpu": meta.get("cpu"),
                     "cores": meta.get("cores")})
    fig.text(0.5, 0.005, textwrap.shorten(line, 120), ha="center", va="bottom", fontsize=9, color="0.4")


# --- W_p transport: time against n; measured ratio against n ---------------------------------------------
TRANSPORT_CASES = {"uniform2": "uniform points, d = 2", "uniform3": "uniform points, d = 3",
                   "pixels": "image colours (d = 3)"}
TRANSPORT_METHODS = {  # key in a row -> (legend label, colour, marker, line style)
    "ours": ("ours (approx, proven factor 3)", "tab:blue", "o", "-"),
    "emd": ("exact: POT ot.emd", "tab:orange", "s", "-"),
    "lsa": ("exact: linear_sum_assignment", "tab:green", "^", "-"),
    "bottleneck": ("exact: bottleneck search (p = inf)", "tab:red", "D", "-"),
    "geomloss": ("GeomLoss Sinkhorn (multiscale, entropic: no bound)", "tab:cyan", "v", "-"),
    "floor": ("floor: one pass over all n^2 distances", "0.45", None, "--"),
}


def _save(plt, fig, png_path, title: str, meta: dict, *, y: float, rect: tuple) -> None:
    """The figures' common ending: title, machine subtitle, layout, PNG at 100 dpi, close, say so."""
    fig.suptitle(title, y=y)
    _subtitle(fig, meta)
    fig.tight_layout(rect=rect)
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    print(f"wrote {png_path}", file=sys.stderr)


def _p_key(p) -> float:
    return math.inf if str(p) == "inf" else float(p)


def _p_label(p) -> str:
    return "p = inf" if str(p) == "inf" else f"p = {float(p):g}"


def _seconds(rows: list, key: str) -> list:
    """(n, seconds) of method ``key`` in the rows that timed it."""
    return [(r["n"], r[key]["seconds"]) for r in rows if isinstance(r.get(key), dict)
            and r[key].get("seconds") is not None]


def _time_panel(ax, case: str, p: str, *, first_row: bool, first_column: bool, last_row: bool) -> None:
    """Log-log axes of one (case, p) panel of a transport time figure, labelled at the grid's edges."""
    ax.set(xscale="log", yscale="log")
    ax.grid(True, which="major", color="0.9")
    if first_row:
        ax.set_title(_p_label(p))
    if first_column:
        ax.set_ylabel(f"{TRANSPORT_CASES[case]}\nseconds")
    if last_row:
        ax.set_xlabel("n (points per side)")


def _legend_handles(axes) -> dict:
    """Every panel's legend entries, once each (label -> handle), in the order first drawn."""
    handles: dict = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    return handles


def _transport_panels(plt, rows, width: float, height: float):
    """One panel per (instance kind, p) of transport.json's rows: the figure, its axes and, per panel,
    (axes, its rows sorted by n, (case, p), the grid edges it lies on: ``_time_panel``'s keywords)."""
    cases = [c for c in TRANSPORT_CASES if any(r["case"] == c for r in rows)]
    ps = sorted({str(r["p"]) for r in rows}, key=_p_key)
    fig, axes = plt.subplots(len(cases), len(ps), figsize=(width * len(ps), height * len(cases) + 1.2),
                             squeeze=False, sharex=True)
    panels = []
    for i, case in enumerate(cases):
        for j, p in enumerate(ps):
            sel = sorted((r for r in rows if r["case"] == case and str(r["p"]) == p), key=lambda r: r["n"])
            edges = {"first_row": i == 0, "first_column": j == 0, "last_row": i == len(cases) - 1}
            panels.append((axes[i][j], sel, (case, p), edges))
    return fig, axes, panels


def transport_time(json_path, png_path) -> bool:
    """transport.json: seconds against n, one panel per (instance kind, p), log-log; one legend."""
    plt = _pyplot()
    data = json.loads(Path(json_path).read_text())
    with plt.rc_context(READABLE):
        fig, axes, panels = _transport_panels(plt, data["rows"], 4.6, 3.6)
        for ax, sel, where, edges in panels:
            for key, (label, colour, marker, style) in TRANSPORT_METHODS.items():
                pts = _seconds(sel, key)
                if pts:
                    ax.plot(*zip(*pts), style, color=colour, marker=marker, ms=5, lw=2, label=label)
            _time_panel(ax, *where, **edges)
        handles = _legend_handles(axes)
        order = [TRANSPORT_METHODS[k][0] for k in TRANSPORT_METHODS if TRANSPORT_METHODS[k][0] in handles]
        fig.legend([handles[lab] for lab in order], order, loc="upper center", ncol=3, frameon=False,
                   bbox_to_anchor=(0.5, 0.965))
        _save(plt, fig, png_path, "W_p transport: the approximation against exact solvers (time, log-log)",
              data.get("meta", {}), y=0.995, rect=(0, 0.02, 1, 0.90))
    return True


def transport_ratio(json_path, png_path) -> bool:
    """transport.json: the measured ratio W_p(ours) / W_p(exact) against n, one panel per p, one line
    per instance kind, with the proven factor 3 drawn for scale."""
    plt = _pyplot()
    data = json.loads(Path(json_path).read_text())
    rows = data["rows"]
    ps = sorted({str(r["p"]) for r in rows}, key=_p_key)
    colours = {"uniform2": ("tab:blue", "o"), "uniform3": ("tab:purple", "s"), "pixels": ("tab:brown", "^")}
    with plt.rc_context(READABLE):
        fig, axes = plt.subplots(1, len(ps), figsize=(4.4 * len(ps), 5.4), squeeze=False, sharey=True)
        for ax, p in zip(axes[0], ps):
            for case, label in TRANSPORT_CASES.items():
                pts = sorted((r["n"], r["ratio"]) for r in rows
                             if r["case"] == case and str(r["p"]) == p and r.get("ratio") is not None)
                if pts:
                    colour, marker = colours[case]
                    ax.plot(*zip(*pts), "-", color=colour, marker=marker, ms=6, lw=2, label=label)
            ax.axhline(3.0, color="tab:red", ls="--", lw=1.5)
            ax.axhline(1.0, color="0.5", lw=1)
            ax.text(0.02, 3.0, "proven bound: 3", color="tab:red", va="bottom", transform=ax.get_yaxis_transform())
            ax.set(xscale="log", ylim=(0.9, 3.3), title=_p_label(p), xlabel="n (points per side)")
            ax.grid(True, which="major", color="0.9")
        axes[0][0].set_ylabel("measured W_p(ours) / W_p(exact)")
        handles, labels = axes[0][0].get_legend_handles_labels()
        for ax in axes[0][1:]:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="upper center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 0.92))
        _save(plt, fig, png_path, "W_p transport: measured ratio to the exact optimum (where an exact solver ran)",
              data.get("meta", {}), y=0.99, rect=(0, 0.03, 1, 0.83))
    return True


SCALING_METHODS = {  # transport_scaling: key in a row -> (legend label, colour, marker); optional keys drawn if present
    "ours": ("ours: approx (certified factor)", "tab:blue", "o"),
    "exact": ("ours: exact", "tab:olive", "P"),
    "sparse_exact": ("ours: sparse exact", "tab:pink", "X"),
    "emd": ("POT ot.emd (dense, exact)", "tab:orange", "s"),
    "geomloss": ("GeomLoss Sinkhorn, multiscale (entropic)", "tab:cyan", "v"),
}


def _guides(ax, n0: float, t0: float, n1: float) -> None:
    """The n log n and n^2 guides, both through (n0, t0), drawn out to n1."""
    ns = [n0 * (n1 / n0) ** (k / 20) for k in range(21)]
    ax.plot(ns, [t0 * n * math.log(n) / (n0 * math.log(n0)) for n in ns], ":", color="0.35", lw=1.5,
            label="guide: n log n")
    ax.plot(ns, [t0 * (n / n0) ** 2 for n in ns], "--", color="0.6", lw=1.5, label="guide: n^2")


def transport_scaling(json_path, png_path) -> bool:
    """transport.json: seconds against n for p in {1, 2}, log-log, ours beside ot.emd and GeomLoss, with
    n log n and n^2 guides through ours' smallest size; one panel per (instance kind, p)."""
    plt = _pyplot()
    data = json.loads(Path(json_path).read_text())
    rows = [r for r in data["rows"] if str(r["p"]) in ("1.0", "2.0", "1", "2")]
    with plt.rc_context(READABLE):
        fig, axes, panels = _transport_panels(plt, rows, 5.2, 3.8)
        for ax, sel, where, edges in panels:
            ours = [(r["n"], r["ours"]["seconds"]) for r in sel if isinstance(r.get("ours"), dict)]
            if ours:
                _guides(ax, *ours[0], max(r["n"] for r in sel))
            for key, (label, colour, marker) in SCALING_METHODS.items():
                pts = _seconds(sel, key)
                if pts:
                    ax.plot(*zip(*pts), "-", color=colour, marker=marker, ms=6, lw=2, label=label)
            _time_panel(ax, *where, **edges)
        handles = _legend_handles(axes)
        fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=3, frameon=False,
                   bbox_to_anchor=(0.5, 0.955))
        _save(plt, fig, png_path, "W_p transport at scale: time against n (log-log), guides through ours' first point",
              data.get("meta", {}), y=0.995, rect=(0, 0.02, 1, 0.93))
    return True


# --- games: certified exploitability against time ----------------------------------------------------------
GAME_TITLES = {"harker": "Harker's game", "river_basin": "river-basin pollution game"}


def _history(row: dict, column: int, floor: float = 1e-16):
    pts = [(h[1], max(max(h[column:]) if column == 2 else h[column], floor)) for h in row.get("history") or []]
    return list(zip(*pts)) if pts else None


def games_static(json_path, png_path) -> bool:
    """games.json: static pseudo-games, max(exploitability, VE gap) against seconds, one panel per game;
    the reference solver's single solve as a vertical line at its time."""
    plt = _pyplot()
    data = json.loads(Path(json_path).read_text())
    static = data.get("static", [])
    games_ = [g for g in GAME_TITLES if any(r["game"] == g for r in static)]
    styles = {"extragradient": ("extragradient", "tab:blue", "-"), "nested": ("nested method", "tab:orange", "-")}
    with plt.rc_context(READABLE):
        fig, axes = plt.subplots(1, len(games_), figsize=(6.2 * len(games_), 4.8), squeeze=False, sharey=True)
        for ax, g in zip(axes[0], games_):
            for r in (r for r in static if r["game"] == g):
                if r["method"] in styles and r.get("history"):
                    label, colour, ls = styles[r["method"]]
                    x, y = _history(r, 2)
                    ax.semilogy(x, y, ls, color=colour, lw=2.2, marker="o", ms=3, label=label)
                elif not r.get("history"):
                    ax.axvline(r["wall_s"], color="0.3", ls=":", lw=2,
                               label=f"{_clean_label(r['method']).split(' (')[0]}: one solve")
            ax.axhline(1e-10, color="0.6", lw=1)
            ax.set(title=GAME_TITLES[g], xlabel="seconds")
            ax.grid(True, which="major", color="0.9")
            ax.legend(loc="upper right")
        axes[0][0].set_ylabel("certified max(exploitability, VE gap)")
        _save(plt, fig, png_path, "Static pseudo-games: both methods certify 1e-10 within about a second",
              data.get("meta", {}), y=0.99, rect=(0, 0.03, 1, 0.95))
    return True


def games_markets(json_path, png_path) -> bool:
    """games.json: the linear Fisher market 1000 x 1000, relative exploitability against seconds for
    Eisenberg-Gale with the exact active-set polish, the earlier polish, and proportional response."""
    plt = _pyplot()
    data = json.loads(Path(json_path).read_text())
    rows = data.get("markets", []) + data.get("polish", [])
    lines = [  # (picks the row, label, colour)
        (lambda r: r["market"] == "linear 1000x1000" and r["method"] == "eisenberg-gale" and "polish" not in r,
         "Eisenberg-Gale + exact active-set polish", "tab:blue"),
        (lambda r: r["market"] == "linear 1000x1000" and str(r.get("polish", "")).startswith("before"),
         "Eisenberg-Gale + the earlier polish", "tab:gray"),
        (lambda r: r["market"] == "linear 1000x1000" and r["method"] == "proportional-response",
         "proportional response", "tab:orange"),
    ]
    with plt.rc_context(READABLE):
        fig, ax = plt.subplots(figsize=(8.5, 5.2))
        for pick, label, colour in lines:
            row = next((r for r in rows if pick(r)), None)
            if row and row.get("history"):
                x, y = _history(row, 2)
                ax.loglog([max(v, 1e-2) for v in x], y, color=colour, lw=2.2, label=label)
        ax.axhline(1e-6, color="0.6", lw=1)
        ax.set(xlabel="seconds (log)", ylabel="relative exploitability (certified)",
               title="Linear Fisher market, 1000 buyers x 1000 goods")
        ax.grid(True, which="major", color="0.9")
        ax.legend(loc="lower left")
        _save(plt, fig, png_path,
              "The exact active-set polish reaches the equilibrium; the others stop at 1e-6 or above",
              data.get("meta", {}), y=0.99, rect=(0, 0.03, 1, 0.95))
    return True


def games_exchange(json_path, png_path) -> bool:
    """games.json: linear exchange markets, relative exploitability against seconds, one line per market."""
    plt = _pyplot()
    data = json.loads(Path(json_path).read_text())
    rows = data.get("exchange", [])
    with plt.rc_context(READABLE):
        fig, ax = plt.subplots(figsize=(8.5, 5.2))
        cmap = plt.get_cmap("viridis")
        for k, r in enumerate(rows):
            if r.get("history"):
                x, y = _history(r, 2)
                name = r["market"].replace("exchange ", "").replace("x", " x ")
                ax.loglog([max(v, 1e-4) for v in x], y, color=cmap(k / max(len(rows) - 1, 1)), lw=2.2,
                          marker="o", ms=4, label=name)
        ax.set(xlabel="seconds (log)", ylabel="relative exploitability (certified)",
               title="Linear exchange (Arrow-Debreu) markets, consumers x goods")
        ax.grid(True, which="major", color="0.9")
        ax.legend(loc="lower left")
        _save(plt, fig, png_path, "Exact equilibria of linear exchange markets in seconds",
              data.get("meta", {}), y=0.99, rect=(0, 0.03, 1, 0.95))
    return True


# --- all figures ------------------------------------------------------------------------------------------------
FIGURES = [
    (time_vs_scenarios, "dp_split.json", "dp_split.png"),
    (time_vs_scenarios, "dp_engine.json", "dp_engine.png"),
    (performance_profile, "khc.json", "khc_profile.png"),
    (performance_profile, "khc_subset12_20s.json", "khc_subset12_20s_profile.png"),
    (transport_time, "transport.json", "transport.png"),
    (transport_ratio, "transport.json", "transport_ratio.png"),
    (transport_scaling, "transport.json", "transport_scaling.png"),
    (games_static, "games.json", "games.png"),
    (games_markets, "games.json", "games_markets.png"),
    (games_exchange, "games.json", "games_exchange.png"),
]


def figure(fn, json_path, png_path) -> bool:
    """Draw one figure (``fn``: time_vs_scenarios or performance_profile); the benchmark scripts call this
    after writing their JSON. False, with a line on stderr, when the file or matplotlib is missing."""
    json_path = Path(json_path)
    if not json_path.is_file():
        print(f"{json_path}: not recorded; skipped", file=sys.stderr)
        return False
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"matplotlib is not installed: no {Path(png_path).name} (pip install -e '.[bench]')", file=sys.stderr)
        return False
    return fn(json_path, png_path)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0
    for fn, source, png in FIGURES:
        if not args or any(a in source for a in args):
            figure(fn, RESULTS / source, RESULTS / png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
