"""The grid-hierarchy graph of the approximation: O((n + m) log) arcs for points in low dimension.

Construction
------------
Points with a named metric (a norm: euclidean, cityblock, chebyshev) in dimension d. Let s_0
exceed the extent of all the points in every coordinate, shift the grid by a random vector in
[0, s_0)^d, and for l = 0, 1, 2, ... take the grid of cubic cells of side s_l = s_0 / 2^l. Two
cells are *neighbours* when their integer indices differ by at most 1 in every coordinate (a
cell is its own neighbour); two points whose coordinates differ by less than s_l in every axis
lie in neighbouring cells. At level l a source a is *active* when a target at another position
lies in a neighbour of its cell (likewise a target); the levels stop at the first one with no
active point (all positions separated). Each cell C of a level gets an *in* hub when it holds an
active source and an *out* hub when it holds an active target, both at its centre c_C. Arcs:

    a -> in(C)        C the cell of a, a active at the level,    cost 4^(p-1) d(a, c_C)^p
    in(A) -> out(B)   B a neighbour of A,                         cost 2^(p-1) d(c_A, c_B)^p
    out(B) -> b       B the cell of b, b active at the level,     cost 4^(p-1) d(c_B, b)^p

and one more "level" for sources and targets at the same position (one in and one out hub per
such position, every arc of cost 0). Every path from a source to a target has exactly three arcs.

Proof of the factor F = 4 kappa (kappa = the norm of (1, ..., 1): sqrt(d) euclidean, d
cityblock, 1 chebyshev) for W_p, 1 <= p < inf
-----------------------------------------------------------------------------------
Lemma A (convexity). For x, y, z >= 0: (x + y + z)^p <= 4^(p-1) x^p + 2^(p-1) y^p + 4^(p-1) z^p
(Jensen for t -> t^p with weights 1/4, 1/2, 1/4 on 4x, 2y, 4z).

Lemma B (flow -> plan, no dearer). Decompose a min-cost flow into paths a -> in(A) -> out(B) -> b
(a north-west pairing at every hub). By the triangle inequality d(a, b) <= d(a, c_A) +
d(c_A, c_B) + d(c_B, b), so by Lemma A the pair's cost d(a, b)^p is at most its path's.

Lemma C (optimum -> flow, at most F^p dearer). Route each pair (a, b) of an optimal plan: at
the position level when a = b (cost 0); else at the finest level l at which b's cell is a
neighbour of a's (level 0 always qualifies; a and b are active there, so the three arcs exist).
At level l + 1 they are not neighbours (or that level has no active point, so again not), hence
|a - b|_inf >= s_(l+1) = s_l / 2, and s_l <= 2 |a - b|_inf <= 2 d(a, b). The cell's centre is
within kappa s_l / 2 of each of its points and neighbouring centres are within kappa s_l, so
with x = d(a, c_A) <= kappa s/2, y = d(c_A, c_B) <= kappa s, z = d(c_B, b) <= kappa s/2 the
path costs 4^(p-1) x^p + 2^(p-1) y^p + 4^(p-1) z^p <= (1/4 (2 kappa s)^p) 2 + 1/2 (2 kappa s)^p
= (2 kappa s)^p <= (4 kappa d(a, b))^p.

Hence the plan P of the flow F has cost(P) <= cost(F) <= F^p OPT: W_p(P) <= F W_p, and
W_p >= cost(F)^(1/p) / F is a certified bound. F = 5.66 (d = 2), 6.93 (d = 3) euclidean.

Size: a point is active at a level only when another point lies within 2 s_l of it in every
axis, so a point meets O(log(its spread)) levels; a level has at most 3^d arcs per in hub. About
(3^d + 2) x 10 arcs per point on uniform points (measured: see the transport benchmark).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .quick import north_west, sorted_unique
from .stopping import poll

# Levels after which the construction gives up (float64 positions separate long before).
MAX_LEVELS = 2200
# A side leaves the hierarchy, with direct arcs to its partners, once at most this many are near it.
LEAF_PARTNERS = 64
# Largest key range of a level's cells encoded in one int64.
KEY_LIMIT = 1 << 62
METRIC_KAPPA = {"euclidean": lambda d: math.sqrt(d), "cityblock": lambda d: float(d), "chebyshev": lambda d: 1.0}


def supported(model) -> bool:
    """Whether the grid hierarchy applies: points with a named metric (a norm)."""
    return model.cost is None and isinstance(model.metric, str) and model.metric in METRIC_KAPPA


def factor(metric: str, dim: int) -> float:
    """The proven factor 4 kappa on W_p (module docstring)."""
    return 4.0 * METRIC_KAPPA[metric](dim)


def _norm(diff: np.ndarray, metric: str) -> np.ndarray:
    if metric == "euclidean":
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))
    if metric == "cityblock":
        return np.abs(diff).sum(axis=1)
    return np.abs(diff).max(axis=1)


@dataclass
class GridGraph:
    """The grid-hierarchy graph: nodes sources 0..n-1, targets n..n+m-1, in hubs, then out hubs;
    arcs in three groups (source -> in, in -> out, out -> target) with their lengths."""

    n: int
    m: int
    n_in: int
    n_out: int
    dir_src: np.ndarray      # direct arcs source -> target: source index, target index, length
    dir_tgt: np.ndarray
    dir_len: np.ndarray
    src: np.ndarray          # source -> in arcs: source index, in hub index, length
    src_hub: np.ndarray
    src_len: np.ndarray
    mid_in: np.ndarray       # in -> out arcs
    mid_out: np.ndarray
    mid_len: np.ndarray
    tgt_hub: np.ndarray      # out -> target arcs: out hub index, target index, length
    tgt: np.ndarray
    tgt_len: np.ndarray
    levels: int
    factor: float

    @property
    def n_hubs(self) -> int:
        return self.n_in + self.n_out

    @property
    def n_nodes(self) -> int:
        return self.n + self.m + self.n_in + self.n_out

    @property
    def n_arcs(self) -> int:
        return len(self.dir_src) + len(self.src) + len(self.mid_in) + len(self.tgt)

    def _split(self, flow):
        """The flow on the four arc groups: direct, source -> in, in -> out, out -> target."""
        k0 = len(self.dir_src)
        k1 = k0 + len(self.src)
        k2 = k1 + len(self.mid_in)
        return flow[:k0], flow[k0:k1], flow[k1:k2], flow[k2:]

    def arc_ends(self) -> tuple[np.ndarray, np.ndarray]:
        base_in, base_out = self.n + self.m, self.n + self.m + self.n_in
        tails = np.concatenate([self.dir_src, self.src, self.mid_in + base_in, self.tgt_hub + base_out])
        heads = np.concatenate([self.dir_tgt + self.n, self.src_hub + base_in, self.mid_out + base_out,
                                self.tgt + self.n])
        return tails, heads

    def effective_lengths(self, p: float):
        """Lengths whose p-th powers are the arc costs (the weights 4^(p-1), 2^(p-1) under the root)."""
        return (self.dir_len, self.src_len * 4.0 ** ((p - 1) / p), self.mid_len * 2.0 ** ((p - 1) / p),
                self.tgt_len * 4.0 ** ((p - 1) / p))

    def arc_costs(self, p: float, scale: float) -> np.ndarray:
        with np.errstate(under="ignore"):
            return np.concatenate([(length / scale) ** p for length in self.effective_lengths(p)])

    def supplies(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, -b, np.zeros(self.n_in + self.n_out)])

    def _paths(self, flow: np.ndarray):
        """Lemma B's decomposition of the hub paths: (source, out hub, mass) pieces, then
        (source, target, mass)."""
        _, f_src, f_mid, f_tgt = self._split(flow)
        s = f_src > 0
        m_ = f_mid > 0
        # at each in hub: the sources arriving against the out hubs leaving
        piece_src, piece_out, piece_mass = _grouped_north_west(
            self.src_hub[s], self.src[s], f_src[s], self.mid_in[m_], self.mid_out[m_], f_mid[m_])
        t = f_tgt > 0
        # at each out hub: the (source) pieces arriving against the targets leaving
        return _grouped_north_west(piece_out, piece_src, piece_mass, self.tgt_hub[t], self.tgt[t], f_tgt[t])

    def pairing(self, flow: np.ndarray):
        """Lemma B's plan as (rows, cols, mass), duplicates merged."""
        f_dir = self._split(flow)[0]
        d = f_dir > 0
        rows, cols, mass = self._paths(flow)
        rows = np.concatenate([self.dir_src[d], rows])
        cols = np.concatenate([self.dir_tgt[d], cols])
        mass = np.concatenate([f_dir[d], mass])
        key, inverse = np.unique(rows * self.m + cols, return_inverse=True)
        return key // self.m, key % self.m, np.bincount(inverse, weights=mass)

    def candidates(self, flow: np.ndarray, rows, cols, per_hub: int):
        """Candidate pairs for the exact re-solve: the pairing's pairs and, at each out hub with
        few enough of them, every source routed through it x every target it serves."""
        _, f_src, f_mid, f_tgt = self._split(flow)
        s, m_, t = f_src > 0, f_mid > 0, f_tgt > 0
        p_src, p_out, _ = _grouped_north_west(self.src_hub[s], self.src[s], f_src[s],
                                              self.mid_in[m_], self.mid_out[m_], f_mid[m_])
        parts_r, parts_c = [np.asarray(rows, dtype=np.int64)], [np.asarray(cols, dtype=np.int64)]
        hub_src = sorted_unique(p_out * self.n + p_src)
        hs, ss = hub_src // self.n, hub_src % self.n
        order = np.argsort(self.tgt_hub[t], kind="stable")
        th, tt = self.tgt_hub[t][order], self.tgt[t][order]
        # per out hub: number of sources x number of targets
        n_s = np.bincount(hs, minlength=self.n_out)
        n_t = np.bincount(th, minlength=self.n_out)
        small = n_s * n_t <= per_hub * (n_s + n_t)
        keep_s = small[hs]
        hs, ss = hs[keep_s], ss[keep_s]
        t_start = np.concatenate(([0], np.cumsum(n_t)))
        # every (source of hub h) x (target of hub h): repeat each source by its hub's target count
        reps = n_t[hs]
        r = np.repeat(ss, reps)
        offs = np.arange(len(r)) - np.repeat(np.cumsum(reps) - reps, reps)
        c = tt[np.repeat(t_start[hs], reps) + offs]
        parts_r.append(r)
        parts_c.append(c)
        key = sorted_unique(np.concatenate(parts_r) * self.m + np.concatenate(parts_c))
        return key // self.m, key % self.m


