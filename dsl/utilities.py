"""Standard concave utility forms over bundles of goods, with exact (super)gradients and demands.

Each form holds its parameters as an array whose last axis is the goods, optionally with leading
axes for several consumers at once (one row per buyer of a market): ``Linear(v)`` with ``v`` of
shape (n, m) is n linear utilities. Every method broadcasts over those leading axes, so a market
of 1000 buyers is evaluated in one NumPy call, never a Python loop per buyer.

- ``value(x)``: u(x) for bundles ``x`` of shape (..., m);
- ``gradient(x)``: the exact gradient (a supergradient where u is not differentiable: Leontief at
  ties, Cobb-Douglas on the boundary);
- ``demand(p, budget)``: a utility-maximising bundle over the budget set {x >= 0, p.x <= budget}
  (closed forms; for linear utilities the demand is a set and one maximiser is returned);
- ``indirect(p, budget)``: the maximal utility over that budget set (closed form) — what makes
  market exploitability exact;
- ``homogeneous``: degree-1 homogeneity (what the Eisenberg-Gale program needs).

Gradients are exact; finite differences serve only as a test oracle.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray, real_array


def _params(value: Any, what: str, *, positive: bool = False, some: str | None = None) -> FloatArray:
    """A finite float array of parameters, >= 0 (or > 0), at least 1-D; ``some``: each row needs a positive one."""
    arr = np.atleast_1d(real_array(value, what, allow_inf=True))
    if arr.size == 0:
        raise ModelError(f"{what} is empty")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} contains NaN or infinite values")
    if np.any(arr < 0) or (positive and np.any(arr <= 0)):
        raise ModelError(f"{what} must be {'> 0' if positive else '>= 0'}")
    if some is not None and np.any(arr.sum(axis=-1) <= 0):
        raise ModelError(f"each {some} needs a positive {what.split()[-1].rstrip('s')} for some good")
    return arr


class UtilityForm:
    """Base class of the library's concave utility forms (see the module docstring)."""

    kind: str = ""
    homogeneous: bool = True
    weights: FloatArray

    @property
    def shape(self) -> tuple[int, ...]:
        """(..., m): leading consumer axes and the number of goods."""
        return self.weights.shape

    @property
    def goods(self) -> int:
        return self.shape[-1]

    def value(self, x: npt.ArrayLike) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def gradient(self, x: npt.ArrayLike) -> FloatArray:  # pragma: no cover - abstract
        raise NotImplementedError

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:  # pragma: no cover - abstract
        raise NotImplementedError

    def indirect(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> Any:
        """max u(x) over {x >= 0, p.x <= budget} (closed form unless overridden)."""
        return self.value(self.demand(p, budget))

    def params(self) -> dict[str, Any]:
        """The parameters as plain arrays (instance files, results)."""
        return {"weights": self.weights}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"


def _prices(prices: npt.ArrayLike) -> FloatArray:
    p = np.asarray(prices, dtype=float)
    if np.any(p <= 0):
        raise ModelError("prices must be > 0 for a demand to exist (a free good valued by someone has none)")
    return p


def _budget(budget: npt.ArrayLike) -> FloatArray:
    return np.asarray(budget, dtype=float)[..., None]


class Linear(UtilityForm):
    """u(x) = v . x (perfect substitutes)."""

    kind = "linear"

    def __init__(self, values: npt.ArrayLike):
        self.weights = _params(values, "linear utility values", some="linear utility")

    def value(self, x: npt.ArrayLike) -> Any:
        return np.sum(self.weights * np.asarray(x, dtype=float), axis=-1)

    def gradient(self, x: npt.ArrayLike) -> FloatArray:
        g: FloatArray = np.broadcast_to(self.weights, np.broadcast_shapes(self.weights.shape, np.shape(x))).copy()
        return g

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:
        """Spend the whole budget on the first good of maximal bang per buck v_j / p_j."""
        p = _prices(p)
        ratio = self.weights / p
        best = np.argmax(ratio, axis=-1)
        x = np.zeros(np.broadcast_shapes(ratio.shape, np.shape(budget) + (self.goods,)))
        at = (*np.indices(best.shape), best)
        price = np.broadcast_to(p, ratio.shape)[at]
        x[at] = np.asarray(budget, dtype=float) / price
        return x

    def indirect(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> Any:
        return np.asarray(budget, dtype=float) * np.max(self.weights / _prices(p), axis=-1)


class CobbDouglas(UtilityForm):
    """u(x) = prod_j x_j^{a_j}, a >= 0 with sum_j a_j <= 1 (concave; homogeneous when the sum is 1)."""

    kind = "cobb_douglas"

    def __init__(self, exponents: npt.ArrayLike):
        self.weights = _params(exponents, "Cobb-Douglas exponents")
        total = self.weights.sum(axis=-1)
        if np.any(total <= 0):
            raise ModelError("each Cobb-Douglas utility needs a positive exponent")
        if np.any(total > 1 + 1e-12):
            raise ModelError("Cobb-Douglas exponents summing above 1 give a non-concave utility; "
                             "scale them to sum to at most 1")
        self.homogeneous = bool(np.all(np.abs(total - 1) <= 1e-12))

    def value(self, x: npt.ArrayLike) -> Any:
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore"):
            logs = np.where(self.weights > 0, self.weights * np.log(np.maximum(x, 0.0)), 0.0)
        return np.exp(np.sum(logs, axis=-1))

    def gradient(self, x: npt.ArrayLike) -> FloatArray:
        """a_j u / x_j; on the boundary (some x_j = 0 with a_j > 0) u = 0 and 0 is a supergradient
        only where it is one: there the partials of the positive-exponent goods are +inf."""
        x = np.asarray(x, dtype=float)
        u = self.value(x)[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(self.weights > 0, self.weights * u / x, 0.0)
        return np.where(np.isnan(g), np.inf, g)

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:
        p = _prices(p)
        share = self.weights / self.weights.sum(axis=-1, keepdims=True)
        x: FloatArray = share * _budget(budget) / p
        return x

    def params(self) -> dict[str, Any]:
        return {"exponents": self.weights}


class CES(UtilityForm):
    """u(x) = (sum_j v_j x_j^rho)^(1/rho), rho < 1, rho != 0 (concave, homogeneous of degree 1).

    rho -> 1 is linear, rho -> 0 Cobb-Douglas, rho -> -inf Leontief.
    """

    kind = "ces"

    def __init__(self, values: npt.ArrayLike, rho: float):
        self.weights = _params(values, "CES values", some="CES utility")
        rho = float(real_array(rho, "CES rho", (), allow_inf=True)) if not isinstance(rho, bool) else rho
        if isinstance(rho, bool) or not np.isfinite(rho) or rho >= 1 or rho == 0:
            raise ModelError(f"CES needs rho < 1 and rho != 0 (rho >= 1 is not concave or is linear), got {rho}")
        self.rho = rho

    def _inner(self, x: npt.ArrayLike) -> Any:
        xs = np.maximum(np.asarray(x, dtype=float), 0.0)
        with np.errstate(divide="ignore"):
            powered = np.where(self.weights > 0, self.weights * xs ** self.rho, 0.0)
        return np.sum(powered, axis=-1)

    def value(self, x: npt.ArrayLike) -> Any:
        s = self._inner(x)
        with np.errstate(divide="ignore"):
            return np.where(np.isinf(s), 0.0, s ** (1.0 / self.rho)) if self.rho < 0 else s ** (1.0 / self.rho)

    def gradient(self, x: npt.ArrayLike) -> FloatArray:
        xs = np.maximum(np.asarray(x, dtype=float), 0.0)
        s = self._inner(xs)[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            g = self.weights * xs ** (self.rho - 1) * s ** (1.0 / self.rho - 1)
        return np.where(np.isnan(g), np.inf, g)

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:
        p = _prices(p)
        sigma = 1.0 / (1.0 - self.rho)
        num = self.weights ** sigma * p ** (-sigma)
        spend = self.weights ** sigma * p ** (1 - sigma)
        x: FloatArray = num * _budget(budget) / spend.sum(axis=-1, keepdims=True)
        return x

    def params(self) -> dict[str, Any]:
        return {"values": self.weights, "rho": self.rho}


class Leontief(UtilityForm):
    """u(x) = min over {j : c_j > 0} of x_j / c_j (perfect complements); supergradient e_k / c_k at an argmin k."""

    kind = "leontief"

    def __init__(self, requirements: npt.ArrayLike):
        self.weights = _params(requirements, "Leontief requirements", some="Leontief utility")

    def _ratios(self, x: npt.ArrayLike) -> FloatArray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.weights > 0, np.asarray(x, dtype=float) / self.weights, np.inf)

    def value(self, x: npt.ArrayLike) -> Any:
        return np.min(self._ratios(x), axis=-1)

    def gradient(self, x: npt.ArrayLike) -> FloatArray:
        r = self._ratios(x)
        k = np.argmin(r, axis=-1)
        g = np.zeros(r.shape)
        at = (*np.indices(k.shape), k)
        g[at] = 1.0 / np.broadcast_to(self.weights, r.shape)[at]
        return g

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:
        p = _prices(p)
        x: FloatArray = self.weights * (_budget(budget) / np.sum(self.weights * p, axis=-1, keepdims=True))
        return x

    def params(self) -> dict[str, Any]:
        return {"requirements": self.weights}


class Logarithmic(UtilityForm):
    """u(x) = sum_j v_j log(c_j + x_j) with shifts c > 0 (default 1: log(1 + x)); separable, strictly
    concave where v > 0, not homogeneous. ``shift`` broadcasts against ``values`` (one per consumer
    and good, per good, or one number)."""

    kind = "log"
    homogeneous = False

    def __init__(self, values: npt.ArrayLike, shift: npt.ArrayLike = 1.0):
        self.weights = _params(values, "log utility values")
        c = _params(shift, "log utility shifts", positive=True)
        try:
            self.shift: FloatArray = np.broadcast_to(c, self.weights.shape).copy()
        except ValueError:
            raise ModelError(f"log utility shifts of shape {c.shape} do not fit values of shape "
                             f"{self.weights.shape}") from None
        self._unit = bool(np.all(self.shift == 1.0))

    def value(self, x: npt.ArrayLike) -> Any:
        xp = np.maximum(np.asarray(x, dtype=float), 0.0)
        if self._unit:
            return np.sum(self.weights * np.log1p(xp), axis=-1)
        return np.sum(self.weights * (np.log(self.shift) + np.log1p(xp / self.shift)), axis=-1)

    def gradient(self, x: npt.ArrayLike) -> FloatArray:
        g: FloatArray = self.weights / (self.shift + np.maximum(np.asarray(x, dtype=float), 0.0))
        return g

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:
        """Water filling: x_j = max(0, v_j / (lam p_j) - c_j) with lam fixing p.x = budget (exact, by sorting)."""
        p = np.broadcast_to(_prices(p), np.broadcast_shapes(np.shape(p), self.weights.shape))
        v = np.broadcast_to(self.weights, p.shape)
        c = np.broadcast_to(self.shift, p.shape)
        b = np.broadcast_to(np.asarray(budget, dtype=float), p.shape[:-1])
        ratio = v / (p * c)                             # goods enter in decreasing v_j / (p_j c_j)
        order = np.argsort(-ratio, axis=-1)
        r_sorted = np.take_along_axis(ratio, order, axis=-1)
        v_sorted = np.take_along_axis(v, order, axis=-1)
        pc_sorted = np.take_along_axis(p * c, order, axis=-1)
        # with the first k goods active: 1/lam = (b + sum_{j<k} p_j c_j) / sum_{j<k} v_j; valid while
        # 1/lam > 1/ratio_k
        inv_lam = (b[..., None] + np.cumsum(pc_sorted, axis=-1)) / np.maximum(np.cumsum(v_sorted, axis=-1), 1e-300)
        valid = (r_sorted > 0) & (inv_lam * r_sorted > 1.0)
        k = np.maximum(np.sum(valid, axis=-1) - 1, 0)   # valid is a prefix: the last valid count
        lam_inv = np.take_along_axis(inv_lam, k[..., None], axis=-1)
        x = np.maximum(0.0, v * lam_inv / p - c)
        return np.where(b[..., None] > 0, x, 0.0)

    def params(self) -> dict[str, Any]:
        return {"values": self.weights} if self._unit else {"values": self.weights, "shift": self.shift}


FORMS: dict[str, Callable[..., UtilityForm]] = {
    "linear": Linear, "cobb_douglas": CobbDouglas, "ces": CES, "leontief": Leontief, "log": Logarithmic}


def utility_from_params(kind: str, params: dict[str, Any]) -> UtilityForm:
    """A form from its kind name and parameters (what instance files hold)."""
    cls = FORMS.get(kind)
    if cls is None:
        raise ModelError(f"unknown utility kind {kind!r}; known: {', '.join(FORMS)}")
    if kind == "ces":
        values: Any = params.get("values")
        rho: Any = params.get("rho")
        return CES(values, rho)
    if kind == "log" and set(params) == {"values", "shift"}:
        return Logarithmic(params["values"], params["shift"])
    if len(params) != 1:
        raise ModelError(f"a {kind} utility takes one parameter array, got {sorted(params)}")
    return cls(next(iter(params.values())))
