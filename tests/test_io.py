"""Instance readers: every format against independent references, and every malformed file
rejected with an InstanceFormatError that names the line."""
from __future__ import annotations

import gzip
import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.io import detect_format, read_instance
from solvopt.io.convert import convert
from solvopt.khc.reader import format_ampl_khc

SAMPLE_FILES = ["khc/sr_10_2_2_1022.dat", "khc/sr_12_3_2_1232.dat", "khc/sr_20_2_3_2023.dat",
                "cvrp/X-n101-k25.vrp", "cvrp/X-n120-k6.vrp", "irp/abs1n5_1.dat", "irp/abs1n10_1.dat",
                "transport/small.npz", "lp/knapsack.mps", "lp/production.lp"]


def _write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def _fails_at(path, line, words, **params):
    """Reading ``path`` raises InstanceFormatError naming ``line`` and containing ``words``."""
    with pytest.raises(InstanceFormatError) as exc:
        read_instance(path, **params)
    assert exc.value.line == line, str(exc.value)
    if line is not None:
        assert f":{line}:" in str(exc.value)
    assert words.lower() in str(exc.value).lower(), str(exc.value)
    return exc.value


def _nint_distances(coords):
    """Reference: TSPLIB nint of the Euclidean distance, one pair at a time."""
    n = len(coords)
    return np.array([[math.floor(math.hypot(*(coords[i] - coords[j])) + 0.5) for j in range(n)] for i in range(n)])


# --- shipped samples -------------------------------------------------------------------------------
@pytest.mark.parametrize("rel", SAMPLE_FILES)
def test_info_on_every_sample(samples, capsys, rel):
    assert main(["info", str(samples / rel), "--json"]) == 0
    out, err = capsys.readouterr()
    info = json.loads(out)
    assert err == "" and info["path"].endswith(rel)
    assert info["family"] == {"khc": "khc", "cvrp": "cvrp", "irp": "irp", "transport": "transport",
                              "lp": "lp"}[rel.split("/")[0]]


def test_samples_are_unchanged_copies_of_the_published_files(samples, shared_instances):
    for rel in SAMPLE_FILES[:7]:
        assert (samples / rel).read_bytes() == (shared_instances / rel).read_bytes(), rel


# --- k-HC AMPL ------------------------------------------------------------------------------------
def test_ampl_khc_sample_values(samples):
    inst = read_instance(samples / "khc/sr_10_2_2_1022.dat")
    assert (inst.family, inst.format, inst.data["k"]) == ("khc", "ampl_khc", 2)
    assert inst.data["points"].shape == (10, 2) and inst.data["points"].dtype == np.float64
    np.testing.assert_array_equal(inst.data["points"][[0, 1, 9]], [[7.6, 8.0], [3.0, 2.7], [10.0, 10.0]])


def test_ampl_khc_every_shared_file_matches_its_name_and_rewrites_identically(shared_instances):
    for path in sorted((shared_instances / "khc").glob("sr_*.dat")):
        inst = read_instance(path)
        _, m, n, k, _ = path.stem.split("_")
        assert (inst.meta["m"], inst.meta["n"], inst.meta["k"]) == (int(m), int(n), int(k)), path
        assert format_ampl_khc(inst.data["points"], inst.data["k"]) == path.read_text(), path


def test_ampl_k_from_caller_overrides_file(samples):
    inst = read_instance(samples / "khc/sr_10_2_2_1022.dat", k=4)
    assert inst.data["k"] == 4 and inst.meta["file_k"] == 2
    with pytest.raises(ModelError, match="k must be in 1..m"):
        read_instance(samples / "khc/sr_10_2_2_1022.dat", k=11)


def test_ampl_rows_may_come_in_any_order_with_comments(tmp_path):
    path = _write(tmp_path, "p.dat", "# two points\nset M := 1 2 ;\nset N := 1 2;\nset K := 1;\n"
                                     "param a :\n1 2 :=\n2 3 4   # second\n1 1 2\n;\n")
    np.testing.assert_array_equal(read_instance(path).data["points"], [[1, 2], [3, 4]])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.data())
def test_ampl_writer_reader_round_trip(tmp_path_factory, m, n, data):
    values = data.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=m * n, max_size=m * n))
    points = np.array(values).reshape(m, n)
    k = data.draw(st.integers(1, m))
    path = tmp_path_factory.mktemp("ampl") / "r.dat"
    path.write_text(format_ampl_khc(points, k))
    inst = read_instance(path)
    np.testing.assert_array_equal(inst.data["points"], points)
    assert inst.data["k"] == k


GOOD_AMPL = "set M := 1 2 3 ;\nset N := 1 2 ;\nset K := 1 2 ;\nparam a :\n 1 2:=\n1 0 0\n2 1 1\n3 2 5\n;\n"