def _grouped_north_west(in_group, in_item, in_mass, out_group, out_item, out_mass):
    """The north-west corner pairing at every group (hub) at once: the mass arriving (items of
    in_item, grouped by in_group) against the mass leaving. Returns (in item, out item, mass) per
    piece. Groups are laid end to end on one line (their totals agree up to float drift: a piece
    may straddle two groups by that drift; the masses stay exact per item): :func:`north_west` on
    the items sorted by group."""
    if len(in_mass) == 0 or len(out_mass) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    oi = np.argsort(in_group, kind="stable")
    oo = np.argsort(out_group, kind="stable")
    return north_west(in_item[oi], in_mass[oi], out_item[oo], out_mass[oo])


def _offsets(dim: int) -> np.ndarray:
    grids = np.meshgrid(*([np.array([-1, 0, 1])] * dim), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)


def _cell_keys(idx: np.ndarray, offsets: np.ndarray):
    """int64 keys of the cells ``idx`` (k, d) and the key shift of each offset, or None when the
    range does not fit (then the caller ranks the indices per axis first)."""
    low = idx.min(axis=0) - 1
    span = idx.max(axis=0) - low + 2
    if float(np.prod(span.astype(np.float64))) >= KEY_LIMIT:
        return None
    stride = np.ones(idx.shape[1], dtype=np.int64)
    for axis in range(idx.shape[1] - 2, -1, -1):
        stride[axis] = stride[axis + 1] * span[axis + 1]
    return (idx - low) @ stride, offsets @ stride


