"""Extreme and malformed inputs of the cvrp family: one clear line naming the file, never a traceback."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from solvopt.cli import main as cli_main
from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl import Split, StochasticSplit
from solvopt.io import read_instance


def write_vrp(path, demand_of_3="3", coordinate_of_2="40 50", capacity="15"):
    lines = ["NAME : tiny", "TYPE : CVRP", "DIMENSION : 4", "EDGE_WEIGHT_TYPE : EUC_2D", f"CAPACITY : {capacity}",
             "NODE_COORD_SECTION", "1 0 0", f"2 {coordinate_of_2}", "3 10 80", "4 70 20",
             "DEMAND_SECTION", "1 0", "2 4", f"3 {demand_of_3}", "4 5", "DEPOT_SECTION", "1", "-1", "EOF"]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli_error(capsys, *args) -> str:
    """Run the CLI, expect exit 1 and exactly one error line on stderr; return it."""
    assert cli_main(list(map(str, args))) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("demand", ["10000000000000000000", "1e19", "123456789012345678901234567890"])
def test_huge_demand_names_the_file_and_line(tmp_path, capsys, demand):
    path = write_vrp(tmp_path / "big.vrp", demand_of_3=demand)
    with pytest.raises(InstanceFormatError, match="demand of node 3 is too large") as info:
        read_instance(path)
    assert info.value.path == str(path) and info.value.line == 14
    assert f"{path}:14: demand of node 3 is too large" in cli_error(capsys, "solve", path)


def test_huge_capacity_names_the_file_and_line(tmp_path, capsys):
    path = write_vrp(tmp_path / "cap.vrp", capacity="1e19")
    assert f"{path}:5: CAPACITY" in cli_error(capsys, "solve", path)


@pytest.mark.parametrize("coordinate", ["1e308 5", "-1e308 1e308", "5 1e200"])
def test_huge_coordinates_name_the_file_without_numpy_warnings(tmp_path, capsys, coordinate):
    path = write_vrp(tmp_path / "far.vrp", coordinate_of_2=coordinate)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InstanceFormatError, match="coordinate of node 2 is too large") as info:
            read_instance(path)
        assert info.value.line == 8
        assert f"{path}:8: coordinate of node 2 is too large" in cli_error(capsys, "solve", path)


def test_bad_flag_values_name_the_instance(tmp_path, capsys):
    path = write_vrp(tmp_path / "tiny.vrp")
    assert f"{path}: scenarios must be >= 1" in cli_error(capsys, "solve", path, "--scenarios", "0")
    assert f"{path}: fleet must be a positive integer" in cli_error(capsys, "solve", path, "--fleet", "0")
    assert f"{path}: chunk must be a positive integer" in cli_error(capsys, "solve", path, "--scenarios", "10",
                                                                    "--chunk", "0")
    tour = tmp_path / "tour.txt"
    tour.write_text("1 2\n3 x\n")
    err = cli_error(capsys, "solve", path, "--tour", tour)
    assert str(path) in err and f"{tour}:2" in err and "customer id" in err
    tour.write_text("1 2 2\n")
    assert f"{path}: tour must be a permutation" in cli_error(capsys, "solve", path, "--tour", tour)
    assert str(path) in cli_error(capsys, "solve", path, "--tour", tmp_path / "none.txt")
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not an array")
    err = cli_error(capsys, "solve", path, "--demand", bad)
    assert str(path) in err and f"{bad}: not a NumPy .npy array" in err
    np.save(tmp_path / "shape.npy", np.ones((5, 2)))
    err = cli_error(capsys, "solve", path, "--demand", tmp_path / "shape.npy")
    assert f"{path}: --demand {tmp_path / 'shape.npy'}: demand scenarios must be an (S, 3) matrix" in err
    np.save(tmp_path / "negative.npy", -np.ones((5, 3)))
    assert ">= 0" in cli_error(capsys, "solve", path, "--demand", tmp_path / "negative.npy")
    assert str(path) in cli_error(capsys, "solve", path, "--demand", "normal")
    assert str(path) in cli_error(capsys, "solve", path, "--demand", tmp_path / "shape.npy", "--scenarios", "9")


@pytest.mark.parametrize("distances, demands, capacity, match", [
    (np.full((3, 3), "a"), [0, 1, 1], 3, "distances must be real numbers"),
    (np.zeros((3, 3)) * (1 + 1j), [0, 1, 1], 3, "distances must be real numbers"),
    (np.array([[0, 1, None], [1, 0, 1], [1, 1, 0]]), [0, 1, 1], 3, "distances must be real numbers"),
    ([[0, 1], [1, 0, 2]], [0, 1], 3, "distances must be a numeric array"),
    (np.eye(3, dtype=bool), [0, 1, 1], 3, "distances must be real numbers, got booleans"),
    (np.ones((3, 3)) * 1e300, [0, 1, 1], 3, "too large"),
    (np.ones((3, 3)), ["0", "a", "1"], 3, "demands must be real numbers"),
    (np.ones((3, 3)), [0, 1j, 1], 3, "demands must be real numbers"),
    (np.ones((3, 3)), [False, True, True], 3, "demands must be real numbers, got booleans"),
    (np.ones((3, 3)), [0, 1, 1], "3", "capacity must be a number"),
    (np.ones((3, 3)), [0, 1, 1], 3 + 0j, "capacity must be a number"),
])
def test_non_numeric_model_data_is_a_model_error(distances, demands, capacity, match):
    with pytest.raises(ModelError, match=match):
        Split(distances, demands, capacity)
    with pytest.raises(ModelError, match=match):
        StochasticSplit(distances, demands, capacity, scenarios=5)


@pytest.mark.parametrize("tour, scenarios, match", [
    (np.array(["1", "2"]), 5, "integer customer ids"),
    ([[1], [2]], 5, "1-D"),
    (None, 2.5, "positive integer or an"),
    (None, True, "positive integer or an"),
    (None, np.full((2, 2), "x"), "numeric"),
    (None, [[1, 2], [3]], "matrix of integers"),
    (None, np.full((2, 2), 2 ** 30), "too large"),
])
def test_bad_tours_and_scenarios_are_model_errors(tour, scenarios, match):
    with pytest.raises(ModelError, match=match):
        StochasticSplit(np.ones((3, 3)), [0, 1, 1], 3, tour, scenarios=scenarios)


def test_a_capacity_beyond_32_bits_is_no_limit_rather_than_an_error():
    m = StochasticSplit(np.ones((4, 4)) - np.eye(4), [0, 5, 7, 9], 1e15, scenarios=np.full((3, 3), 100))
    r = m.solve()
    assert m.int_capacity == 2 ** 31 - 1 and r.ok and r.solution["infeasible_scenarios"] == 0
    assert r.objective == pytest.approx(Split(m.distances, m.demands, 1e15).solve().objective)
