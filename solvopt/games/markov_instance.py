"""Markov instance files -> models: ``markov_pseudo_game`` and ``markov_exchange_economy``.

The reader (:mod:`solvopt.games.reader`) has parsed the JSON, rejected NaN / infinities and
validated it against ``schema_markov.json``; this module builds the model, and a model-level
error (a non-concave reward, transitions that do not sum to 1, a non-homogeneous utility) becomes
one :class:`InstanceFormatError` naming the file.

``markov_pseudo_game``: ``action_sizes``, ``linear`` (players x states x actions), optional
``quadratic`` (players x states x actions x actions), ``lower`` / ``upper`` (a number, one row, or
states x actions; null = unbounded), ``shared_matrix`` / ``shared_rhs``, ``transitions``, optional
``transition_slopes``, ``discount``, ``initial``, ``players`` (names). See
:class:`solvopt.dsl.markov_games.MarkovPseudoGame`.

``markov_exchange_economy``: ``utility`` ({"kind": ..., its parameter rows, one per consumer}),
``endowments`` (world states x consumers x goods), ``transitions``, ``discount``, ``initial``,
``asset_returns`` (world states x assets), ``borrowing_limit``, ``holding_limit``,
``asset_price_max``, ``price_sum``. See :class:`solvopt.dsl.markov_games.MarkovExchangeEconomy`.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl.markov_games import MarkovExchangeEconomy, MarkovPseudoGame

from .json_values import form_from_json, numeric

GAME_KEYS = ("quadratic", "shared_matrix", "shared_rhs", "transition_slopes", "initial", "players")
ECONOMY_KEYS = ("initial", "asset_returns", "borrowing_limit", "holding_limit", "asset_price_max", "price_sum",
                "degree", "endowment_floor", "endowment_cap", "endowment_shocks", "shock_probabilities", "horizon")


def _bounds_for(data: dict, name: str, default):
    """``data[name]`` as bounds, its shape checked: a number, (D,) or (S, D) for S states and D actions."""
    bounds = _bounds(data.get(name), default, name)
    if isinstance(bounds, np.ndarray):
        sizes, transitions = data.get("action_sizes"), data.get("transitions")
        if isinstance(sizes, list) and all(isinstance(v, int) for v in sizes) and isinstance(transitions, list):
            S, D = len(transitions), sum(sizes)
            if bounds.shape not in ((D,), (S, D)):
                raise ModelError(f"{name} must be a number, {D} numbers (one per action) or {S} rows of {D} "
                                 f"(one per state); got shape {bounds.shape}")
    return bounds


def _bounds(value, default, what: str):
    """``lower`` / ``upper``: a number, one per action, or states x actions rows; null = unbounded.

    Anything else (deeper nesting, ragged rows, a non-number) is one ModelError naming ``what``.
    """
    if value is None:
        return default
    expected = f"{what} must be a number, a list of numbers (one per action) or rows of them (one per state)"

    def number(v):
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ModelError(f"{expected}; null means unbounded; got {v!r}"[:200])
        return float(v)

    if not isinstance(value, list):
        return number(value)
    if value and all(isinstance(row, list) for row in value):
        rows = [[number(v) for v in row] for row in value]
        if len({len(row) for row in rows}) != 1:
            raise ModelError(f"{expected}: its rows have different lengths")
        return np.asarray(rows, dtype=float)
    return np.asarray([number(v) for v in value], dtype=float)


def _check_asset_limits(data: dict) -> None:
    """``borrowing_limit`` / ``holding_limit``: a number, or one per asset (a column of ``asset_returns``:
    (S, A) payouts, or (S, A, M) bundles of goods)."""
    returns = data.get("asset_returns")
    bundles = (returns is not None and bool(returns) and isinstance(returns[0], list) and bool(returns[0])
               and isinstance(returns[0][0], list))
    assets = numeric(returns, "asset_returns", 3 if bundles else 2).shape[1] if returns else 0
    for name in ("borrowing_limit", "holding_limit"):
        value = data.get(name)
        if value is None or not isinstance(value, list):
            continue
        arr = numeric(value, name, 1)
        if arr.shape[0] != assets:
            raise ModelError(f"{name} must be one number, or one per asset ({assets}: the columns of asset_returns); "
                             f"got {arr.shape[0]} values")


def model_from_json(data: dict, path: str, **params):
    """The model of a Markov instance (no parameters are taken)."""
    if params:
        raise ModelError(f"{data['kind']} instances take no parameters (got {', '.join(params)})")
    try:
        if data["kind"] == "markov_pseudo_game":
            extra = {k: data[k] for k in GAME_KEYS if data.get(k) is not None}
            return MarkovPseudoGame(data["action_sizes"], data["linear"], data["transitions"], data["discount"],
                                    lower=_bounds_for(data, "lower", 0.0), upper=_bounds_for(data, "upper", np.inf),
                                    **extra)
        extra = {k: data[k] for k in ECONOMY_KEYS if data.get(k) is not None}
        _check_asset_limits(data)
        return MarkovExchangeEconomy(form_from_json(data["utility"]), data["endowments"], data["transitions"],
                                     data.get("discount", 0.9), **extra)
    except ModelError as exc:
        raise InstanceFormatError(path, None, str(exc)) from None
