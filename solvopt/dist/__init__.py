"""Scale-out on dask.distributed (extra ``dist``): instance batches and scenario chunks on workers.

- :func:`solve_many` / :func:`solve_list`: one Result per input, solved as tasks;
- :func:`local_client` (a LocalCluster of N one-thread processes) and :func:`connect` (a
  scheduler address) give a ``distributed.Client``;
- :func:`use_client`: within the block, every chunked scenario run (the stochastic split, the
  inventory DP, the min-plus engine) fans its chunks out to the client's workers, with the same
  statistics to the bit as in one process.

The engine-neutral half lives in :mod:`solvopt.core.tasks` (the core never needs dask); this
package adds the batch API. See docs/distributed.md.
"""
from __future__ import annotations

from solvopt.core.tasks import TaskError, current_client, local_client, map_tasks, use_client

from .batch import error_result, solve_list, solve_many, solve_one
from .cluster import client_for, connect

__all__ = ["TaskError", "client_for", "connect", "current_client", "error_result", "local_client", "map_tasks",
           "solve_list", "solve_many", "solve_one", "use_client"]