@pytest.mark.parametrize("text, line, words", [
    (GOOD_AMPL.replace("3 2 5\n;\n", "3 2 5\n"), 9, "end of file"),             # truncated: no ';'
    (GOOD_AMPL.replace("3 2 5\n", ""), 7, "no row for point(s) 3"),                 # wrong count
    (GOOD_AMPL.replace("2 1 1", "2 1"), 7, "expected a point index and 2 coordinates"),
    (GOOD_AMPL.replace("2 1 1", "2 nan 1"), 7, "must be finite"),
    (GOOD_AMPL.replace("2 1 1", "2 1 inf"), 7, "must be finite"),
    (GOOD_AMPL.replace("2 1 1", "2 1 x7"), 7, "expected a number"),
    (GOOD_AMPL.replace("2 1 1", "4 1 1"), 7, "not in set M"),
    (GOOD_AMPL.replace("2 1 1", "1 1 1"), 7, "already has a row"),
    (GOOD_AMPL.replace(" 1 2:=", " 1 3:="), 5, "differ from set N"),
    (GOOD_AMPL.replace("set K := 1 2 ;\n", ""), 9, "set K"),
    (GOOD_AMPL.replace("set K := 1 2 ;", "set K := 1 2 3 4 ;"), None, "k must be in 1..m"),
    (GOOD_AMPL.replace("set N", "set Q"), 2, "expected set M, N or K"),
    (GOOD_AMPL.replace("param a :", "param a :="), 4, "expected ':'"),
    (GOOD_AMPL.replace("set M := 1 2 3 ;", "set M := 1 2 2 ;"), 1, "twice"),
    ("set M := 1 2 ;\n\xff\xfe junk\n", 2, "not a UTF-8"),
])
def test_ampl_malformed_files_name_the_line(tmp_path, text, line, words):
    raw = text.encode("latin-1") if "\xff" in text else text
    _fails_at(_write(tmp_path, "bad.dat", raw), line, words)


def test_empty_file_names_line_one_for_every_text_format(tmp_path):
    for name, fmt in (("e.dat", "ampl_khc"), ("e.dat", "archetti_irp"), ("e.csv", "points"), ("e.vrp", "vrplib"),
                      ("e.sol", "vrplib_sol")):
        path = _write(tmp_path, name, "")
        _fails_at(path, 1, "end of file", format=fmt, **({"k": 1} if fmt in ("ampl_khc", "points") else {}))


@pytest.mark.parametrize("name, fmt", [("j.dat", "ampl_khc"), ("j.dat", "archetti_irp"), ("j.csv", "points"),
                                       ("j.vrp", "vrplib"), ("j.sol", "vrplib_sol")])
def test_binary_junk_names_the_line_for_every_text_format(tmp_path, name, fmt):
    path = _write(tmp_path, name, b"first line\n\x1f\x8b\x08\x00\xde\xad\xbe\xef\n")
    _fails_at(path, 2, "UTF-8", format=fmt, **({"k": 1} if fmt in ("ampl_khc", "points") else {}))


# --- k-HC point files ------------------------------------------------------------------------------
def test_csv_points_with_header_and_comments(tmp_path):
    path = _write(tmp_path, "p.csv", "# my points\nx, y\n1, 2\n\n3.5, -4 # a comment\n")
    inst = read_instance(path, k=1)
    assert (inst.family, inst.format, inst.meta) == ("khc", "points", {"m": 2, "n": 2, "k": 1})
    np.testing.assert_array_equal(inst.data["points"], [[1, 2], [3.5, -4]])


def test_csv_without_header_and_npy_agree(tmp_path):
    points = np.random.default_rng(3).normal(size=(7, 3))
    csv = tmp_path / "p.csv"
    np.savetxt(csv, points, delimiter=",", fmt="%.17g")
    npy = tmp_path / "p.npy"
    np.save(npy, points)
    np.testing.assert_array_equal(read_instance(csv, k=2).data["points"], points)
    np.testing.assert_array_equal(read_instance(npy, k=2).data["points"], points)


def test_point_files_need_k(tmp_path, capsys):
    path = _write(tmp_path, "p.csv", "1,2\n3,4\n")
    with pytest.raises(ModelError, match="--k"):
        read_instance(path)
    assert main(["info", path]) == 0 and "k=unset" in capsys.readouterr().out   # info needs no k


