"""CUDA kernel sources (``*.cu``) and their CuPy launchers; see :mod:`solvopt.gpu.harness`.

One pair per family, named after it: ``dp.cu`` / :mod:`solvopt.gpu.dp` (the min-plus engine of
the dp and irp families), ``cvrp.cu`` / :mod:`solvopt.gpu.cvrp` (the stochastic split),
``transport.cu`` / :mod:`solvopt.gpu.transport` (the distance kernels). Families reach them
through their ``Kernels`` (:mod:`solvopt.core.backend`).
"""
from .harness import compile_to_ptx, cuda_sources, load_module, nvrtc_available, read_source

__all__ = ["compile_to_ptx", "cuda_sources", "load_module", "nvrtc_available", "read_source"]
