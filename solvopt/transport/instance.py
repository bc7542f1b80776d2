"""How a ``transport_npz`` instance becomes the family's model: :func:`model_from_instance`.

The CLI routes ``--p`` and ``--metric`` here (see :mod:`solvopt.transport.family`).
"""
from __future__ import annotations

from solvopt.dsl.transport import Transport


def model_from_instance(instance, p=None, metric: str | None = None) -> Transport:
    """The :class:`~solvopt.dsl.transport.Transport` model of an instance read from a ``.npz`` file.

    ``p`` in [1, inf] (default 2; ``inf`` for the bottleneck distance); ``metric`` for point
    files: euclidean (default), cityblock or chebyshev.
    """
    data = instance.data
    kwargs = {"p": 2 if p is None else p, "a": data["a"], "b": data["b"]}
    for key in ("distance", "cost"):
        if data.get(key) is not None:
            return Transport(**{key: data[key]}, metric="euclidean" if metric is None else metric, **kwargs)
    return Transport(data["x"], data["y"], metric="euclidean" if metric is None else metric, **kwargs)
