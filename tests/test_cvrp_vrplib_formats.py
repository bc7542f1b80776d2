"""The VRPLIB reader's distance formats: EUC_2D, CEIL_2D, GEO, ATT and the EXPLICIT forms, and rounding=.

References: TSPLIB's published optimal tour lengths (burma14, GEO: 3323; att48, ATT: 10628) with
their published optimal tours, TSPLIB's formulas computed by hand for single pairs, an independent
writer of each explicit form, and the ``vrplib`` package's own distances where it computes them.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.cvrp.reader import EXPLICIT_FORMATS, distance_matrix
from solvopt.io import read_instance

# TSPLIB burma14 (GEO) and att48 (ATT): coordinates, the published optimal tours and their lengths
BURMA14 = [(16.47, 96.10), (16.47, 94.44), (20.09, 92.54), (22.39, 93.37), (25.23, 97.24), (22.00, 96.05),
           (20.47, 97.02), (17.20, 96.29), (16.30, 97.38), (14.05, 98.12), (16.53, 97.38), (21.52, 95.59),
           (19.41, 97.13), (20.09, 94.55)]
BURMA14_OPT = ([1, 2, 14, 3, 4, 5, 6, 12, 7, 13, 8, 11, 9, 10], 3323)
ATT48 = [(6734, 1453), (2233, 10), (5530, 1424), (401, 841), (3082, 1644), (7608, 4458), (7573, 3716),
         (7265, 1268), (6898, 1885), (1112, 2049), (5468, 2606), (5989, 2873), (4706, 2674), (4612, 2035),
         (6347, 2683), (6107, 669), (7611, 5184), (7462, 3590), (7732, 4723), (5900, 3561), (4483, 3369),
         (6101, 1110), (5199, 2182), (1633, 2809), (4307, 2322), (675, 1006), (7555, 4819), (7541, 3981),
         (3177, 756), (7352, 4506), (7545, 2801), (3245, 3305), (6426, 3173), (4608, 1198), (23, 2216),
         (7248, 3779), (7762, 4595), (7392, 2244), (3484, 2829), (6271, 2135), (4985, 140), (1916, 1569),
         (7280, 4899), (7509, 3239), (10, 2676), (6807, 2993), (5185, 3258), (3023, 1942)]
ATT48_OPT = ([1, 8, 38, 31, 44, 18, 7, 28, 6, 37, 19, 27, 17, 43, 30, 36, 46, 33, 20, 47, 21, 32, 39, 48, 5, 42,
              24, 10, 45, 35, 4, 26, 2, 29, 34, 41, 16, 22, 3, 23, 14, 25, 13, 11, 12, 15, 40, 9], 10628)


def _tour_length(d, tour):
    t = [i - 1 for i in tour]
    return sum(d[a, b] for a, b in zip(t, t[1:] + t[:1]))


def _vrp(tmp_path, coords=None, weight="EUC_2D", fmt=None, weights=None, name="t", depot=1, demands=None,
         display=None):
    """A CVRP file written line by line (a node coordinate section unless only explicit weights are given)."""
    n = len(coords) if coords is not None else len(display if display is not None else demands)
    demands = demands if demands is not None else [0 if i + 1 == depot else 1 for i in range(n)]
    lines = [f"NAME : {name}", "TYPE : CVRP", f"DIMENSION : {n}", f"EDGE_WEIGHT_TYPE : {weight}"]
    if fmt:
        lines.append(f"EDGE_WEIGHT_FORMAT : {fmt}")
    lines.append("CAPACITY : 100")
    if weights is not None:
        lines.append("EDGE_WEIGHT_SECTION")
        lines += weights
    if coords is not None:
        lines.append("NODE_COORD_SECTION")
        lines += [f"{i + 1} {x} {y}" for i, (x, y) in enumerate(coords)]
    if display is not None:
        lines.append("DISPLAY_DATA_SECTION")
        lines += [f"{i + 1} {x} {y}" for i, (x, y) in enumerate(display)]
    lines.append("DEMAND_SECTION")
    lines += [f"{i + 1} {q}" for i, q in enumerate(demands)]
    lines += ["DEPOT_SECTION", str(depot), "-1", "EOF"]
    path = tmp_path / f"{name}.vrp"
    path.write_text("\n".join(lines) + "\n")
    return path


# --- GEO and ATT: TSPLIB's published optima and the formulas by hand ---------------------------------
def test_geo_reproduces_burma14s_published_optimum_and_hand_values(tmp_path):
    d = read_instance(_vrp(tmp_path, BURMA14, "GEO")).data["distances"]
    tour, length = BURMA14_OPT
    assert _tour_length(d, tour) == length
    # by hand, TSPLIB's text: deg = (int) x, min = x - deg, rad = 3.141592 (deg + 5 min / 3) / 180
    def rad(v):
        deg = int(v)
        return 3.141592 * (deg + 5.0 * (v - deg) / 3.0) / 180.0
    (x1, y1), (x2, y2) = BURMA14[0], BURMA14[2]
    q1, q2, q3 = math.cos(rad(y1) - rad(y2)), math.cos(rad(x1) - rad(x2)), math.cos(rad(x1) + rad(x2))
    hand = int(6378.388 * math.acos(0.5 * ((1 + q1) * q2 - (1 - q1) * q3)) + 1.0)
    assert d[0, 2] == hand == 510
    assert d[0, 1] == 153 and np.all(np.diag(d) == 0) and np.array_equal(d, d.T)


def test_att_reproduces_att48s_published_optimum_and_hand_values(tmp_path):
    d = read_instance(_vrp(tmp_path, ATT48, "ATT")).data["distances"]
    tour, length = ATT48_OPT
    assert _tour_length(d, tour) == length
    # by hand: r = sqrt((dx^2 + dy^2) / 10), t = nint(r), t + 1 when t < r
    (x1, y1), (x2, y2) = ATT48[0], ATT48[1]
    r = math.sqrt(((x1 - x2) ** 2 + (y1 - y2) ** 2) / 10.0)
    t = int(r + 0.5)
    assert d[0, 1] == (t + 1 if t < r else t) == 1495
    # (0,0)-(10,0): r = sqrt(10) = 3.162, nint 3 < r -> 4; (0,0)-(0,50): r = sqrt(250) = 15.81 -> 16 (nint = r's ceil)
    small = distance_matrix("ATT", np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 50.0]]))
    assert small[0, 1] == 4 and small[0, 2] == 16


def test_ceil_2d_and_euc_2d_by_hand(tmp_path):
    coords = [(0, 0), (3, 4), (1, 1), (2.5, 0)]
    ceil = read_instance(_vrp(tmp_path, coords, "CEIL_2D", name="c")).data["distances"]
    euc = read_instance(_vrp(tmp_path, coords, "EUC_2D", name="e")).data["distances"]
    assert ceil[0, 1] == euc[0, 1] == 5                    # an exact distance: no rounding either way
    assert ceil[0, 2] == 2 and euc[0, 2] == 1              # sqrt(2) = 1.414
    assert ceil[0, 3] == 3 and euc[0, 3] == 3              # 2.5: nint rounds halves up


# --- EXPLICIT: every form against an independent writer ----------------------------------------------
def _write_form(m, fmt):
    """The numbers of ``fmt`` for the symmetric matrix m, by loops over TSPLIB's definitions."""
    n = len(m)
    if fmt == "FULL_MATRIX":
        return [m[i][j] for i in range(n) for j in range(n)]
    row_wise = fmt.endswith("_ROW")
    lower = fmt.startswith("LOWER")
    diag = "_DIAG_" in fmt
    out = []
    for a in range(n):   # a: the row (row-wise) or the column (column-wise)
        if lower:
            others = range(0, a + 1 if diag else a) if row_wise else range(a if diag else a + 1, n)
        else:
            others = range(a if diag else a + 1, n) if row_wise else range(0, a + 1 if diag else a)
        out += [m[a][b] if row_wise else m[b][a] for b in others]
    return out


