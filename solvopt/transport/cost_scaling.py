"""Cost-scaling push-relabel min-cost flow in Numba: the ``"costscaling"`` engine of
:func:`solvopt.transport.flow.min_cost_flow`, for uncapacitated arcs of integer cost >= 0 and
integer supplies.

Goldberg's cost scaling (Goldberg 1997, "An efficient implementation of a scaling minimum-cost
flow algorithm", the algorithm of CS2 and LEMON's ``CostScaling``). Node prices p give a residual
arc v -> w the reduced cost ``c + p[v] - p[w]``; a flow is *eps-optimal* when no residual arc has
reduced cost below -eps. Each phase divides eps by ``alpha``, saturates the residual arcs whose
reduced cost became negative, and pushes the excesses this creates along *admissible* arcs
(residual, reduced cost < 0) from a FIFO queue, lowering the price of a node with excess and no
admissible arc (a relabel: ``p[v] = max(p[w] - c) - eps`` over its residual arcs). Two of CS2's
heuristics: push look-ahead (a node without deficit and without an admissible arc is relabelled
before it receives flow) and one global price update per phase (Dial's buckets: every price
lowered by eps times its distance to a deficit, so every excess has an admissible path).

Capacities: an arc of an uncapacitated problem gets the bound of :func:`transit_caps` (the supply
that can reach its tail, the demand its head can reach), which every cycle-free flow meets; costs
are >= 0, so a cycle-free optimum exists and the bounds change no optimum.

The last phase ends at eps = 1 on the integer costs: the flow f then costs at most
``|f| + |g|`` (total arc flows) more than any cycle-free flow g for those costs (f - g splits into
residual cycles of reduced cost >= -1 per unit of flow per arc), and the prices satisfy
``c + p[tail] - p[head] >= -1`` on every residual arc.

A warm start: ``prices`` and ``eps_start`` (the zero flow eps-optimal under them, e.g. prices
prolonged from a coarser problem) skip the phases above eps. From prices that are already close
(a coarser level's, moved to the points), one phase at eps = 1 with a global update after every
``update_every`` relabels routes the flow fastest: the updates are Dijkstra-like searches that
carry the excesses along whole paths (n = 10^5 transport, prices from cells of four points:
a global update every n / 3 relabels took 3.0 s, once per phase 12 s, and phases from eps = 64
or 512 down 7-11 s).

Infeasible supplies: the global update finds a node with excess that reaches no deficit, or a
relabel takes a price below any bound of a feasible problem (a node with excess falls by at most
(alpha + 1) (nodes) eps in a phase); the kernel reports INFEASIBLE and the caller confirms it
with a max flow.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# eps is divided by this each phase (the grid hierarchy's graph, n = 10^4, p = 2, side by side:
# 16 took 1.15x and 4 1.3x the time of 8)
ALPHA = 8
STOP_CHECK = 4096         # discharges between two looks at the stop flag

# kernel statuses
DONE, STOPPED, INFEASIBLE = 0, 1, 2
# The residual graph's node and arc indices are int32: at most this many arcs (2 per arc fit).
MAX_ARCS = (1 << 30) - 1


def narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) as int32 when every one fits (and reverses: -values fits too), else as
    they are: the kernel's arcs then take 12 bytes fewer each, and the push-relabel, which reads
    them in every scan, ran 14% faster (a 200,000-point fine level of the multiscale approximation)."""
    limit = np.iinfo(np.int32).max
    if len(values) == 0 or (int(values.max()) <= limit and int(values.min()) >= -limit):
        return values.astype(np.int32)
    return values


@njit(cache=True, nogil=True)
def _residual(tails, heads, costs, n_nodes, caps):
    """The residual graph in CSR by tail: arc 2k (tail -> head, cost c, capacity cap) and its
    reverse (head -> tail, cost -c, capacity 0); ``pos_b[k]``: the reverse arc of arc k (its flow).
    Heads and reverse arcs are int32 (see :func:`narrow`), costs and capacities of the dtype given."""
    n_arcs = tails.shape[0]
    first = np.zeros(n_nodes + 1, np.int64)
    for k in range(n_arcs):
        first[tails[k] + 1] += 1
        first[heads[k] + 1] += 1
    for v in range(n_nodes):
        first[v + 1] += first[v]
    fill = first[:-1].copy()
    r_head = np.empty(2 * n_arcs, np.int32)
    r_rev = np.empty(2 * n_arcs, np.int32)
    r_cost = np.empty(2 * n_arcs, costs.dtype)
    r_cap = np.zeros(2 * n_arcs, caps.dtype)
    pos_b = np.empty(n_arcs, np.int64)
    for k in range(n_arcs):
        t, h = tails[k], heads[k]
        a = fill[t]
        fill[t] += 1
        b = fill[h]
        fill[h] += 1
        r_head[a], r_cost[a], r_cap[a], r_rev[a] = h, costs[k], caps[k], b
        r_head[b], r_cost[b], r_cap[b], r_rev[b] = t, -costs[k], 0, a
        pos_b[k] = b
    return first, r_head, r_rev, r_cost, r_cap, pos_b