def _ranked(idx: np.ndarray) -> np.ndarray:
    """Per axis, replace the indices by ranks among {idx - 1, idx, idx + 1}, keeping +-1 steps
    (two ranks are 1 apart exactly when their indices are): a smaller range, same neighbours."""
    out = np.empty_like(idx)
    for axis in range(idx.shape[1]):
        values = sorted_unique(np.concatenate([idx[:, axis] - 1, idx[:, axis], idx[:, axis] + 1]))
        # ranks that also keep gaps of more than one index apart: add 1 per gap
        gaps = np.concatenate(([0], np.cumsum(np.diff(values) > 1)))
        rank = np.arange(len(values)) + gaps
        out[:, axis] = rank[np.searchsorted(values, idx[:, axis])]
    return out


def _csr(groups: np.ndarray, n_groups: int, values: np.ndarray):
    """(start, items): the values sorted by group, with group g at items[start[g]:start[g + 1]]."""
    order = np.argsort(groups, kind="stable")
    start = np.concatenate(([0], np.cumsum(np.bincount(groups, minlength=n_groups))))
    return start, values[order]


@njit(cache=True, nogil=True)
def _site_pairs(leaf_sites, leaf_cells, nb_start, nb_items, o_start, o_sites, mine_start, mine_items,
                their_start, their_items, key_mine, key_their, out, at):
    """Every (point of a leaf site, point of a partner site in a neighbouring cell) pair as the
    key mine * key_mine + theirs * key_their, written to out from index ``at`` on; an empty
    ``out``: only counted. Returns the index after the last pair."""
    k = at
    fill = out.shape[0] > 0
    for q in range(leaf_sites.shape[0]):
        site = leaf_sites[q]
        cell = leaf_cells[q]
        n_mine = mine_start[site + 1] - mine_start[site]
        for e in range(nb_start[cell], nb_start[cell + 1]):
            near = nb_items[e]
            for f in range(o_start[near], o_start[near + 1]):
                other = o_sites[f]
                if fill:
                    for i in range(mine_start[site], mine_start[site + 1]):
                        base = mine_items[i] * key_mine
                        for j in range(their_start[other], their_start[other + 1]):
                            out[k] = base + their_items[j] * key_their
                            k += 1
                else:
                    k += n_mine * (their_start[other + 1] - their_start[other])
    return k


