"""Instance readers and format sniffing: ``read_instance(path)`` -> :class:`Instance`."""
from __future__ import annotations

import importlib

from .base import Instance, LineReader, Reader, detect_format, parse_number, read_instance, readers, register_reader

# Modules that register a reader when imported (one module per format).
READER_MODULES = ("ampl_khc", "points", "vrplib", "irp", "transport_npz", "mps")


def _import_readers() -> None:
    for name in READER_MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise


class _LoadAll:
    pass


_import_readers()
_load_all = _LoadAll()

__all__ = ["Instance", "LineReader", "Reader", "detect_format", "parse_number", "read_instance", "readers",
           "register_reader"]
