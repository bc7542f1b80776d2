"""NumPy ``.npz`` archives (and ``.npy`` files: :func:`load_npy`) read defensively: every array's
header is checked before anything is allocated.

``numpy.load`` trusts the file: a ``.npy`` renamed ``.npz`` comes back as a bare array, a member
that is not a ``.npy`` comes back as bytes, and a header claiming a shape of 71 PiB is allocated
(a ``MemoryError``) before the data is found missing. :func:`load_npz` reads the zip directory,
then each member's ``.npy`` header (magic, version, dtype, shape), and refuses in one
:class:`InstanceFormatError` naming the file and the array:

- a file that is not a zip archive (a ``.npy`` says so and how to write an ``.npz``);
- a member that is not a ``.npy`` array, or whose header is unreadable;
- a dtype that is not a plain real number or boolean (objects, strings, records, complex);
- a shape whose byte count differs from what the member holds, or exceeds the memory budget
  (:func:`solvopt.core.memory.memory_budget`);
- a member whose data is truncated or corrupt (bad CRC, broken compression).
"""
from __future__ import annotations

import math
import zipfile
import zlib

import numpy as np

from ..core.errors import InstanceFormatError
from ..core.memory import format_bytes, memory_budget

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
REAL_KINDS = "biuf"  # bool, signed and unsigned integers, floats
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError, ValueError)


def load_npz(path: str, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` archive by name, each checked before it is allocated.

    ``max_bytes``: the most one array may take (default: half the machine's memory).
    """
    budget = memory_budget() if max_bytes is None else int(max_bytes)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise InstanceFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None
    if magic.startswith(NPY_MAGIC):
        raise InstanceFormatError(path, None, "a NumPy .npy file (one array), not an .npz archive of named arrays; "
                                              "write one with numpy.savez(path, x=..., y=...)")
    if not magic.startswith(ZIP_MAGICS):
        raise InstanceFormatError(path, None, "not an .npz archive (not a zip file)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if not info.filename.endswith(".npy"):
                    raise InstanceFormatError(path, None, f"member {info.filename!r} is not a .npy array "
                                                          "(an .npz holds name.npy members)")
                name = info.filename[:-4]
                with archive.open(info) as member:
                    arrays[name] = _read_member(path, name, member, info.file_size, budget)
    except InstanceFormatError:
        raise
    except _READ_ERRORS as exc:
        raise InstanceFormatError(path, None, f"not a readable .npz archive ({type(exc).__name__}: "
                                              f"{_first_line(exc)})") from None
    return arrays


def load_npy(path: str, max_bytes: int | None = None) -> np.ndarray:
    """The array of a ``.npy`` file, its header checked as :func:`load_npz` checks a member's."""
    import os
    budget = memory_budget() if max_bytes is None else int(max_bytes)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            return _read_member(path, os.path.basename(path), fh, size, budget, holder="the file")
    except InstanceFormatError:
        raise
    except OSError as exc:
        raise InstanceFormatError(path, None, f"cannot read: {exc.strerror or exc}") from None


def _read_member(path: str, name: str, member, size: int, budget: int,
                 holder: str = "the member") -> np.ndarray:
    """One ``.npy`` member: header checked, then exactly the bytes it announces read."""
    def refuse(what: str) -> InstanceFormatError:
        return InstanceFormatError(path, None, f"array {name!r}: {what}")

    try:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise refuse(f".npy format version {version[0]}.{version[1]} is not supported (1.0 and 2.0 are)")
    except InstanceFormatError:
        raise
    except (ValueError, SyntaxError, TypeError, EOFError) as exc:
        raise refuse(f"unreadable .npy header ({_first_line(exc)})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in REAL_KINDS:
        raise refuse(f"dtype {dtype} is not supported; expected real numbers (float or integer)")
    if any(not isinstance(s, int) or s < 0 for s in shape):
        raise refuse(f"bad shape {shape} in its header")
    need = math.prod(shape) * dtype.itemsize
    held = size - member.tell()
    if need != held:
        raise refuse(f"header claims shape {shape} ({_size(need)}) but {holder} holds "
                     f"{_size(max(held, 0))} of data")
    if need > budget:
        raise refuse(f"shape {shape} needs {_size(need)}, more than the {_size(budget)} "
                     "allowed on this machine")
    buffer = bytearray(need)
    got = member.readinto(buffer) if need else 0
    if got != need:
        raise refuse(f"data truncated: {_size(got)} of {_size(need)}")
    flat = np.frombuffer(buffer, dtype=dtype)
    return flat.reshape(shape, order="F" if fortran else "C")


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else format_bytes(n)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
