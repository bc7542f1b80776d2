"""The GNEP library's files with utility expressions (solvopt.games.expressions): values, gradients, errors, solves.

The references are independent of the expression compiler: the library's hand-written NumPy
costs and gradients (solvopt.games.gnep_library), central finite differences, second
differences along the player's own directions (for what the curvature rules claim), and the
appendix's published points.
"""
from __future__ import annotations

import copy
import json
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core.errors import InstanceFormatError, ModelError, SolvoptError
from solvopt.games.expressions import parse, payoff
from solvopt.games.gnep_library import problem, problems
from solvopt.games.instance import model_from_instance
from solvopt.io import read_instance

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDER = ROOT / "instances" / "games" / "gnep"
EXPRESSION_FILES = {"fk_a1": "A.1", "fk_a14": "A.14", "fk_a16a": "A.16a", "fk_a16b": "A.16b", "fk_a16c": "A.16c",
                    "fk_a16d": "A.16d"}


def _model(path):
    return model_from_instance(read_instance(str(path)))


def _points(p, count, rng):
    """Random feasible-box points where every cost is defined (S > 0), spread over the box."""
    hi = np.minimum(p.ub, p.lb + 50.0)
    return [p.lb + (hi - p.lb) * rng.uniform(0.02, 1.0, p.n) for _ in range(count)]


# --- the shipped files state the library's costs ---------------------------------------------------
@pytest.mark.parametrize("stem", sorted(EXPRESSION_FILES))
def test_file_utilities_and_gradients_equal_the_library(stem):
    p = problem(EXPRESSION_FILES[stem])
    data = _model(FOLDER / f"{stem}.json").data()
    assert not data.all_quadratic
    rng = np.random.default_rng(7)
    for x in _points(p, 20, rng):
        for i, u in enumerate(data.utilities):
            cost = p.cost(i, x)
            assert np.isclose(-u.value(x), cost, rtol=1e-12, atol=1e-12 * max(1.0, abs(cost)))
            g = p.cost_gradient(i, x)
            np.testing.assert_allclose(-u.gradient(x), g, rtol=1e-11, atol=1e-11 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize("stem", sorted(EXPRESSION_FILES))
def test_file_gradients_match_finite_differences(stem):
    p = problem(EXPRESSION_FILES[stem])
    data = _model(FOLDER / f"{stem}.json").data()
    rng = np.random.default_rng(3)
    for x in _points(p, 4, rng):
        x = np.maximum(x, 0.05)
        for u in data.utilities:
            h = 1e-6 * max(1.0, float(np.abs(x).max()))
            fd = np.array([(u.value(x + h * e) - u.value(x - h * e)) / (2 * h) for e in np.eye(p.n)])
            np.testing.assert_allclose(u.gradient(x), fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))


# --- every gnep file solves from the CLI ------------------------------------------------------------
@pytest.mark.parametrize("stem", sorted(p.file_stem for p in problems()))
def test_every_gnep_file_solves_optimal_near_the_published_point(stem, capsys):
    path = FOLDER / f"{stem}.json"
    code = main(["solve", str(path), "--json", "--time-limit", "60"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["termination"] == "optimal"
    ref = json.loads(path.read_text())["reference"]
    # the kind the file states; a game without coupled rows (NE) has its NE as its VE
    assert result["stats"]["equilibrium"] == {"NE": "VE"}.get(ref["equilibrium"], ref["equilibrium"])
    x = np.asarray(result["solution"]["actions"], dtype=float)
    p = next(q for q in problems() if q.file_stem == stem)
    assert np.all(p.scipy_regrets(x) <= 1e-5)                   # checked from outside solvopt
    if ref["unique"] and ref["published_solution"] is not None:
        published = np.asarray(ref["published_solution"])
        assert np.abs(x - published).max() <= 5e-3 * max(1.0, np.abs(published).max())


# --- malformed expressions: one line naming the file and the field ----------------------------------
def _a14():
    return json.loads((FOLDER / "fk_a14.json").read_text())


def _set(doc, where, value):
    target = doc
    for k in where[:-1]:
        target = target[k]
    target[where[-1]] = value
    return doc


EXPR = ("players", 2, "cost", "expression")
MUL = EXPR + ("args", 0)                       # -1 * x_2 * pow(S, -1)
POW = MUL + ("args", 2)
BAD = [
    (EXPR + ("op",), "sub", "players[2].cost.expression.op: unknown operation 'sub'"),
    (MUL + ("args",), [], "players[2].cost.expression.args[0].args: expected a non-empty list"),
    (MUL + ("args", 1), {"var": 10}, "players[2].cost.expression.args[0].args[1].var: expected an index into the "
                                     "joint action, 0 to 9"),
    (MUL + ("args", 1), {"var": True}, "args[1].var: expected an index"),
    (MUL + ("args", 1), "x2", "args[0].args[1]: expected an expression"),
    (MUL + ("args", 1), {"x": 2}, "args[0].args[1]: expected one of the keys var, linear, op"),
    (MUL + ("args", 1), {"var": 2, "scale": 3}, "args[0].args[1].scale: unexpected key"),
    (POW + ("args",), [{"var": 1}], "args[2].args: pow takes 2 arguments, got 1"),
    (POW + ("args", 1), {"var": 1}, "args[0].args[2].args[1]: expected a number, got dict"),
    (POW + ("args", 0, "linear"), [1.0] * 9, "args[2].args[0].linear: expected 10 numbers"),
    (POW + ("args", 0, "linear", 3), "1", "args[2].args[0].linear[3]: expected a number, got str"),
    (POW + ("args", 0, "constant"), 10 ** 400, "args[2].args[0].constant: NaN and infinite numbers"),
    (EXPR, {"op": "log", "args": [1, 2]}, "players[2].cost.expression.args: log takes 1 argument, got 2"),
    (EXPR, [1, 2], "players[2].cost.expression: [1, 2] is not of type"),
]


@pytest.mark.parametrize("where, value, message", BAD, ids=[m[:40] for _, _, m in BAD])
def test_a_malformed_expression_is_one_line_naming_file_and_field(tmp_path, where, value, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_set(_a14(), where, value)))
    with pytest.raises(InstanceFormatError) as info:
        _model(path)
    text = str(info.value)
    assert text.startswith(f"{path}: field players[2].cost.expression") and message in text
    assert "\n" not in text


def test_a_malformed_expression_through_the_cli_is_one_line(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_set(_a14(), EXPR + ("op",), "sub")))
    code = main(["solve", str(path)])
    out, err = capsys.readouterr()
    assert code != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "players[2].cost.expression.op" in err


