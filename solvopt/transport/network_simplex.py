"""Our primal network simplex in Numba: the ``"simplex"`` engine of :func:`solvopt.transport.flow.min_cost_flow`,
the dense transport simplex of method ``exact`` and the warm-started rounds of ``sparse-exact``.

The classic spanning-tree network simplex in the form of LEMON's ``NetworkSimplex`` (the one POT's
``ot.emd`` also builds on), for uncapacitated arcs:

- an artificial root joined to every node by an artificial arc (supply nodes send to the root at
  cost 0, demand nodes receive from it at a cost above any path, ``ART_COST``): the first
  feasible tree; the problem is infeasible when an artificial arc still carries flow at the end;
- the tree as parent / pred (arc to the parent) / pred_dir (+1: the arc points up) with a preorder
  thread (thread, rev_thread), subtree sizes (succ_num) and last successors (last_succ), so a
  pivot touches only the cycle and the moved subtree;
- the flow of the arc to the parent stored at the node (``flowp``): off the tree every arc carries
  0 (no capacities), and a tree arc has reduced cost exactly 0, so pricing needs no per-arc state
  and memory beyond the arcs themselves is O(nodes) — on the complete bipartite graph the arcs
  are implicit (arc i * m + j of a cost matrix);
- block-search pricing: scan blocks of ``BLOCK_FACTOR`` x sqrt(arcs) arcs from where the last scan
  stopped and enter the most negative reduced cost of the first block that has one;
- the leaving arc by LEMON's rule (strict on the first side of the cycle, non-strict on the second:
  strongly feasible trees, no cycling).

Kernels: :func:`network_simplex` (arc lists), :func:`network_simplex_warm` (arc lists, starting
from a given spanning tree, e.g. the optimum of a smaller arc set: it stays primal feasible when
arcs join) and :func:`dense_simplex` (a cost matrix). Costs are integers (int64; the caller
scales and rounds), so reduced costs are exact and the final tree is optimal for those costs, not
just to a tolerance. Flows are float64; with supplies that are integer multiples of one unit the
caller passes the integers, and every flow stays exact.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .plan_kernels import best_partners, tree_plan

UP, DOWN = 1, -1


STOP_CHECK = 1024      # pivots between two looks at the stop flag
# Pricing block = BLOCK_FACTOR * sqrt(arcs) (at least 10). LEMON's default factor is 1; on the
# two-hop graphs (n = 4000 to 10^4, side by side) 0.1 was 1.5-1.8x faster than 1 and 0.03-0.25 within 15%.
BLOCK_FACTOR = 0.1
# The dense simplex's switch from column generation to block search over the whole matrix: when a
# pricing pass finds negative arcs at more than SWITCH_SHRINK times as many nodes as the pass before
# (and at more than SWITCH_FLOOR of the nodes), the candidates miss much of the optimum's support (two
# clouds of different shapes, e.g. the colours of two images) and every further round re-optimises
# from far: on such clouds (n = 2000) 62 rounds took 1.9 million pivots, negative arcs at 90 % of the
# nodes in every pass; block search over the matrix took 87000 (ot.emd about 79000). On uniform
# clouds the count falls by half or more from pass to pass (2-D, p = 1: 68, 32, 14, 5, 1 %).
SWITCH_SHRINK = 0.7
SWITCH_FLOOR = 0.05
# Block search over the matrix: blocks of DENSE_BLOCK_FACTOR x sqrt(n m) pairs, as LEMON's.
DENSE_BLOCK_FACTOR = 1.0
# ... and after this many rounds, still above the floor (a guard; uniform clouds end in 3-6).
MAX_ROUNDS = 10
# Up to this many pairs the dense simplex searches the whole matrix from the start (no rounds):
# side by side (one process, CPU time), matrix / rounds at n = m = 50, 100, 200, 300, 500: uniform
# 2-D 0.44-0.64, 0.62-0.67, 0.75-0.98, 0.61-0.84, 0.94-1.41; 3-D 0.52-0.58, 0.68-0.74, 0.98-1.15,
# 0.96-1.11, 1.34-1.50; tie-heavy colours 0.37-0.44, 0.58-0.64, 0.76-0.81, 0.76-0.78, 0.72-0.90.
# Against ot.emd (the whole small solve, medians of 15, p = 1 / 2): with the rounds, the two sample
# images' colours at n = 300-450 took 1.02-1.21x ot.emd's time; searching the matrix, 0.81-0.97x
# (0.70-0.84x at 500), while uniform 2-D clouds stay at 0.61-0.80x ot.emd up to 500 either way.
# Beyond 500 the rounds win on uniform clouds (n = 1000: 21-22 ms against 30-35 ms; ot.emd 51-59).
DIRECT_PAIRS = 500 * 500


@njit(cache=True, nogil=True)
def _tree_arrays(size):
    """parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi, flowp, dirty for ``size`` nodes + root."""
    return (np.empty(size + 1, np.int64), np.empty(size + 1, np.int64), np.empty(size + 1, np.int64),
            np.empty(size + 1, np.int64), np.empty(size + 1, np.int64), np.empty(size + 1, np.int64),
            np.empty(size + 1, np.int64), np.zeros(size + 1, np.int64), np.zeros(size + 1, np.float64),
            np.empty(size + 1, np.int64))


@njit(cache=True, nogil=True)
def _artificial_tree(supplies, art_cost, n_arcs, parent, pred, pred_dir, thread, rev_thread, succ_num,
                     last_succ, pi, flowp):
    """The starting tree: every node hung under the root by its artificial arc (arc n_arcs + u)."""
    n = supplies.shape[0]
    root = n
    parent[root] = -1
    pred[root] = -1
    pred_dir[root] = 0
    flowp[root] = 0.0
    thread[root] = 0
    rev_thread[0] = root
    succ_num[root] = n + 1
    last_succ[root] = root - 1
    pi[root] = 0
    for u in range(n):
        parent[u] = root
        pred[u] = n_arcs + u
        thread[u] = u + 1
        rev_thread[u + 1] = u
        succ_num[u] = 1
        last_succ[u] = u
        if supplies[u] >= 0:
            pred_dir[u] = UP
            flowp[u] = supplies[u]
            pi[u] = 0
        else:
            pred_dir[u] = DOWN
            flowp[u] = -supplies[u]
            pi[u] = art_cost


@njit(cache=True, nogil=True)
def _pivot(in_arc, first, second, in_cost, parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ,
           pi, flowp, dirty):
    """Enter arc ``in_arc`` (first -> second, cost ``in_cost``, reduced cost < 0): push flow round
    its cycle, drop the leaving arc, re-hang the moved subtree and update its potentials.
    False when the cycle has no arc that loses flow (unbounded: cannot happen with costs >= 0)."""
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
            d = max(flowp[u], 0.0)
            if d < delta:
                delta = d
                u_out = u
                result = 1
        u = parent[u]
    u = second
    while u != join:
        if pred_dir[u] == DOWN:
            d = max(flowp[u], 0.0)
            if d <= delta:
                delta = d
                u_out = u
                result = 2
        u = parent[u]
    if result == 0:
        return False
    if result == 1:
        u_in, v_in = first, second
    else:
        u_in, v_in = second, first
    # --- change the flow around the cycle
    if delta > 0:
        u = first
        while u != join:
            flowp[u] -= pred_dir[u] * delta
            u = parent[u]
        u = second
        while u != join:
            flowp[u] += pred_dir[u] * delta
            u = parent[u]
    # --- update the tree structure
    old_rev_thread = rev_thread[u_out]
    old_succ_num = succ_num[u_out]
    old_last_succ = last_succ[u_out]
    v_out = parent[u_out]
    if u_in == u_out:
        parent[u_in] = v_in
        pred[u_in] = in_arc
        pred_dir[u_in] = UP if u_in == first else DOWN
        flowp[u_in] = delta
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
            flowp[u] = flowp[p]
            tmp_sc += succ_num[u] - succ_num[p]
            succ_num[u] = tmp_sc
            last_succ[p] = tmp_ls
            u = p
            p = parent[u]
        pred[u_in] = in_arc
        pred_dir[u_in] = UP if u_in == first else DOWN
        flowp[u_in] = delta
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
    sigma = pi[v_in] - pi[u_in] - pred_dir[u_in] * in_cost
    end = thread[last_succ[u_in]]
    u = u_in
    while u != end:
        pi[u] += sigma
        u = thread[u]
    return True


@njit(cache=True, nogil=True)
def _art_cost(costs):
    top = 0
    for e in range(costs.shape[0]):
        if costs[e] > top:
            top = costs[e]
    return top


@njit(cache=True, nogil=True)
def _sparse_loop(tails, heads, costs, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread, succ_num,
                 last_succ, pi, flowp, dirty, block_factor=BLOCK_FACTOR):
    """Pivots on an arc list until optimal: 0, stopped: 1, pivot limit: 2."""
    m = tails.shape[0]
    block = max(int(block_factor * np.sqrt(m)), 10) if m > 0 else 1
    next_arc = 0
    pivots = 0
    while m > 0:
        pivots += 1
        if pivots % STOP_CHECK == 0 and stop[0] != 0:
            return 1
        if pivots == max_pivots:
            return 2
        best = 0
        in_arc = -1
        cnt = block
        e = next_arc
        for _ in range(m):
            c = costs[e] + pi[tails[e]] - pi[heads[e]]
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
            return 0
        next_arc = e
        if not _pivot(in_arc, tails[in_arc], heads[in_arc], costs[in_arc], parent, pred, pred_dir, thread,
                      rev_thread, succ_num, last_succ, pi, flowp, dirty):
            return 0
    return 0


@njit(cache=True, nogil=True)
def _arc_flows(m, n, pred, flowp):
    """(flow per real arc, the largest flow left on an artificial arc); arcs from m on are artificial."""
    flow = np.zeros(m, np.float64)
    left = 0.0
    for u in range(n):
        if pred[u] < m:
            flow[pred[u]] = flowp[u]
        elif flowp[u] > left:
            left = flowp[u]
    return flow, left


@njit(cache=True, nogil=True)
def _pivot_to_optimum(tails, heads, costs, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread, succ_num,
                      last_succ, pi, flowp, dirty):
    """Pivot from the tree in the arrays to the optimum: (arc flows, node potentials, artificial flow left;
    left = inf after a stop request, -1 after ``max_pivots``)."""
    n = pi.shape[0] - 1
    why = _sparse_loop(tails, heads, costs, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread,
                       succ_num, last_succ, pi, flowp, dirty)
    flow, left = _arc_flows(tails.shape[0], n, pred, flowp)
    if why == 1:
        left = np.inf
    elif why == 2:
        left = -1.0
    return flow, pi[:n] - pi[n], left


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
    parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi, flowp, dirty = _tree_arrays(n)
    art_cost = (_art_cost(costs) + 1) * (n + 1)
    _artificial_tree(supplies, art_cost, m, parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi,
                     flowp)
    return _pivot_to_optimum(tails, heads, costs, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread,
                             succ_num, last_succ, pi, flowp, dirty)


@njit(cache=True, nogil=True)
def _hang(supplies, tails, heads, costs, art_cost, art_base, parent, pred, pred_dir, thread, rev_thread, succ_num,
          last_succ, pi, flowp):
    """Build thread, subtree sizes, last successors, potentials and flows from parent / pred /
    pred_dir (a spanning tree under the root; arc art_base + u: u's artificial arc). False when
    it is no tree of these arcs or its flow is negative."""
    n = supplies.shape[0]
    root = n
    # children in a CSR by a counting sort, then an iterative preorder from the root
    count = np.zeros(n + 2, np.int64)
    for u in range(n):
        if parent[u] < 0 or parent[u] > n:
            return False
        count[parent[u] + 1] += 1
    for u in range(n + 1):
        count[u + 1] += count[u]
    child = np.empty(n, np.int64)
    fill = count[:n + 1].copy()
    for u in range(n):
        child[fill[parent[u]]] = u
        fill[parent[u]] += 1
    order = np.empty(n + 1, np.int64)
    stack = np.empty(n + 1, np.int64)
    top = 0
    stack[0] = root
    size = 0
    while top >= 0:
        u = stack[top]
        top -= 1
        order[size] = u
        size += 1
        for k in range(count[u + 1] - 1, count[u] - 1, -1):
            top += 1
            stack[top] = child[k]
    if size != n + 1:
        return False                    # a cycle: some node is not under the root
    for k in range(n + 1):
        u = order[k]
        thread[u] = order[k + 1] if k < n else root
        rev_thread[thread[u]] = u
    parent[root] = -1
    pred[root] = -1
    pi[root] = 0
    for k in range(1, n + 1):
        u = order[k]
        e = pred[u]
        if e < art_base:
            if e >= tails.shape[0]:
                return False
            c = costs[e]
            tail, head = tails[e], heads[e]
            if pred_dir[u] == UP and (tail != u or head != parent[u]):
                return False
            if pred_dir[u] == DOWN and (head != u or tail != parent[u]):
                return False
        else:
            if parent[u] != root or e != art_base + u:
                return False
            c = 0 if pred_dir[u] == UP else art_cost
        pi[u] = pi[parent[u]] - c if pred_dir[u] == UP else pi[parent[u]] + c
    below = np.zeros(n + 1, np.float64)
    tol = 0.0
    for u in range(n):
        below[u] = supplies[u]
        tol = max(tol, abs(supplies[u]))
    tol *= 1e-9
    for k in range(n, 0, -1):
        u = order[k]
        flowp[u] = below[u] if pred_dir[u] == UP else -below[u]
        if flowp[u] < -tol:
            return False
        below[parent[u]] += below[u]
    # subtree sizes and last successors, leaves up
    for u in range(n + 1):
        succ_num[u] = 1
        last_succ[u] = u
    for k in range(n, 0, -1):
        u = order[k]
        succ_num[parent[u]] += succ_num[u]
    for k in range(n + 1):             # the last node of u's subtree in preorder
        u = order[k]
        last_succ[u] = order[k + succ_num[u] - 1]
    return True


@njit(cache=True, nogil=True)
def network_simplex_warm(tails, heads, costs, supplies, stop, max_pivots, start_parent, start_pred, start_dir):
    """:func:`network_simplex` from a given spanning tree: ``start_parent`` (node -> parent, n for
    the root), ``start_pred`` (node -> arc to its parent; m + u is u's artificial arc) and
    ``start_dir`` (+1: that arc points up), e.g. the optimal tree of a subset of these arcs. A
    start that is no primal feasible tree of these arcs and supplies falls back to the artificial
    start. Returns (flow, potentials, left, parent, pred, pred_dir) — the final tree for the next start."""
    n = supplies.shape[0]
    m = tails.shape[0]
    parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi, flowp, dirty = _tree_arrays(n)
    art_cost = (_art_cost(costs) + 1) * (n + 1)
    parent[:n] = start_parent
    pred[:n] = start_pred
    pred_dir[:n] = start_dir
    if not _hang(supplies, tails, heads, costs, art_cost, m, parent, pred, pred_dir, thread, rev_thread,
                 succ_num, last_succ, pi, flowp):
        _artificial_tree(supplies, art_cost, m, parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ,
                         pi, flowp)
    flow, potentials, left = _pivot_to_optimum(tails, heads, costs, stop, max_pivots, parent, pred, pred_dir,
                                               thread, rev_thread, succ_num, last_succ, pi, flowp, dirty)
    return flow, potentials, left, parent[:n].copy(), pred[:n].copy(), pred_dir[:n].copy()




@njit(cache=True, nogil=True)
def _matrix_loop(cost, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi,
                 flowp, dirty, block_factor):
    """Pivots on the complete bipartite graph of ``cost`` (arc i * m + j: source i -> target n + j)
    until optimal: 0, stopped: 1, pivot limit: 2. Block search in row-major order; a block's rows
    are scanned for their minimum first (a loop that vectorises), the arc found only in a row
    that holds a new best."""
    n, m = cost.shape
    total = n * m
    block = max(int(block_factor * np.sqrt(total)), 10)
    pj = pi[n:n + m]
    i = 0
    j = 0
    pivots = 0
    while True:
        pivots += 1
        if pivots % STOP_CHECK == 0 and stop[0] != 0:
            return 1
        if pivots == max_pivots:
            return 2
        best = 0
        bi = -1
        bj = -1
        scanned = 0
        left = block
        while scanned < total:
            end = min(m, j + left)
            row = cost[i]
            low = row[j] - pj[j]
            for jj in range(j + 1, end):
                low = min(low, row[jj] - pj[jj])
            if low + pi[i] < best:
                best = low + pi[i]
                bi = i
                for jj in range(j, end):
                    if row[jj] - pj[jj] == low:
                        bj = jj
                        break
            scanned += end - j
            left -= end - j
            j = end
            if j == m:
                j = 0
                i += 1
                if i == n:
                    i = 0
            if left == 0:
                if best < 0:
                    break
                left = block
        if best >= 0:
            return 0
        if not _pivot(bi * m + bj, bi, n + bj, cost[bi, bj], parent, pred, pred_dir, thread, rev_thread, succ_num,
                      last_succ, pi, flowp, dirty):
            return 0


@njit(cache=True, nogil=True)
def dense_simplex(cost, supplies, stop, max_pivots, k, block_factor, shrink, floor, dense_block, direct_pairs):
    """The transport problem on the complete bipartite graph of an (n, m) int64 cost matrix:
    sources 0..n-1 with ``supplies[:n]`` >= 0, targets n..n+m-1 with ``supplies[n:]`` <= 0
    (float64, summing to 0), arc (i, j) from source i to target n + j. Every argument is explicit
    (e.g. ``BLOCK_FACTOR, SWITCH_SHRINK, SWITCH_FLOOR, DENSE_BLOCK_FACTOR, DIRECT_PAIRS``): Numba
    dispatches a call that leaves out a default argument through its compiler's slow path, 0.3 ms
    a call.

    Up to ``direct_pairs`` pairs, block search over the whole matrix from the artificial tree, as
    LEMON's (:func:`_matrix_loop`): below about 200 x 200 points faster than the rounds (0.4-1.0 of
    their time, uniform and tie-heavy clouds). Beyond, column generation around the network
    simplex: the simplex runs on candidate arcs (the ``k``
    cheapest of every row and of every column at the start), warm from its last tree each time;
    then every arc of the matrix is priced with the exact integer reduced costs, and the most
    negative arc of every row and of every column joins. No negative arc left: the tree is optimal
    over the whole matrix. Most pivots happen on a few arcs per node instead of block searches over
    n x m. When a pricing pass finds negative arcs at more than ``floor`` of the nodes and at more
    than ``shrink`` times as many as the pass before (or after ``MAX_ROUNDS`` rounds), the rounds
    are not closing in on the optimum's support: the simplex goes on from its tree by block search
    over the whole matrix (:func:`_matrix_loop`, blocks of ``dense_block`` x sqrt(n m) pairs).

    Returns (rows, cols, flows) of the tree arcs (the plan's support and more), potentials per node
    (cost_ij + pi_i - pi_(n+j) >= 0 on every arc, = 0 where flow runs), the largest flow left on an
    artificial arc (0: feasible; inf: stopped; -1: ``max_pivots`` used up), the pricing rounds (0:
    none) and whether it searched the whole matrix."""
    n, m = cost.shape
    if n * m > direct_pairs:
        return _column_simplex(cost, supplies, stop, max_pivots, k, block_factor, shrink, floor, dense_block)
    nodes = n + m
    parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi, flowp, dirty = _tree_arrays(nodes)
    top = 0
    for i in range(n):
        for j in range(m):
            if cost[i, j] > top:
                top = cost[i, j]
    art_base = 1 << 60
    _artificial_tree(supplies, (top + 1) * (nodes + 1), art_base, parent, pred, pred_dir, thread, rev_thread,
                     succ_num, last_succ, pi, flowp)
    why = _matrix_loop(cost, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi,
                       flowp, dirty, dense_block)
    none = np.empty(0, np.int64)
    rows, cols, flows, left = _tree_pairs(pred, flowp, nodes, art_base, n, m, True, none, none, why)
    return rows, cols, flows, pi[:nodes] - pi[nodes], left, 0, True


@njit(cache=True, nogil=True)
def _tree_pairs(pred, flowp, nodes, art_base, n, m, matrix, tails, heads, why):
    """(rows, cols, flows) of the tree's real arcs (arc i * m + j of the matrix when ``matrix``, else
    an index into tails / heads) and what is left on an artificial arc: its largest flow (0:
    feasible), inf when stopped (``why`` 1), -1 when the pivots ran out (``why`` 2)."""
    size = 0
    left = 0.0
    for u in range(nodes):
        if pred[u] < art_base:
            size += 1
        elif flowp[u] > left:
            left = flowp[u]
    rows = np.empty(size, np.int64)
    cols = np.empty(size, np.int64)
    flows = np.empty(size, np.float64)
    t = 0
    for u in range(nodes):
        if pred[u] < art_base:
            if matrix:
                rows[t] = pred[u] // m
                cols[t] = pred[u] % m
            else:
                rows[t] = tails[pred[u]]
                cols[t] = heads[pred[u]] - n
            flows[t] = max(flowp[u], 0.0)
            t += 1
    if why == 1:
        left = np.inf
    elif why == 2:
        left = -1.0
    return rows, cols, flows, left


@njit(cache=True, nogil=True)
def _column_simplex(cost, supplies, stop, max_pivots, k, block_factor, shrink, floor, dense_block):
    """:func:`dense_simplex` by column generation (see there)."""
    n, m = cost.shape
    nodes = n + m
    parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ, pi, flowp, dirty = _tree_arrays(nodes)
    kk = max(1, min(k, m))
    kc = max(1, min(k, n))
    cap = max(16, n * kk + m * kc + 2 * nodes)
    tails = np.empty(cap, np.int64)
    heads = np.empty(cap, np.int64)
    costs = np.empty(cap, np.int64)
    count = 0
    # one row-major pass: the largest cost, the kk cheapest of every row and the kc cheapest of
    # every column (each kept sorted by insertion; ties keep the lower index)
    top = 0
    row_val = np.empty(kk, np.int64)
    row_idx = np.empty(kk, np.int64)
    col_val = np.empty((m, kc), np.int64)
    col_idx = np.empty((m, kc), np.int64)
    col_size = np.zeros(m, np.int64)
    for i in range(n):
        size = 0
        for j in range(m):
            v = cost[i, j]
            if v > top:
                top = v
            pos = -1
            if size < kk:
                pos = size
                size += 1
            elif v < row_val[size - 1]:
                pos = size - 1
            if pos >= 0:
                while pos > 0 and row_val[pos - 1] > v:
                    row_val[pos] = row_val[pos - 1]
                    row_idx[pos] = row_idx[pos - 1]
                    pos -= 1
                row_val[pos] = v
                row_idx[pos] = j
            held = col_size[j]
            if held < kc:
                pos = held
                col_size[j] = held + 1
            elif v < col_val[j, held - 1]:
                pos = held - 1
            else:
                continue
            while pos > 0 and col_val[j, pos - 1] > v:
                col_val[j, pos] = col_val[j, pos - 1]
                col_idx[j, pos] = col_idx[j, pos - 1]
                pos -= 1
            col_val[j, pos] = v
            col_idx[j, pos] = i
        for t in range(size):
            tails[count] = i
            heads[count] = n + row_idx[t]
            costs[count] = row_val[t]
            count += 1
    for j in range(m):
        for t in range(col_size[j]):
            tails[count] = col_idx[j, t]
            heads[count] = n + j
            costs[count] = col_val[j, t]
            count += 1
    art_cost = (top + 1) * (nodes + 1)
    art_base = 1 << 60             # artificial arc of node u: art_base + u (beyond every candidate index)
    _artificial_tree(supplies, art_cost, art_base, parent, pred, pred_dir, thread, rev_thread, succ_num, last_succ,
                     pi, flowp)
    row_best = np.empty(n, np.int64)
    row_arg = np.empty(n, np.int64)
    col_best = np.empty(m, np.int64)
    col_arg = np.empty(m, np.int64)
    rounds = 0
    why = 0
    matrix = False
    before = 0
    while True:
        rounds += 1
        why = _sparse_loop(tails[:count], heads[:count], costs[:count], stop, max_pivots, parent, pred, pred_dir,
                           thread, rev_thread, succ_num, last_succ, pi, flowp, dirty, block_factor)
        if why != 0:
            break
        # price every arc of the matrix
        for j in range(m):
            col_best[j] = 0
            col_arg[j] = -1
        for i in range(n):
            best = 0
            arg = -1
            base = pi[i]
            for j in range(m):
                c = cost[i, j] + base - pi[n + j]
                if c < best:
                    best = c
                    arg = j
                if c < col_best[j]:
                    col_best[j] = c
                    col_arg[j] = i
            row_best[i] = best
            row_arg[i] = arg
        if stop[0] != 0:
            why = 1
            break
        need = 0
        for i in range(n):
            if row_arg[i] >= 0:
                need += 1
        for j in range(m):
            if col_arg[j] >= 0:
                need += 1
        if need == 0:
            break
        stalled = rounds >= MAX_ROUNDS or (rounds >= 2 and need > shrink * before)
        before = need
        if need > floor * nodes and stalled:
            for u in range(nodes):          # tree arcs by their pair: arc i * m + j
                if pred[u] < art_base:
                    pred[u] = tails[pred[u]] * m + heads[pred[u]] - n
            matrix = True
            why = _matrix_loop(cost, stop, max_pivots, parent, pred, pred_dir, thread, rev_thread, succ_num,
                               last_succ, pi, flowp, dirty, dense_block)
            break
        if count + need > cap:
            cap = 2 * (count + need)
            grown = np.empty(cap, np.int64)
            grown[:count] = tails[:count]
            tails = grown
            grown = np.empty(cap, np.int64)
            grown[:count] = heads[:count]
            heads = grown
            grown = np.empty(cap, np.int64)
            grown[:count] = costs[:count]
            costs = grown
        for i in range(n):
            if row_arg[i] >= 0:
                tails[count] = i
                heads[count] = n + row_arg[i]
                costs[count] = cost[i, row_arg[i]]
                count += 1
        for j in range(m):
            if col_arg[j] >= 0 and row_arg[col_arg[j]] != j:
                tails[count] = col_arg[j]
                heads[count] = n + j
                costs[count] = cost[col_arg[j], j]
                count += 1
    rows, cols, flows, left = _tree_pairs(pred, flowp, nodes, art_base, n, m, matrix, tails, heads, why)
    return rows, cols, flows, pi[:nodes] - pi[nodes], left, rounds, matrix


@njit(cache=True, nogil=True)
def dense_transport(costs, supplies, limit, rows, cols, n, m, unit, mass, stop, max_pivots, k, block_factor, shrink,
                    floor, dense_block, direct_pairs):
    """The kernel work of :func:`solvopt.transport.exact.dense_flow` in one call (a few microseconds
    of dispatch and temporaries each saved on small inputs): the float costs (>= 0, the rows x cols
    sub-matrix) scaled to integers from the largest one as :func:`solvopt.transport.flow.integer_costs`
    does (range ``limit``), :func:`dense_simplex` on them, and the plan of its tree
    (:func:`solvopt.transport.plan_kernels.tree_plan`, flows in units of ``unit``, masses x ``mass``).

    Returns (indptr, indices, data, flow, cost, total, potentials, partners, left, rounds, matrix,
    cost_scale): the n x m CSR plan, the tree arcs' flows, the flow's cost and total
    (:func:`tree_plan`), the potentials per node in units of ``costs`` (exact duals of the integer
    costs in HiGHS' sign convention: ``-pi / cost_scale``), the targets' best partners
    v_j = min_i (costs_ij - potentials_i) (the pass of :func:`solvopt.transport.result.dual_bound`),
    what is left on an artificial arc, the rounds and the matrix search (:func:`dense_simplex`), and
    the scale of the integer costs."""
    top = 0.0
    for i in range(costs.shape[0]):
        for j in range(costs.shape[1]):
            if costs[i, j] > top:
                top = costs[i, j]
    ints = np.empty(costs.shape, np.int64)
    if top > 0 and np.isfinite(limit / top):
        cost_scale = limit / top
        scaled_integers(costs, cost_scale, ints)
    elif top > 0:                       # a subnormal largest cost: divide first
        cost_scale = np.finfo(np.float64).max
        for i in range(costs.shape[0]):
            for j in range(costs.shape[1]):
                ints[i, j] = np.int64(np.rint(costs[i, j] / top * limit))
    else:
        cost_scale = 1.0
        ints[:] = 0
    r, c, flow, pi, left, rounds, matrix = dense_simplex(ints, supplies, stop, max_pivots, k, block_factor, shrink,
                                                         floor, dense_block, direct_pairs)
    indptr, indices, data, cost, total = tree_plan(n, m, rows, cols, r, c, flow, unit, mass, costs)
    # the potentials in units of the float costs (exact duals of the integer ones, in HiGHS' sign),
    # and the targets' best partners for the sources' ones: the dual bound's pass (result.dual_bound)
    potentials = pi / -cost_scale
    partners = best_partners(costs, potentials[:costs.shape[0]], 0)
    return indptr, indices, data, flow, cost, total, potentials, partners, left, rounds, matrix, cost_scale


@njit(cache=True, nogil=True)
def scaled_integers(costs, scale, out):
    """out = rint(costs * scale) as int64, in one pass (the dense kernel's integer costs)."""
    flat_in = costs.ravel()
    flat_out = out.ravel()
    for e in range(flat_in.shape[0]):
        flat_out[e] = np.int64(np.rint(flat_in[e] * scale))


def warm_flow(tails, heads, costs, supplies, tree=None, *, path_arcs=None, stop=None):
    """The ``simplex`` engine of :func:`solvopt.transport.flow.min_cost_flow` (uncapacitated arcs,
    costs >= 0, integer-scaled as there) from a starting spanning tree: ``tree`` = (parent, pred,
    pred_dir) per node as returned here, with pred indexing these arcs (len(tails) + u: u's
    artificial arc), e.g. the previous optimum remapped by :func:`remap_tree` after arcs joined.
    None: the artificial start. Returns (FlowSolution, the final tree)."""
    from solvopt.core.errors import ModelError

    from .flow_types import FlowSolution, FlowStopped, integer_costs, integer_data, rounding_error, run_stoppable
    n_nodes = len(supplies)
    units = integer_data(supplies, None)
    unit = 1.0 if units is None else units[0]
    int_costs, scale = integer_costs(costs, min(2**53, 2**62 // (4 * (n_nodes + 2))))
    scaled = supplies if units is None else units[1].astype(np.float64)
    if tree is None:
        tree = (np.full(n_nodes, -1, np.int64), np.zeros(n_nodes, np.int64), np.zeros(n_nodes, np.int64))
    if stop is not None and stop():
        raise FlowStopped
    flow, pi, left, parent, pred, pred_dir = run_stoppable(
        network_simplex_warm, (tails, heads, int_costs, scaled), (0, *tree), stop)
    if left > 1e-9 * max(float(np.abs(scaled).max()), 1.0):
        raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
    flow = np.maximum(flow, 0.0, out=flow)
    flow *= unit
    sol = FlowSolution(flow, float(flow @ costs), -pi.astype(np.float64) / scale, "simplex",
                       rounding_error(flow, supplies, scale, n_nodes, path_arcs))
    return sol, (parent, pred, pred_dir)


def remap_tree(tree, old_keys, new_keys):
    """A tree of :func:`warm_flow` on arcs ``old_keys`` (sorted distinct arc keys) moved onto the
    arcs ``new_keys`` (sorted, a superset): arc indices follow their keys, artificial arcs shift."""
    parent, pred, pred_dir = tree
    m_old, m_new = len(old_keys), len(new_keys)
    real = pred < m_old
    moved = np.empty_like(pred)
    moved[real] = np.searchsorted(new_keys, old_keys[pred[real]])
    moved[~real] = pred[~real] - m_old + m_new
    return parent, moved, pred_dir
