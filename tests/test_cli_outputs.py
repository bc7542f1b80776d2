"""What `solvopt solve` writes: --out names from input paths (sanitised, unique), atomic files, the row
before large arrays, Ctrl-C while writing, and a sequential batch that goes on after any failure."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

import solvopt.cli as cli
from solvopt.cli import main
from solvopt.core.interrupt import request_stop
from solvopt.core.result import Result, SolutionStatus, Termination
from solvopt.io import results
from solvopt.io.results import output_names, safe_name, write_result

SAMPLES = REPO / "instances"


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _game(path: Path, name: str | None) -> Path:
    data = json.loads((SAMPLES / "games" / "harker.json").read_text())
    if name is None:
        data.pop("name")
    else:
        data["name"] = name
    path.write_text(json.dumps(data))
    return path


# --- names ------------------------------------------------------------------------------------
def test_colliding_inputs_each_keep_their_result(tmp_path, capsys):
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    inputs = [tmp_path / "a.npz", _game(tmp_path / "a.json", "shared"), tmp_path / "d1" / "small.mps",
              tmp_path / "d2" / "small.mps", _game(tmp_path / "b.json", "shared")]
    shutil.copy(SAMPLES / "transport" / "small.npz", inputs[0])
    for p in inputs[2:4]:
        shutil.copy(SAMPLES / "lp" / "knapsack.mps", p)
    out = tmp_path / "out"
    code, stdout, err = _run(capsys, "solve", *inputs, "--out", out)
    assert code == 0, err
    names = sorted(os.listdir(out))
    assert names == ["a-2.json", "a.json", "b.json", "small-2.json", "small.json"]
    paths = {n: json.loads((out / n).read_text())["path"] for n in names}
    assert paths == {"a.json": str(inputs[0]), "a-2.json": str(inputs[1]), "small.json": str(inputs[2]),
                     "small-2.json": str(inputs[3]), "b.json": str(inputs[4])}


def test_a_game_name_never_names_a_place_to_write(tmp_path, capsys):
    outside = tmp_path / "escaped"
    inputs = [_game(tmp_path / "g1.json", "../escaped"), _game(tmp_path / "g2.json", str(outside) + "2"),
              _game(tmp_path / "g3.json", "nodir/x")]
    out = tmp_path / "out"
    code, stdout, err = _run(capsys, "solve", *inputs, "--out", out)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["g1.json", "g2.json", "g3.json"]
    assert sorted(os.listdir(tmp_path)) == ["g1.json", "g2.json", "g3.json", "out"]
    assert json.loads((out / "g3.json").read_text())["instance"] == "nodir/x"  # the name is kept as data


def test_the_same_file_twice_gets_two_files(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = _run(capsys, "solve", SAMPLES / "lp" / "knapsack.mps", SAMPLES / "lp" / "knapsack.mps",
                             "--out", out)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["knapsack-2.json", "knapsack.json"]


@pytest.mark.parametrize("text, expected", [("../x", "_x"), ("/etc/passwd", "_etc_passwd"), ("..", "instance"),
                                            ("", "instance"), (".hidden", "hidden"), ("a b/c\\d", "a_b_c_d"),
                                            ("ok-1.2_x+y", "ok-1.2_x+y"), ("C:\\x", "C_x")])
def test_safe_name(text, expected):
    assert safe_name(text) == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=12).map(lambda t: t.replace("\x00", "")), min_size=1, max_size=8))
def test_output_names_are_safe_unique_and_depend_only_on_the_paths(paths):
    names = output_names(paths)
    assert len(names) == len(paths)
    assert len({n.casefold() for n in names}) == len(names)
    for n in names:
        assert n and "/" not in n and "\\" not in n and not n.startswith(".") and len(n) <= results.MAX_NAME
        assert os.path.basename(n) == n
    assert output_names(list(paths)) == names


# --- atomic files -----------------------------------------------------------------------------
def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    good = Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=1.0, solution={"x": np.arange(3.0)})
    write_result(tmp_path, {"instance": "r", "path": "r.npz"}, good)
    before = (tmp_path / "r.json").read_text()
    bad = Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=2.0, solution={"x": object()})
    with pytest.raises(TypeError):
        write_result(tmp_path, {"instance": "r", "path": "r.npz"}, bad)
    assert (tmp_path / "r.json").read_text() == before
    assert os.listdir(tmp_path) == ["r.json"]


def test_routes_file_is_written_atomically_too(tmp_path):
    r = Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=12.0, family="cvrp",
               solution={"routes": [[1, 2], [3]]})
    written = write_result(tmp_path, {"instance": "v", "path": "v.vrp"}, r)
    assert [os.path.basename(p) for p in written] == ["v.json", "v.sol"]
    text = (tmp_path / "v.sol").read_text()
    assert "Route #1: 1 2" in text and "Cost 12" in text
    assert sorted(os.listdir(tmp_path)) == ["v.json", "v.sol"]
    mask = os.umask(0)
    os.umask(mask)
    for path in written:  # the mode open() gives, not the temporary file's private 0600
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask


# --- large results: the row first, Ctrl-C while writing ---------------------------------------
def _big_result(termination=Termination.OPTIMAL) -> Result:
    rng = np.random.default_rng(0)
    plan = rng.random((600, 400))
    plan[1, 2] = np.nan
    return Result(termination, SolutionStatus.FEASIBLE, objective=1.5, bound=1.0, family="transport",
                  method="approx", solution={"plan": plan, "small": np.arange(4)})


def _fake_solve(monkeypatch, result_for):
    from solvopt.io.base import Instance

    def solve_path(path, *args, **kwargs):
        return Instance("transport", "transport_npz", Path(path).stem, path), result_for(path)
    monkeypatch.setattr(cli, "solve_path", solve_path)


def test_json_line_streams_large_arrays_to_the_same_text(tmp_path, monkeypatch, capsys):
    r = _big_result()
    _fake_solve(monkeypatch, lambda path: r)
    code, out, err = _run(capsys, "solve", tmp_path / "p.npz", "--json")
    assert code == 0, err
    expected = {"instance": "p", "path": str(tmp_path / "p.npz"), **r.to_dict()}
    assert json.loads(out) == json.loads(json.dumps(expected))


def test_ctrl_c_while_the_json_line_is_written_prints_the_row_without_the_arrays(tmp_path, monkeypatch, capsys):
    _fake_solve(monkeypatch, lambda path: _big_result())
    real = results._rows

    def ctrl_c_after_one_chunk(a, should_stop):
        for i, piece in enumerate(real(a, should_stop)):
            yield piece
            if i == 0:
                request_stop()  # what the SIGINT handler does on a first Ctrl-C
    monkeypatch.setattr(results, "_rows", ctrl_c_after_one_chunk)
    monkeypatch.setattr(results, "CHUNK_ELEMENTS", 1000)
    code, out, err = _run(capsys, "solve", tmp_path / "p.npz", tmp_path / "q.npz", "--json")
    assert code == 130
    lines = out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["omitted"] == ["solution.plan"] and record["objective"] == 1.5
    assert record["solution"]["small"] == [0, 1, 2, 3]
    assert "skipped 1 instance(s)" in err and str(tmp_path / "q.npz") in err and "Traceback" not in err


def test_a_stopped_run_prints_its_row_at_once_and_out_keeps_the_arrays(tmp_path, monkeypatch, capsys):
    r = _big_result(Termination.INTERRUPTED)

    def stopped(path):
        request_stop()  # the Ctrl-C that stopped the solve
        return r
    _fake_solve(monkeypatch, stopped)
    code, out, err = _run(capsys, "solve", tmp_path / "p.npz", "--json", "--out", tmp_path / "out")
    assert code == 130
    record = json.loads(out)
    assert record["termination"] == "interrupted" and record["omitted"] == ["solution.plan"]
    saved = json.loads((tmp_path / "out" / "p.json").read_text())
    assert "omitted" not in saved and np.asarray(saved["solution"]["plan"][0]).shape == (400,)
    assert saved["solution"]["plan"][1][2] == "nan"


def test_ctrl_c_while_out_is_written_keeps_a_whole_file_naming_what_is_missing(tmp_path, monkeypatch, capsys):
    _fake_solve(monkeypatch, lambda path: _big_result())
    real = results._rows

    def ctrl_c(a, should_stop):
        for i, piece in enumerate(real(a, should_stop)):
            yield piece
            if i == 0:
                request_stop()
    monkeypatch.setattr(results, "_rows", ctrl_c)
    monkeypatch.setattr(results, "CHUNK_ELEMENTS", 1000)
    code, out, err = _run(capsys, "solve", tmp_path / "p.npz", "--out", tmp_path / "out")
    assert code == 130
    saved = json.loads((tmp_path / "out" / "p.json").read_text())
    assert saved["omitted"] == ["solution.plan"] and saved["objective"] == 1.5
    assert os.listdir(tmp_path / "out") == ["p.json"]
    assert "left out" in err and len(err.strip().splitlines()) == 1
    assert out.splitlines()[1].split()[0] == "p"  # the table row is still printed


_SIGINT_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import solvopt.cli as cli
    from solvopt.core.result import Result
    from solvopt.io.base import Instance

    def solve_path(path, *args, **kwargs):
        plan = np.random.default_rng(0).random((6000, 2500))   # 15 M numbers: seconds to write as JSON
        result = Result("optimal", "feasible", objective=1.0, family="transport", solution={"plan": plan})
        print("writing", file=sys.stderr, flush=True)
        return Instance("transport", "transport_npz", "big", path), result

    cli.solve_path = solve_path
    sys.exit(cli.main(["solve", "big.npz", "--json"]))
""")