def test_a_deeply_nested_expression_is_refused():
    tree = {"var": 0}
    for _ in range(100):
        tree = {"op": "log", "args": [tree]}
    with pytest.raises(ModelError, match="nested deeper"):
        parse(tree, 1)


# --- curvature in the own action: proven, disproved, vouched ------------------------------------------
def _player(expression, sign=-1.0, n=2, own=(0,), **quadratic):
    spec = {"expression": expression, **quadratic}
    Q = np.asarray(quadratic["Q"], float) if "Q" in quadratic else None
    c = np.asarray(quadratic["c"], float) if "c" in quadratic else None
    return payoff(spec, n, list(own), sign, ("players", 0, "cost" if sign < 0 else "utility"), Q, c)


def test_concavity_proven_for_the_library_of_checked_forms():
    S = {"linear": [1.0, 1.0], "constant": 1.0}
    assert _player({"op": "log", "args": [S]}, sign=1.0).concavity == "proven"             # log, utility
    assert _player({"op": "pow", "args": [S, 0.5]}, sign=1.0).concavity == "proven"        # concave power
    assert _player({"op": "pow", "args": [S, -1]}, sign=-1.0).concavity == "vouched"       # sign of S unknown
    assert _player({"op": "pow", "args": [S, -0.5]}).concavity == "proven"                 # convex cost
    assert _player({"op": "mul", "args": [3, {"op": "pow", "args": [{"var": 0}, 1.5]}]}).concavity == "proven"
    assert _player({"op": "mul", "args": [{"var": 1}, {"var": 0}]}).concavity == "proven"  # affine in own
    # the other player's factors do not move with player 0's action
    square = [{"op": "pow", "args": [{"var": k}, 2]} for k in (1, 0)]
    assert _player({"op": "mul", "args": square}).concavity == "proven"


def test_a_cost_proven_concave_in_its_own_action_is_refused():
    with pytest.raises(ModelError, match=r"players\[0\].cost: the cost is concave, not convex"):
        _player({"op": "log", "args": [{"var": 0}]})
    with pytest.raises(ModelError, match="utility is convex, not concave"):
        _player({"op": "pow", "args": [{"var": 0}, 2]}, sign=1.0)
    with pytest.raises(ModelError, match="cost is concave"):       # the quadratic part counts too
        _player({"var": 1}, Q=[[-2.0, 0.0], [0.0, 0.0]])


