"""Extreme and malformed k-HC inputs (issue 9): one clear line or the right answer, never a traceback.

k-HC2 is similarity-equivariant: OPT(s P + t) = s^2 OPT(P). The references are the same points
at scale 1 (solved by brute force, independent of the scaling code) and that identity.
"""
from __future__ import annotations

import numpy as np
import pytest
from khc_reference import brute_force

from solvopt.cli import main
from solvopt.core.errors import ModelError, SolvoptError
from solvopt.core.result import Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.io import read_instance
from solvopt.khc.reader import format_ampl_khc

METHODS = ("bnb", "sbb", "heuristic", "brute-force")


def base_points(m: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=(m, 2))


# --- scale equivariance: answers in the user's units ---------------------------------------------------
@pytest.mark.parametrize("scale", [1e-150, 1e-6, 1e7, 1e12, 1e78, 1e150])
@pytest.mark.parametrize("method", METHODS)
def test_scaled_points_give_the_scaled_optimum(scale, method):
    pts = base_points()
    optimum = brute_force(pts, 2)
    # abs_gap (default 1e-9) is in the user's units: at tiny scales it would accept any answer
    options = {"restarts": 10} if method == "heuristic" else {} if method == "brute-force" else {"abs_gap": 0.0}
    r = HyperplaneClustering(pts * scale, 2).solve(method, **options)
    expected = optimum * scale * scale
    if method == "heuristic":   # bound 0 proves nothing on a positive optimum, at any scale
        assert optimum > 0 and r.objective >= expected * (1 - 1e-9)
        assert r.termination is Termination.ITERATION_LIMIT
    else:
        assert r.termination is Termination.OPTIMAL, (method, r.objective, r.bound)
        assert r.objective == pytest.approx(expected, rel=1e-7)
        assert r.bound == pytest.approx(expected, rel=1e-6) and r.bound <= r.objective
    # planes in the user's units: the reported distances are those of the reported planes
    sol = r.solution
    signed = (pts * scale) @ sol["normals"].T - sol["offsets"]
    own = signed[np.arange(len(pts)), sol["assignment"]]
    assert np.allclose(own * own, sol["distances"], rtol=1e-6, atol=1e-12 * scale * scale)
    assert sol["cluster_costs"].sum() == pytest.approx(r.objective, rel=1e-12)


@pytest.mark.parametrize("offset", [1e7, -1e12])
@pytest.mark.parametrize("method", ["bnb", "sbb"])
def test_translated_points_give_the_same_optimum(offset, method):
    pts = base_points()
    optimum = brute_force(pts, 2)
    r = HyperplaneClustering(pts + offset, 2).solve(method)
    assert r.termination is Termination.OPTIMAL
    # the data hold about 16 - log10(|offset|) digits of the spread: compare at that precision
    tol = 1e-15 * abs(offset) * 10
    assert r.objective == pytest.approx(optimum, rel=max(1e-7, tol), abs=tol)


def test_spread_of_1e7_and_more_runs_sbb_node_lps():
    pts = base_points(9, seed=4)
    optimum = brute_force(pts, 2)
    for scale in (1e7, 1e9, 1e11):
        r = HyperplaneClustering(pts * scale, 2).solve("sbb", time_limit=60)
        assert r.termination is Termination.OPTIMAL and r.stats["nodes"] >= 1
        assert r.objective == pytest.approx(optimum * scale ** 2, rel=1e-7)


# --- coordinates near the float range -------------------------------------------------------------------
def huge_points() -> np.ndarray:
    return base_points() * 1e308


@pytest.mark.parametrize("method", METHODS)
def test_squared_distances_beyond_float64_are_a_model_error(method):
    with pytest.raises(ModelError, match="cannot be represented in float64"):
        HyperplaneClustering(huge_points(), 2).solve(method)


