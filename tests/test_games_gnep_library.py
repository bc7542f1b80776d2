"""The Facchinei-Kanzow GNEP library (solvopt.games.gnep_library): data, files, solves, checks.

Every solved point is verified independently of solvopt: each player's best response is
computed by scipy (SLSQP over the problem's original bounds and linear rows, the cost and its
gradient as plain NumPy from the appendix's formulas), and its regret is compared with the
certified exploitability (which must bound it) and with 1e-5.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from solvopt.core.errors import ModelError
from solvopt.games.gnep_library import GENERAL, NAMES, NONCONCAVE, NONLINEAR, problem, problems

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDER = ROOT / "instances" / "games" / "gnep"

def best_response_regrets(p, x) -> np.ndarray:
    return p.scipy_regrets(x)


def feasible(p, x, tol=1e-7) -> bool:
    if np.any(x < p.lb - tol) or np.any(x > p.ub + tol):
        return False
    return all(np.all(r.A @ x >= r.lo - tol) and np.all(r.A @ x <= r.hi + tol) for r in p.rows)


# --- data --------------------------------------------------------------------------------------
def test_library_has_the_twelve_instances():
    assert NAMES == ["A.1", "A.11", "A.12", "A.13", "A.14", "A.15", "A.16a", "A.16b", "A.16c", "A.16d",
                     "A.17", "A.18"]
    with pytest.raises(ModelError, match="unknown problem"):
        problem("A.10")


@pytest.mark.parametrize("name", NAMES)
def test_gradients_are_exact_and_costs_convex_in_own_action(name):
    """The hand-written gradients match central differences; each cost is convex along own directions."""
    p = problem(name)
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(p.lb), p.lb, -5.0)
    hi = np.where(np.isfinite(p.ub), np.minimum(p.ub, lo + 50.0), lo + 10.0)
    for _ in range(3):
        x = lo + (hi - lo) * rng.uniform(0.05, 0.95, p.n)
        for i, cols in enumerate(p.blocks):
            g = p.cost_gradient(i, x)
            h = 1e-6 * max(1.0, float(np.abs(x).max()))
            fd = np.array([(p.cost(i, x + h * e) - p.cost(i, x - h * e)) / (2 * h) for e in np.eye(p.n)])
            assert np.allclose(g, fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max()))
            d = np.zeros(p.n)
            d[cols] = rng.normal(size=len(cols))
            t = 1e-2 * (hi - lo).min()
            mid = p.cost(i, x)
            assert p.cost(i, x + t * d) + p.cost(i, x - t * d) - 2 * mid >= -1e-9 * max(1.0, abs(mid))


@pytest.mark.parametrize("name", NAMES)
def test_published_point_is_nearly_an_equilibrium(name):
    """The appendix's point (where printed) is feasible to 1e-3 and its scipy regrets are small."""
    p = problem(name)
    if p.published is None:
        pytest.skip("no single published point (a set of equilibria)")
    assert feasible(p, p.published, tol=1e-3)
    scale = max(1.0, max(abs(p.cost(i, p.published)) for i in range(len(p.sizes))))
    assert np.all(best_response_regrets(p, p.published) <= 1e-3 * scale)


def test_instance_files_match_the_library():
    """instances/games/gnep holds every problem (the twelve, the GENERAL five, the NONLINEAR three and the
    NONCONCAVE one), equal to what the factories state."""
    library = {p.file_stem: p for p in problems() + [problem(name) for name in (*GENERAL, *NONLINEAR, *NONCONCAVE)]}
    files = {f.stem: f for f in FOLDER.glob("*.json")}
    assert set(files) == set(library) and len(files) == 21
    for stem, path in files.items():
        assert json.loads(path.read_text()) == json.loads(json.dumps(library[stem].instance()))


@pytest.mark.parametrize("stem", ["fk_a13", "fk_a18"])
def test_instance_files_load_through_the_reader(stem):
    from solvopt.games.instance import model_from_instance
    from solvopt.io.base import read_instance
    path = FOLDER / f"{stem}.json"
    model = model_from_instance(read_instance(str(path)))
    p = next(q for q in problems() if q.file_stem == stem)
    data = model.data()
    x = np.clip(np.arange(p.n, dtype=float), p.lb, np.minimum(p.ub, 20.0))
    for i, u in enumerate(data.utilities):
        assert np.isclose(-u.value(x), p.cost(i, x), rtol=1e-12, atol=1e-12)
    assert data.A.shape[1] == p.n


def test_a_problem_without_a_json_statement_says_so():
    p = problem("A.16a")
    p.expressions = None
    with pytest.raises(ModelError, match="no JSON statement"):
        p.instance()


# --- solves -----------------------------------------------------------------------------------
def _solve_and_check(name, **limits):
    p = problem(name)
    kw = {} if p.start is None else {"start": p.start}
    result = p.model().solve(**limits, **kw)
    assert "actions" in result.solution, f"{name}: no point returned ({result.termination.value})"
    x = np.asarray(result.solution["actions"], dtype=float)
    assert feasible(p, x)
    regrets = best_response_regrets(p, x)
    # the certified exploitability is an upper bound of every true regret (scipy finds a lower bound)
    scale = result.stats.get("payoff_scale", 1.0)
    assert regrets.sum() <= result.objective + 1e-9 * scale
    return p, result, x, regrets


@pytest.mark.parametrize("name", NAMES)
def test_default_method_solves_to_a_verified_equilibrium(name):
    p, result, x, regrets = _solve_and_check(name, time_limit=60.0)     # a safety net only
    assert result.termination.value == "optimal"
    assert np.all(regrets <= 1e-5)
    if p.unique and p.published is not None:
        assert np.abs(x - p.published).max() <= 5e-3 * max(1.0, np.abs(p.published).max())


@pytest.mark.parametrize("name", ["A.1", "A.14", "A.16a", "A.15"])
def test_certificate_is_honest_after_a_few_iterations_without_the_polish(name):
    """Without the face-Newton polish, after five iterations: the point is feasible and its certificate
    bounds the true regrets (the extragradient iterates alone, far from the equilibrium)."""
    p, result, x, regrets = _solve_and_check(name, iteration_limit=5, check_every=5, polish=False, time_limit=120.0)
    assert result.termination.value in ("iteration_limit", "optimal")
    if result.objective <= 1e-6:
        assert np.all(regrets <= 1e-5)


def test_a_start_outside_the_domain_is_moved_inside():
    """A.16's cost is undefined at S = 0, the default start: the solve moves the start inside, says so, and
    still reaches the certified VE."""
    p = problem("A.16a")
    lines = []
    result = p.model().solve(time_limit=60.0, log=lines.append)
    assert any("outside a utility's domain" in line for line in lines)
    assert result.termination.value == "optimal"
    x = np.asarray(result.solution["actions"])
    assert np.abs(x - p.published).max() <= 1e-3 * np.abs(p.published).max()
