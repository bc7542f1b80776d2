"""``scalar_game`` files: interval enclosures of expression trees, the A.2 file, errors, one reader path.

References: the trees' exact derivatives sampled on the intervals (every sample inside the
enclosure), A.2's hand-written NumPy costs and hand-derived enclosures
(solvopt.games.gnep_library_extra), dense polished grids for the best responses, and the
closed-form equilibrium set of A.2.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.games.expression_bounds import enclose, own_derivative_range
from solvopt.games.expressions import Payoff, parse
from solvopt.games.gnep_library import problem
from solvopt.games.gnep_library_extra import a2_game
from solvopt.games.instance import model_from_instance
from solvopt.games.reader import first_nonfinite
from solvopt.io import read_instance

ROOT = pathlib.Path(__file__).resolve().parents[1]
A2 = ROOT / "instances" / "games" / "gnep" / "fk_a2.json"


def _tree(rng, n, depth):
    """A random tree over n variables (positive leaves, so most powers and logs are defined)."""
    if depth == 0 or rng.uniform() < 0.25:
        kind = rng.integers(3)
        if kind == 0:
            return float(rng.uniform(-2.0, 2.0))
        if kind == 1:
            return {"var": int(rng.integers(n))}
        return {"linear": rng.uniform(-1.0, 1.0, n).tolist(), "constant": float(rng.uniform(-1.0, 3.0))}
    op = ["add", "mul", "pow", "log"][rng.integers(4)]
    if op == "pow":
        p = float(rng.choice([-2.0, -1.0, -0.5, 0.5, 1.5, 2.0, 3.0]))
        return {"op": "pow", "args": [_tree(rng, n, depth - 1), p]}
    if op == "log":
        return {"op": "log", "args": [_tree(rng, n, depth - 1)]}
    return {"op": op, "args": [_tree(rng, n, depth - 1) for _ in range(rng.integers(1, 4))]}


# --- interval enclosures ------------------------------------------------------------------------
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10 ** 6), width=st.sampled_from([1e-9, 1e-4, 0.05, 0.5, 2.0]))
def test_enclosures_hold_every_sampled_value_and_derivative(seed, width):
    rng = np.random.default_rng(seed)
    n = 3
    node = parse(_tree(rng, n, 4), n)
    a = rng.uniform(0.1, 2.0, n)
    k = int(rng.integers(n))
    lo = float(a[k] - width * rng.uniform())
    hi = lo + width
    try:
        (v_lo, v_hi), (d_lo, d_hi) = enclose(node, a, k, lo, hi)
    except ModelError:
        return                            # the interval leaves a domain: refused, never a wrong bound
    assert v_lo <= v_hi and d_lo <= d_hi
    for t in np.r_[lo, hi, rng.uniform(lo, hi, 40)]:
        z = a.copy()
        z[k] = t
        try:
            v, g = node.evaluate(z)
        except ModelError:
            continue
        d = 0.0 if g is None else g[k]
        assert v_lo <= v <= v_hi and d_lo <= d <= d_hi, (t, v, d, (v_lo, v_hi), (d_lo, d_hi))


def test_enclosures_shrink_to_the_derivative():
    """On narrow intervals the enclosure is the derivative to a few ulps (so branch and bound closes)."""
    tree = problem("A.2").expressions[1]
    node = parse(tree, 10)
    a = np.full(10, 0.05)
    _, g = node.evaluate(a)
    for width in (1e-3, 1e-6, 1e-9):
        _, (d_lo, d_hi) = enclose(node, a, 1, a[1], a[1] + width)
        assert d_lo <= g[1] <= d_hi
        assert d_hi - d_lo <= 50 * width * max(1.0, abs(g[1]))


def test_an_interval_leaving_a_domain_is_one_line_naming_the_node():
    node = parse({"op": "log", "args": [{"var": 0}]}, 1, ("players", 0, "utility", "expression"))
    with pytest.raises(ModelError, match=r"players\[0\].utility.expression: log of an interval reaching"):
        enclose(node, np.array([0.5]), 0, -1.0, 1.0)
    node = parse({"op": "pow", "args": [{"var": 0}, -1.0]}, 1)
    with pytest.raises(ModelError, match="power -1 of an interval holding 0"):
        enclose(node, np.array([0.5]), 0, -1.0, 1.0)


def test_quadratic_part_enters_the_enclosure():
    Q = np.array([[-2.0, 1.0], [1.0, 0.0]])
    c = np.array([0.5, 0.0])
    pay = Payoff(Q, c, 0.0, parse({"op": "pow", "args": [{"var": 0}, 3]}, 2), -1.0, np.array([0]))
    a = np.array([0.0, 0.7])
    lo, hi = -1.0, 2.0
    d_lo, d_hi = own_derivative_range(pay, a, 0, lo, hi)
    for t in np.linspace(lo, hi, 101):
        d = pay.gradient(np.array([t, 0.7]))[0]
        assert d_lo <= d <= d_hi


# --- the A.2 file --------------------------------------------------------------------------------
def test_a2_file_states_the_library_costs_and_encloses_their_derivatives():
    game = model_from_instance(read_instance(str(A2)))
    hand = a2_game()
    p = problem("A.2")
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = rng.uniform(p.lb, p.ub)
        for i, player in enumerate(game.players):
            assert player.utility(x) == pytest.approx(-p.cost(i, x), rel=1e-13, abs=1e-15)
            assert player.derivative(x) == pytest.approx(hand.players[i].derivative(x), rel=1e-11, abs=1e-13)
            lo = float(rng.uniform(p.lb[i], p.ub[i]))
            hi = float(rng.uniform(lo, p.ub[i]))
            d_lo, d_hi = player.derivative_range(x, lo, hi)
            for t in np.linspace(lo, hi, 30):
                z = x.copy()
                z[i] = t
                assert d_lo <= hand.players[i].derivative(z) <= d_hi
    def rows(g):
        return sorted((r.players, r.lo, r.hi, tuple(g.coefficients(r))) for r in g.rows)
    assert rows(game) == rows(hand)


def test_a2_file_solves_from_the_cli_to_a_point_of_the_equilibrium_segment(capsys):
    code = main(["solve", str(A2), "--json", "--time-limit", "60"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["termination"] == "optimal" and result["method"] == "scalar-global"
    assert result["stats"]["equilibrium"] == "GNE"
    x = np.asarray(result["solution"]["actions"])
    # the GNEs: x1 = 0.3, x2..x4 = x7..x10 = 0.01, x5 + x6 = 0.62 with both >= 0.01
    assert x[0] == pytest.approx(0.3, abs=1e-9)
    np.testing.assert_allclose(np.delete(x, [0, 4, 5]), 0.01, atol=1e-9)
    assert x[4] + x[5] == pytest.approx(0.62, abs=1e-9) and min(x[4], x[5]) >= 0.01 - 1e-9
    published = np.asarray(json.loads(A2.read_text())["reference"]["published_solution"])
    assert np.abs(np.delete(x - published, [4, 5])).max() <= 5e-4     # the published point's accuracy


# --- malformed files: one line naming the file and the field ---------------------------------------
def _doc():
    return json.loads(A2.read_text())


def _edit(doc, where, value):
    target = doc
    for key in where[:-1]:
        target = target[key]
    if value is KeyError:
        del target[where[-1]]
    else:
        target[where[-1]] = value
    return doc


BAD = [
    (("players", 0, "lb"), KeyError, "field players[0]: 'lb' is a required property"),
    (("players", 0, "size"), 2, "field players[0].size: 1 was expected"),
    (("players", 1, "ub"), None, "field players[1].ub: None is not of type 'number'"),
    (("players", 2, "form"), {"kind": "linear"}, "field players[2]: Additional properties"),
    (("players", 3, "cost", "expression", "op"), "sub", "field players[3].cost.expression.op: unknown operation"),
    (("players", 3, "cost", "expression", "args", 1, "var"), 10, "field players[3].cost.expression.args[1].var"),
    (("players", 4, "joint_constraints", 0, "coefficients"), [[1.0, 1.0]],
     "field players[4].joint_constraints[0].coefficients: expected rows of 10 numbers"),
    (("players", 4, "joint_constraints", 0, "coefficients", 0, 4), 0.0,
     "field players[4].joint_constraints[0]: player 'p5' has coefficient 0"),
    (("players", 0, "lb"), 0.9, "field players[0]: lb 0.9 > ub 0.5"),
    (("players", 0, "cost", "c"), [1.0], "field players[0].cost.c: expected 10 numbers"),
]


@pytest.mark.parametrize("where, value, message", BAD, ids=[m[:48] for _, _, m in BAD])
def test_a_malformed_scalar_game_is_one_line_naming_file_and_field(tmp_path, where, value, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_edit(_doc(), where, value)))
    with pytest.raises(InstanceFormatError) as info:
        model_from_instance(read_instance(str(path)))
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_a_nonfinite_bound_is_refused_naming_its_field(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text(A2.read_text().replace('"lb": 0.3', '"lb": NaN', 1))
    with pytest.raises(InstanceFormatError, match=r"field players\[0\].lb: NaN and infinite numbers"):
        read_instance(str(path))


def test_first_nonfinite_walks_deep_json_without_recursion():
    deep: list = [float("inf")]
    for _ in range(5000):
        deep = [deep]
    assert first_nonfinite({"a": [1.0, {"b": deep}]}) == ("a", 1, "b") + (0,) * 5001
    assert first_nonfinite({"a": [1.0, 2]}) is None


# --- one reader path for every game kind -----------------------------------------------------------
@pytest.mark.parametrize("path, fmt, model", [
    (A2, "game_json", "ScalarGame"),
    (ROOT / "instances" / "games" / "gnep" / "fk_a14.json", "game_json", "PseudoGame"),
    (ROOT / "instances" / "games" / "production" / "fk_a10a.json", "production_json", "ProductionEconomy")])
def test_each_kind_is_detected_and_built_through_the_family(path, fmt, model, tmp_path):
    from solvopt.core.family import get_family
    for copy in (path, tmp_path / (path.stem + ".txt")):     # by extension, and by content
        if copy != path:
            copy.write_text(path.read_text())
        instance = read_instance(str(copy))
        assert instance.format == fmt
        assert type(get_family("games").build_model(instance)).__name__ == model


# --- mutated files: built and solved-step evaluated, or one SolvoptError ------------------------------
_VALUES = st.one_of(st.sampled_from([None, True, "x", {}, [], [1, 2], [[1.0] * 10], 0, -1, 0.5, 2, 1e308, 1e-320,
                                     {"var": 0}, {"op": "pow", "args": [0, -1]}, {"op": "log", "args": [0]},
                                     {"coefficients": [[0.0] * 10], "sense": "<=", "rhs": 1.0}]),
                    st.floats(allow_nan=False, allow_infinity=False), st.integers(-3, 12))


def _paths(obj, where=()):
    yield where
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _paths(value, where + (key,))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_mutated_scalar_games_are_built_and_bounded_or_refused_in_one_line(tmp_path_factory, data):
    from solvopt.core.errors import SolvoptError
    doc = _doc()
    i = data.draw(st.integers(0, 9))
    for _ in range(data.draw(st.integers(1, 2))):
        where = data.draw(st.sampled_from(list(_paths(doc["players"][i]))[1:]))
        _edit(doc["players"][i], where, data.draw(_VALUES))
    path = tmp_path_factory.mktemp("mutated") / "m.json"
    path.write_text(json.dumps(doc))
    try:
        game = model_from_instance(read_instance(str(path)))
        x = game.start()
        for k, p in enumerate(game.players):
            lo, hi = game.interval(k, x)
            assert np.isfinite(p.utility(x)) and np.isfinite(p.derivative(x))
            if lo <= hi:
                d_lo, d_hi = p.derivative_range(x, lo, hi)
                assert d_lo <= p.derivative(np.r_[x[:k], lo, x[k + 1:]]) <= d_hi
    except SolvoptError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
