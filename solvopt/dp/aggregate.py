"""Scenario aggregates of the DP engine, accumulated chunk by chunk with a bounded footprint.

Per row (a final state, or the per-scenario best value) the chunk's count of finite values,
mean and sum of squared deviations are computed with the kernel's array module (NumPy or
CuPy, i.e. where the kernel ran) and merged on the host with the pairwise update of Chan,
Golub and LeVeque, so mean, variance and standard error are exact for any number of
scenarios. Quantiles come from a systematic subsample (every ``stride``-th scenario; the
scenarios are i.i.d., so this is a uniform sample) of at most ``sample_limit`` scenarios:
exact whenever W <= sample_limit.
"""
from __future__ import annotations

import math

import numpy as np


class StreamingStats:
    """Mean / variance / unreachable count per row over scenario chunks, plus a quantile sample."""

    def __init__(self, rows: int, total: int, sample_limit: int):
        self.count = np.zeros(rows)
        self.mean = np.zeros(rows)
        self.m2 = np.zeros(rows)
        self.unreachable = np.zeros(rows, np.int64)
        self.stride = max(1, math.ceil(total / max(1, sample_limit)))
        self._samples: list[np.ndarray] = []

    def add(self, values, start: int, half_sentinel: float, to_host) -> None:
        """Merge a chunk: ``values`` (rows, n) on the kernel's device, scenario indices start..start+n-1."""
        finite = values < half_sentinel
        n_finite = finite.sum(axis=1)
        safe = values.astype(np.float64) * finite          # unreachable entries count as 0 in the sums
        chunk_mean = safe.sum(axis=1) / (n_finite + (n_finite == 0))
        chunk_m2 = (((safe - chunk_mean[:, None]) * finite) ** 2).sum(axis=1)
        n_finite, chunk_mean, chunk_m2 = (np.asarray(to_host(a), dtype=float) for a in (n_finite, chunk_mean, chunk_m2))
        total = self.count + n_finite
        delta = chunk_mean - self.mean
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = np.where(total > 0, n_finite / np.maximum(total, 1), 0.0)
        self.mean += delta * weight
        self.m2 += chunk_m2 + delta ** 2 * self.count * weight
        self.count = total
        self.unreachable += values.shape[1] - n_finite.astype(np.int64)
        first = (-start) % self.stride                     # first local index on the sample grid
        if first < values.shape[1]:
            picked = np.asarray(to_host(values[:, first::self.stride]), dtype=float)
            self._samples.append(np.where(picked >= half_sentinel, np.inf, picked))

    def samples(self, row: int) -> np.ndarray:
        """The sampled values of one row (+inf = unreachable), in scenario order."""
        if not self._samples:
            return np.zeros(0)
        return np.concatenate([s[row] for s in self._samples])

    def row_means(self) -> np.ndarray:
        """Mean per row; +inf where some scenario cannot reach it."""
        return np.where(self.unreachable > 0, np.inf, self.mean)

    def summary(self, row: int, levels) -> dict:
        """Mean, variance, std error, 95% CI over the finite values of a row, quantiles from the sample."""
        n = int(self.count[row])
        out = {"feasible_scenarios": n}
        if n == 0:
            return out
        mean = float(self.mean[row])
        var = float(self.m2[row] / (n - 1)) if n > 1 else 0.0
        se = math.sqrt(var / n)
        sample = self.samples(row)
        sample = sample[np.isfinite(sample)]
        out.update(mean=mean, variance=var, std_error=se, ci95=[mean - 1.96 * se, mean + 1.96 * se])
        if sample.size:
            out["quantiles"] = {f"{q:g}": float(v) for q, v in zip(levels, np.quantile(sample, levels))}
            out["quantile_sample"] = int(sample.size)
        return out
