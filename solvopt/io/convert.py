"""``solvopt convert``: write an instance in another format, chosen by the output's extension.

Writers live with their family's readers, which register them here when ``solvopt.io`` loads
them (:func:`register_writer`); ``io`` imports no family. Today: LP/MPS models -> ``.mps`` /
``.lp`` (through HiGHS); k-HC point sets -> ``.csv`` / ``.npy`` / ``.dat`` (the AMPL k-HC format
of the shipped instances).
"""
from __future__ import annotations

from collections.abc import Callable

from ..core.errors import ModelError
from .base import Instance

Writer = Callable[[Instance, str], None]

# family -> output extension -> writer(instance, path)
WRITERS: dict[str, dict[str, Writer]] = {}


def register_writer(family: str, extension: str, writer: Writer) -> Writer:
    """Let ``solvopt convert`` write ``family`` instances to files ending in ``extension``."""
    WRITERS.setdefault(family, {})[extension.lower()] = writer
    return writer


def convert(instance: Instance, output_path: str) -> None:
    """Write ``instance`` to ``output_path`` in the format its extension names."""
    output_path = str(output_path)
    targets = WRITERS.get(instance.family, {})
    lower = output_path.lower()
    for ext, writer in targets.items():
        if lower.endswith(ext):
            writer(instance, output_path)
            return
    possible = "; ".join(f"{fam} -> {', '.join(exts)}" for fam, exts in sorted(WRITERS.items())) or "none"
    raise ModelError(f"cannot convert a {instance.family!r} instance ({instance.format}) to "
                     f"{output_path!r}; supported conversions: {possible}")