@pytest.mark.parametrize("text, line, words", [
    ("x,y\n1,2\n3\n", 3, "expected 2 comma-separated values"),
    ("1,2\n3,abc\n", 2, "expected a number"),
    ("1,2\n3,nan\n", 2, "must be finite"),
    ("1,2\n-inf,1\n", 2, "must be finite"),
    ("x,y\n# nothing else\n", 3, "at least one row"),
    (b"1,2\n3,4\x00\x01\n", 2, "binary"),
])
def test_csv_malformed_names_the_line(tmp_path, text, line, words):
    _fails_at(_write(tmp_path, "bad.csv", text), line, words, k=1)


def test_npy_bad_arrays(tmp_path):
    np.save(tmp_path / "one_d.npy", np.arange(3.0))
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan]]))
    np.save(tmp_path / "obj.npy", np.array([[1, "a"]], dtype=object), allow_pickle=True)
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY garbage \xff\xff")
    for name, words in (("one_d", "2-D"), ("nan", "must be finite"), ("obj", "not a readable"),
                        ("junk", "not a readable")):
        _fails_at(str(tmp_path / f"{name}.npy"), None, words, k=1)


# --- sniffing ---------------------------------------------------------------------------------------
def test_dat_files_are_told_apart_by_content(samples, tmp_path):
    assert detect_format(str(samples / "khc/sr_10_2_2_1022.dat")).format == "ampl_khc"
    assert detect_format(str(samples / "irp/abs1n5_1.dat")).format == "archetti_irp"
    # an IRP file without a known extension is still recognised by its first line
    other = _write(tmp_path, "abs.txt", (samples / "irp/abs1n5_1.dat").read_text())
    assert read_instance(other).family == "irp"


def test_unknown_extension_cannot_be_detected(tmp_path):
    _fails_at(_write(tmp_path, "x.xyz", "hello\n"), None, "cannot detect the instance format")


# --- CVRPLIB -----------------------------------------------------------------------------------------
def test_vrplib_matches_the_vrplib_package(shared_instances):
    vrplib = pytest.importorskip("vrplib")
    for path in sorted((shared_instances / "cvrp").glob("*.vrp"))[:4]:
        ours = read_instance(path).data
        ref = vrplib.read_instance(str(path))
        assert ref["depot"][0] == 0  # depot is node 1 in the file, so no reindexing happens here
        np.testing.assert_array_equal(ours["coords"], ref["node_coord"])
        np.testing.assert_array_equal(ours["demands"], ref["demand"])
        assert ours["capacity"] == ref["capacity"]
        # vrplib >= 2 returns unrounded EUC_2D distances; CVRPLIB rounds to the nearest integer
        rounded = ref["edge_weight"] if np.all(ref["edge_weight"] == np.round(ref["edge_weight"])) \
            else np.floor(ref["edge_weight"] + 0.5)
        np.testing.assert_array_equal(ours["distances"], rounded)


def test_vrplib_sample_fields_and_distances(samples):
    inst = read_instance(samples / "cvrp/X-n101-k25.vrp")
    d = inst.data
    assert (inst.name, inst.family, d["capacity"], d["vehicles"], d["depot"]) == ("X-n101-k25", "cvrp", 206, 25, 0)
    assert d["demands"].dtype == np.int64 and d["demands"][0] == 0 and d["demands"][1] == 38
    np.testing.assert_array_equal(d["coords"][:2], [[365, 689], [146, 180]])
    sub = d["coords"][:12]
    np.testing.assert_array_equal(d["distances"][:12, :12], _nint_distances(sub))


TINY_VRP = """NAME : tiny-k2
TYPE : CVRP
DIMENSION : 4
EDGE_WEIGHT_TYPE : EUC_2D
CAPACITY : 10
NODE_COORD_SECTION
1 0 0
2 3 4
3 10 10
4 0 1
DEMAND_SECTION
1 4
2 12
3 0
4 2
DEPOT_SECTION
3
-1
EOF
"""


def test_vrplib_reindexes_the_depot_to_zero_and_reports_overweight_customers(tmp_path):
    inst = read_instance(_write(tmp_path, "tiny.vrp", TINY_VRP))
    d = inst.data
    np.testing.assert_array_equal(d["coords"], [[10, 10], [0, 0], [3, 4], [0, 1]])
    np.testing.assert_array_equal(d["demands"], [0, 4, 12, 2])
    np.testing.assert_array_equal(d["distances"], _nint_distances(d["coords"]))
    assert d["distances"][1, 2] == 5 and d["vehicles"] == 2 and inst.meta["customers_over_capacity"] == 1


