"""Scale-out on dask.distributed (extra ``dist``): instance batches and scenario chunks on workers.

- :func:`solve_many` / :func:`solve_list`: one Result per input, solved as tasks;
- :func:`local_client` (a LocalCluster of N one-thread processes) and :func:`connect` (a
  scheduler address) give a ``distributed.Client``;
- :func:`share_cache` (every worker on one Numba cache folder) and :func:`warm_batch` (compile a
  batch's kernels into it once, in the client process; ``solve_many(..., warm=True)`` does both);
- :func:`use_client`: within the block, every chunked scenario run (the stochastic split, the
  inventory DP, the min-plus engine) fans its chunks out to the client's workers, with the same
  statistics to the bit as in one process.

The engine-neutral half lives in :mod:`solvopt.core.tasks` (the core never needs dask); this
package adds the batch API. See docs/distributed.md.
"""
from __future__ import annotations

from solvopt.core.tasks import TaskError, current_client, local_client, map_tasks, use_client

from .batch import error_result, solve_list, solve_many, solve_one
from .cache import families_of, share_cache, warm_batch, worker_cache_dirs
from .cluster import client_for, connect

__all__ = ["TaskError", "client_for", "connect", "current_client", "error_result", "families_of", "local_client",
           "map_tasks", "share_cache", "solve_list", "solve_many", "solve_one", "use_client", "warm_batch",
           "worker_cache_dirs"]