def _leaf_pairs(active, cell_of, pa, pb, src_leaf, tgt_on, tgt_leaf, src_on, members_s, members_t, m: int):
    """Direct (source, target) point pairs of the sides that stop at this level, as keys
    source * m + target: a stopping source meets every target in its cell's neighbourhood, a
    stopping target every source. One pass counts them, a second writes them."""
    n_cells = int(cell_of.max()) + 1
    nb_start, nb_items = _csr(pa, n_cells, pb)
    calls = []
    for leaf, other, leaf_is_source in ((src_leaf, tgt_on, True), (tgt_leaf, src_on, False)):
        if leaf.any():
            o_start, o_sites = _csr(cell_of[other], n_cells, active[other])
            mine, theirs = (members_s, members_t) if leaf_is_source else (members_t, members_s)
            scale = (m, 1) if leaf_is_source else (1, m)
            calls.append((active[leaf], cell_of[leaf], nb_start, nb_items, o_start, o_sites, *mine, *theirs, *scale))
    count = 0
    for args in calls:
        count = _site_pairs(*args, np.zeros(0, np.int64), count)  # type: ignore[call-arg]  # a Numba kernel
    keys = np.empty(count, np.int64)
    at = 0
    for args in calls:
        at = _site_pairs(*args, keys, at)  # type: ignore[call-arg]  # a Numba kernel
    return keys


