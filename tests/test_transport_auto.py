"""The transport default ``auto``: which method it runs, why, and how it hands options on.

References: each chosen method run directly with the same options (the same plan and objective),
the registry's own option schemas (every option of approx, exact and bottleneck is one of auto's).
"""
import json

import numpy as np
import pytest

import solvopt.transport.auto as auto_module
from solvopt import ModelError
from solvopt.cli import main
from solvopt.core.registry import get_solver
from solvopt.dsl import Transport
from solvopt.transport.auto import DENSE_PAIRS, EXACT_PAIRS, MATRIX_PAIRS, auto_decision


def _points(seed, n, m, d=2):
    rng = np.random.default_rng(seed)
    return rng.random((n, d)), rng.random((m, d))


def test_auto_is_the_default_of_the_python_model_and_the_cli(tmp_path, capsys):
    assert get_solver("transport").name == "auto"
    x, y = _points(0, 30, 20)
    result = Transport(x, y).solve()
    assert result.method == "auto" and result.stats["auto_method"] == "exact"
    assert "pairs" in result.stats["auto_reason"] and result.termination.value == "optimal"
    assert result.objective == pytest.approx(Transport(x, y).solve("exact").objective, rel=1e-12)
    path = tmp_path / "pts.npz"
    np.savez(path, x=x, y=y)
    assert main(["solve", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.splitlines()[0])
    assert doc["method"] == "auto" and doc["stats"]["auto_method"] == "exact"
    assert doc["objective"] == pytest.approx(result.objective, rel=1e-12)


def test_the_choice_follows_the_measured_rule():
    line = Transport(np.arange(5.0), np.arange(4.0) + 0.5, p="inf")
    assert auto_decision(line)[0] == "1d"
    x, y = _points(1, 40, 40)
    assert auto_decision(Transport(x, y, p="inf"))[0] == "bottleneck"          # tree path, uniform square
    general = Transport(x, y, a=np.linspace(1, 2, 40), b=np.linspace(2, 1, 40), p="inf")
    assert auto_decision(general)[0] == "bottleneck"                            # tree path, general masses
    taxicab = Transport(x, y, p="inf", metric=lambda u, v: np.abs(u[:, None] - v[None]).sum(-1))
    assert auto_decision(taxicab)[0] == "exact"                                 # a callable: the dense search
    dist = np.sqrt(((x[:, None] - y[None]) ** 2).sum(-1))
    assert auto_decision(Transport(distance=dist, p="inf"))[0] == "exact"      # a matrix: the dense search
    assert DENSE_PAIRS >= MATRIX_PAIRS >= EXACT_PAIRS


def test_beyond_the_crossover_points_run_sparse_exact(monkeypatch):
    monkeypatch.setattr(auto_module, "DENSE_PAIRS", 300 * 300)         # the crossover, small for the test
    side = 301
    rng = np.random.default_rng(2)
    x, y = rng.random((side, 2)), rng.random((side, 2))
    a, b = rng.uniform(0.5, 1.5, side), rng.uniform(0.5, 1.5, side)
    model = Transport(x, y, a=a, b=b * a.sum() / b.sum(), p=2)
    result = model.solve()
    assert result.stats["auto_method"] == "sparse-exact" and "pricing" in result.stats["auto_reason"]
    assert result.termination.value == "optimal"
    assert result.objective == pytest.approx(model.solve("exact", engine="highs").objective, rel=1e-6)


def test_beyond_the_crossover_a_cost_matrix_runs_approx_with_its_options(monkeypatch):
    monkeypatch.setattr(auto_module, "MATRIX_PAIRS", 300 * 300)
    side = 301
    rng = np.random.default_rng(2)
    x, y = rng.random((side, 2)), rng.random((side, 2))
    a, b = rng.uniform(0.5, 1.5, side), rng.uniform(0.5, 1.5, side)
    cost = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    model = Transport(cost=cost, a=a, b=b * a.sum() / b.sum(), p=2)
    options = dict(centres=5, certificate="factor", engine="simplex", improve=False, seed=3)
    result = model.solve(**options)
    assert result.stats["auto_method"] == "approx" and "approx" in result.stats["auto_reason"]
    assert result.stats["centres"] == 5 and "auto_unused" not in result.stats
    direct = model.solve("approx", **options)
    assert result.objective == direct.objective and result.bound == direct.bound
    assert result.termination == direct.termination and result.stats["factor"] == direct.stats["factor"]


def test_options_of_the_other_method_are_reported_not_silently_dropped():
    x, y = _points(3, 25, 25)
    model = Transport(x, y)
    result = model.solve(centres=4, certificate="factor")           # approx's options; exact runs
    assert result.stats["auto_method"] == "exact"
    unused = " ".join(result.stats["auto_unused"])
    assert "centres=4" in unused and "certificate='factor'" in unused
    flow = model.solve(assignment=False, engine="highs")              # exact's options reach exact
    assert flow.stats["engine"] == "highs" and "auto_unused" not in flow.stats
    assert flow.objective == pytest.approx(model.solve("exact", assignment=False, engine="highs").objective, rel=1e-12)
    hk = Transport(x, y, p="inf").solve(engine="hopcroft-karp")       # a bottleneck engine, bottleneck runs
    assert hk.stats["auto_method"] == "bottleneck" and "auto_unused" not in hk.stats
    assert hk.objective == Transport(x, y, p="inf").solve("bottleneck", engine="hopcroft-karp").objective
    skipped = model.solve(engine="scipy")                             # valid for bottleneck only
    assert "engine='scipy'" in " ".join(skipped.stats["auto_unused"])


def test_an_engine_no_method_has_is_a_clear_error(capsys, tmp_path):
    x, y = _points(4, 10, 8)
    with pytest.raises(ModelError,
                       match="option 'engine' of transport/auto must be one of .*'simplex'.*'hopcroft-karp'"):
        Transport(x, y).solve(engine="bogus")
    with pytest.raises(ModelError, match="unknown option 'nope'"):
        Transport(x, y).solve(nope=1)
    path = tmp_path / "pts.npz"
    np.savez(path, x=x, y=y)
    assert main(["solve", str(path), "--engine", "bogus"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "option 'engine'" in err[0]


def test_auto_schema_is_the_union_of_its_methods_options():
    auto = get_solver("transport", "auto")
    for name in ("approx", "exact", "bottleneck"):
        for opt in get_solver("transport", name).options:
            mine = auto.option(opt.name)
            assert mine is not None and mine.default == opt.default, (name, opt.name)
            assert opt.choices is None or set(opt.choices) <= set(mine.choices)
            assert name in mine.help
