"""How a k-HC instance file becomes a :class:`~solvopt.dsl.hyperplane.HyperplaneClustering` model
(the family descriptor's ``from_instance``)."""
from __future__ import annotations

from solvopt.dsl.hyperplane import HyperplaneClustering


def model_from_instance(instance, k: int | None = None) -> HyperplaneClustering:
    """The model of a k-HC instance (data = {"points", "k"}); ``k`` overrides the file's."""
    return HyperplaneClustering(instance.data["points"], instance.data["k"] if k is None else k)
