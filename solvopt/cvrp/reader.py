"""CVRPLIB instances (``.vrp``) and solutions (``.sol``), parsed without the optional ``vrplib`` package.

Instance files are ``KEY : value`` header lines followed by sections (``NODE_COORD_SECTION``,
``DEMAND_SECTION``, ``DEPOT_SECTION`` ending with ``-1``, optional ``EDGE_WEIGHT_SECTION`` and
``DISPLAY_DATA_SECTION``, ``EOF``). Nodes are re-indexed so that the depot is node 0 and
customers are 1..N-1 in file order.

Distances: every ``EDGE_WEIGHT_TYPE`` CVRPLIB uses, computed as TSPLIB defines it (Reinelt,
*TSPLIB 95*, section 2): ``EUC_2D`` (Euclidean, ``nint``), ``CEIL_2D`` (Euclidean rounded up),
``GEO`` (great-circle kilometres on the TSPLIB sphere, truncated to integers), ``ATT``
(pseudo-Euclidean), ``EXPLICIT`` with ``EDGE_WEIGHT_FORMAT`` ``FULL_MATRIX``, ``LOWER_ROW``,
``UPPER_ROW``, ``LOWER_DIAG_ROW`` or ``UPPER_DIAG_ROW`` (and the column-wise twins, which are
the same numbers in the same order for a symmetric matrix). The ``vrplib`` package computes
``EUC_2D`` unrounded, ``CEIL_2D`` and two explicit forms, and neither ``GEO`` nor ``ATT``, so
the distances are computed here. ``rounding=`` (see :data:`ROUNDINGS`) overrides how the
Euclidean (and explicit) distances are rounded, e.g. ``"floor"`` for PyVRP's default.
"""
from __future__ import annotations

import re

import numpy as np

from ..core.errors import InstanceFormatError, ModelError
from ..io.base import Instance, LineReader, Reader, instance_name, parse_number, register_reader
from ..io.distances import euclidean

HEADER_KEYS = {"NAME", "COMMENT", "TYPE", "DIMENSION", "CAPACITY", "EDGE_WEIGHT_TYPE", "EDGE_WEIGHT_FORMAT",
               "NODE_COORD_TYPE", "DISPLAY_DATA_TYPE", "VEHICLES", "DISTANCE", "SERVICE_TIME"}
SECTIONS = ("NODE_COORD_SECTION", "DEMAND_SECTION", "DEPOT_SECTION", "EDGE_WEIGHT_SECTION", "DISPLAY_DATA_SECTION")
SUPPORTED_WEIGHTS = ("EUC_2D", "CEIL_2D", "GEO", "ATT", "EXPLICIT")
# EDGE_WEIGHT_FORMAT -> (which triangle, with the diagonal); a column-wise form of a symmetric
# matrix lists the same numbers in the same order as the row-wise form of the other triangle
EXPLICIT_FORMATS = {"FULL_MATRIX": ("full", True),
                    "LOWER_ROW": ("lower", False), "UPPER_COL": ("lower", False),
                    "UPPER_ROW": ("upper", False), "LOWER_COL": ("upper", False),
                    "LOWER_DIAG_ROW": ("lower", True), "UPPER_DIAG_COL": ("lower", True),
                    "UPPER_DIAG_ROW": ("upper", True), "LOWER_DIAG_COL": ("upper", True)}
# rounding= of the Euclidean (EUC_2D, CEIL_2D) or explicit distances; None: the file's own convention
ROUNDINGS = {"nint": "nearest integer, halves up: floor(d + 0.5) (TSPLIB nint; CVRPLIB's published costs)",
             "ceil": "rounded up (TSPLIB CEIL_2D)",
             "floor": "truncated (PyVRP's reader by default, which casts to integers)",
             "exact": "unrounded (vrplib >= 2 for EUC_2D)"}