def test_vrplib_explicit_full_matrix_and_vehicles_field(tmp_path):
    text = ("NAME : m\nTYPE : CVRP\nDIMENSION : 3\nVEHICLES : 4\nMY_FIELD : kept\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
            "EDGE_WEIGHT_FORMAT : FULL_MATRIX\nCAPACITY : 5\nEDGE_WEIGHT_SECTION\n0 1 2\n1 0\n3\n2 3 0\n"
            "DEMAND_SECTION :\n1 2\n2 0\n3 1\nDEPOT_SECTION\n2\n-1\nEOF\n")
    d = read_instance(_write(tmp_path, "m.vrp", text)).data
    assert d["coords"] is None and d["vehicles"] == 4
    np.testing.assert_array_equal(d["distances"], [[0, 1, 3], [1, 0, 2], [3, 2, 0]])
    np.testing.assert_array_equal(d["demands"], [0, 2, 1])


@pytest.mark.parametrize("old, new, line, words", [
    ("4 0 1\nDEMAND", "DEMAND", 10, "the section ended after 3"),               # truncated section
    ("2 12", "2 twelve", 13, "expected an integer"),
    ("2 12", "2 -3", 13, "must be >= 0"),
    ("2 3 4", "2 3 nan", 8, "must be finite"),
    ("2 3 4", "2 3", 8, "expected 3 values"),
    ("2 3 4", "5 3 4", 8, "expected each id 1..4 once"),
    ("EUC_2D", "MAN_2D", 4, "MAN_2D is not supported"),
    ("DEPOT_SECTION\n3\n-1\n", "", 17, "without a DEPOT_SECTION"),
    ("3\n-1\n", "3\n4\n-1\n", 18, "expected -1"),
    ("3\n-1", "1\n-1", 17, "has demand 4"),
    ("CAPACITY : 10", "CAPACITY : ten", 5, "expected an integer for CAPACITY"),
    ("CAPACITY : 10\n", "", 5, "no CAPACITY"),
    ("NAME : tiny-k2", "NAME : tiny-k2\nWHAT IS THIS", 2, "expected a 'KEY : value'"),
    ("DEMAND_SECTION", "DEMAND_SECTON", 11, "expected a section keyword"),
])
def test_vrplib_malformed_names_the_line(tmp_path, old, new, line, words):
    assert old in TINY_VRP
    _fails_at(_write(tmp_path, "bad.vrp", TINY_VRP.replace(old, new, 1)), line, words)


def test_vrplib_solution(tmp_path):
    path = _write(tmp_path, "tiny.sol", "Route #1: 1 3\nRoute #2: 2\nCost 46\n")
    sol = read_instance(path)
    assert (sol.family, sol.format) == ("cvrp_solution", "vrplib_sol")
    assert sol.data == {"routes": [[1, 3], [2]], "cost": 46.0}
    # customer ids are our node indices: the routes' cost under the instance's distances is the file's
    # (14 + 1 + 13 for route 1, 9 + 9 for route 2, by hand from the coordinates)
    d = read_instance(_write(tmp_path, "tiny.vrp", TINY_VRP)).data["distances"]
    cost = sum(d[0, r[0]] + sum(d[a, b] for a, b in zip(r, r[1:])) + d[r[-1], 0] for r in sol.data["routes"])
    assert cost == sol.data["cost"]


@pytest.mark.parametrize("text, line, words", [
    ("Route #1: 1 3\nRoute #2: 3\nCost 27\n", 2, "already on a route (line 1)"),
    ("Route #1: 1 x\nCost 27\n", 1, "expected an integer"),
    ("Route #1: 1 2\n", 2, "without the 'Cost"),
    ("Route #1:\nCost 3\n", 1, "at least one customer"),
    ("Route #1: 0 2\nCost 3\n", 1, "0 is the depot"),
    ("Route #1: 1\nCost abc\n", 2, "expected a number"),
])
def test_vrplib_solution_malformed(tmp_path, text, line, words):
    _fails_at(_write(tmp_path, "bad.sol", text), line, words)


# --- Archetti IRP ------------------------------------------------------------------------------------
def test_irp_sample_against_a_plain_table_reading(samples):
    path = samples / "irp/abs1n5_1.dat"
    inst = read_instance(path)
    d = inst.data
    rows = [list(map(float, line.split())) for line in path.read_text().splitlines() if line.strip()]
    assert (d["horizon"], d["vehicle_capacity"], inst.meta["customers"]) == (rows[0][1], rows[0][2], 5)
    assert d["supplier"] == {"start_inventory": 510.0, "production": 193.0, "holding_cost": 0.30}
    table = np.array(rows[2:])
    for key, col in (("start_inventory", 3), ("max_inventory", 4), ("min_inventory", 5), ("demand", 6),
                     ("holding_cost", 7)):
        np.testing.assert_array_equal(d[key], table[:, col], err_msg=key)
    np.testing.assert_array_equal(d["coords"], np.vstack([rows[1][1:3], table[:, 1:3]]))
    np.testing.assert_array_equal(d["distances"], _nint_distances(d["coords"]))