def build_grid(model, rng: np.random.Generator, leaf: int = LEAF_PARTNERS, stop=None) -> GridGraph:
    """The grid-hierarchy graph of a point model (module docstring): a side leaves the hierarchy
    with direct arcs once at most ``leaf`` partners are near it. ``stop``: polled per level."""
    metric = model.metric
    rows = np.flatnonzero(model.a > 0)
    cols = np.flatnonzero(model.b > 0)
    pts = np.concatenate([model.x[rows], model.y[cols]])
    dim = pts.shape[1]
    n_s = len(rows)
    sites, site_of = np.unique(pts, axis=0, return_inverse=True)
    site_of = site_of.reshape(-1)
    n_sites = len(sites)
    has_s = np.zeros(n_sites, dtype=bool)
    has_t = np.zeros(n_sites, dtype=bool)
    has_s[site_of[:n_s]] = True
    has_t[site_of[n_s:]] = True
    # points of each site (CSR): sources first, then targets, within a site
    order = np.argsort(site_of, kind="stable")
    site_start = np.concatenate(([0], np.cumsum(np.bincount(site_of, minlength=n_sites))))
    offsets = _offsets(dim)
    low = sites.min(axis=0)
    extent = float((sites.max(axis=0) - low).max())
    s0 = max(extent, np.finfo(float).tiny) * (1 + 1e-6) + np.finfo(float).tiny
    origin = low - rng.uniform(0.0, s0, size=dim)
    src_parts, mid_parts, tgt_parts, dir_parts = [], [], [], []
    n_in = n_out = 0
    # model indices of the source / target points of each site
    members_s = _csr(site_of[:n_s], n_sites, rows.astype(np.int64))
    members_t = _csr(site_of[n_s:], n_sites, cols.astype(np.int64))

    def add_hubs(point_site_cell, cell_centre, active_sites, hub_index, is_source):
        """Arcs between the points of ``active_sites`` and the hub of their cell."""
        counts = site_start[active_sites + 1] - site_start[active_sites]
        members = order[np.repeat(site_start[active_sites], counts)
                        + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)]
        hub = np.repeat(hub_index[point_site_cell], counts)
        side = members < n_s if is_source else members >= n_s
        members, hub = members[side], hub[side]
        centre = np.repeat(cell_centre[point_site_cell], counts, axis=0)[side]
        length = _norm(pts[members] - centre, metric)
        index = rows[members] if is_source else cols[members - n_s]
        return index.astype(np.int64), hub.astype(np.int64), length

    # per site and side: still in the hierarchy (a side leaves it when it stops or has no partner)
    act_s, act_t = has_s.copy(), has_t.copy()
    n_spts = np.bincount(site_of[:n_s], minlength=n_sites).astype(np.float64)
    n_tpts = np.bincount(site_of[n_s:], minlength=n_sites).astype(np.float64)
    active = np.arange(n_sites)
    level = 0
    while len(active) and level < MAX_LEVELS:
        poll(stop)
        side = s0 / 2.0 ** level
        idx = np.floor((sites[active] - origin) / side).astype(np.int64)
        keyed = _cell_keys(idx, offsets)
        if keyed is None:
            keyed = _cell_keys(_ranked(idx), offsets)
            if keyed is None:
                raise NotImplementedError("the grid hierarchy's cells at this level do not fit int64 keys")
        keys, shifts = keyed
        cells, first, cell_of = np.unique(keys, return_index=True, return_inverse=True)
        cell_of = cell_of.reshape(-1)
        a_s, a_t = act_s[active], act_t[active]
        # other-side points in each cell, then in its neighbourhood
        ts = np.bincount(cell_of, weights=n_tpts[active] * a_t, minlength=len(cells))
        ss = np.bincount(cell_of, weights=n_spts[active] * a_s, minlength=len(cells))
        near_t, near_s = np.zeros(len(cells)), np.zeros(len(cells))
        pair_a, pair_b = [], []
        for shift in shifts:
            pos = np.minimum(np.searchsorted(cells, cells + shift), len(cells) - 1)
            found = cells[pos] == cells + shift
            near_t[found] += ts[pos[found]]
            near_s[found] += ss[pos[found]]
            pair_a.append(np.flatnonzero(found))
            pair_b.append(pos[found])
        pa, pb = np.concatenate(pair_a), np.concatenate(pair_b)
        poll(stop)
        partners_s = near_t[cell_of] - n_tpts[active] * a_t       # targets near a source, at other positions
        partners_t = near_s[cell_of] - n_spts[active] * a_s
        src_on = a_s & (partners_s > 0)
        tgt_on = a_t & (partners_t > 0)
        if not (src_on.any() and tgt_on.any()):
            break
        src_leaf = src_on & (partners_s <= leaf)
        tgt_leaf = tgt_on & (partners_t <= leaf)
        if src_leaf.any() or tgt_leaf.any():
            dir_parts.append(_leaf_pairs(active, cell_of, pa, pb, src_leaf, tgt_on, tgt_leaf, src_on,
                                         members_s, members_t, model.m))
        poll(stop)
        src_hub_on = src_on & ~src_leaf
        tgt_hub_on = tgt_on & ~tgt_leaf
        if src_hub_on.any() and tgt_hub_on.any():
            in_cell = np.zeros(len(cells), dtype=bool)
            out_cell = np.zeros(len(cells), dtype=bool)
            in_cell[cell_of[src_hub_on]] = True
            out_cell[cell_of[tgt_hub_on]] = True
            in_index = np.cumsum(in_cell) - 1 + n_in
            out_index = np.cumsum(out_cell) - 1 + n_out
            centre = origin + (idx[first] + 0.5) * side
            use = in_cell[pa] & out_cell[pb]
            ua, ub = pa[use], pb[use]
            mid_parts.append((in_index[ua], out_index[ub], _norm(centre[ua] - centre[ub], metric)))
            src_parts.append(add_hubs(cell_of[src_hub_on], centre, active[src_hub_on], in_index, True))
            tgt_parts.append(add_hubs(cell_of[tgt_hub_on], centre, active[tgt_hub_on], out_index, False))
            n_in += int(in_cell.sum())
            n_out += int(out_cell.sum())
        else:
            src_hub_on[:] = False
            tgt_hub_on[:] = False
        act_s[active] = src_hub_on
        act_t[active] = tgt_hub_on
        active = active[src_hub_on | tgt_hub_on]
        level += 1
    if len(active) and level >= MAX_LEVELS:
        raise NotImplementedError("the grid hierarchy did not separate the points")
    # the position level: sources and targets at one position, through a hub pair of cost 0
    both = np.flatnonzero(has_s & has_t)
    if len(both):
        cell_of = np.arange(len(both))
        in_index = np.arange(len(both)) + n_in
        out_index = np.arange(len(both)) + n_out
        mid_parts.append((in_index, out_index, np.zeros(len(both))))
        src_parts.append(add_hubs(cell_of, sites[both], both, in_index, True))
        tgt_parts.append(add_hubs(cell_of, sites[both], both, out_index, False))
        n_in += len(both)
        n_out += len(both)
    if dir_parts:
        key = np.concatenate(dir_parts) if len(dir_parts) > 1 else dir_parts[0]
        del dir_parts
        key.sort()                             # in place (the pairs are the graph's largest array)
        if len(key) > 1:
            fresh = np.empty(len(key), dtype=bool)
            fresh[0] = True
            np.not_equal(key[1:], key[:-1], out=fresh[1:])
            key = key[fresh]
        dir_src, dir_tgt = key // model.m, key % model.m
    else:
        dir_src = dir_tgt = np.zeros(0, dtype=np.int64)
    dir_len = _norm(model.x[dir_src] - model.y[dir_tgt], metric) if len(dir_src) else np.zeros(0)
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    src_parts, mid_parts, tgt_parts = src_parts or [empty], mid_parts or [empty], tgt_parts or [empty]
    src, src_hub, src_len = (np.concatenate(x) for x in zip(*src_parts))
    mid_in, mid_out, mid_len = (np.concatenate(x) for x in zip(*mid_parts))
    tgt, tgt_hub, tgt_len = (np.concatenate(x) for x in zip(*tgt_parts))
    return GridGraph(model.n, model.m, n_in, n_out, dir_src, dir_tgt, dir_len, src, src_hub, src_len,
                     mid_in, mid_out, mid_len, tgt_hub, tgt, tgt_len, level, factor(metric, dim))
