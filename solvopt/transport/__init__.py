"""W_p optimal transport: a proven constant-factor approximation on a sparse graph, and exact references.

One-call functions, the way POT users write them: :func:`wasserstein` (W_p between point sets),
:func:`emd2` (POT's ``ot.emd2(a, b, M)``) and :func:`emd` (POT's ``ot.emd(a, b, M)``: the plan),
from :mod:`solvopt.transport.api`.
"""

__all__ = ["wasserstein", "emd2", "emd"]


def __getattr__(name):          # lazy: importing the package loads no model or method
    if name in __all__:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