TINY_IRP = "3 2 50\n1 0 0 100 40 0.3\n2 3 4 10 20 0 5 0.2\n3 6 8 5 15 1 4 0.1\n"


@pytest.mark.parametrize("text, line, words", [
    (TINY_IRP.replace("3 2 50", "4 2 50"), 5, "unexpected end of file"),         # wrong count / truncated
    (TINY_IRP.replace("3 2 50", "2 2 50"), 4, "more lines"),
    (TINY_IRP.replace("3 2 50", "3 2"), 1, "expected the header"),
    (TINY_IRP.replace("0.2", "0.2 9"), 3, "expected 8 values"),
    (TINY_IRP.replace(" 5 0.2", " nan 0.2"), 3, "must be finite"),
    (TINY_IRP.replace(" 5 0.2", " five 0.2"), 3, "expected a number"),
    (TINY_IRP.replace("15 1", "15 16"), 4, "exceeds max_inventory"),
    (TINY_IRP.replace(" 100 ", " -100 "), 2, "must be >= 0"),
    (TINY_IRP.replace("3 6 8", "2 6 8"), 4, "used twice"),
    (b"3 2 50\n\x89PNG\r\n\x1a\n", 2, "not a UTF-8"),
])
def test_irp_malformed_names_the_line(tmp_path, text, line, words):
    _fails_at(_write(tmp_path, "bad.dat", text), line, words)


def test_irp_tiny_values(tmp_path):
    d = read_instance(_write(tmp_path, "t.dat", TINY_IRP)).data
    np.testing.assert_array_equal(d["distances"], [[0, 5, 10], [5, 0, 5], [10, 5, 0]])
    np.testing.assert_array_equal(d["min_inventory"], [0, 1])


# --- transport .npz --------------------------------------------------------------------------------
def test_transport_sample_and_default_weights(samples, tmp_path):
    d = read_instance(samples / "transport/small.npz").data
    assert d["x"].shape == (20, 2) and d["y"].shape == (30, 2)
    np.testing.assert_allclose(d["a"], 1 / 20) and np.testing.assert_allclose(d["b"], 1 / 30)
    np.savez(tmp_path / "u.npz", x=np.zeros((3, 1)), y=np.ones((4, 1)))
    d = read_instance(tmp_path / "u.npz").data
    np.testing.assert_array_equal(d["a"], np.full(3, 1 / 3))
    np.testing.assert_array_equal(d["b"], np.full(4, 1 / 4))


@pytest.mark.parametrize("arrays, words", [
    (dict(x=np.zeros((2, 2))), "missing array 'y'"),
    (dict(x=np.zeros((2, 2)), y=np.zeros((3, 3))), "same dimension"),
    (dict(x=np.zeros(2), y=np.zeros((3, 1))), "'x' must be 2-D"),
    (dict(x=np.array([[0.0], [np.nan]]), y=np.zeros((3, 1))), "'x' has a non-finite"),
    (dict(x=np.zeros((2, 1)), y=np.zeros((2, 1)), a=np.array([1.5, -0.5]), b=np.array([0.5, 0.5])), "negative"),
    (dict(x=np.zeros((2, 1)), y=np.zeros((2, 1)), a=np.array([1.0, 1.0]), b=np.array([0.5, 0.5])), "equal total"),
    (dict(x=np.zeros((2, 1)), y=np.zeros((2, 1)), a=np.ones(3)), "'a' has 3 entries"),
    (dict(x=np.zeros((2, 1)), y=np.zeros((2, 1)), c=np.ones(3)), "unknown array"),
])
def test_transport_malformed(tmp_path, arrays, words):
    np.savez(tmp_path / "bad.npz", **arrays)
    _fails_at(str(tmp_path / "bad.npz"), None, words)


def test_transport_junk_file(tmp_path):
    _fails_at(_write(tmp_path, "junk.npz", b"PK\x03\x04 not really a zip"), None, "not a readable .npz")


# --- MPS / LP models --------------------------------------------------------------------------------
def _highs_model(c, A, row_lower, row_upper, col_lower, col_upper, integer=(), sense=1, hessian_lower=None):
    highspy = pytest.importorskip("highspy")
    h = highspy.Highs()
    h.silent()
    for j in range(len(c)):
        h.addVar(col_lower[j], col_upper[j])
        h.changeColCost(j, c[j])
    for j in integer:
        h.changeColIntegrality(j, highspy.HighsVarType.kInteger)
    for i in range(A.shape[0]):
        nz = np.flatnonzero(A[i])
        h.addRow(row_lower[i], row_upper[i], len(nz), nz.astype(np.int32), A[i, nz])
    if sense == -1:
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    if hessian_lower is not None:
        L = sp.csc_matrix(np.tril(hessian_lower))
        h.passHessian(len(c), L.nnz, highspy.HessianFormat.kTriangular, L.indptr.astype(np.int32),
                      L.indices.astype(np.int32), L.data)
    return h


