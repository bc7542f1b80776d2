"""Instance readers and format sniffing: ``read_instance(path)`` -> :class:`Instance`."""
from __future__ import annotations

import importlib

from .base import Instance, LineReader, Reader, detect_format, parse_number, read_instance, readers, register_reader

# Readers of formats no family owns yet (each family's descriptor names its own reader modules).
ORPHAN_READER_MODULES = ("solvopt.io.transport_npz",)


def _import_readers() -> None:
    from solvopt.core.family import load_readers
    load_readers()
    for name in ORPHAN_READER_MODULES:
        importlib.import_module(name)


class _LoadAll:
    pass


_import_readers()
_load_all = _LoadAll()

__all__ = ["Instance", "LineReader", "Reader", "detect_format", "parse_number", "read_instance", "readers",
           "register_reader"]
