"""Instance readers and format sniffing: ``read_instance(path)`` -> :class:`Instance`.

The readers themselves live in their families' folders (``solvopt/<family>/reader.py``, named
by each descriptor's ``reader_modules``); importing this package loads them.
"""
from __future__ import annotations

from .base import (
                   Instance,
                   JsonSyntaxError,
                   LineReader,
                   Reader,
                   detect_format,
                   instance_name,
                   load_json,
                   load_reader_modules,
                   parse_number,
                   read_instance,
                   reader_load_failures,
                   readers,
                   register_reader,
)
from .frames import results_frame  # pandas is imported when it is called, not here

load_reader_modules()

__all__ = ["Instance", "JsonSyntaxError", "LineReader", "Reader", "detect_format", "instance_name", "load_json",
           "parse_number", "read_instance", "reader_load_failures", "readers", "register_reader", "results_frame"]