DEFAULT_ROUNDING = {"EUC_2D": "nint", "CEIL_2D": "ceil", "EXPLICIT": "exact"}
GEO_PI = 3.141592            # TSPLIB's own value of pi for GEO coordinates (DDD.MM -> radians)
GEO_RADIUS = 6378.388        # TSPLIB's idealised earth radius in km
_VEHICLES_IN_NAME = re.compile(r"-k(\d+)$")
MAX_INTEGER = 2 ** 53        # demands and capacity: integers float64 holds exactly
MAX_COORDINATE = 1e150       # |x|, |y|: squared differences of coordinates stay finite
_HEADER_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _keyword(line: str) -> str:
    """The first word of a line without a trailing colon (``DEMAND_SECTION :`` -> ``DEMAND_SECTION``)."""
    return line.split()[0].rstrip(":")


def _header(lines: LineReader) -> dict[str, tuple[int, str]]:
    """``KEY : value`` lines up to the first section keyword -> {KEY: (line, value)}."""
    fields: dict[str, tuple[int, str]] = {}
    while (head := lines.peek()) is not None:
        no, line = head
        if _keyword(line) in SECTIONS or _keyword(line) == "EOF":
            break
        lines.next("a header line")
        has_colon = ":" in line
        if has_colon:
            key, value = (s.strip() for s in line.split(":", 1))
        else:
            key, _, value = line.partition(" ")
            key, value = key.strip(), value.strip()
        # other ``KEY : value`` fields of the VRPLIB family (e.g. a vendor's own) are kept but not used
        if key not in HEADER_KEYS and not (has_colon and _HEADER_KEY.match(key)):
            raise InstanceFormatError(lines.path, no,
                                      f"expected a 'KEY : value' header line or a section, got {line[:40]!r}")
        fields[key] = (no, value)
    return fields


def _required(lines: LineReader, fields, key: str, integer: bool = True):
    if key not in fields:
        head = lines.peek()
        raise InstanceFormatError(lines.path, head[0] if head else lines.last_line,
                                  f"the header has no {key} field (expected before the sections)")
    no, value = fields[key]
    return parse_number(value, lines.path, no, key, integer=integer)


def _rows(lines: LineReader, count: int, width: int, what: str) -> list[tuple[int, list[str]]]:
    rows: list[tuple[int, list[str]]] = []
    for _ in range(count):
        no, line = lines.next(f"{what} ({count} lines)")
        tokens = line.split()
        if _keyword(line) in SECTIONS or _keyword(line) == "EOF":
            raise InstanceFormatError(lines.path, no, f"expected {count} lines of {what}, the section ended "
                                                      f"after {len(rows)}")
        if len(tokens) != width:
            raise InstanceFormatError(lines.path, no, f"expected {width} values ({what}), got {len(tokens)}")
        rows.append((no, tokens))
    return rows


def _node_ids(lines: LineReader, rows, dimension: int, section: str) -> list[int]:
    ids = [parse_number(t[0], lines.path, no, f"node id in {section}", integer=True) for no, t in rows]
    if sorted(ids) != list(range(1, dimension + 1)):
        seen = set()
        for (no, _), i in zip(rows, ids):
            if not 1 <= i <= dimension or i in seen:
                raise InstanceFormatError(lines.path, no,
                                          f"node id {i} in {section}: expected each id 1..{dimension} once")
            seen.add(i)
    return ids


def _rounding(rounding: str | None, weight_type: str) -> str:
    """The rounding that applies: the file's own (None), or one of :data:`ROUNDINGS`."""
    if rounding is None:
        return DEFAULT_ROUNDING.get(weight_type, "tsplib")
    if rounding not in ROUNDINGS:
        raise ModelError(f"rounding must be one of {', '.join(ROUNDINGS)} (or None: the file's own convention), "
                         f"got {rounding!r}")
    if weight_type not in DEFAULT_ROUNDING:
        raise ModelError(f"rounding={rounding!r} applies to EUC_2D, CEIL_2D and EXPLICIT distances; "
                         f"{weight_type} distances are integers by their TSPLIB definition")
    return rounding


