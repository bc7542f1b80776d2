"""CUDA kernel sources (``*.cu``) and their CuPy launchers; see :mod:`solvopt.gpu.harness`."""
from .harness import compile_to_ptx, cuda_sources, load_module, nvrtc_available, read_source

__all__ = ["compile_to_ptx", "cuda_sources", "load_module", "nvrtc_available", "read_source"]
