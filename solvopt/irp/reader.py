"""Archetti et al. (2007) inventory-routing instances (``abs<k>n<N>_<j>.dat``).

    nodes horizon vehicle_capacity                        (nodes = supplier + customers)
    id x y start_inventory production_rate holding_cost   (the supplier)
    id x y start_inventory max_inventory min_inventory daily_demand holding_cost   (each customer)

Distances follow the Archetti convention: Euclidean rounded to the nearest integer.
"""
from __future__ import annotations

import re

import numpy as np

from ..core.errors import InstanceFormatError
from ..io.base import Instance, LineReader, Reader, instance_name, parse_number, register_reader
from ..io.distances import rounded_euclidean

SUPPLIER_FIELDS = ("id", "x", "y", "start_inventory", "production_rate", "holding_cost")
CUSTOMER_FIELDS = ("id", "x", "y", "start_inventory", "max_inventory", "min_inventory", "daily_demand",
                   "holding_cost")
_THREE_INTEGERS = re.compile(r"^\s*\d+\s+\d+\s+\d+(\.0*)?\s*$")
_AMPL = re.compile(r"^\s*(set|param)\b", re.MULTILINE)


def sniff_irp(path: str, head: str) -> bool:
    """A ``.dat`` file that is not AMPL is read as IRP (its reader then says what is wrong);
    any other file only when its first line is ``nodes horizon capacity``."""
    if _AMPL.search(head):
        return False
    if path.lower().endswith(".dat"):
        return True
    first = next((line for line in head.splitlines() if line.strip()), "")
    return _THREE_INTEGERS.match(first) is not None


def _fields(lines: LineReader, names: tuple[str, ...], what: str) -> tuple[int, list[float]]:
    no, line = lines.next(f"{what}: {' '.join(names)}")
    tokens = line.split()
    if len(tokens) != len(names):
        raise InstanceFormatError(lines.path, no, f"expected {len(names)} values for {what} "
                                                  f"({' '.join(names)}), got {len(tokens)}")
    values = [parse_number(t, lines.path, no, f"{name} of {what}", integer=(name == "id"))
              for name, t in zip(names, tokens)]
    for name, v in zip(names[3:], values[3:]):
        if v < 0:
            raise InstanceFormatError(lines.path, no, f"{name} of {what} must be >= 0, got {v}")
    return no, values


def read_irp(path: str) -> Instance:
    """Read an Archetti IRP file; see docs/formats.md for the ``data`` keys."""
    lines = LineReader(path)
    no, line = lines.next("the header 'nodes horizon vehicle_capacity'")
    tokens = line.split()
    if len(tokens) != 3:
        raise InstanceFormatError(path, no, "expected the header 'nodes horizon vehicle_capacity', "
                                            f"got {len(tokens)} values")
    nodes = parse_number(tokens[0], path, no, "nodes", integer=True)
    horizon = parse_number(tokens[1], path, no, "horizon", integer=True)
    capacity = parse_number(tokens[2], path, no, "vehicle_capacity")
    if nodes < 2 or horizon < 1 or capacity <= 0:
        raise InstanceFormatError(path, no, f"expected nodes >= 2, horizon >= 1, vehicle_capacity > 0; "
                                            f"got {nodes} {horizon} {capacity}")
    _, supplier = _fields(lines, SUPPLIER_FIELDS, "the supplier")
    customers = [_fields(lines, CUSTOMER_FIELDS, f"customer {c + 1}") for c in range(nodes - 1)]
    if not lines.at_end():
        extra_no, _ = lines.next("")
        raise InstanceFormatError(path, extra_no, f"the header says {nodes} nodes (supplier + {nodes - 1} customers) "
                                                  "but the file has more lines")
    ids = {int(supplier[0]): 2}
    for cno, values in customers:
        node = int(values[0])                       # parsed as an integer
        if node in ids:
            raise InstanceFormatError(path, cno, f"node id {node} is used twice")
        ids[node] = cno
        if values[5] > values[4]:
            raise InstanceFormatError(path, cno, f"min_inventory {values[5]} exceeds max_inventory {values[4]}")
    table = np.array([values for _, values in customers], dtype=np.float64)
    coords = np.vstack([np.array(supplier[1:3], dtype=np.float64), table[:, 1:3]])
    data = {
        "horizon": int(horizon), "vehicle_capacity": float(capacity), "coords": coords,
        "supplier": {"start_inventory": float(supplier[3]), "production": float(supplier[4]),
                     "holding_cost": float(supplier[5])},
        "start_inventory": table[:, 3].copy(), "max_inventory": table[:, 4].copy(),
        "min_inventory": table[:, 5].copy(), "demand": table[:, 6].copy(), "holding_cost": table[:, 7].copy(),
        "distances": rounded_euclidean(coords),
    }
    meta = {"customers": nodes - 1, "horizon": int(horizon), "vehicle_capacity": float(capacity)}
    return Instance(family="irp", format="archetti_irp", name=instance_name(path), path=path, data=data, meta=meta)


IRP_READER = register_reader(Reader(
    format="archetti_irp", family="irp", extensions=(".dat",), read=read_irp, sniff=sniff_irp,
    description="Archetti et al. (2007) inventory-routing instance"))
