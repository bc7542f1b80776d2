"""Loading the packaged CUDA sources: into CuPy (with a cache) or, with no GPU, through NVRTC to PTX.

Every kernel source lives in ``gpu/*.cu`` (installed as package data of ``solvopt.gpu``).
``load_module`` builds a ``cupy.RawModule`` once per (file, options); ``compile_to_ptx`` calls
NVRTC from the pip package ``nvidia-cuda-nvrtc-cu12`` through ctypes, which needs no driver and
no device, so CI can compile-check every kernel on a machine without a GPU.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import importlib.resources
import os
from collections.abc import Sequence
from pathlib import Path

from solvopt.core.errors import BackendUnavailable, SolverError

DEFAULT_ARCH = "compute_90"


def cuda_sources() -> list[Path]:
    """Paths of every packaged ``*.cu`` file, found through importlib.resources."""
    root = importlib.resources.files("solvopt.gpu")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith(".cu"))


def read_source(filename: str) -> str:
    """The text of one packaged CUDA source."""
    res = importlib.resources.files("solvopt.gpu").joinpath(filename)
    if not res.is_file():
        raise FileNotFoundError(f"no CUDA source {filename!r} in solvopt.gpu")
    return res.read_text(encoding="utf-8")


@functools.cache
def load_module(filename: str, options: tuple[str, ...] = (), name_expressions: tuple[str, ...] = ()):
    """A cached ``cupy.RawModule`` compiled from the packaged source ``filename``."""
    try:
        import cupy
    except ImportError:
        raise BackendUnavailable("CuPy is not installed: pip install 'solvopt[gpu]'") from None
    kwargs = {"code": read_source(filename), "options": ("--std=c++17",) + tuple(options)}
    if name_expressions:
        kwargs["name_expressions"] = tuple(name_expressions)
    return cupy.RawModule(**kwargs)


# --- NVRTC without a GPU --------------------------------------------------------------------
def _nvrtc_candidates() -> list[str]:
    found = []
    try:
        import nvidia.cuda_nvrtc as pkg  # the pip package nvidia-cuda-nvrtc-cu12
        for base in pkg.__path__:
            found += sorted(glob.glob(os.path.join(base, "lib", "libnvrtc.so*")))
            found += sorted(glob.glob(os.path.join(base, "bin", "nvrtc64_*.dll")))
    except ImportError:
        pass
    return [f for f in found if ".alt." not in f and "builtins" not in f]


@functools.lru_cache(maxsize=1)
def nvrtc_library():
    """The NVRTC shared library (ctypes), or BackendUnavailable naming the pip package."""
    for path in _nvrtc_candidates():
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    raise BackendUnavailable("NVRTC not found: pip install nvidia-cuda-nvrtc-cu12")


def nvrtc_available() -> bool:
    try:
        nvrtc_library()
        return True
    except BackendUnavailable:
        return False


def compile_to_ptx(source: str, name: str = "kernel.cu", arch: str = DEFAULT_ARCH,
                   options: Sequence[str] = ()) -> str:
    """Compile CUDA C++ source to PTX with NVRTC; raises SolverError with NVRTC's log on failure."""
    lib = nvrtc_library()
    prog = ctypes.c_void_p()
    check = _checker(lib)
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
          "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}", "--std=c++17", *options]
        argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        status = lib.nvrtcCompileProgram(prog, len(opts), argv)
        if status != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise SolverError(f"NVRTC failed to compile {name}:\n{log.value.decode(errors='replace')}")
        size = ctypes.c_size_t()
        check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _checker(lib):
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status: int, what: str) -> None:
        if status != 0:
            raise SolverError(f"{what} failed: {lib.nvrtcGetErrorString(status).decode()}")
    return check
