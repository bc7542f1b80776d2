"""CVRPLIB instances (``.vrp``) and solutions (``.sol``), parsed without the optional ``vrplib`` package.

Instance files are ``KEY : value`` header lines followed by sections (``NODE_COORD_SECTION``,
``DEMAND_SECTION``, ``DEPOT_SECTION`` ending with ``-1``, optional ``EDGE_WEIGHT_SECTION``,
``EOF``). Nodes are re-indexed so that the depot is node 0 and customers are 1..N-1 in file
order; distances follow the CVRPLIB convention (Euclidean rounded to the nearest integer).
"""
from __future__ import annotations

import re

import numpy as np

from ..core.errors import InstanceFormatError
from ..io.base import Instance, LineReader, Reader, instance_name, parse_number, register_reader
from ..io.distances import rounded_euclidean

HEADER_KEYS = {"NAME", "COMMENT", "TYPE", "DIMENSION", "CAPACITY", "EDGE_WEIGHT_TYPE", "EDGE_WEIGHT_FORMAT",
               "NODE_COORD_TYPE", "DISPLAY_DATA_TYPE", "VEHICLES", "DISTANCE", "SERVICE_TIME"}
SECTIONS = ("NODE_COORD_SECTION", "DEMAND_SECTION", "DEPOT_SECTION", "EDGE_WEIGHT_SECTION")
SUPPORTED_WEIGHTS = ("EUC_2D", "EXPLICIT")
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
    while not lines.at_end():
        no, line = lines.peek()
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
            raise InstanceFormatError(lines.path, no, f"expected a 'KEY : value' header line or a section, got {line[:40]!r}")
        fields[key] = (no, value)
    return fields


def _required(lines: LineReader, fields, key: str, integer: bool = True):
    if key not in fields:
        raise InstanceFormatError(lines.path, lines.peek()[0] if lines.peek() else lines.last_line,
                                  f"the header has no {key} field (expected before the sections)")
    no, value = fields[key]
    return parse_number(value, lines.path, no, key, integer=integer)


def _rows(lines: LineReader, count: int, width: int, what: str) -> list[tuple[int, list[str]]]:
    rows = []
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
                raise InstanceFormatError(lines.path, no, f"node id {i} in {section}: expected each id 1..{dimension} once")
            seen.add(i)
    return ids


def read_vrplib(path: str) -> Instance:
    """Read a CVRPLIB ``.vrp`` file; see docs/formats.md for the ``data`` keys."""
    lines = LineReader(path)
    if lines.at_end():
        lines.next("the header (NAME, TYPE, DIMENSION, CAPACITY, EDGE_WEIGHT_TYPE)")
    fields = _header(lines)
    dimension = _required(lines, fields, "DIMENSION")
    capacity = _required(lines, fields, "CAPACITY")
    if dimension < 2:
        raise InstanceFormatError(path, fields["DIMENSION"][0], f"DIMENSION must be >= 2 (a depot and a customer), got {dimension}")
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
    if weight_type == "EXPLICIT":
        fmt_no, fmt = fields.get("EDGE_WEIGHT_FORMAT", (weight_no, None))
        if fmt != "FULL_MATRIX":
            raise InstanceFormatError(path, fmt_no, f"EDGE_WEIGHT_FORMAT {fmt} is not supported with EXPLICIT "
                                                    "weights (supported: FULL_MATRIX)")

    coords = demands = depots = matrix = None
    while not lines.at_end():
        no, line = lines.next("a section")
        keyword = _keyword(line)
        if keyword == "EOF":
            break
        if keyword not in SECTIONS:
            raise InstanceFormatError(path, no, f"expected a section keyword ({', '.join(SECTIONS)}) or EOF, "
                                                f"got {line[:40]!r}")
        if keyword == "NODE_COORD_SECTION":
            rows = _rows(lines, dimension, 3, "node coordinates 'id x y'")
            ids = _node_ids(lines, rows, dimension, keyword)
            coords = np.empty((dimension, 2))
            for i, (rno, t) in zip(ids, rows):
                coords[i - 1] = [parse_number(v, path, rno, f"coordinate of node {i}") for v in t[1:]]
                if max(abs(coords[i - 1])) > MAX_COORDINATE:
                    raise InstanceFormatError(path, rno, f"coordinate of node {i} is too large: "
                                                         f"{max(abs(coords[i - 1])):.4g} (at most {MAX_COORDINATE:g}, "
                                                         "so that distances stay finite)")
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
            matrix = _explicit_matrix(lines, dimension)
    for name, value in (("DEMAND_SECTION", demands), ("DEPOT_SECTION", depots)):
        if value is None:
            raise InstanceFormatError(path, lines.last_line + 1, f"end of file without a {name}")
    if weight_type == "EUC_2D" and coords is None:
        raise InstanceFormatError(path, lines.last_line + 1, "end of file without a NODE_COORD_SECTION "
                                                             "(needed for EUC_2D distances)")
    if weight_type == "EXPLICIT" and matrix is None:
        raise InstanceFormatError(path, lines.last_line + 1, "end of file without an EDGE_WEIGHT_SECTION")
    depot_line, depot = depots
    if demands[depot] != 0:
        raise InstanceFormatError(path, depot_line, f"the depot (node {depot + 1}) has demand {demands[depot]}, expected 0")

    order = np.array([depot] + [i for i in range(dimension) if i != depot])
    coords = None if coords is None else coords[order]
    demands = demands[order]
    distances = rounded_euclidean(coords) if matrix is None else matrix[np.ix_(order, order)]
    name = fields.get("NAME", (None, instance_name(path)))[1]
    vehicles = _vehicles(path, fields, name)
    over = int(np.count_nonzero(demands > capacity))
    data = {"coords": coords, "demands": demands, "capacity": int(capacity), "depot": 0,
            "distances": distances, "vehicles": vehicles}
    meta = {"customers": dimension - 1, "capacity": int(capacity), "total_demand": sum(int(d) for d in demands),
            "vehicles": vehicles, "edge_weight_type": weight_type, "customers_over_capacity": over}
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
        raise InstanceFormatError(lines.path, end_no, f"expected -1 closing the DEPOT_SECTION (one depot only), got {value}")
    return no, depot - 1


def _explicit_matrix(lines: LineReader, dimension: int) -> np.ndarray:
    """``dimension**2`` numbers, row by row, over as many lines as needed."""
    values: list[float] = []
    while len(values) < dimension * dimension:
        no, line = lines.next(f"{dimension * dimension} edge weights (FULL_MATRIX), got {len(values)}")
        for tok in line.split():
            values.append(parse_number(tok, lines.path, no, "edge weight"))
    if len(values) != dimension * dimension:
        raise InstanceFormatError(lines.path, no, f"expected {dimension * dimension} edge weights, got {len(values)}")
    matrix = np.array(values).reshape(dimension, dimension)
    if np.any(matrix < 0):
        raise InstanceFormatError(lines.path, no, "edge weights must be >= 0")
    return matrix


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
    description="CVRPLIB instance (EUC_2D or EXPLICIT FULL_MATRIX)"))
VRPLIB_SOLUTION_READER = register_reader(Reader(
    format="vrplib_sol", family="cvrp_solution", extensions=(".sol",), read=read_vrplib_solution,
    sniff=lambda path, head: head.lstrip().startswith("Route #"),
    description="CVRPLIB solution (routes and cost)"))