def read_vrplib(path: str, rounding: str | None = None) -> Instance:
    """Read a CVRPLIB ``.vrp`` file; see docs/formats.md for the ``data`` keys.

    ``rounding``: None (default) keeps the file's convention: ``nint`` for EUC_2D, ``ceil`` for
    CEIL_2D, the numbers as written for EXPLICIT; GEO and ATT are integers by definition. Or one
    of :data:`ROUNDINGS` (``"nint"``, ``"ceil"``, ``"floor"``, ``"exact"``) for EUC_2D, CEIL_2D
    (applied to the Euclidean distance) and EXPLICIT (applied to the numbers). PyVRP's reader
    truncates by default: ``rounding="floor"`` gives its distances, the default CVRPLIB's.
    """
    lines = LineReader(path)
    if lines.at_end():
        lines.next("the header (NAME, TYPE, DIMENSION, CAPACITY, EDGE_WEIGHT_TYPE)")
    fields = _header(lines)
    dimension = _required(lines, fields, "DIMENSION")
    capacity = _required(lines, fields, "CAPACITY")
    if dimension < 2:
        raise InstanceFormatError(path, fields["DIMENSION"][0],
                                  f"DIMENSION must be >= 2 (a depot and a customer), got {dimension}")
    if capacity <= 0:
        raise InstanceFormatError(path, fields["CAPACITY"][0], f"CAPACITY must be positive, got {capacity}")
    if capacity > MAX_INTEGER:
        raise InstanceFormatError(path, fields["CAPACITY"][0], f"CAPACITY {capacity:.4g} is too large "
                                                               f"(at most 2^53 = {MAX_INTEGER})")
    if "TYPE" in fields and fields["TYPE"][1] not in ("CVRP", "SDVRP"):
        raise InstanceFormatError(path, fields["TYPE"][0], f"expected TYPE : CVRP, got {fields['TYPE'][1]!r}")
    weight_no, weight_type = fields.get("EDGE_WEIGHT_TYPE", (None, "EUC_2D"))
    if weight_type not in SUPPORTED_WEIGHTS:
        raise InstanceFormatError(path, weight_no, f"EDGE_WEIGHT_TYPE {weight_type} is not supported "
                                                   f"(supported: {', '.join(SUPPORTED_WEIGHTS)})")
    fmt = None
    if weight_type == "EXPLICIT":
        fmt_no, fmt = fields.get("EDGE_WEIGHT_FORMAT", (weight_no, None))
        if fmt not in EXPLICIT_FORMATS:
            raise InstanceFormatError(path, fmt_no, f"EDGE_WEIGHT_FORMAT {fmt} is not supported with EXPLICIT "
                                                    f"weights (supported: {', '.join(EXPLICIT_FORMATS)})")
    rounding = _rounding(rounding, weight_type)

    coords = demands = depots = matrix = None
    coords_for_distances = False
    while not lines.at_end():
        no, line = lines.next("a section")
        keyword = _keyword(line)
        if keyword == "EOF":
            break
        if keyword not in SECTIONS:
            raise InstanceFormatError(path, no, f"expected a section keyword ({', '.join(SECTIONS)}) or EOF, "
                                                f"got {line[:40]!r}")
        if keyword in ("NODE_COORD_SECTION", "DISPLAY_DATA_SECTION"):
            rows = _rows(lines, dimension, 3, "node coordinates 'id x y'")
            ids = _node_ids(lines, rows, dimension, keyword)
            section_coords = np.empty((dimension, 2))
            for i, (rno, t) in zip(ids, rows):
                section_coords[i - 1] = [parse_number(v, path, rno, f"coordinate of node {i}") for v in t[1:]]
                if max(abs(section_coords[i - 1])) > MAX_COORDINATE:
                    raise InstanceFormatError(path, rno, f"coordinate of node {i} is too large: "
                                                         f"{max(abs(section_coords[i - 1])):.4g} (at most "
                                                         f"{MAX_COORDINATE:g}, so that distances stay finite)")
            if keyword == "NODE_COORD_SECTION" or coords is None:   # display data: drawing only
                coords = section_coords
                coords_for_distances = keyword == "NODE_COORD_SECTION"
        elif keyword == "DEMAND_SECTION":
            rows = _rows(lines, dimension, 2, "demands 'id demand'")
            ids = _node_ids(lines, rows, dimension, keyword)
            demands = np.empty(dimension, dtype=np.int64)
            for i, (rno, t) in zip(ids, rows):
                d = parse_number(t[1], path, rno, f"demand of node {i}", integer=True)
                if d < 0:
                    raise InstanceFormatError(path, rno, f"demand of node {i} must be >= 0, got {d}")
                if d > MAX_INTEGER:
                    raise InstanceFormatError(path, rno, f"demand of node {i} is too large: {d:.4g} "
                                                         f"(at most 2^53 = {MAX_INTEGER})")
                demands[i - 1] = d
        elif keyword == "DEPOT_SECTION":
            depots = _depot_section(lines, dimension)
        else:
            matrix = _explicit_matrix(lines, dimension, fmt or "FULL_MATRIX")
    if demands is None or depots is None:
        missing = "DEMAND_SECTION" if demands is None else "DEPOT_SECTION"
        raise InstanceFormatError(path, lines.last_line + 1, f"end of file without a {missing}")
    if weight_type != "EXPLICIT" and not coords_for_distances:
        raise InstanceFormatError(path, lines.last_line + 1, "end of file without a NODE_COORD_SECTION "
                                                             f"(needed for {weight_type} distances)")
    if weight_type == "EXPLICIT" and matrix is None:
        raise InstanceFormatError(path, lines.last_line + 1, "end of file without an EDGE_WEIGHT_SECTION")
    depot_line, depot = depots
    if demands[depot] != 0:
        raise InstanceFormatError(path, depot_line,
                                  f"the depot (node {depot + 1}) has demand {demands[depot]}, expected 0")

    order = np.array([depot] + [i for i in range(dimension) if i != depot])
    coords = None if coords is None else coords[order]
    demands = demands[order]
    if matrix is None:
        assert coords is not None       # the checks above: weights other than EXPLICIT have coordinates
        distances = distance_matrix(weight_type, coords, rounding)
    else:
        distances = _round(matrix, rounding)[np.ix_(order, order)]
    name = fields.get("NAME", (None, instance_name(path)))[1]
    vehicles = _vehicles(path, fields, name)
    over = int(np.count_nonzero(demands > capacity))
    data = {"coords": coords, "demands": demands, "capacity": int(capacity), "depot": 0,
            "distances": distances, "vehicles": vehicles}
    meta = {"customers": dimension - 1, "capacity": int(capacity), "total_demand": sum(int(d) for d in demands),
            "vehicles": vehicles, "edge_weight_type": weight_type, "customers_over_capacity": over,
            "rounding": rounding}
    if fmt is not None:
        meta["edge_weight_format"] = fmt
    return Instance(family="cvrp", format="vrplib", name=name, path=path, data=data, meta=meta)