def test_library_products_are_proven_on_their_boxes_and_vouched_for_without_bounds():
    """x_i S^-1 (A.1, A.14) and x_i S^(-1/gamma) (A.16) are decided by the variables' bounds."""
    for p in problems():
        if p.expressions is None:
            continue
        for i, tree in enumerate(p.expressions):
            spec = {"expression": tree}
            assert payoff(spec, p.n, p.blocks[i], -1.0, ("players", i, "cost"), lb=p.lb, ub=p.ub).concavity == "proven"
            assert payoff(spec, p.n, p.blocks[i], -1.0, ("players", i, "cost")).concavity == "vouched"
    # x_1 S^-1 with the others' actions allowed negative: not concave in x_1 there, so not proven
    tree = {"op": "mul", "args": [{"var": 0}, {"op": "pow", "args": [{"linear": [1.0, 1.0]}, -1.0]}]}
    assert payoff({"expression": tree}, 2, [0], 1.0, ("u",), lb=[0.0, -1.0], ub=[1.0, 1.0]).concavity == "vouched"
    assert payoff({"expression": tree}, 2, [0], 1.0, ("u",), lb=[0.0, 0.5], ub=[1.0, 1.0]).concavity == "proven"


def _second_differences_agree(node, frame_lb, frame_ub, own_dirs, curv, rng, points=30):
    """Second differences along own directions at random box points have the sign curv claims."""
    checked = 0
    t = 1e-2 * min(1.0, float(np.min(frame_ub - frame_lb)))
    for _ in range(points):
        x = rng.uniform(frame_lb + 2 * t, frame_ub - 2 * t)       # x +- t d stays in the box
        for d in own_dirs:
            try:
                v = node.evaluate(x)[0]
                second = node.evaluate(x + t * d)[0] + node.evaluate(x - t * d)[0] - 2 * v
            except ModelError:
                continue
            scale = max(1.0, abs(v))
            if curv.convex:
                assert second >= -1e-9 * scale
            if curv.concave:
                assert second <= 1e-9 * scale
            checked += 1
    return checked


def test_the_product_rule_is_sound_on_random_boxes():
    """h * g^p with random affine h, g, exponents and boxes: every decided claim holds at random points
    (the box's points, along the own action), and the rule decides a fair share of them."""
    from solvopt.games.expressions import Frame
    rng = np.random.default_rng(5)
    n, decided, checked = 3, 0, 0
    for trial in range(300):
        lb = rng.uniform(-1.0, 1.0, n)
        ub = lb + rng.uniform(0.1, 2.0, n)
        own = np.array([True, False, False]) if trial % 2 else np.array([True, True, False])
        wg = rng.uniform(-0.5, 1.0, n)
        wh = rng.uniform(-1.0, 1.0, n)
        if own.sum() == 2:                      # a parallel own gradient, else the rule stays out
            wh[:2] = rng.uniform(-2, 2) * wg[:2]
        p = float(rng.choice([-1.0, -2.0, -1 / 1.1, -0.5, 0.5, 1.5, 2.0, 3.0]))
        h = {"linear": wh.tolist(), "constant": float(rng.uniform(-1, 1))}
        g = {"linear": wg.tolist(), "constant": float(rng.uniform(0, 2))}
        tree = {"op": "mul", "args": [float(rng.choice([-2.0, 1.0])), h, {"op": "pow", "args": [g, p]}]}
        node = parse(tree, n)
        curv = node.curvature(Frame(own, lb, ub))
        if curv.convex or curv.concave:
            decided += 1
            dirs = [np.eye(n)[0]] if own.sum() == 1 else [np.eye(n)[0], np.eye(n)[1], np.array([1.0, -1.0, 0.0])]
            checked += _second_differences_agree(node, lb, ub, dirs, curv, rng)
    assert decided >= 30 and checked >= 300


def test_quadratic_part_and_expression_add_up():
    Q, c = np.array([[2.0, 1.0], [1.0, 4.0]]), np.array([1.0, -3.0])
    pay = _player({"op": "log", "args": [{"linear": [1.0, 2.0], "constant": 1.0}]}, sign=-1.0, Q=Q.tolist(),
                  c=c.tolist(), constant=0.5)
    x = np.array([0.3, 0.7])
    s = 1.0 + x[0] + 2 * x[1]
    assert np.isclose(pay.value(x), -(0.5 * x @ Q @ x + c @ x + 0.5 + np.log(s)), rtol=1e-14)
    np.testing.assert_allclose(pay.gradient(x), -(Q @ x + c + np.array([1.0, 2.0]) / s), rtol=1e-14)


def test_outside_the_domain_is_a_one_line_error_naming_the_node():
    node = parse({"op": "log", "args": [{"var": 0}]}, 1, ("players", 0, "cost", "expression"))
    with pytest.raises(ModelError, match=r"players\[0\].cost.expression: log of a non-positive number"):
        node.evaluate(np.array([-1.0]))
    node = parse({"op": "pow", "args": [{"var": 0}, 0.5]}, 1)
    with pytest.raises(ModelError, match="power 0.5 of a negative number"):
        node.evaluate(np.array([-1.0]))
    with pytest.raises(ModelError, match="no finite derivative at zero"):
        node.evaluate(np.array([0.0]))