@pytest.mark.parametrize("fmt", sorted(EXPLICIT_FORMATS))
def test_every_explicit_form_reads_back_the_matrix(tmp_path, fmt):
    rng = np.random.default_rng(len(fmt))
    n = 6
    m = rng.integers(1, 100, (n, n))
    m = np.triu(m, 1) + np.triu(m, 1).T
    values = [str(v) for v in _write_form(m.tolist(), fmt)]
    rows = [" ".join(values[i:i + 4]) for i in range(0, len(values), 4)]   # any wrapping across lines
    inst = read_instance(_vrp(tmp_path, weight="EXPLICIT", fmt=fmt, weights=rows, demands=[0, 1, 2, 3, 4, 5]))
    np.testing.assert_array_equal(inst.data["distances"], m)
    assert inst.meta["edge_weight_format"] == fmt and inst.meta["rounding"] == "exact"


def test_explicit_lower_row_reindexes_a_depot_that_is_not_node_1(tmp_path):
    m = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]])
    inst = read_instance(_vrp(tmp_path, weight="EXPLICIT", fmt="LOWER_ROW", weights=["1", "2 3"], depot=3,
                              demands=[4, 5, 0], display=[(0, 0), (1, 0), (0, 1)]))
    order = [2, 0, 1]
    np.testing.assert_array_equal(inst.data["distances"], m[np.ix_(order, order)])
    np.testing.assert_array_equal(inst.data["coords"], [[0, 1], [0, 0], [1, 0]])  # display data, for drawing


