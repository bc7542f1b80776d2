"""The sparse two-hop graph of the approximation, and the distances it needs.

:class:`Distances` answers the four distance questions of the construction for any input
(points with a kernel metric, points with a callable metric, a cost matrix) without holding
the n x m matrix of a point input: nearest centre of each source, bunches, hub-to-target
distances, distances of given pairs. Point inputs with a named metric run on the kernels of
:mod:`solvopt.transport.kernels_numba` (or their CUDA twins on a GPU, or the NumPy reference).

:class:`TwoHopGraph` is the graph of :mod:`solvopt.transport.approx` (read its docstring for the
construction and the proof). Nodes: sources ``0..n-1``, targets ``n..n+m-1``, then one hub per
centre that some source uses. Arcs, in this order:

- bunch arcs ``a -> b`` for the targets b with d(a, b) < r_a (cost d^p);
- one arc ``a -> hub(c(a))`` per source (cost 3^(p-1) r_a^p);
- every arc ``hub(c) -> b`` (cost (3/2)^(p-1) D(c, b)^p), D = d for points, and for a cost matrix
  D(c, b) = min over the sources a of hub c of (C[a, c] + C[a, b]) (>= d(c, b) when C is a metric,
  and <= r_a + d(a, b) for each such a, which is all the proof asks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvopt.core.backend import Kernels
from solvopt.core.errors import ModelError
from solvopt.core.memory import format_bytes, memory_budget

from . import kernels_numpy
from .stopping import Stopped, poll  # noqa: F401  (Stopped: what the passes raise)

# Distances per kernel call in the passes over all pairs (bunches, counts): between two calls a
# time limit or Ctrl-C is seen (about 0.1 s of work on two cores). Smaller blocks cost CPU time:
# each call is a parallel region (2^23: +15% on the graph's passes at n = 10^4, 2^25: +2%).
PASS_BLOCK_ENTRIES = 1 << 25


# Peak bytes per arc while the approximation solves (measured: 84 at n = 5 x 10^4, 22M arcs,
# 1.84 GB resident; arcs, costs, integer costs, flow and the graph's distances)
BYTES_PER_ARC = 90

# the distance kernels, three times with one signature (see solvopt.transport.kernels_numpy)
KERNELS = Kernels(numpy="solvopt.transport.kernels_numpy", numba="solvopt.transport.kernels_numba",
                  cuda="solvopt.gpu.transport")


def kernel_module(name: str):
    """The kernel set ``numpy`` (reference), ``numba`` or ``cuda`` (the CuPy twin)."""
    return KERNELS.load(name)


class Distances:
    """The distances of one Transport model, one question at a time (see the module docstring)."""

    def __init__(self, model, kernels: str = "numba"):
        self.model = model
        self.on_points = model.cost is None
        self.code = None
        self.kernels = "model"          # who computes distances: numpy / numba / cuda kernels, or the model
        if self.on_points and not callable(model.metric):
            self.code = kernels_numpy.metric_code(model.metric)
            self.k = kernel_module(kernels)
            self.kernels = kernels

    def warm_up(self) -> None:
        """Load every Numba kernel's compiled code (from its cache, or compile it) without running it.

        Numba does this at a kernel's first call, a second or more the first time in a process,
        holding the GIL. Called through :func:`~solvopt.transport.stopping.run_abandonable`, a
        stop during it is still seen within 50 ms. Nothing runs here: a parallel kernel run from
        this thread would start a second thread pool."""
        if self.code is None or self.kernels != "numba":
            return
        from numba import typeof
        x, y = self.model.x[:1], self.model.y[:1]
        ints, floats, matrix = np.zeros(2, dtype=np.int64), np.zeros(2), np.zeros((1, 1))
        calls = {"distances": (x, y, self.code, matrix), "pair_distances": (x, y, ints, ints, self.code, floats),
                 "nearest": (x, y, self.code, ints, floats), "bunch_counts": (x, y, floats, self.code, ints),
                 "bunch_fill": (x, y, floats, self.code, ints, ints, floats)}
        for name, args in calls.items():
            kernel = getattr(self.k, name)
            if hasattr(kernel, "compile"):
                kernel.compile(tuple(typeof(arg) for arg in args))

    def nearest_centre(self, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each source: the index into ``centres`` (target indices) of its nearest one, and the distance."""
        n = self.model.n
        index, dist = np.empty(n, dtype=np.int64), np.empty(n)
        if self.code is not None:
            self.k.nearest(self.model.x, np.ascontiguousarray(self.model.y[centres]), self.code, index, dist)
            return index, dist
        for rows in kernels_numpy.row_blocks(n, len(centres)):
            block = self.model.distance_block(rows, centres)
            index[rows] = np.argmin(block, axis=1)
            dist[rows] = block[np.arange(block.shape[0]), index[rows]]
        return index, dist

    def _pass_blocks(self):
        """Row slices for one pass over all pairs: blocks of about PASS_BLOCK_ENTRIES distances
        (one block on a GPU, whose kernels are fast and copy the targets at every call)."""
        n, m = self.model.n, self.model.m
        step = n if self.kernels == "cuda" else max(1, PASS_BLOCK_ENTRIES // max(m, 1))
        return [slice(start, min(start + step, n)) for start in range(0, n, step)]

    def count_within(self, radius: np.ndarray, stop=None) -> int:
        """How many (source, target) pairs have d(a, b) < radius[a] (one pass, nothing stored).

        ``stop``: polled between blocks; raises :class:`Stopped` when it returns true."""
        if self.code is not None:
            counts = np.empty(self.model.n, dtype=np.int64)
            for rows in self._pass_blocks():
                poll(stop)
                self.k.bunch_counts(self.model.x[rows], self.model.y, radius[rows], self.code, counts[rows])
            return int(counts.sum())
        total = 0
        for rows in kernels_numpy.row_blocks(self.model.n, self.model.m):
            poll(stop)
            total += int(np.count_nonzero(self.model.distance_block(rows) < radius[rows, None]))
        return total

    def bunches(self, radius: np.ndarray, before_fill=None, stop=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR (indptr, target indices, distances) of the targets strictly closer to a than radius[a].

        ``before_fill(total)``, when given, sees the number of entries before they are stored (with
        the kernels; it may raise to refuse them). ``stop``: polled between blocks of rows; raises
        :class:`Stopped` when it returns true."""
        n, m = self.model.n, self.model.m
        counts = np.empty(n, dtype=np.int64)
        if self.code is not None:
            blocks = self._pass_blocks()
            x, y = self.model.x, self.model.y
            for rows in blocks:
                poll(stop)
                self.k.bunch_counts(x[rows], y, radius[rows], self.code, counts[rows])
            indptr = np.concatenate(([0], np.cumsum(counts)))
            if before_fill is not None:
                before_fill(int(indptr[-1]))
            cols, dist = np.empty(indptr[-1], dtype=np.int64), np.empty(indptr[-1])
            for rows in blocks:
                poll(stop)
                lo, hi = indptr[rows.start], indptr[rows.stop]
                self.k.bunch_fill(x[rows], y, radius[rows], self.code, indptr[rows.start:rows.stop + 1] - lo,
                                  cols[lo:hi], dist[lo:hi])
            return indptr, cols, dist
        col_parts, dist_parts = [], []
        for rows in kernels_numpy.row_blocks(n, m):
            poll(stop)
            block = self.model.distance_block(rows)
            inside = block < radius[rows, None]
            counts[rows] = inside.sum(axis=1)
            col_parts.append(np.nonzero(inside)[1])
            dist_parts.append(block[inside])
        indptr = np.concatenate(([0], np.cumsum(counts)))
        return indptr, np.concatenate(col_parts).astype(np.int64), np.concatenate(dist_parts)

    def hub_distances(self, centres: np.ndarray, members: list[np.ndarray]) -> np.ndarray:
        """(len(centres), m): D(c, b) from each centre (a target) to every target (see module docstring).

        ``members[h]``: the sources whose nearest centre is ``centres[h]`` (used for a cost matrix)."""
        model = self.model
        out = np.empty((len(centres), model.m))
        if self.code is not None:
            self.k.distances(np.ascontiguousarray(model.y[centres]), model.y, self.code, out)
        elif self.on_points:
            for rows in kernels_numpy.row_blocks(len(centres), model.m):
                out[rows] = model.callable_block(model.y[centres[rows]], model.y)
        else:
            for h, (c, sources) in enumerate(zip(centres, members)):
                best = np.full(model.m, np.inf)
                for part in kernels_numpy.row_blocks(len(sources), model.m):
                    rows = sources[part]
                    np.minimum(best, (model.cost[rows, c][:, None] + model.cost[rows]).min(axis=0), out=best)
                out[h] = best
        return out

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """d(i[k], j[k]) for source/target index arrays."""
        if self.code is not None:
            out = np.empty(len(i))
            self.k.pair_distances(self.model.x, self.model.y, np.asarray(i, dtype=np.int64),
                                  np.asarray(j, dtype=np.int64), self.code, out)
            return out
        return self.model.pair_distances(i, j)


@dataclass
class TwoHopGraph:
    """The two-hop graph (module docstring): its labels, and its arcs as flat arrays."""

    n: int
    m: int
    centres: np.ndarray          # target index of each hub (only centres some source uses)
    hub_of: np.ndarray           # (n,) hub of each source
    radius: np.ndarray           # (n,) r_a = d(a, its centre)
    bunch_indptr: np.ndarray     # CSR over sources of the bunch targets
    bunch_cols: np.ndarray
    bunch_dist: np.ndarray
    hub_dist: np.ndarray         # (hubs, m) D(c, b)

    @property
    def n_hubs(self) -> int:
        return len(self.centres)

    @property
    def n_nodes(self) -> int:
        return self.n + self.m + self.n_hubs

    @property
    def n_arcs(self) -> int:
        return len(self.bunch_cols) + self.n + self.hub_dist.size

    def arc_ends(self) -> tuple[np.ndarray, np.ndarray]:
        """(tails, heads) of every arc, in the order of the module docstring."""
        n, m, hubs = self.n, self.m, self.n_hubs
        bunch_tails = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.bunch_indptr))
        tails = np.concatenate([bunch_tails, np.arange(n, dtype=np.int64),
                                np.repeat(np.arange(hubs, dtype=np.int64) + n + m, m)])
        heads = np.concatenate([self.bunch_cols + n, self.hub_of + n + m,
                                np.tile(np.arange(m, dtype=np.int64) + n, hubs)])
        return tails, heads

    def arc_lengths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distances behind the three arc kinds: bunch d(a, b), r_a, D(c, b) (flattened)."""
        return self.bunch_dist, self.radius, self.hub_dist.ravel()

    def effective_lengths(self, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The lengths whose p-th powers are the arc costs: d, 3^((p-1)/p) r_a, (3/2)^((p-1)/p) D
        (the constants under the root: no 3^(p-1) to overflow for large p)."""
        bunch, radius, hub = self.arc_lengths()
        return bunch, radius * 3.0 ** ((p - 1) / p), hub * 1.5 ** ((p - 1) / p)

    def arc_costs(self, p: float, scale: float) -> np.ndarray:
        """Arc costs for W_p in units of ``scale``^p: (d / scale)^p, 3^(p-1) (r / scale)^p,
        (3/2)^(p-1) (D / scale)^p, each computed as (effective length / scale)^p. With ``scale`` the
        largest effective length every cost is in [0, 1]: nothing overflows for any p; costs that
        underflow to 0 are below 1e-308 of the largest (they only lower the flow's cost, which
        keeps its lower bound valid)."""
        with np.errstate(under="ignore"):
            return np.concatenate([(length / scale) ** p for length in self.effective_lengths(p)])

    def arc_thresholds(self) -> np.ndarray:
        """For p = inf: the smallest threshold t at which each arc is usable (d, r_a, D / 2)."""
        bunch, radius, hub = self.arc_lengths()
        return np.concatenate([bunch, radius, hub / 2.0])

    def supplies(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, -b, np.zeros(self.n_hubs)])

    def split_flow(self, flow: np.ndarray):
        """The flow's parts: (bunch plan entries as (rows, cols, mass), per-source mass into its hub,
        (hubs, m) hub-to-target masses)."""
        nb = len(self.bunch_cols)
        rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.bunch_indptr))
        direct = flow[:nb]
        into_hub = flow[nb:nb + self.n]
        out_of_hub = flow[nb + self.n:].reshape(self.n_hubs, self.m)
        keep = direct > 0
        return (rows[keep], self.bunch_cols[keep], direct[keep]), into_hub, out_of_hub


def build_two_hop(distances: Distances, n_centres: int, rng: np.random.Generator, stop=None) -> TwoHopGraph:
    """The two-hop graph with ``n_centres`` centres drawn uniformly without replacement from the targets.

    ``stop``: polled between blocks of the passes over the distances; raises :class:`Stopped`."""
    model = distances.model
    n_centres = int(min(max(n_centres, 1), model.m))
    drawn = np.sort(rng.choice(model.m, size=n_centres, replace=False)).astype(np.int64)
    nearest, radius = distances.nearest_centre(drawn)
    used, hub_of = np.unique(nearest, return_inverse=True)    # hubs: the centres some source uses
    centres = drawn[used]
    order = np.argsort(hub_of, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(hub_of, minlength=len(centres)))[:-1])
    poll(stop)
    indptr, cols, dist = distances.bunches(
        radius, before_fill=lambda bunch_arcs: _check_memory(bunch_arcs + model.n + len(centres) * model.m),
        stop=stop)
    poll(stop)
    hub_dist = distances.hub_distances(centres, members)
    return TwoHopGraph(model.n, model.m, centres, hub_of.astype(np.int64), radius, indptr, cols, dist, hub_dist)


def _check_memory(arcs: int) -> None:
    """ModelError before allocating a graph that cannot fit in half the machine's memory."""
    need = arcs * BYTES_PER_ARC
    budget = memory_budget(0.5)
    if need > budget:
        raise ModelError(f"approx would build a graph of {arcs:,} arcs (about {format_bytes(need)} while solving), "
                         f"more than half this machine's memory ({format_bytes(budget)}); about 2 n^1.5 arcs "
                         "for n = m points: use fewer points")


def default_centres(n: int, m: int) -> int:
    """sqrt(n) centres: bunches of about m / sqrt(n) targets per source and sqrt(n) * m hub arcs,
    about 2 n^(3/2) arcs in all for n = m (the balance of the two)."""
    return max(1, min(m, int(round(math.sqrt(n)))))
