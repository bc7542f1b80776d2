"""The typed options the k-HC2 methods share: one name, one meaning, one declaration.

``restarts`` is the number of k-plane restarts (:func:`~solvopt.khc.heuristics.kplane`) wherever
a method takes it (the heuristic itself; the first incumbent of "bnb" and "sbb", where 0 means a
trivial first incumbent). ``norms`` is the norm set of the MINLP methods ("sbb", "scip",
"gurobi"); None takes the model's. ``suffix_bounds`` (bnb) is on, off or "auto"; ``switch`` reads
the on/off words of the command line.
"""
from __future__ import annotations

import numbers

from solvopt.core.options import Option, integer_at_least
from solvopt.dsl.hyperplane_data import DEFAULT_NORMS, norm_names, parse_norms


def norm_set(value) -> str:
    """A norm set option as its canonical text ("2,inf"); ModelError for an unsupported set."""
    return norm_names(parse_norms(value))


norm_set.__name__ = "norms"


def restarts_option(minimum: int, what: str) -> Option:
    return Option("restarts", integer_at_least(minimum), 10, f"k-plane restarts {what}")


_WORDS = {"on": True, "yes": True, "true": True, "1": True, "off": False, "no": False, "false": False, "0": False}


def switch(value) -> bool:
    """A bool option from Python (True/False, 0/1) or the command line (on/off, yes/no, true/false)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _WORDS:
        return _WORDS[value.strip().lower()]
    raise ValueError(f"expected on or off, got {value!r}")


switch.__name__ = "on|off"


def switch_or_auto(value) -> bool | str:
    """:func:`switch`, or the word "auto"."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return switch(value)
    except ValueError:
        raise ValueError(f"expected on, off or auto, got {value!r}") from None


switch_or_auto.__name__ = "on|off|auto"


def count_option(name: str, minimum: int, default: int | None, help: str) -> Option:
    return Option(name, integer_at_least(minimum), default, help)


NORMS = Option("norms", norm_set, None,
               "norm blocks of the MINLP: 2 | 2,inf | 2,1 | 2,1,inf, or the p-norm relaxations inf | 1 "
               "(default: the model's, else 2,inf)")


def problem_norms(problem, option: str | None) -> frozenset[str]:
    """The norm set to solve: the option's, else the model's, else {2, inf}."""
    if option is not None:
        return parse_norms(option)
    return problem.norms or DEFAULT_NORMS
