"""W_p optimal transport: a proven constant-factor approximation on a sparse graph, and exact references.

One-call functions, the way POT users write them: :func:`wasserstein` (W_p between point sets)
and :func:`emd2` (POT's ``ot.emd2(a, b, M)``), both from :mod:`solvopt.transport.api`.
"""

__all__ = ["wasserstein", "emd2"]


def __getattr__(name):          # lazy: importing the package loads no model or method
    if name in __all__:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