def _depot_section(lines: LineReader, dimension: int) -> tuple[int, int]:
    """One depot id then ``-1`` -> (line, 0-based depot index)."""
    no, line = lines.next("the depot id")
    depot = parse_number(line.split()[0], lines.path, no, "depot id", integer=True)
    if not 1 <= depot <= dimension:
        raise InstanceFormatError(lines.path, no, f"depot id must be in 1..{dimension}, got {depot}")
    end_no, end = lines.next("-1 closing the DEPOT_SECTION")
    if end.split()[0] != "-1":
        value = parse_number(end.split()[0], lines.path, end_no, "-1 closing the DEPOT_SECTION", integer=True)
        raise InstanceFormatError(lines.path, end_no,
                                  f"expected -1 closing the DEPOT_SECTION (one depot only), got {value}")
    return no, depot - 1


def _explicit_matrix(lines: LineReader, dimension: int, fmt: str) -> np.ndarray:
    """The EDGE_WEIGHT_SECTION in ``fmt`` (see :data:`EXPLICIT_FORMATS`): numbers over as many lines as needed."""
    triangle, diagonal = EXPLICIT_FORMATS[fmt]
    n = dimension
    count = n * n if triangle == "full" else (n * (n + 1) // 2 if diagonal else n * (n - 1) // 2)
    values: list[float] = []
    no = lines.last_line
    while len(values) < count:
        no, line = lines.next(f"{count} edge weights ({fmt}), got {len(values)}")
        if _keyword(line) in SECTIONS or _keyword(line) == "EOF":
            raise InstanceFormatError(lines.path, no, f"expected {count} edge weights ({fmt} of DIMENSION {n}), "
                                                      f"the section ended after {len(values)}")
        for tok in line.split():
            values.append(parse_number(tok, lines.path, no, "edge weight"))
    if len(values) != count:
        raise InstanceFormatError(lines.path, no, f"expected {count} edge weights ({fmt} of DIMENSION {n}), "
                                                  f"got {len(values)}")
    flat = np.array(values)
    if np.any(flat < 0):
        raise InstanceFormatError(lines.path, no, "edge weights must be >= 0")
    if triangle == "full":
        return flat.reshape(n, n)
    matrix = np.zeros((n, n))
    rows, cols = np.tril_indices(n, k=0 if diagonal else -1) if triangle == "lower" else \
        np.triu_indices(n, k=0 if diagonal else 1)
    matrix[rows, cols] = flat          # numpy lists both triangles row by row, as TSPLIB does
    matrix[cols, rows] = flat
    return matrix


def _round(values: np.ndarray, rounding: str) -> np.ndarray:
    if rounding == "nint":
        return np.floor(values + 0.5)
    if rounding == "ceil":
        return np.ceil(values)
    if rounding == "floor":
        return np.floor(values)
    return values


def geo_radians(coords: np.ndarray) -> np.ndarray:
    """TSPLIB GEO coordinates (DDD.MM: degrees, then minutes after the point) in radians.

    As TSPLIB's reference code: ``deg = (int) x`` (truncated; the FAQ of TSPLIB 95 and Concorde
    agree that the ``nint`` of the format's text is a truncation), ``min = x - deg``,
    ``PI * (deg + 5 * min / 3) / 180`` with ``PI = 3.141592``.
    """
    deg = np.trunc(coords)
    return GEO_PI * (deg + 5.0 * (coords - deg) / 3.0) / 180.0


def distance_matrix(weight_type: str, coords: np.ndarray, rounding: str = "nint") -> np.ndarray:
    """The (N, N) distances of ``coords`` under a TSPLIB ``EDGE_WEIGHT_TYPE`` (zero diagonal).

    - ``EUC_2D`` / ``CEIL_2D``: the Euclidean distance, rounded as ``rounding`` says (``nint``
      and ``ceil`` are the two types' own conventions);
    - ``GEO``: ``(int)(RRR * acos(0.5 ((1 + q1) q2 - (1 - q1) q3)) + 1)`` with ``RRR = 6378.388``,
      ``q1 = cos(lon_i - lon_j)``, ``q2 = cos(lat_i - lat_j)``, ``q3 = cos(lat_i + lat_j)``
      (the first coordinate is the latitude; the argument of acos is clipped to [-1, 1]);
    - ``ATT``: ``r = sqrt((dx^2 + dy^2) / 10)``, ``t = nint(r)``, ``t + 1`` when ``t < r``, else ``t``.
    """
    coords = np.asarray(coords, dtype=np.float64)
    if weight_type in ("EUC_2D", "CEIL_2D"):
        return _round(euclidean(coords), rounding)
    if weight_type == "GEO":
        rad = geo_radians(coords)
        lat, lon = rad[:, 0], rad[:, 1]
        q1 = np.cos(lon[:, None] - lon[None, :])
        q2 = np.cos(lat[:, None] - lat[None, :])
        q3 = np.cos(lat[:, None] + lat[None, :])
        arc = np.arccos(np.clip(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3), -1.0, 1.0))
        d = np.floor(GEO_RADIUS * arc + 1.0)          # (int) of a positive number
    elif weight_type == "ATT":
        squared = np.zeros((coords.shape[0], coords.shape[0]))
        for axis in range(2):                         # xd * xd + yd * yd, as TSPLIB's code
            diff = coords[:, None, axis] - coords[None, :, axis]
            squared += diff * diff
        r = np.sqrt(squared / 10.0)
        t = np.floor(r + 0.5)
        d = np.where(t < r, t + 1.0, t)
    else:
        raise ModelError(f"no distance formula for EDGE_WEIGHT_TYPE {weight_type} "
                         f"(supported: {', '.join(SUPPORTED_WEIGHTS)})")
    np.fill_diagonal(d, 0.0)                          # TSPLIB's GEO formula gives 1 on the diagonal
    return d


