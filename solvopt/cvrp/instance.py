"""The ``cvrp`` model of an instance: :func:`model_from_instance` (the family descriptor's ``from_instance``).

The generic CLI (``solvopt solve FILE.vrp``) hands it the instance and the model flags:
``--tour identity|FILE`` (FILE: whitespace-separated customer ids), ``--fleet K``,
``--penalty L``; stochastic when ``--scenarios S`` or ``--demand`` is given: ``--demand
poisson`` (default) or ``--demand FILE.npy`` (an (S, N-1) matrix), ``--policy
penalty|infeasible``. ``--chunk C`` and ``--seed`` are solve options, routed by the CLI.
"""
from __future__ import annotations

import os

import numpy as np

from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl.split import Split, StochasticSplit
from solvopt.io.base import LineReader, parse_number

ACCEPTED = ("tour", "scenarios", "demand", "fleet", "penalty", "policy")


def read_tour(path: str) -> np.ndarray:
    """Customer ids from a text file (whitespace separated, any number per line, '#' comments)."""
    if not os.path.isfile(path):
        raise ModelError(f"--tour must be 'identity' or a file of customer ids; no such file: {path}")
    reader = LineReader(path, comment="#")
    ids = []
    while not reader.at_end():
        line_no, line = reader.next("customer ids")
        ids += [parse_number(tok, path, line_no, "a customer id", integer=True) for tok in line.split()]
    if not ids:
        raise InstanceFormatError(path, None, "no customer ids in the tour file")
    return np.asarray(ids, dtype=np.int64)


def read_demand_matrix(path: str) -> np.ndarray:
    """An (S, N-1) scenario matrix saved with numpy.save."""
    if not path.endswith(".npy"):
        raise ModelError(f"--demand must be 'poisson' or a .npy file of scenarios, got {path!r}")
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InstanceFormatError(path, None, "no such file") from None
    except (ValueError, OSError) as exc:
        raise InstanceFormatError(path, None, f"not a NumPy .npy array ({exc})") from None


def model_from_instance(instance, **params):
    """The Split or StochasticSplit model the flags describe (the family descriptor's ``from_instance``)."""
    unknown = sorted(set(params) - set(ACCEPTED))
    if unknown:
        raise ModelError(f"CVRP split does not take {', '.join('--' + u for u in unknown)}; "
                         f"its flags: {', '.join('--' + a for a in ACCEPTED)}")
    tour = params.get("tour", "identity")
    tour = None if tour == "identity" else read_tour(tour)
    stochastic = "scenarios" in params or "demand" in params
    if not stochastic:
        if "policy" in params:
            raise ModelError("--policy applies to the stochastic split: give --scenarios or --demand too")
        return Split.from_instance(instance, tour=tour, fleet=params.get("fleet"), penalty=params.get("penalty"))
    kwargs = {k: params[k] for k in ("fleet", "penalty", "policy") if k in params}
    demand = params.get("demand", "poisson")
    if demand == "poisson":
        return StochasticSplit.from_instance(instance, tour=tour, scenarios=params.get("scenarios", 10_000), **kwargs)
    scenarios = read_demand_matrix(demand)
    if "scenarios" in params:
        if not 1 <= params["scenarios"] <= scenarios.shape[0]:
            raise ModelError(f"--scenarios {params['scenarios']}: {demand} holds {scenarios.shape[0]} scenarios")
        scenarios = scenarios[:params["scenarios"]]
    try:
        return StochasticSplit.from_instance(instance, tour=tour, scenarios=scenarios, **kwargs)
    except ModelError as exc:   # name the file the bad matrix came from
        if "demand scenarios" in str(exc):
            raise ModelError(f"--demand {demand}: {exc}") from None
        raise