@pytest.mark.parametrize("fmt, weights, line, words", [
    ("LOWER_ROW", ["1", "2"], 10, "the section ended after 2"),
    ("UPPER_ROW", ["1 2 3 4"], 8, "expected 3 edge weights"),
    ("LOWER_DIAG_ROW", ["0", "1 0", "2 x 0"], 10, "edge weight"),
    ("UPPER_ROW", ["1 -2 3"], 8, ">= 0"),
    ("SOMETHING", ["1 2 3"], 5, "EDGE_WEIGHT_FORMAT SOMETHING is not supported"),
])
def test_malformed_explicit_sections_name_the_line(tmp_path, fmt, weights, line, words):
    path = _vrp(tmp_path, weight="EXPLICIT", fmt=fmt, weights=weights, demands=[0, 1, 1])
    with pytest.raises(InstanceFormatError) as err:
        read_instance(path)
    assert f"{path}:{line}:" in str(err.value) and words in str(err.value)


def test_coordinate_types_need_a_node_coord_section(tmp_path):
    path = _vrp(tmp_path, weight="GEO", display=[(1, 1), (2, 2), (3, 3)], demands=[0, 1, 1])
    with pytest.raises(InstanceFormatError, match="without a NODE_COORD_SECTION .needed for GEO"):
        read_instance(path)


# --- rounding= ---------------------------------------------------------------------------------------
def test_rounding_option_on_the_sample_and_pyvrps_truncation(samples):
    path = samples / "cvrp/X-n101-k25.vrp"
    ours = read_instance(path)
    exact = read_instance(path, rounding="exact").data["distances"]
    coords = ours.data["coords"]
    by_hand = np.sqrt(((coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(exact, by_hand, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(ours.data["distances"], np.floor(exact + 0.5))
    assert ours.meta["rounding"] == "nint"
    floor = read_instance(path, rounding="floor")
    np.testing.assert_array_equal(floor.data["distances"], np.floor(exact))
    assert floor.meta["rounding"] == "floor"
    np.testing.assert_array_equal(read_instance(path, rounding="ceil").data["distances"], np.ceil(exact))
    # the same tour is cheaper with truncated distances: edge by edge, floor <= nint
    tour = list(range(1, 101))
    assert _tour_length(floor.data["distances"], [1] + [t + 1 for t in tour]) < \
        _tour_length(ours.data["distances"], [1] + [t + 1 for t in tour])


def test_rounding_of_explicit_numbers_and_refusals(tmp_path):
    path = _vrp(tmp_path, weight="EXPLICIT", fmt="UPPER_ROW", weights=["1.5 2.4 3.6"], demands=[0, 1, 1])
    np.testing.assert_array_equal(read_instance(path).data["distances"][0], [0, 1.5, 2.4])
    np.testing.assert_array_equal(read_instance(path, rounding="nint").data["distances"][0], [0, 2, 2])
    np.testing.assert_array_equal(read_instance(path, rounding="floor").data["distances"][0], [0, 1, 2])
    with pytest.raises(ModelError, match="rounding must be one of nint, ceil, floor, exact"):
        read_instance(path, rounding="round")
    geo = _vrp(tmp_path, BURMA14[:3], "GEO", name="g")
    with pytest.raises(ModelError, match="GEO distances are integers by their TSPLIB definition"):
        read_instance(geo, rounding="floor")
    assert read_instance(geo).meta["rounding"] == "tsplib"


# --- the vrplib package's own distances, where it computes them --------------------------------------
@pytest.mark.parametrize("weight, fmt", [("EUC_2D", None), ("CEIL_2D", None), ("EXPLICIT", "LOWER_ROW"),
                                         ("EXPLICIT", "FULL_MATRIX")])
def test_distances_match_the_vrplib_package(tmp_path, weight, fmt):
    vrplib = pytest.importorskip("vrplib")
    rng = np.random.default_rng(3)
    coords = rng.integers(0, 1000, (8, 2)).tolist()
    if weight == "EXPLICIT":
        m = np.floor(np.sqrt(((np.array(coords)[:, None] - np.array(coords)[None]) ** 2).sum(-1)))
        values = [str(int(v)) for v in _write_form(m.tolist(), fmt)]
        rows = [" ".join(values[i:i + 8]) for i in range(0, len(values), 8)]   # vrplib: a matrix row per line
        path = _vrp(tmp_path, weight=weight, fmt=fmt, weights=rows, demands=[0] + [1] * 7)
    else:
        path = _vrp(tmp_path, coords, weight)
    theirs = np.asarray(vrplib.read_instance(str(path))["edge_weight"], dtype=float)
    exact = "exact" if weight == "EUC_2D" else None          # vrplib >= 2: EUC_2D unrounded
    ours = read_instance(path, rounding=exact).data["distances"]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