@njit(cache=True, nogil=True)
def _kahn_order(into, out, out_arcs, far):
    """Kahn's topological order of a graph in CSR form: ``into`` / ``out`` the offsets of each node's
    incoming / outgoing arcs, ``out_arcs`` the outgoing arcs by node and ``far`` each arc's other end.
    Returns (order, size): the first ``size`` entries are the nodes not on (or after) a cycle."""
    n = into.shape[0] - 1
    order = np.empty(n, np.int64)
    left = np.empty(n, np.int64)
    size = 0
    for v in range(n):
        left[v] = into[v + 1] - into[v]
        if left[v] == 0:
            order[size] = v
            size += 1
    i = 0
    while i < size:
        v = order[i]
        i += 1
        for e in range(out[v], out[v + 1]):
            w = far[out_arcs[e]]
            left[w] -= 1
            if left[w] == 0:
                order[size] = w
                size += 1
    return order, size


@njit(cache=True, nogil=True)
def transit_caps(tails, heads, supplies):
    """Per arc, a bound on its flow in every cycle-free flow meeting the supplies: the supply that
    can reach its tail and the demand its head can reach, summed over the acyclic part of the graph
    in topological order (nodes on a cycle: the total supply)."""
    n = supplies.shape[0]
    n_arcs = tails.shape[0]
    total = 0
    for v in range(n):
        if supplies[v] > 0:
            total += supplies[v]
    total = max(total, 1)
    into = np.zeros(n + 1, np.int64)
    out = np.zeros(n + 1, np.int64)
    for k in range(n_arcs):
        into[heads[k] + 1] += 1
        out[tails[k] + 1] += 1
    for v in range(n):
        into[v + 1] += into[v]
        out[v + 1] += out[v]
    in_arcs = np.empty(n_arcs, np.int64)
    out_arcs = np.empty(n_arcs, np.int64)
    fi = into[:-1].copy()
    fo = out[:-1].copy()
    for k in range(n_arcs):
        in_arcs[fi[heads[k]]] = k
        fi[heads[k]] += 1
        out_arcs[fo[tails[k]]] = k
        fo[tails[k]] += 1
    # Kahn's order over the arcs' graph; nodes left out lie on (or after) a cycle
    order, size = _kahn_order(into, out, out_arcs, heads)
    reach_in = np.full(n, total, np.int64)      # supply that can reach the node
    reach_out = np.full(n, total, np.int64)     # demand the node can reach
    for i in range(size):
        v = order[i]
        acc = max(supplies[v], 0)
        for e in range(into[v], into[v + 1]):
            acc = min(acc + reach_in[tails[in_arcs[e]]], total)
        reach_in[v] = acc
    # reverse: Kahn's order of the reversed graph
    order, size = _kahn_order(out, into, in_arcs, tails)
    for i in range(size):
        v = order[i]
        acc = max(-supplies[v], 0)
        for e in range(out[v], out[v + 1]):
            acc = min(acc + reach_out[heads[out_arcs[e]]], total)
        reach_out[v] = acc
    caps = np.empty(n_arcs, np.int64)
    for k in range(n_arcs):
        caps[k] = min(reach_in[tails[k]], reach_out[heads[k]])
    return caps


