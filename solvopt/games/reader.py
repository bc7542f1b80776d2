"""Game instance files (JSON): read, reject non-finite numbers, validate against the JSON Schema.

The top-level ``kind`` says what the file holds: ``pseudo_game``, ``scalar_game`` (one-variable
players whose utility need not be concave), ``fisher_market``, ``arrow_debreu_market`` (this
family's :mod:`solvopt.games.instance` builds them) or
``markov_pseudo_game`` / ``markov_exchange_economy`` (validated here against
``schema_markov.json`` when present; built by :mod:`solvopt.games.markov_instance`). A malformed
file is one :class:`InstanceFormatError` naming the file and the field (``players[0].cost.Q``);
utility ``expression`` trees (and nonlinear constraints') are parsed here too
(:mod:`solvopt.games.expressions`), so a bad node is named by its path
(``players[2].cost.expression.args[0].op``).
The schema is ``solvopt/games/schema.json``; docs/games.md describes it. Economies with production
(``production_economy``) have their own reader (:mod:`solvopt.games.production_reader`), which
:func:`sniff_game` leaves them to.
"""
from __future__ import annotations

from ..core.errors import InstanceFormatError, SolvoptError
from ..io.base import Instance, Reader, instance_name, load_json, register_reader
from .json_checks import field_name, first_nonfinite, schema, validate  # noqa: F401 - re-exported

KINDS = ("pseudo_game", "scalar_game", "fisher_market", "arrow_debreu_market", "markov_pseudo_game",
         "markov_exchange_economy")
MARKOV_KINDS = ("markov_pseudo_game", "markov_exchange_economy")


def _check_kind(data: dict, path: str) -> None:
    """A missing or unknown ``kind`` is named against every JSON kind solvopt reads (production too),
    before the schema would name only this reader's."""
    kinds = (*KINDS, "production_economy")
    kind = data.get("kind")
    if kind is None:
        raise InstanceFormatError(path, None, f"field kind: missing; a JSON instance says what it holds, one of "
                                              f"{', '.join(kinds)}")
    if kind not in kinds:
        raise InstanceFormatError(path, None, f"field kind: {kind!r} is not a kind solvopt reads; one of "
                                              f"{', '.join(kinds)}")


def read_game(path: str) -> Instance:
    """Read a game instance file; ``data`` is the parsed JSON (validated)."""
    data = load_json(path)  # broken JSON: FILE:LINE:COLUMN; too deep, not UTF-8: one line each
    if not isinstance(data, dict):
        raise InstanceFormatError(path, None, "expected a JSON object with a 'kind' field")
    bad = first_nonfinite(data)
    if bad is not None:
        raise InstanceFormatError(path, None, f"field {field_name(bad)}: NaN and infinite numbers are not allowed")
    _check_kind(data, path)
    validate(data, path)
    kind = data["kind"]
    if kind in MARKOV_KINDS:
        validate(data, path, "schema_markov.json")
    meta = {"kind": kind}
    if kind in ("pseudo_game", "scalar_game"):
        meta["players"] = len(data["players"])
        _check_expressions(data["players"], path, data.get("shared_nonlinear_constraints", ()))
    elif "utility" in data:
        meta["utility"] = data["utility"]["kind"]
    return Instance(family="games", format="game_json", name=data.get("name") or instance_name(path), path=path,
                    data=data, meta=meta)


def _check_expressions(players, path: str, shared=()) -> None:
    """Parse every utility / cost ``expression`` and every nonlinear constraint's now, so a malformed one is
    one line naming its field (a constraint's curvature is judged when the model is built)."""
    from solvopt.core.errors import ModelError

    from .expressions import parse
    n = sum(p.get("size", 1) for p in players)          # a scalar game's players have size 1
    trees: list[tuple[object, tuple]] = []
    for i, p in enumerate(players):
        for key in ("utility", "cost"):
            if "expression" in p.get(key, {}):
                trees.append((p[key]["expression"], ("players", i, key, "expression")))
        for k, spec in enumerate(p.get("nonlinear_constraints", [])):
            trees.append((spec["expression"], ("players", i, "nonlinear_constraints", k, "expression")))
    for k, spec in enumerate(shared):
        trees.append((spec["expression"], ("shared_nonlinear_constraints", k, "expression")))
    for tree, where in trees:
        try:
            parse(tree, n, where)
        except ModelError as exc:
            raise InstanceFormatError(path, None, str(exc)) from None


def sniff_game(path: str, head: str) -> bool:
    """A ``.json`` file is this reader's unless it is an economy with production (this reader then says
    what is wrong: broken JSON names line and column); another file is when it parses as a JSON
    object with a known ``kind`` (wherever the key sits: the whole file is parsed, not only ``head``)."""
    if path.lower().endswith(".json"):
        from .production_reader import sniff_production
        return not sniff_production(path, head)
    if not head.lstrip("\ufeff \t\r\n").startswith("{"):
        return False
    try:
        data = load_json(path)
    except SolvoptError:
        return False
    return isinstance(data, dict) and data.get("kind") in KINDS


GAME_READER = register_reader(Reader(
    format="game_json", family="games", extensions=(".json",), read=read_game, sniff=sniff_game,
    description="pseudo-game / market instance (JSON, solvopt/games/schema.json)"))