@pytest.mark.slow
def test_sigint_while_a_large_json_line_is_written_exits_130_with_the_row(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", _SIGINT_SCRIPT], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr.readline().strip() == "writing"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("no exit within 60 s of SIGINT")
    assert proc.returncode == 130, err
    record = json.loads(out)
    assert record["omitted"] == ["solution.plan"] and record["objective"] == 1.0
    assert "Traceback" not in err


# --- a sequential batch goes on ---------------------------------------------------------------
@pytest.mark.parametrize("json_flag", [False, True])
def test_an_unexpected_failure_in_a_sequential_batch_is_one_line_and_the_rest_run(tmp_path, monkeypatch, capsys,
                                                                                    json_flag):
    real = cli.solve_path

    def solve_path(path, *args, **kwargs):
        if path.endswith("boom.npz"):
            raise RuntimeError("a bug in a solver\nwith a second line")
        return real(path, *args, **kwargs)
    monkeypatch.setattr(cli, "solve_path", solve_path)
    boom = tmp_path / "boom.npz"
    shutil.copy(SAMPLES / "transport" / "small.npz", boom)
    argv = ["solve", boom, SAMPLES / "transport" / "small.npz"] + (["--json"] if json_flag else [])
    code, out, err = _run(capsys, *argv)
    assert code == 1
    assert err.strip() == f"solvopt: error: {boom}: RuntimeError: a bug in a solver"
    if json_flag:
        assert json.loads(out)["instance"] == "small"
    else:
        rows = [line.split() for line in out.strip().splitlines()[1:]]
        assert [r[0] for r in rows] == ["boom", "small"] and rows[0][3] == "error" and rows[1][1] == "transport"
