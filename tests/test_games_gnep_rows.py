"""A player's rows over the joint action in game files (``joint_constraints``): the GNEP library's A.3-A.8.

The references are independent of the JSON reader: the library's models built with the DSL
(``game.constrain`` on joint-action expressions), its hand-written NumPy costs and gradients, and
scipy's best responses over each player's original feasible set (``GNEP.scipy_regrets``).
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
from solvopt.core.errors import InstanceFormatError
from solvopt.games.gnep_library import GENERAL, GNEP, Rows, _quadratic, problem
from solvopt.games.instance import game_from_json, model_from_instance
from solvopt.io import read_instance

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDER = ROOT / "instances" / "games" / "gnep"
STEMS = {problem(name).file_stem: name for name in GENERAL}


def _model(path):
    return model_from_instance(read_instance(str(path)))


def _sorted_rows(data):
    """The rows (owner, A, lo, hi) in a canonical order: the file and the DSL may list them differently."""
    A = data.A.toarray()
    table = np.column_stack([data.owner, A, data.lo, data.hi])
    return table[np.lexsort(table.T[::-1])]


def assert_same_game(a, b):
    """Two GameData with equal players, bounds and rows (up to the rows' order)."""
    assert a.names == b.names
    assert [list(c) for c in a.blocks] == [list(c) for c in b.blocks]
    np.testing.assert_array_equal(a.lb, b.lb)
    np.testing.assert_array_equal(a.ub, b.ub)
    assert a.A.shape == b.A.shape
    np.testing.assert_array_equal(_sorted_rows(a), _sorted_rows(b))
    assert a.concept == b.concept


# --- the shipped files state the library's models ----------------------------------------------------
@pytest.mark.parametrize("stem", sorted(STEMS))
def test_file_builds_the_library_model(stem):
    p = problem(STEMS[stem])
    doc = json.loads((FOLDER / f"{stem}.json").read_text())
    assert any("joint_constraints" in q for q in doc["players"])
    assert doc["reference"]["equilibrium"] == "GNE"
    np.testing.assert_array_equal(doc["reference"]["published_solution"], p.published)
    data, ref = _model(FOLDER / f"{stem}.json").data(), p.model().data()
    assert data.concept == "GNE"
    assert_same_game(data, ref)
    rng = np.random.default_rng(1)
    for _ in range(10):
        x = rng.uniform(p.lb, np.minimum(p.ub, p.lb + 10.0))
        for i, u in enumerate(data.utilities):
            cost = p.cost(i, x)
            assert np.isclose(-u.value(x), cost, rtol=1e-12, atol=1e-12 * max(1.0, abs(cost)))
            g = p.cost_gradient(i, x)
            np.testing.assert_allclose(-u.gradient(x), g, rtol=1e-11, atol=1e-11 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize("stem", sorted(STEMS))
def test_file_solves_optimal_from_the_cli_to_a_gne_scipy_confirms(stem, capsys):
    path = FOLDER / f"{stem}.json"
    code = main(["solve", str(path), "--json", "--time-limit", "60"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["termination"] == "optimal" and result["stats"]["equilibrium"] == "GNE"
    x = np.asarray(result["solution"]["actions"], dtype=float)
    p = problem(STEMS[stem])
    assert np.all(x >= p.lb - 1e-9) and np.all(x <= p.ub + 1e-9)
    for r in p.rows:                                            # each row holds at the point
        assert np.all(r.A @ x <= r.hi + 1e-7) and np.all(r.A @ x >= r.lo - 1e-7)
    assert np.all(p.scipy_regrets(x) <= 1e-6)                   # checked from outside solvopt


def test_a8_rows_are_its_first_two_players_own():
    doc = json.loads((FOLDER / "fk_a8.json").read_text())
    assert ["joint_constraints" in q for q in doc["players"]] == [True, True, False]
    assert doc["players"][0]["joint_constraints"] == doc["players"][1]["joint_constraints"]


# --- the syntax: backwards compatible, the same as the DSL's rows -------------------------------------
def _two_players(**extra):
    doc = {"kind": "pseudo_game", "players": [
        {"name": "x1", "size": 1, "lb": 0, "ub": 10, "cost": {"Q": [[2, 8 / 3], [8 / 3, 0]], "c": [-34, 0]}},
        {"name": "x2", "size": 1, "lb": 0, "ub": 10, "cost": {"Q": [[0, 1.25], [1.25, 2]], "c": [0, -24.25]}}]}
    doc["players"][0].update(extra)
    return doc


def test_a_joint_row_over_the_own_action_only_is_an_own_row():
    own = game_from_json(_two_players(constraints=[{"coefficients": [[1]], "sense": "<=", "rhs": 7}])).data()
    joint = game_from_json(_two_players(joint_constraints=[{"coefficients": [[1, 0]], "sense": "<=",
                                                            "rhs": 7}])).data()
    assert_same_game(own, joint)
    assert joint.concept == "VE"


def test_harker_with_player_1s_coupled_row_from_a_file(tmp_path):
    """x1 + x2 <= 12 binds player 1 only: the best responses at the point confirm the GNE."""
    path = tmp_path / "harker_gne.json"
    path.write_text(json.dumps(_two_players(joint_constraints=[{"coefficients": [[1, 1]], "sense": "<=",
                                                                "rhs": 12}])))
    model = _model(path)
    assert model.data().concept == "GNE" and model.default_method == "gnep-kkt"
    r = model.solve()
    assert r.termination == "optimal"
    x1, x2 = r.solution["actions"]
    assert x2 == pytest.approx(np.clip((24.25 - 1.25 * x1) / 2, 0, 10), abs=1e-6)
    assert x1 == pytest.approx(np.clip(17 - 4 / 3 * x2, 0, 12 - x2), abs=1e-6)


@st.composite
def _random_gnep(draw):
    """A small quadratic GNEP with random player-specific coupled, own and shared rows."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
    n = sum(sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    blocks = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(sizes))]
    Qs, cs = [], []
    for cols in blocks:
        M = rng.normal(size=(n, n))
        Q = M @ M.T
        Q[np.ix_(cols, cols)] += np.eye(len(cols))
        Qs.append(Q)
        cs.append(rng.normal(size=n))
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        owner = draw(st.integers(-1, len(sizes) - 1))
        A = np.round(rng.normal(size=(draw(st.integers(1, 2)), n)), 3)
        if owner >= 0:
            A[:, blocks[owner][0]] = 1.0                         # it involves one of its own variables
            if draw(st.booleans()):
                A[:, np.setdiff1d(np.arange(n), blocks[owner])] = 0.0
        sense = draw(st.sampled_from(["<=", ">=", "==", "both"]))
        b = np.round(rng.uniform(1, 5, A.shape[0]), 3)
        lo = {"<=": np.full(len(b), -np.inf), ">=": -b, "==": b, "both": -b}[sense]
        hi = {"<=": b, ">=": np.full(len(b), np.inf), "==": b, "both": b}[sense]
        rows.append(Rows(A, lo, hi, owner))
    costs, grads, quad = _quadratic(Qs, cs)
    return GNEP("R", "random", sizes, np.full(n, -10.0), np.full(n, 10.0), rows, costs, grads, None,
                quadratic=quad, concept="GNE")


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(p=_random_gnep())
def test_random_games_written_and_read_equal_their_dsl_models(p):
    data = game_from_json(json.loads(json.dumps(p.instance()))).data()
    ref = p.model().data()          # built with the DSL when a row is coupled
    assert_same_game(data, ref)
    assert data.concept == ("GNE" if p.coupled else "VE")


# --- malformed rows: one line naming the file and the field -------------------------------------------
def _a3():
    return json.loads((FOLDER / "fk_a3.json").read_text())


ROW = ("players", 0, "joint_constraints", 0)
BAD = [
    (ROW + ("coefficients",), [[1.0] * 6], "players[0].joint_constraints[0].coefficients: expected rows of 7 "
                                           "numbers (the joint action), got 6"),
    (ROW + ("coefficients",), [[0, 0, 0, 1, 0, 0, 1]], "players[0].joint_constraints[0].coefficients[0]: a "
                                                       "constraint of player 'p1' does not involve any of its own "
                                                       "variables"),
    (ROW + ("coefficients",), [[1.0] * 7, [0, 0, 0, 0, 0, 1, 0]], "joint_constraints[0].coefficients[1]: a constraint"),
    (ROW + ("coefficients",), [[1.0] * 7, [1.0]], "players[0].joint_constraints[0].coefficients must be a"),
    (ROW + ("coefficients",), [1.0] * 7, "is not of type 'array'"),
    (ROW + ("sense",), "<", "players[0].joint_constraints[0].sense"),
    (ROW + ("rhs",), [1.0, 2.0], "players[0].joint_constraints[0] rhs must have shape (1,)"),
    (ROW + ("rhs",), "5", "players[0].joint_constraints[0].rhs"),
    (ROW + ("scale",), 2, "players[0].joint_constraints[0]"),
    (("players", 0, "joint_constraints"), {"coefficients": [[1] * 7]}, "players[0].joint_constraints"),
]


@pytest.mark.parametrize("where, value, message", BAD, ids=[m[:50] for _, _, m in BAD])
def test_a_malformed_joint_row_is_one_line_naming_file_and_field(tmp_path, where, value, message):
    doc = _a3()
    target = doc
    for k in where[:-1]:
        target = target[k]
    target[where[-1]] = copy.deepcopy(value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceFormatError) as info:
        _model(path)
    text = str(info.value)
    assert text.startswith(f"{path}: field players[0].joint_constraints") and message in text, text
    assert "\n" not in text


def test_a_row_without_its_owner_through_the_cli_is_one_line(tmp_path, capsys):
    doc = _a3()
    doc["players"][2]["joint_constraints"][0]["coefficients"] = [[1, 0, 1, -1, 0, 0, 0]]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code = main(["solve", str(path)])
    out, err = capsys.readouterr()
    assert code != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "players[2].joint_constraints[0].coefficients[0]" in err and "does not involve" in err


# --- mutated rows: read and built, or one SolvoptError line -----------------------------------------
def _nodes(obj, where=()):
    yield where
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _nodes(value, where + (key,))


_REPLACEMENTS = st.one_of(
    st.sampled_from([None, True, "x", {}, [], [[]], [[1, 2], [3]], [[0.0] * 7], [[0.0] * 3], [[1.0] * 3],
                     "<", "==", ">=", 0, -1, 1e308, -1e308, 10 ** 30, 1e-320, [1.0], [[1e308] * 7],
                     {"coefficients": [[1, 0, 0]], "sense": "<=", "rhs": 1}]),
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-3, 12))


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_joint_rows_are_built_or_refused_in_one_line(tmp_path_factory, data):
    from solvopt.core.errors import SolvoptError
    stem = data.draw(st.sampled_from(["fk_a3", "fk_a8"]))
    doc = json.loads((FOLDER / f"{stem}.json").read_text())
    player = data.draw(st.sampled_from([i for i, q in enumerate(doc["players"]) if "joint_constraints" in q]))
    rows = doc["players"][player]
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(list(_nodes(rows["joint_constraints"]))))
        value = copy.deepcopy(data.draw(_REPLACEMENTS))
        if where:
            target = rows["joint_constraints"]
            for k in where[:-1]:
                target = target[k]
            target[where[-1]] = value
        else:
            rows["joint_constraints"] = value
    path = tmp_path_factory.mktemp("mutated") / "m.json"
    path.write_text(json.dumps(doc))
    try:
        data_ = _model(path).data()
    except SolvoptError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        return
    assert data_.A.shape[1] == data_.n and np.all(np.isfinite(data_.A.toarray()))
