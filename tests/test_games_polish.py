"""The exact polish's forest traversal against scipy's connected components and breadth-first order."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from solvopt.games.polish import forest_traversal


def test_forest_traversal_matches_scipy():
    """Random forests over buyers and goods (isolated nodes too): the same component labels as scipy, every
    node after its parent in the order, each parent joined to its node by the edge named."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n, m = (int(x) for x in rng.integers(1, 40, 2))
        w = sp.coo_matrix(rng.random((n, m)) * (rng.random((n, m)) < 0.2))
        tree = minimum_spanning_tree(sp.coo_matrix((w.data, (w.row, n + w.col)), shape=(n + m, n + m)).tocsr()).tocoo()
        buyer, good = np.minimum(tree.row, tree.col), np.maximum(tree.row, tree.col) - n
        count, label = connected_components(tree, directed=False)
        got, got_count, order, pred, pred_edge = forest_traversal(buyer, good, n, n + m)
        assert got_count == count
        np.testing.assert_array_equal(got, label)
        assert sorted(order) == list(range(n + m))
        position = np.empty(n + m, dtype=int)
        position[order] = np.arange(n + m)
        roots = pred < 0
        assert roots.sum() == count and np.array_equal(np.flatnonzero(roots), np.unique(label, return_index=True)[1])
        child = np.flatnonzero(~roots)
        assert np.all(position[pred[child]] < position[child])
        ends = np.stack([buyer[pred_edge[child]], n + good[pred_edge[child]]], axis=1)
        assert np.all(np.sort(ends, axis=1) == np.sort(np.stack([pred[child], child], axis=1), axis=1))