@njit(cache=True, nogil=True)
def _global_update(eps, first, r_head, r_rev, r_cost, r_cap, price, excess, rank, bucket, nxt, prv):
    """CS2's global price update: lower each price by eps times its distance to a deficit, the
    lengths floor(reduced cost / eps) + 1 of the residual arcs (Dial's buckets, doubly linked),
    so that every node with excess has an admissible path to a deficit; eps-optimality is kept.
    Returns False when a node with excess reaches no deficit (the supplies are infeasible)."""
    n = price.shape[0]
    n_buckets = bucket.shape[0]
    unseen = n_buckets + 1
    for b in range(n_buckets):
        bucket[b] = -1
    active = 0
    capped = False
    for v in range(n):
        if excess[v] < 0:
            rank[v] = 0
            prv[v] = -1
            nxt[v] = bucket[0]
            if bucket[0] >= 0:
                prv[bucket[0]] = v
            bucket[0] = v
        else:
            rank[v] = unseen
            if excess[v] > 0:
                active += 1
    level = 0
    while level < n_buckets and active > 0:
        w = bucket[level]
        if w < 0:
            level += 1
            continue
        bucket[level] = nxt[w]
        if nxt[w] >= 0:
            prv[nxt[w]] = -1
        rank[w] = -1 - level          # scanned: its distance is final
        if excess[w] > 0:
            active -= 1
        pw = price[w]
        for b in range(first[w], first[w + 1]):
            a = r_rev[b]              # the residual arc v -> w
            if r_cap[a] > 0:
                v = r_head[b]
                old = rank[v]
                if old < 0:
                    continue
                steps = (r_cost[a] + price[v] - pw) // eps + 1
                new = level + max(steps, 0)
                if new >= n_buckets:
                    capped = True
                elif new < old:
                    if old < unseen:      # unlink v from its bucket
                        if prv[v] >= 0:
                            nxt[prv[v]] = nxt[v]
                        else:
                            bucket[old] = nxt[v]
                        if nxt[v] >= 0:
                            prv[nxt[v]] = prv[v]
                    rank[v] = new
                    prv[v] = -1
                    nxt[v] = bucket[new]
                    if bucket[new] >= 0:
                        prv[bucket[new]] = v
                    bucket[new] = v
    if active > 0 and not capped:
        return False
    for v in range(n):
        r = rank[v]
        d = -1 - r if r < 0 else level
        if d > 0:
            price[v] -= d * eps
    return True


@njit(cache=True, nogil=True)
def _relabel(v, first, r_head, r_cost, r_cap, price, eps):
    """Lower p[v] to the highest price at which a residual arc out of v has reduced cost -eps.
    Returns False when v has no residual arc."""
    best = -(1 << 62)
    found = False
    for a in range(first[v], first[v + 1]):
        if r_cap[a] > 0:
            cand = price[r_head[a]] - r_cost[a]
            if cand > best:
                best = cand
                found = True
    if not found:
        return False
    price[v] = best - eps
    return True


