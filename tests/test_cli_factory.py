"""`solvopt solve FILE.py:FUNCTION` and `info`: a Python factory's model solved like a file.

References: the same model solved in Python (the objective and the method agree), and one-line
errors for each way a factory can fail.
"""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from solvopt.cli import main
from solvopt.dsl import Transport

FACTORY = textwrap.dedent('''
    import numpy as np
    from solvopt.dsl import Model, Transport
    from helper import SEED            # a neighbour module: the file's folder is importable

    def transport():
        rng = np.random.default_rng(SEED)
        return Transport(rng.random((30, 2)), rng.random((20, 2)), p=2)

    def knapsack():
        m = Model("knapsack")
        x = m.add_var(shape=3, lb=0, ub=1, vtype="integer", name="x")
        m.add(np.array([2, 3, 4]) @ x <= 5, name="weight")
        m.maximize(np.array([3, 4, 5]) @ x)
        return m

    def fails():
        raise ValueError("no data today")

    def not_a_model():
        return 42

    NUMBER = 3
''')


@pytest.fixture
def factory(tmp_path):
    (tmp_path / "helper.py").write_text("SEED = 4\n")
    path = tmp_path / "build_models.py"
    path.write_text(FACTORY)
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_factory_model_is_solved_like_a_file(capsys, factory, tmp_path):
    code, out, err = _run(capsys, "solve", f"{factory}:transport", "--json", "--engine", "highs")
    assert code == 0, err
    doc = json.loads(out.splitlines()[0])
    rng = np.random.default_rng(4)
    expected = Transport(rng.random((30, 2)), rng.random((20, 2)), p=2).solve(engine="highs")
    assert doc["family"] == "transport" and doc["method"] == expected.method == "auto"
    assert doc["objective"] == pytest.approx(expected.objective, rel=1e-12)
    assert doc["instance"] == "build_models" and doc["options"]["engine"] == "highs"
    code, out, err = _run(capsys, "solve", f"{factory}:knapsack", "--out", tmp_path / "res",
                          "--solver-option", "presolve=off")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("build_models"))
    assert " lp " in row and "optimal" in row
    written = json.loads((tmp_path / "res" / "build_models.json").read_text())
    assert written["objective"] == pytest.approx(7.0) and written["options"]["presolve"] == "off"


def test_info_describes_the_factory_model(capsys, factory):
    code, out, err = _run(capsys, "info", f"{factory}:transport", "--json")
    assert code == 0, err
    info = json.loads(out.splitlines()[0])
    assert info["family"] == "transport" and info["format"] == "python" and info["factory"] == "transport"
    assert info["model"] == "Transport" and "30x2" in info["description"]


@pytest.mark.parametrize("target, words", [
    ("missing.py:build", "no such file"),
    ("{f}:nope", "no function 'nope'"),
    ("{f}:NUMBER", "NUMBER in {f} is not a function (int)"),
    ("{f}:fails", "fails() raised ValueError: no data today"),
    ("{f}:not_a_model", "not_a_model() returned int, not a solvopt model"),
    ("broken.py:build", "importing"),
])
def test_factory_mistakes_are_one_line_errors(capsys, factory, tmp_path, target, words):
    (tmp_path / "broken.py").write_text("import a_module_that_is_not_there\n")
    target = str(tmp_path / target) if not target.startswith("{f}") else target.format(f=factory)
    for command in ("solve", "info"):
        code, out, err = _run(capsys, command, target)
        lines = err.strip().splitlines()
        assert code == 1 and out == "" and len(lines) == 1, (command, err)
        assert words.format(f=factory) in lines[0] and target in lines[0] and "Traceback" not in err


def test_flags_that_set_the_models_data_are_refused(capsys, factory):
    for flag, words in (("--p", "sets the model's data"), ("--k", "does not apply to transport models")):
        code, _, err = _run(capsys, "solve", f"{factory}:transport", flag, "2")
        assert code == 1 and words in err and len(err.strip().splitlines()) == 1, err
    code, _, err = _run(capsys, "solve", f"{factory}:transport", "--family", "khc")
    assert code == 1 and "returned a transport model" in err