INF = math.inf
LP_DATA = dict(c=np.array([-3.0, -5.0, 0.0]), A=np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0], [3.0, 2.0, 0.0]]),
               row_lower=np.array([-INF, 12.0, 2.0]), row_upper=np.array([4.0, 12.0, INF]),
               col_lower=np.array([0.0, -1.0, -INF]), col_upper=np.array([INF, 7.0, 3.0]))


def _assert_same_form(sf, data, integer=(), sense=1):
    np.testing.assert_array_equal(sf.c, data["c"])
    np.testing.assert_array_equal(sf.A.toarray(), data["A"])
    for key in ("row_lower", "row_upper", "col_lower", "col_upper"):
        np.testing.assert_array_equal(getattr(sf, key), data[key], err_msg=key)
    expected = np.zeros(len(data["c"]), dtype=np.int8)
    expected[list(integer)] = 1
    np.testing.assert_array_equal(sf.integrality, expected)
    assert sf.integrality.dtype == np.int8 and sf.sense == sense and sp.isspmatrix_csr(sf.A)


@pytest.mark.parametrize("ext", [".mps", ".lp"])
def test_lp_written_by_highs_reads_back(tmp_path, ext):
    path = tmp_path / f"lp{ext}"
    _highs_model(**LP_DATA).writeModel(str(path))
    inst = read_instance(path)
    assert (inst.family, inst.format, inst.meta["kind"]) == ("lp", ext[1:], "lp")
    _assert_same_form(inst.data["standard_form"], LP_DATA)


def test_milp_written_by_highs_reads_back_gzipped(tmp_path):
    path = tmp_path / "milp.mps"
    _highs_model(**LP_DATA, integer=(1,), sense=-1).writeModel(str(path))
    gz = tmp_path / "milp.mps.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    for p in (path, gz):
        inst = read_instance(p)
        assert inst.meta["kind"] == "milp" and inst.name == "milp"
        _assert_same_form(inst.data["standard_form"], LP_DATA, integer=(1,), sense=-1)


def test_qp_hessian_is_the_full_symmetric_matrix(tmp_path):
    """HiGHS stores the lower triangle; our Q must give HiGHS' own objective value at its optimum."""
    Q = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 2.0]])
    h = _highs_model(c=np.array([-1.0, 2.0, -3.0]), A=np.array([[1.0, 1.0, 1.0]]), row_lower=np.array([-INF]),
                     row_upper=np.array([10.0]), col_lower=np.full(3, -5.0), col_upper=np.full(3, 5.0),
                     hessian_lower=Q)
    path = tmp_path / "qp.mps"
    h.writeModel(str(path))
    h.run()
    x = np.array(h.getSolution().col_value)
    sf = read_instance(path).data["standard_form"]
    assert sf.kind == "qp"
    np.testing.assert_array_equal(sf.Q.toarray(), Q)
    ours = sf.c @ x + 0.5 * x @ (sf.Q @ x) + sf.offset
    assert ours == pytest.approx(h.getInfo().objective_function_value, rel=1e-9, abs=1e-9)