@njit(cache=True, nogil=True)
def _refine(eps, first, r_head, r_rev, r_cost, r_cap, price, excess, current, queue, queued, stop, floor, work,
            update_every):
    """One phase at ``eps`` (the flow is alpha eps-optimal on entry). Returns a kernel status.
    ``work``: the global update's arrays (rank, bucket heads, next, previous). ``update_every`` > 0:
    also a global update after every that many relabels (0: only the one at the start)."""
    n = price.shape[0]
    rank, bucket, nxt, prv = work
    # saturate the residual arcs of reduced cost < 0
    for v in range(n):
        pv = price[v]
        for a in range(first[v], first[v + 1]):
            c = r_cap[a]
            if c > 0 and r_cost[a] + pv - price[r_head[a]] < 0:
                w = r_head[a]
                r_cap[a] = 0
                r_cap[r_rev[a]] += c
                excess[v] -= c
                excess[w] += c
    head = 0
    tail = 0
    for v in range(n):
        current[v] = first[v]
        queued[v] = False
        if excess[v] > 0:
            queue[tail] = v
            tail += 1
            queued[v] = True
    # one global update per phase (the same graph: 1.1-1.2x faster than adding one after every 4n
    # relabels, 1.3-2.6x faster than after every n)
    if tail > 0 and not _global_update(eps, first, r_head, r_rev, r_cost, r_cap, price, excess, rank, bucket, nxt,
                                       prv):
        return INFEASIBLE
    size = n + 1
    count = 0
    relabels = 0
    while head != tail:
        v = queue[head]
        head += 1
        if head == size:
            head = 0
        queued[v] = False
        count += 1
        if count % STOP_CHECK == 0 and stop[0]:
            return STOPPED
        # discharge v
        while excess[v] > 0:
            a = current[v]
            end = first[v + 1]
            pv = price[v]
            while a < end:
                if r_cap[a] > 0 and r_cost[a] + pv - price[r_head[a]] < 0:
                    w = r_head[a]
                    # look-ahead: a node w without deficit and without an admissible arc is
                    # relabelled instead of receiving flow it would only send back
                    if excess[w] >= 0:
                        pw = price[w]
                        admissible = False
                        for b in range(current[w], first[w + 1]):
                            if r_cap[b] > 0 and r_cost[b] + pw - price[r_head[b]] < 0:
                                current[w] = b
                                admissible = True
                                break
                        # (a node whose every arc is saturated has no price to lower: it gets the flow)
                        if not admissible and _relabel(w, first, r_head, r_cost, r_cap, price, eps):
                            current[w] = first[w]
                            if r_cost[a] + pv - price[w] >= 0:
                                a += 1
                                continue
                    delta = excess[v] if excess[v] < r_cap[a] else r_cap[a]
                    r_cap[a] -= delta
                    r_cap[r_rev[a]] += delta
                    excess[v] -= delta
                    was = excess[w]
                    excess[w] = was + delta
                    if was <= 0 < excess[w] and not queued[w]:
                        queue[tail] = w
                        tail += 1
                        if tail == size:
                            tail = 0
                        queued[w] = True
                    if excess[v] == 0:
                        break
                a += 1
            if excess[v] > 0:
                if not _relabel(v, first, r_head, r_cost, r_cap, price, eps):
                    return INFEASIBLE
                if price[v] < floor:
                    return INFEASIBLE
                current[v] = first[v]
                relabels += 1
                if update_every > 0 and relabels % update_every == 0:
                    if not _global_update(eps, first, r_head, r_rev, r_cost, r_cap, price, excess, rank, bucket,
                                          nxt, prv):
                        return INFEASIBLE
                    for x in range(n):          # prices fell: every arc may be admissible again
                        current[x] = first[x]
            else:
                current[v] = a
    return DONE


@njit(cache=True, nogil=True)
def cost_scaling(tails, heads, costs, caps, supplies, stop, prices, eps_start, alpha, update_every=0, slack=0):
    """Min-cost flow: integer arc costs >= 0 and capacities ``caps`` (e.g. :func:`transit_caps`;
    int64, or int32 from :func:`narrow`), int64 supplies summing to 0, at most :data:`MAX_ARCS`
    arcs; ``stop[0]`` set by another thread ends the run.

    ``prices``: starting prices (int64, one per node; zeros for a cold start) and ``eps_start``:
    an eps for which the zero flow is eps-optimal under them (the largest cost for a cold start).
    ``update_every``: global updates after every that many relabels too (0: one per phase).
    ``slack``: for starting prices under which some feasible flow is not
    eps_start-optimal, the largest |reduced cost| of an arc under them (the first phase's prices
    may then fall by up to (nodes + 1) x slack more before the problem is called infeasible).
    Returns (flow per arc, prices, status): DONE (eps = 1 reached), STOPPED or INFEASIBLE (see
    the module docstring)."""
    n = supplies.shape[0]
    first, r_head, r_rev, r_cost, r_cap, pos_b = _residual(tails, heads, costs, n, caps)
    price = prices.copy()
    excess = supplies.copy()
    current = np.empty(n, np.int64)
    queue = np.empty(n + 1, np.int64)
    queued = np.zeros(n, np.bool_)
    work = (np.empty(n, np.int64), np.empty(2 * (n + 1), np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
    eps = max(eps_start, 1)
    status = DONE
    extra = (n + 1) * slack
    while True:
        eps = max(eps // alpha, 1)
        # a feasible problem's active nodes fall by at most (alpha + 1) n eps in a phase (from an
        # alpha eps-optimal flow; from warm prices, by n times the largest |reduced cost| more)
        floor = price.min() - (alpha + 2) * (n + 1) * eps - extra
        extra = 0
        status = _refine(eps, first, r_head, r_rev, r_cost, r_cap, price, excess, current, queue, queued, stop,
                         floor, work, update_every)
        if status != DONE or eps == 1:
            break
    flow = np.empty(tails.shape[0], np.float64)
    for k in range(tails.shape[0]):
        flow[k] = r_cap[pos_b[k]]
    return flow, price, status