def _vehicles(path: str, fields, name: str) -> int | None:
    if "VEHICLES" in fields:
        no, value = fields["VEHICLES"]
        return parse_number(value, path, no, "VEHICLES", integer=True)
    match = _VEHICLES_IN_NAME.search(name)
    return int(match.group(1)) if match else None


def read_vrplib_solution(path: str) -> Instance:
    """Read a CVRPLIB ``.sol`` file: ``Route #i: c1 c2 ...`` lines and ``Cost X``."""
    lines = LineReader(path)
    routes: list[list[int]] = []
    cost = None
    first_seen: dict[int, int] = {}
    if lines.at_end():
        lines.next("'Route #1: ...'")
    while not lines.at_end():
        no, line = lines.next("a route or the cost")
        if line.startswith("Route"):
            label, sep, rest = line.partition(":")
            if not sep:
                raise InstanceFormatError(path, no, "expected 'Route #i: customer ids'")
            route = [parse_number(t, path, no, "customer id", integer=True) for t in rest.split()]
            if not route:
                raise InstanceFormatError(path, no, "a route must visit at least one customer")
            for c in route:
                if c < 1:
                    raise InstanceFormatError(path, no, f"customer ids are >= 1 (0 is the depot), got {c}")
                if c in first_seen:
                    raise InstanceFormatError(path, no, f"customer {c} is already on a route (line {first_seen[c]})")
                first_seen[c] = no
            routes.append(route)
        elif line.split()[0].lower() == "cost":
            tokens = line.split()
            if len(tokens) != 2:
                raise InstanceFormatError(path, no, "expected 'Cost <number>'")
            cost = parse_number(tokens[1], path, no, "Cost")
        else:
            raise InstanceFormatError(path, no, f"expected 'Route #i: ...' or 'Cost <number>', got {line[:40]!r}")
    if not routes:
        raise InstanceFormatError(path, lines.last_line + 1, "end of file without any 'Route #i: ...' line")
    if cost is None:
        raise InstanceFormatError(path, lines.last_line + 1, "end of file without the 'Cost <number>' line")
    return Instance(family="cvrp_solution", format="vrplib_sol", name=instance_name(path), path=path,
                    data={"routes": routes, "cost": float(cost)},
                    meta={"routes": len(routes), "customers": len(first_seen), "cost": float(cost)})


VRPLIB_READER = register_reader(Reader(
    format="vrplib", family="cvrp", extensions=(".vrp",), read=read_vrplib, sniff=None,
    description="CVRPLIB instance (EUC_2D, CEIL_2D, GEO, ATT or EXPLICIT distances)", params=("rounding",)))
VRPLIB_SOLUTION_READER = register_reader(Reader(
    format="vrplib_sol", family="cvrp_solution", extensions=(".sol",), read=read_vrplib_solution,
    sniff=lambda path, head: head.lstrip().startswith("Route #"),
    description="CVRPLIB solution (routes and cost)"))