# --- random trees: exact gradients, and curvature claims that hold ---------------------------------
def _random_tree(rng, n, depth):
    if depth == 0 or rng.uniform() < 0.25:
        kind = rng.integers(3)
        if kind == 0:
            return float(rng.uniform(0.5, 2.0))
        if kind == 1:
            return {"var": int(rng.integers(n))}
        return {"linear": rng.uniform(0.0, 1.0, n).tolist(), "constant": float(rng.uniform(0.5, 1.0))}
    op = ["add", "mul", "pow", "log"][rng.integers(4)]
    if op == "pow":
        p = float(rng.choice([-1.0, -0.5, 0.5, 2.0, 3.0, 1.5]))
        return {"op": "pow", "args": [_random_tree(rng, n, depth - 1), p]}
    if op == "log":
        return {"op": "log", "args": [{"op": "add", "args": [1.5, _random_tree(rng, n, depth - 1)]}]}
    args = [_random_tree(rng, n, depth - 1) for _ in range(rng.integers(1, 4))]
    if op == "mul" and rng.uniform() < 0.5:
        args.insert(0, float(rng.choice([-2.0, 3.0])))
    return {"op": op, "args": args}


def test_random_expressions_have_exact_gradients_and_honest_curvature():
    from solvopt.games.expressions import Frame
    rng = np.random.default_rng(11)
    n, checked = 3, 0
    own = np.array([True, False, False])
    frame = Frame(own, np.full(n, 0.3 - 0.01), np.full(n, 2.0 + 0.01))    # the points below, with the steps
    for _ in range(400):
        node = parse(_random_tree(rng, n, 4), n)
        curv = node.curvature(frame)
        for _ in range(3):
            x = rng.uniform(0.3, 2.0, n)
            try:
                v, g = node.evaluate(x)
            except ModelError:
                continue                      # outside a domain (a log or a power of a negative value)
            g = np.zeros(n) if g is None else g
            h = 1e-6
            try:
                fd = np.array([(node.evaluate(x + h * e)[0] - node.evaluate(x - h * e)[0]) / (2 * h)
                               for e in np.eye(n)])
                t = 1e-2
                e0 = np.eye(n)[0]
                second = node.evaluate(x + t * e0)[0] + node.evaluate(x - t * e0)[0] - 2 * v
            except ModelError:
                continue
            if not np.all(np.isfinite(fd)) or abs(v) > 1e8:
                continue
            scale = max(1.0, abs(v), np.abs(g).max())
            np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6 * scale)
            if curv.convex:
                assert second >= -1e-9 * scale
            if curv.concave:
                assert second <= 1e-9 * scale
            if curv.constant:
                assert g[0] == 0.0
            checked += 1
    assert checked > 300


def test_the_copy_of_a_file_with_a_refused_cost_is_one_line(tmp_path):
    doc = _a14()
    doc["players"][0]["cost"]["expression"] = {"op": "log", "args": [{"var": 0}]}
    path = tmp_path / "concave.json"
    path.write_text(json.dumps(copy.deepcopy(doc)))
    with pytest.raises(InstanceFormatError, match=r"field players\[0\].cost: the cost is concave"):
        _model(path)


# --- mutated expression trees: read, build and evaluate, or one SolvoptError -------------------------
def _nodes(obj, where=()):
    yield where
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _nodes(value, where + (key,))


_REPLACEMENTS = st.one_of(
    st.sampled_from([None, True, "x", {}, [], [1, 2], 0, -1, 0.5, 2, 1e308, -1e308, 10 ** 30, 1e-320,
                     {"var": 0}, {"var": -1}, {"linear": []}, {"op": "pow", "args": [0, -1]},
                     {"op": "log", "args": [0]}, {"op": "mul", "args": [{"var": 0}]}, {"op": "add"}]),
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-3, 12))


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_expressions_are_built_and_evaluated_or_refused_in_one_line(tmp_path_factory, data):
    stem = data.draw(st.sampled_from(["fk_a1", "fk_a16a"]))
    doc = json.loads((FOLDER / f"{stem}.json").read_text())
    player = data.draw(st.integers(0, len(doc["players"]) - 1))
    tree = doc["players"][player]["cost"]
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(list(_nodes(tree))[1:]))
        _set(tree, where, copy.deepcopy(data.draw(_REPLACEMENTS)))
    path = tmp_path_factory.mktemp("mutated") / "m.json"
    path.write_text(json.dumps(doc))
    try:
        utilities = _model(path).data().utilities
        x = np.full(sum(p["size"] for p in doc["players"]), 0.3)
        for u in utilities:
            assert np.isfinite(u.value(x)) and np.all(np.isfinite(u.gradient(x)))
    except SolvoptError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
