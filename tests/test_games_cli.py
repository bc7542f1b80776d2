"""Game instance files through the CLI: sample files solve to their known answers; malformed files are one line."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from solvopt.cli import main
from solvopt.core.errors import InstanceFormatError
from solvopt.io import read_instance

HERE = os.path.dirname(__file__)
GAMES = os.path.join(HERE, "..", "instances", "games")


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["harker", "river_basin"])
def test_sample_games_solve_to_their_reference(name, capsys):
    path = os.path.join(GAMES, f"{name}.json")
    code, out, err = _run(capsys, "solve", path, "--json", "--tolerance", "1e-12")   # relative to the payoff scale
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["method"] == "extragradient" and result["termination"] == "optimal"
    with open(path) as fh:
        ref = json.load(fh)["reference"]["variational_equilibrium"]
    actions = np.asarray(result["solution"]["actions"])
    np.testing.assert_allclose(actions, ref, atol=2e-4)
    assert result["objective"] <= 1e-12 * result["stats"]["payoff_scale"]


def test_sample_fisher_market(capsys):
    code, out, err = _run(capsys, "solve", os.path.join(GAMES, "fisher_market.json"), "--json")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["method"] == "eisenberg-gale"
    np.testing.assert_allclose(result["solution"]["prices"], [1, 1], atol=1e-12)


def test_sample_linear_exchange_market(capsys):
    path = os.path.join(GAMES, "linear_exchange_market.json")
    code, out, err = _run(capsys, "solve", path, "--json")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["method"] == "linear-exchange" and result["termination"] == "optimal"
    with open(path) as fh:
        ref = json.load(fh)["reference"]
    np.testing.assert_allclose(result["solution"]["prices"], ref["prices"], atol=1e-12)
    np.testing.assert_allclose(np.reshape(result["solution"]["allocation"], (2, 2)), ref["allocation"],
                               atol=1e-12)


def test_exchange_market_without_equilibrium_is_one_line(tmp_path, capsys):
    bad = {"kind": "arrow_debreu_market", "utility": {"kind": "linear", "values": [[1, 0], [1, 1]]},
           "endowments": [[1, 1], [0, 1]]}
    code, out, err = _run(capsys, "solve", _write(tmp_path, json.dumps(bad), "none.json"))
    assert code != 0 and "no equilibrium" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_method_flag_and_family_detection(capsys):
    code, out, err = _run(capsys, "solve", os.path.join(GAMES, "harker.json"), "--method", "nested")
    assert code == 0, err
    assert "nested" in out and "games" in out
    assert read_instance(os.path.join(GAMES, "harker.json")).family == "games"


def _write(tmp_path, text, name="bad.json"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


HARKER_TEXT = (open(os.path.join(GAMES, "harker.json")).read()
               if os.path.exists(os.path.join(GAMES, "harker.json")) else "")


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["players"][0].pop("size"), "players[0]"),
    (lambda d: d["players"][1].update(size="two"), "players[1].size"),
    (lambda d: d["shared_constraints"][0].update(sense="<"), "shared_constraints[0].sense"),
    (lambda d: d["players"][0]["cost"].update(c=[float("nan"), 0]), "players[0].cost.c[0]"),
    (lambda d: d.update(kind="poker"), "kind"),
])
def test_malformed_files_name_the_file_and_the_field(tmp_path, capsys, edit, field):
    data = json.loads(HARKER_TEXT)
    edit(data)
    path = _write(tmp_path, json.dumps(data))
    with pytest.raises(InstanceFormatError, match=r"bad\.json.*field " + re.escape(field)):
        read_instance(path, format="game_json")
    code, out, err = _run(capsys, "solve", path)
    assert code != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "bad.json" in err


def test_not_json_gives_the_line(tmp_path, capsys):
    path = _write(tmp_path, '{"kind": "pseudo_game",\n "players": [\n}')
    with pytest.raises(InstanceFormatError, match=r"bad\.json:3"):
        read_instance(path, format="game_json")


def test_inconsistent_sizes_are_one_line(tmp_path, capsys):
    data = json.loads(HARKER_TEXT)
    data["players"][0]["cost"]["Q"] = [[1.0]]
    path = _write(tmp_path, json.dumps(data))
    code, out, err = _run(capsys, "solve", path)
    assert code != 0 and "Q must have shape" in err and len(err.strip().splitlines()) == 1


def test_infeasible_shared_constraints_from_a_file(tmp_path, capsys):
    data = json.loads(HARKER_TEXT)
    data["shared_constraints"].append({"coefficients": [[1, 1]], "sense": ">=", "rhs": 25})
    path = _write(tmp_path, json.dumps(data))
    code, out, err = _run(capsys, "solve", path)
    assert code != 0 and "empty" in err and "Traceback" not in err


def test_markets_from_files(tmp_path, capsys):
    cd = {"kind": "fisher_market", "utility": {"kind": "cobb_douglas", "exponents": [[0.5, 0.5], [0.25, 0.75]]},
          "budgets": [1, 3]}
    code, out, err = _run(capsys, "solve", _write(tmp_path, json.dumps(cd), "cd.json"), "--json")
    assert code == 0, err
    prices = json.loads(out.strip().splitlines()[-1])["solution"]["prices"]
    np.testing.assert_allclose(prices, [0.5 + 0.75, 0.5 + 2.25])
    ad = {"kind": "arrow_debreu_market", "utility": {"kind": "ces", "values": [[1, 2], [2, 1]], "rho": 0.5},
          "endowments": [[1, 0], [0, 1]]}
    code, out, err = _run(capsys, "solve", _write(tmp_path, json.dumps(ad), "ad.json"), "--json")
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["method"] == "tatonnement"


def test_plain_output_names_the_equilibrium(capsys):
    # the table says what --json's stats.equilibrium says: a variational equilibrium, or a generalized Nash one
    harker, a3 = os.path.join(GAMES, "harker.json"), os.path.join(GAMES, "gnep", "fk_a3.json")
    code, out, err = _run(capsys, "solve", harker, a3, os.path.join(GAMES, "fisher_market.json"))
    assert code == 0, err
    header, *rows = out.strip().splitlines()
    start = header.index("termination")
    labels = {row.split()[0]: row[start:].split("  ")[0].strip() for row in rows}
    assert labels == {"harker": "optimal (VE)", "fk_a3": "optimal (GNE)", "fisher_market": "optimal"}
    for path, concept in ((harker, "VE"), (a3, "GNE")):
        _, out, _ = _run(capsys, "solve", path, "--json")
        assert json.loads(out.strip().splitlines()[-1])["stats"]["equilibrium"] == concept
