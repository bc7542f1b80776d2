"""Clients: a scheduler address (a cluster somebody runs) or a LocalCluster started for the run."""
from __future__ import annotations

import contextlib
import logging

from solvopt.core.errors import BackendUnavailable
from solvopt.core.tasks import local_client, require_distributed


def connect(address: str, timeout: float = 5.0):
    """A ``distributed.Client`` on the scheduler at ``address`` (``tcp://host:8786``); one-line error if unreachable."""
    distributed = require_distributed()
    try:
        return distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a malformed address
        raise BackendUnavailable(f"cannot reach the dask scheduler at {address}: {exc}") from None


@contextlib.contextmanager
def client_for(workers: int | None = None, scheduler: str | None = None):
    """The client a run asked for: ``scheduler`` (an address), else ``workers`` > 1 (a LocalCluster),
    else None (this process). Closed (and a LocalCluster shut down) after the block."""
    if scheduler is not None:
        client = connect(scheduler)
        try:
            yield client
        finally:
            client.close()
    elif workers is not None and workers > 1:
        # the nanny's "worker process still alive after 4 s, killing" at shutdown says nothing to a user
        logging.getLogger("distributed.nanny").setLevel(logging.ERROR)
        with local_client(workers) as client:
            yield client
    else:
        yield None
