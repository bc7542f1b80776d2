"""``solvopt convert``: write an instance in another format, chosen by the output's extension.

Supported: LP/MPS models -> ``.mps`` / ``.lp`` (through HiGHS); k-HC point sets -> ``.csv`` /
``.npy`` / ``.dat`` (the AMPL k-HC format of the shipped instances).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import ModelError
from .ampl_khc import format_ampl_khc
from .base import Instance


def _write_lp(instance: Instance, path: str) -> None:
    from .mps import write_model_file
    write_model_file(instance.data["standard_form"], path)


def _write_khc_csv(instance: Instance, path: str) -> None:
    points, k = instance.data["points"], instance.data["k"]
    header = ",".join(f"x{j + 1}" for j in range(points.shape[1]))
    with open(path, "w") as fh:
        fh.write(f"# k-HC points from {instance.name}: m={points.shape[0]} n={points.shape[1]} "
                 f"(a point file carries no k; this instance had k={k}: pass --k {k})\n{header}\n")
        for row in points:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")


def _write_khc_npy(instance: Instance, path: str) -> None:
    with open(path, "wb") as fh:  # a file object: np.save would append .npy to other names
        np.save(fh, instance.data["points"], allow_pickle=False)


def _write_khc_dat(instance: Instance, path: str) -> None:
    with open(path, "w") as fh:
        fh.write(format_ampl_khc(instance.data["points"], instance.data["k"]))


# family -> output extension -> writer
WRITERS = {
    "lp": {".mps": _write_lp, ".lp": _write_lp},
    "khc": {".csv": _write_khc_csv, ".npy": _write_khc_npy, ".dat": _write_khc_dat},
}


def convert(instance: Instance, output_path: str) -> None:
    """Write ``instance`` to ``output_path`` in the format its extension names."""
    output_path = str(output_path)
    targets = WRITERS.get(instance.family, {})
    lower = output_path.lower()
    for ext, writer in targets.items():
        if lower.endswith(ext):
            writer(instance, output_path)
            return
    possible = "; ".join(f"{fam} -> {', '.join(exts)}" for fam, exts in WRITERS.items())
    raise ModelError(f"cannot convert a {instance.family!r} instance ({instance.format}) to "
                     f"{output_path!r}; supported conversions: {possible}")
