"""Our primal network simplex in Numba: the ``"simplex"`` engine of :func:`solvopt.transport.flow.min_cost_flow`.

The classic spanning-tree network simplex in the form of LEMON's ``NetworkSimplex`` (the one POT's
``ot.emd`` also builds on), for uncapacitated arcs:

- an artificial root joined to every node by an artificial arc (supply nodes send to the root at
  cost 0, demand nodes receive from it at a cost above any path, ``ART_COST``): the first
  feasible tree; the problem is infeasible when an artificial arc still carries flow at the end;
- the tree as parent / pred (arc to the parent) / pred_dir (+1: the arc points up) with a preorder
  thread (thread, rev_thread), subtree sizes (succ_num) and last successors (last_succ), so a
  pivot touches only the cycle and the moved subtree;
- block-search pricing: scan blocks of ``BLOCK_FACTOR`` x sqrt(arcs) arcs from where the last scan
  stopped and enter the most negative reduced cost of the first block that has one;
- the leaving arc by LEMON's rule (strict on the first side of the cycle, non-strict on the second:
  strongly feasible trees, no cycling).

Costs are integers (int64; the caller scales and rounds), so reduced costs are exact and the
final tree is optimal for those costs, not just to a tolerance. Flows are float64; with supplies
that are integer multiples of one unit the caller passes the integers, and every flow stays exact.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TREE, LOWER = 0, 1
UP, DOWN = 1, -1


STOP_CHECK = 1024      # pivots between two looks at the stop flag
# Pricing block = BLOCK_FACTOR * sqrt(arcs) (at least 10). LEMON's default factor is 1; on the
# two-hop graphs (n = 4000 to 10^4, side by side) 0.1 was 1.5-1.8x faster than 1 and 0.03-0.25 within 15%.
BLOCK_FACTOR = 0.1


@njit(cache=True, nogil=True)
def network_simplex(tails, heads, costs, supplies, stop, max_pivots):
    """(flow per arc, potentials per node, largest flow left on an artificial arc) of a min-cost
    flow over uncapacitated arcs; the flow is feasible when that last number is 0 (to float noise).

    ``costs`` int64, ``supplies`` float64 summing to 0. Potentials pi satisfy
    cost + pi[tail] - pi[head] >= 0 on every arc (= 0 on arcs with flow). ``stop``: a one-entry
    int8 array another thread may set to 1; the simplex then returns early with left = inf
    (it releases the GIL, so a caller can run it in a thread and watch for Ctrl-C). After
    ``max_pivots`` pivots (0: no limit) it also returns early, with left = -1."""
    n = supplies.shape[0]
    m = tails.shape[0]
    root = n
    total = m + n
    # the real arcs are read in place; an artificial arc is never priced nor entered, so only its
    # flow and state are stored (its direction is pred_dir, its cost enters through pi)
    source, target, cost = tails, heads, costs
    flow = np.zeros(total, np.float64)
    state = np.empty(total, np.int8)
    state[:m] = LOWER
    top = 0
    for e in range(m):
        if costs[e] > top:
            top = costs[e]
    art_cost = (top + 1) * (n + 1)

    parent = np.empty(n + 1, np.int64)
    pred = np.empty(n + 1, np.int64)
    pred_dir = np.empty(n + 1, np.int64)
    thread = np.empty(n + 1, np.int64)
    rev_thread = np.empty(n + 1, np.int64)
    succ_num = np.empty(n + 1, np.int64)
    last_succ = np.empty(n + 1, np.int64)
    pi = np.zeros(n + 1, np.int64)

    parent[root] = -1
    pred[root] = -1
    thread[root] = 0
    rev_thread[0] = root
    succ_num[root] = n + 1
    last_succ[root] = root - 1
    for u in range(n):
        e = m + u
        parent[u] = root
        pred[u] = e
        thread[u] = u + 1
        rev_thread[u + 1] = u
        succ_num[u] = 1
        last_succ[u] = u
        state[e] = TREE
        if supplies[u] >= 0:
            pred_dir[u] = UP
            flow[e] = supplies[u]
            pi[u] = 0
        else:
            pred_dir[u] = DOWN
            flow[e] = -supplies[u]
            pi[u] = art_cost

    block = max(int(BLOCK_FACTOR * np.sqrt(m)), 10) if m > 0 else 1
    next_arc = 0
    dirty = np.empty(n + 1, np.int64)
    pivots = 0
    while m > 0:
        pivots += 1
        if pivots % STOP_CHECK == 0 and stop[0] != 0:
            return flow[:m], pi[:n] - pi[root], np.inf
        if pivots == max_pivots:
            return flow[:m], pi[:n] - pi[root], -1.0
        # --- entering arc: block search
        best = 0
        in_arc = -1
        cnt = block
        e = next_arc
        for _ in range(m):
            if state[e] == LOWER:
                c = cost[e] + pi[source[e]] - pi[target[e]]
                if c < best:
                    best = c
                    in_arc = e
            e += 1
            if e == m:
                e = 0
            cnt -= 1
            if cnt == 0:
                if best < 0:
                    break
                cnt = block
        if best >= 0:
            break
        next_arc = e
        # --- join node
        first = source[in_arc]
        second = target[in_arc]
        join, other = first, second
        while join != other:
            if succ_num[join] < succ_num[other]:
                join = parent[join]
            else:
                other = parent[other]
        # --- leaving arc (uncapacitated: only arcs losing flow limit the step)
        delta = np.inf
        u_out = -1
        result = 0
        u = first
        while u != join:
            if pred_dir[u] == UP:
                d = max(flow[pred[u]], 0.0)
                if d < delta:
                    delta = d
                    u_out = u
                    result = 1
            u = parent[u]
        u = second
        while u != join:
            if pred_dir[u] == DOWN:
                d = max(flow[pred[u]], 0.0)
                if d <= delta:
                    delta = d
                    u_out = u
                    result = 2
            u = parent[u]
        if result == 0:
            break                      # unbounded (a negative cycle): cannot happen with costs >= 0
        if result == 1:
            u_in, v_in = first, second
        else:
            u_in, v_in = second, first
        # --- change the flow around the cycle
        if delta > 0:
            flow[in_arc] += delta
            u = source[in_arc]
            while u != join:
                flow[pred[u]] -= pred_dir[u] * delta
                u = parent[u]
            u = target[in_arc]
            while u != join:
                flow[pred[u]] += pred_dir[u] * delta
                u = parent[u]
        state[in_arc] = TREE
        out_arc = pred[u_out]
        state[out_arc] = LOWER
        flow[out_arc] = 0.0
        # --- update the tree structure
        old_rev_thread = rev_thread[u_out]
        old_succ_num = succ_num[u_out]
        old_last_succ = last_succ[u_out]
        v_out = parent[u_out]
        if u_in == u_out:
            parent[u_in] = v_in
            pred[u_in] = in_arc
            pred_dir[u_in] = UP if u_in == source[in_arc] else DOWN
            if thread[v_in] != u_out:
                after = thread[old_last_succ]
                thread[old_rev_thread] = after
                rev_thread[after] = old_rev_thread
                after = thread[v_in]
                thread[v_in] = u_out
                rev_thread[u_out] = v_in
                thread[old_last_succ] = after
                rev_thread[after] = old_last_succ
        else:
            thread_continue = thread[old_last_succ] if old_rev_thread == v_in else thread[v_in]
            stem = u_in
            par_stem = v_in
            last = last_succ[u_in]
            after = thread[last]
            thread[v_in] = u_in
            n_dirty = 0
            dirty[n_dirty] = v_in
            n_dirty += 1
            while stem != u_out:
                next_stem = parent[stem]
                thread[last] = next_stem
                dirty[n_dirty] = last
                n_dirty += 1
                before = rev_thread[stem]
                thread[before] = after
                rev_thread[after] = before
                parent[stem] = par_stem
                par_stem = stem
                stem = next_stem
                last = rev_thread[par_stem] if last_succ[stem] == last_succ[par_stem] else last_succ[stem]
                after = thread[last]
            parent[u_out] = par_stem
            thread[last] = thread_continue
            rev_thread[thread_continue] = last
            last_succ[u_out] = last
            if old_rev_thread != v_in:
                thread[old_rev_thread] = after
                rev_thread[after] = old_rev_thread
            for i in range(n_dirty):
                u = dirty[i]
                rev_thread[thread[u]] = u
            tmp_sc = 0
            tmp_ls = last_succ[u_out]
            u = u_out
            p = parent[u]
            while u != u_in:
                pred[u] = pred[p]
                pred_dir[u] = -pred_dir[p]
                tmp_sc += succ_num[u] - succ_num[p]
                succ_num[u] = tmp_sc
                last_succ[p] = tmp_ls
                u = p
                p = parent[u]
            pred[u_in] = in_arc
            pred_dir[u_in] = UP if u_in == source[in_arc] else DOWN
            succ_num[u_in] = old_succ_num
        up_limit_out = join if last_succ[join] == v_in else -1
        last_succ_out = last_succ[u_out]
        u = v_in
        while u != -1 and last_succ[u] == v_in:
            last_succ[u] = last_succ_out
            u = parent[u]
        if join != old_rev_thread and v_in != old_rev_thread:
            u = v_out
            while u != up_limit_out and last_succ[u] == old_last_succ:
                last_succ[u] = old_rev_thread
                u = parent[u]
        elif last_succ_out != old_last_succ:
            u = v_out
            while u != up_limit_out and last_succ[u] == old_last_succ:
                last_succ[u] = last_succ_out
                u = parent[u]
        u = v_in
        while u != join:
            succ_num[u] += old_succ_num
            u = parent[u]
        u = v_out
        while u != join:
            succ_num[u] -= old_succ_num
            u = parent[u]
        # --- update the potentials of the moved subtree
        sigma = pi[v_in] - pi[u_in] - pred_dir[u_in] * cost[in_arc]
        end = thread[last_succ[u_in]]
        u = u_in
        while u != end:
            pi[u] += sigma
            u = thread[u]

    left = 0.0
    for e in range(m, total):
        left = max(left, flow[e])
    return flow[:m], pi[:n] - pi[root], left