def test_convert_keeps_a_miqp(tmp_path):
    """HiGHS cannot solve a MIQP but can write one: convert must keep Q and the integers."""
    Q = np.array([[2.0, 1.0], [1.0, 4.0]])
    _highs_model(c=np.array([1.0, -2.0]), A=np.array([[1.0, 2.0]]), row_lower=np.array([-INF]),
                 row_upper=np.array([5.0]), col_lower=np.zeros(2), col_upper=np.full(2, 4.0), integer=(1,),
                 hessian_lower=Q).writeModel(str(tmp_path / "miqp.mps"))
    convert(read_instance(tmp_path / "miqp.mps"), tmp_path / "again.mps")
    sf = read_instance(tmp_path / "again.mps").data["standard_form"]
    assert sf.kind == "miqp"
    np.testing.assert_array_equal(sf.Q.toarray(), Q)
    np.testing.assert_array_equal(sf.integrality, [0, 1])


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 5), st.integers(0, 4), st.data())
def test_standard_form_write_read_round_trip(tmp_path_factory, n, m, data):
    from solvopt.dsl.standard_form import StandardForm
    from solvopt.lp.reader import write_model_file
    ints = st.integers(-9, 9).map(float)
    A = np.array(data.draw(st.lists(ints, min_size=n * m, max_size=n * m)) or np.zeros(0)).reshape(m, n)
    lower = np.array(data.draw(st.lists(st.sampled_from([-INF, -2.0, 0.0]), min_size=n, max_size=n)))
    upper = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 5.0, INF]), min_size=n, max_size=n)))
    row_upper = np.array(data.draw(st.lists(st.sampled_from([3.0, INF]), min_size=m, max_size=m)))
    row_lower = np.where(np.isinf(row_upper), 1.0, -INF) if m else np.zeros(0)
    # nonzero costs: an LP file orders columns by first appearance and drops columns that never appear
    nonzero = st.integers(1, 9).map(float) | st.integers(-9, -1).map(float)
    sf = StandardForm(c=np.array(data.draw(st.lists(nonzero, min_size=n, max_size=n))), A=sp.csr_matrix(A),
                      row_lower=row_lower, row_upper=row_upper, col_lower=lower, col_upper=upper,
                      integrality=np.array(data.draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n)),
                                           dtype=np.int8),
                      sense=data.draw(st.sampled_from([1, -1])), offset=data.draw(ints))
    folder = tmp_path_factory.mktemp("sf")
    for ext in (".mps", ".lp"):
        write_model_file(sf, str(folder / f"m{ext}"))
        back = read_instance(folder / f"m{ext}").data["standard_form"]
        np.testing.assert_array_equal(back.A.toarray(), A)
        for key in ("c", "col_lower", "col_upper", "integrality"):
            np.testing.assert_array_equal(getattr(back, key), getattr(sf, key), err_msg=f"{ext} {key}")
        # HiGHS may write a row bound pair in an equivalent way; compare the feasible interval
        np.testing.assert_array_equal(back.row_lower, sf.row_lower)
        np.testing.assert_array_equal(back.row_upper, sf.row_upper)
        assert back.sense == sf.sense and back.offset == sf.offset


BAD_MPS = "NAME t\nROWS\n N obj\n L r0\nCOLUMNS\n    x obj 1 r0 {v}\nRHS\n    RHS r0 4\nENDATA\n"


@pytest.mark.parametrize("value, words", [("abc", "expected a number in COLUMNS"), ("nan", "must be finite"),
                                          ("1e400", "must be finite")])
def test_mps_bad_values_name_the_line(tmp_path, value, words):
    # HiGHS itself would read 'abc' as 0 and keep the NaN without a word
    _fails_at(_write(tmp_path, "bad.mps", BAD_MPS.format(v=value)), 6, words)


def test_mps_data_that_highs_drops_is_reported(tmp_path):
    path = _write(tmp_path, "dup.mps", BAD_MPS.format(v="2").replace("RHS\n", "    x r0 3\nRHS\n"))
    with pytest.warns(UserWarning, match="duplicate nonzero"):
        inst = read_instance(path)
    assert any("duplicate" in w for w in inst.meta["warnings"])


def test_truncated_and_empty_models(samples, tmp_path):
    mps_lines = (samples / "lp/knapsack.mps").read_text().splitlines(keepends=True)
    _fails_at(_write(tmp_path, "cut.mps", "".join(mps_lines[:12])), 13, "expected ENDATA")
    _fails_at(_write(tmp_path, "empty.mps", ""), 1, "expected ENDATA")
    lp_lines = (samples / "lp/production.lp").read_text().splitlines(keepends=True)
    _fails_at(_write(tmp_path, "cut.lp", "".join(lp_lines[:5])), None, "expected `end`")


def test_mps_garbage_gives_highs_reason(tmp_path):
    _fails_at(_write(tmp_path, "junk.mps", b"NAME\n\x00\x01garbage\xff\n"), 2, "binary data")
    err = _fails_at(_write(tmp_path, "rows.mps", "NAME x\nROWS\n Q obj\nCOLUMNS\nENDATA\n"), None,
                    "HiGHS could not read")
    assert 'entry "q obj" in rows section' in str(err).lower()
    _fails_at(_write(tmp_path, "junk.mps.gz", b"not gzip"), None, "cannot read")


