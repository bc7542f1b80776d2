"""Instance files of economies with production (JSON, ``kind: production_economy``).

A file holds one :class:`~solvopt.dsl.ProductionEconomy`: ``utility`` (a form with one parameter
row per consumer: ``quadratic`` with ``Q`` and ``b``, ``log`` with ``values`` and an optional
``shift``, ``cobb_douglas``, ``ces``), ``endowments`` (consumers x goods), ``radii`` (one ball
technology per firm) and optional ``profit_shares`` (consumers x firms). It is validated against
``production_schema.json``; NaN / Infinity are refused; every error is one line naming the file and
the JSON path (``a10a.json: field utility.Q[1]: ...``). The general game reader leaves these files
to this one (:func:`solvopt.games.reader.sniff_game`); :func:`solvopt.games.instance.model_from_instance`
builds the model with :func:`economy_from_json`.
"""
from __future__ import annotations

from solvopt.core.errors import InstanceFormatError, ModelError, SolvoptError
from solvopt.io.base import Instance, Reader, instance_name, load_json, register_reader

from .json_checks import field_name, first_nonfinite, validate

KIND = "production_economy"
SCHEMA = "production_schema.json"


def read_production(path: str) -> Instance:
    """Read and validate a ``production_economy`` file (``data``: the parsed JSON)."""
    data = load_json(path)
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise InstanceFormatError(path, None, f"expected a JSON object with \"kind\": \"{KIND}\"")
    bad = first_nonfinite(data)
    if bad is not None:
        raise InstanceFormatError(path, None, f"field {field_name(bad)}: NaN and infinite numbers are not allowed")
    validate(data, path, SCHEMA)
    return Instance(family="games", format="production_json", name=data.get("name") or instance_name(path),
                    path=path, data=data, meta={"kind": KIND, "utility": data["utility"]["kind"]})


def economy_from_json(data: dict, path: str):
    """The :class:`~solvopt.dsl.ProductionEconomy` of a validated file; model errors name the file."""
    import numpy as np

    from solvopt.dsl.production import ProductionEconomy
    from solvopt.dsl.quadratic_utility import Quadratic

    from .json_values import form_from_json, numeric
    spec = data["utility"]
    try:
        if spec["kind"] == "quadratic":
            utility = Quadratic(numeric(spec["Q"], "field utility.Q", 3), numeric(spec["b"], "field utility.b", 2))
        else:
            utility = form_from_json(spec, "field utility")
        shares = data.get("profit_shares")
        radii = np.asarray(data["radii"], dtype=float)
        return ProductionEconomy(utility, numeric(data["endowments"], "field endowments", 2), radii,
                                 None if shares is None else numeric(shares, "field profit_shares", 2),
                                 name=data.get("name", "production_economy"))
    except ModelError as exc:
        raise InstanceFormatError(path, None, str(exc)) from None


def economy_to_json(economy, name: str | None = None, description: str = "", reference: dict | None = None) -> dict:
    """The JSON of a :class:`~solvopt.dsl.ProductionEconomy` (what :func:`economy_from_json` reads)."""
    u = economy.utility
    if u.kind == "quadratic":
        utility = {"kind": "quadratic", "Q": u.matrices.tolist(), "b": u.weights.tolist()}
    else:
        utility = {"kind": u.kind, **{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in u.params().items()}}
    data = {"kind": KIND, "name": name or economy.name}
    if description:
        data["description"] = description
    if reference:
        data["reference"] = reference
    data.update({"utility": utility, "endowments": economy.endowments.tolist(), "radii": economy.radii.tolist()})
    if economy.profit_shares.any():
        data["profit_shares"] = economy.profit_shares.tolist()
    return data


def _mentions_kind(path: str) -> bool:
    """Whether the file's bytes hold ``"production_economy"`` (a cheap test before parsing)."""
    try:
        with open(path, "rb") as fh:
            return f'"{KIND}"'.encode() in fh.read()
    except OSError:
        return False


def sniff_production(path: str, head: str) -> bool:
    """A JSON object whose ``kind`` is ``production_economy`` (other JSON files are not parsed twice)."""
    if not head.lstrip("\ufeff \t\r\n").startswith("{") or not _mentions_kind(path):
        return False
    try:
        data = load_json(path)
    except SolvoptError:
        return False
    return isinstance(data, dict) and data.get("kind") == KIND


PRODUCTION_READER = register_reader(Reader(
    format="production_json", family="games", extensions=(".json",), read=read_production, sniff=sniff_production,
    description="economy with production (JSON, kind production_economy, solvopt/games/production_schema.json)"))

