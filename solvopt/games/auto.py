"""The family default ``auto``: run the model's own default method.

A games model names its default (``PseudoGame.default_method`` is extragradient,
``FisherMarket``'s eisenberg-gale, the Markov models' theirs), and with no method the spine
already routes a model to it (:class:`solvopt.dsl.family.FamilyModel`, and the CLI, which builds
the model before it picks), with every option of that method. ``auto`` is what
``--method auto`` and a model-less lookup of the family default get: it forwards only the
options all games methods share (``tolerance``, ``check_every``). The result names the method
that ran.
"""
from __future__ import annotations

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, get_solver, register

from .static import positive_number
from .tracking import COMMON_HONOURS


@register
class Auto(Solver):
    family = "games"
    name = "auto"
    description = ("the model's default method (pseudo-game: extragradient, gnep-kkt with player-specific rows; "
                   "Fisher: eisenberg-gale; "
                   "Arrow-Debreu: linear-exchange for linear utilities, else tatonnement; "
                   "Markov: gda, markov-tatonnement, affine-gda)")
    default = True
    honours = COMMON_HONOURS
    options = (Option("tolerance", positive_number, None,
                      "stop at this certified exploitability (the method's default: relative to the model's payoff "
                      "scale: a payoff's largest change along one action's range for pseudo-games, the total "
                      "budget for markets)"),
               Option("check_every", int, None, "certify every this many iterations (the method's default)"))

    @classmethod
    def chosen(cls, model) -> type[Solver]:
        method = getattr(model, "default_method", None)
        if method is None:
            raise ModelError(f"{type(model).__name__} is not a games model")
        return get_solver(cls.family, method)

    @classmethod
    def compile(cls, model):
        return cls.chosen(model), cls.chosen(model).compile(model)

    def solve(self, compiled, options):
        solver, inner = compiled
        for opt in solver.options:
            if options.extra.get(opt.name) is None:
                options.extra[opt.name] = opt.default
        result = solver().solve(inner, options)
        result.method = solver.name
        return result