def test_exact_fits_near_the_float_range_are_solved():
    """Two horizontal lines at 1e308: the optimum 0 is representable, so it is returned."""
    t = np.linspace(-1.0, 1.0, 5) * 1.5e308
    pts = np.vstack([np.column_stack([t, np.full(5, -1e308)]), np.column_stack([t, np.full(5, 1.2e308)])])
    for method in ("bnb", "sbb", "heuristic"):
        r = HyperplaneClustering(pts, 2).solve(method)
        assert r.objective == 0.0 and np.all(np.isfinite(r.solution["offsets"])), method
        assert r.termination is Termination.OPTIMAL
        assert sorted(np.round(r.solution["offsets"] / 1e308, 6)) in ([-1.0, 1.2], [-1.2, 1.0])


def _write(path, points, fmt):
    if fmt == "csv":
        path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in points) + "\n")
    elif fmt == "npy":
        np.save(path, points)
    else:
        path.write_text(format_ampl_khc(points, 2))


@pytest.mark.parametrize("fmt", ["csv", "dat", "npy"])
@pytest.mark.parametrize("method", ["bnb", "heuristic", "sbb"])
def test_cli_on_coordinates_near_1e308_gives_one_line(tmp_path, capsys, fmt, method):
    path = tmp_path / f"huge.{fmt}"
    _write(path, huge_points(), fmt)
    args = ["solve", str(path), "--method", method] + ([] if fmt == "dat" else ["--k", "2"])
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "cannot be represented in float64" in err[0]
    assert "Traceback" not in err[0] and "NaN" not in err[0]


@pytest.mark.parametrize("fmt", ["csv", "dat", "npy"])
def test_cli_on_coordinates_around_1e78_reports_the_optimum(tmp_path, capsys, fmt):
    pts = base_points()
    path = tmp_path / f"big.{fmt}"
    _write(path, pts * 1e78, fmt)
    args = ["solve", str(path), "--json"] + ([] if fmt == "dat" else ["--k", "2"])
    assert main(args) == 0
    import json
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["termination"] == "optimal"
    assert record["objective"] == pytest.approx(brute_force(pts, 2) * 1e156, rel=1e-7)


# --- arrays that are not real numbers --------------------------------------------------------------
@pytest.mark.parametrize("points", [
    base_points() * (1 + 1j),
    base_points().astype(np.complex128),
    np.array([[1.0, 2.0], [3.0, "a"]], dtype=object),
    np.array([["1", "2"], ["3", "4"], ["5", "6"]]),
    np.array([[1, 2], [3, 2 ** 70]], dtype=object),
    [[1.0, 2.0], [3.0]],
])
def test_non_real_arrays_are_model_errors(points):
    with pytest.raises(ModelError, match="points must"):
        HyperplaneClustering(points, 1)


def test_integer_and_boolean_free_numeric_arrays_are_accepted():
    model = HyperplaneClustering(np.array([[0, 0], [1, 1], [2, 2], [0, 5]], dtype=np.int32), 1)
    assert model.points.dtype == np.float64


# --- files ----------------------------------------------------------------------------------------------
def test_csv_with_a_utf8_byte_order_mark_is_read(tmp_path):
    body = "1.5,2\n3,4\n5,6.25\n"
    for name, text in (("plain.csv", "\ufeff" + body), ("header.csv", "\ufeffx,y\n" + body)):
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8"))
        inst = read_instance(path, k=1)
        assert inst.data["points"].tolist() == [[1.5, 2.0], [3.0, 4.0], [5.0, 6.25]], name


def test_ampl_file_with_a_utf8_byte_order_mark_is_read(tmp_path):
    pts = base_points()
    path = tmp_path / "bom.dat"
    path.write_bytes(("\ufeff" + format_ampl_khc(pts, 2)).encode("utf-8"))
    inst = read_instance(path)
    assert np.array_equal(inst.data["points"], pts) and inst.data["k"] == 2


def test_bad_k_on_the_cli_names_the_file(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text("0,0\n1,1\n2,3\n")
    assert main(["solve", str(path), "--k", "5"]) == 1
    err = capsys.readouterr().err.strip()
    assert str(path) in err and "k" in err and len(err.splitlines()) == 1
    with pytest.raises(SolvoptError):
        read_instance(path)  # point files carry no k