def test_reading_a_model_prints_nothing_on_stdout(samples):
    code = ("import sys; from solvopt.io import read_instance; "
            "read_instance(sys.argv[1]); read_instance(sys.argv[2])")
    proc = subprocess.run([sys.executable, "-c", code, str(samples / "lp/knapsack.mps"),
                           str(samples / "lp/production.lp")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_knapsack_sample_optimum_matches_brute_force(samples):
    highspy = pytest.importorskip("highspy")
    from solvopt.lp.reader import standard_form_to_highs
    sf = read_instance(samples / "lp/knapsack.mps").data["standard_form"]
    w, v = sf.A.toarray()[0], sf.c
    best = max(v @ np.array(s) for s in itertools.product([0, 1], repeat=len(v)) if w @ np.array(s) <= 14)
    h = standard_form_to_highs(sf)
    assert h.run() == highspy.HighsStatus.kOk
    assert h.getInfo().objective_function_value == pytest.approx(best) and best == 25


# --- convert ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", [".csv", ".npy", ".dat"])
def test_convert_khc_round_trip(samples, tmp_path, ext):
    inst = read_instance(samples / "khc/sr_20_2_3_2023.dat")
    out = tmp_path / f"out{ext}"
    convert(inst, out)
    back = read_instance(out, k=3)
    np.testing.assert_array_equal(back.data["points"], inst.data["points"])
    assert back.data["k"] == 3


def test_convert_dat_reproduces_the_published_file(samples, tmp_path):
    src = samples / "khc/sr_12_3_2_1232.dat"
    convert(read_instance(src), tmp_path / "same.dat")
    assert (tmp_path / "same.dat").read_text() == src.read_text()


def test_cli_convert_csv_to_ampl_needs_k(tmp_path, capsys):
    csv = _write(tmp_path, "p.csv", "x,y\n0,0\n1,1\n2,3\n")
    assert main(["convert", csv, str(tmp_path / "p.dat")]) == 1 and "--k" in capsys.readouterr().err
    assert main(["convert", csv, str(tmp_path / "p.dat"), "--k", "2"]) == 0
    inst = read_instance(tmp_path / "p.dat")
    assert inst.format == "ampl_khc" and inst.data["k"] == 2
    np.testing.assert_array_equal(inst.data["points"], [[0, 0], [1, 1], [2, 3]])


@pytest.mark.parametrize("ext", [".lp", ".mps"])
def test_convert_models(samples, tmp_path, ext):
    src = read_instance(samples / "lp/knapsack.mps").data["standard_form"]
    convert(read_instance(samples / "lp/knapsack.mps"), tmp_path / f"k{ext}")
    back = read_instance(tmp_path / f"k{ext}").data["standard_form"]
    for key in ("c", "col_lower", "col_upper", "row_lower", "row_upper", "integrality"):
        np.testing.assert_array_equal(getattr(back, key), getattr(src, key), err_msg=key)
    np.testing.assert_array_equal(back.A.toarray(), src.A.toarray())
    assert back.sense == src.sense == -1 and back.var_names == list("abcde")


def test_convert_unsupported_combination(samples, tmp_path):
    with pytest.raises(ModelError, match="cannot convert a 'cvrp' instance"):
        convert(read_instance(samples / "cvrp/X-n120-k6.vrp"), tmp_path / "x.mps")
    with pytest.raises(ModelError, match="khc -> .csv"):
        convert(read_instance(samples / "khc/sr_10_2_2_1022.dat"), tmp_path / "x.mps")


def test_a_reader_module_that_fails_to_import_is_named_when_detection_fails(tmp_path):
    from solvopt.io import base, reader_load_failures
    path = _write(tmp_path, "mystery.zzz", "hello\n")
    try:
        failures = base.load_reader_modules(("solvopt.io.no_such_reader_xyz",))
        assert failures == reader_load_failures()
        assert any(f.startswith("solvopt.io.no_such_reader_xyz: ModuleNotFoundError") for f in failures)
        with pytest.raises(InstanceFormatError, match=r"cannot detect the instance format .*"
                                                      r"some readers failed to load: .*no_such_reader_xyz"):
            detect_format(path)
    finally:
        base.load_reader_modules()
    assert reader_load_failures() == []
    with pytest.raises(InstanceFormatError) as info:
        detect_format(path)
    assert "failed to load" not in str(info.value)


def test_readers_live_in_their_families_and_io_imports_no_family():
    from solvopt.core.family import families
    from solvopt.io import readers
    from solvopt.io.convert import WRITERS
    owners = {f.name: f.reader_modules for f in families()}
    for reader in readers():
        family = "cvrp" if reader.family == "cvrp_solution" else reader.family
        module = reader.read.__module__
        assert module in owners.get(family, ()) or module.startswith("solvopt.io."), (reader.format, module)
    assert set(WRITERS["khc"]) == {".csv", ".npy", ".dat"} and set(WRITERS["lp"]) == {".mps", ".lp"}
    # importing io loads each family's descriptor and reader modules (named by the descriptors), nothing else
    code = ("import json, sys, solvopt.io; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('solvopt.') and m.count('.') == 2 "
            "and not m.startswith(('solvopt.io.', 'solvopt.core.', 'solvopt.dsl.')))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    allowed = {m for mods in owners.values() for m in mods} | {f.module for f in families()}
    assert set(json.loads(proc.stdout)) <= allowed
