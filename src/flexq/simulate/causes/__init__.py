"""What cost one simulation run the most, with the run's evidence and the change that addresses each cause.

Owns ``causes(run)``: a pure reading of a ``RunResult`` (the jobs' rows with their wait split and lost-job
evidence, the node pools' sizes over time, the ClusterQueues' quota reserved over time, Kueue's evictions) that
returns the few causes that lost the most jobs or cost the most wait, most costly first. Each cause is a plain
dict::

    {"code": "NodepoolSizeReached", "title": ..., "jobsLost": 4, "jobsDelayed": 9, "waitHours": 61.2,
     "evidence": "4 jobs deactivated by Kueue after ... dws-pool sat at its max of 16 nodes for 31.0 h while
                  12 more were asked for",
     "change": "raise dws-pool's max nodes to >= 28, or raise ProvisioningRequestConfig dws-config's
                retryStrategy.backoffLimitCount (3 now)",
     "knobs": [{"kind": "poolMax", "pool": "dws-pool", "value": 28},
               {"kind": "retryLimit", "config": "dws-config", "value": 6}]}

``knobs`` use the vocabulary of ``flexq simulate --sweep`` (``flexq.simulate.sweep``), so a cause's change can
be tried as is. The causes read:

- ``NodepoolSizeReached``: ProvisioningRequests failed because the (DWS) node pool was at its maximum;
- ``RequeuingLimit``/``PodsReadyTimeout``: Kueue's waitForPodsReady evicted jobs whose pods did not start in
  time (and deactivated those past the requeuing limit);
- ``StockOut``: admitted jobs whose pods the cloud refused capacity (a stock-out, or GCE quota);
- ``IdlePreferredFlavor``: jobs waited for a later flavor's provisioning (DWS) while the first flavor's quota
  had room for them (Kueue does not move a job back once it has reserved quota elsewhere);
- ``QuotaWait``: jobs waited for ClusterQueue quota (Kueue's own message names the flavor and resource);
- ``QuotaOverPool``: a flavor's accelerator quota is more than its node pool can hold, so admitted jobs wait
  for nodes the pool cannot add;
- ``DWSQueue``: the rest of the wait for DWS provisioning, the cloud's queue;
- ``RetryHoldsQuota`` (Kueue 0.19) / ``RetryLimitKept`` (Kueue 0.20.7): what the Kueue release does with an
  admission check in ``Retry`` (kueue#18785): 0.19 waits out the back-off holding the quota, and a check that
  applies to some flavors only (the tutorial's ``onFlavors: [dws]``) is dropped with the quota, so its retry
  count starts again and ``backoffLimitCount`` never ends the job; 0.20.7 releases the quota at once and the
  count survives the back-off, so a job whose requests keep failing is deactivated after the limit.

Must not import flexq.http.
"""

from __future__ import annotations

from typing import Any

from flexq.simulate.causes.capacity import dws_queue, idle_preferred, nodepool_size_reached, stockout
from flexq.simulate.causes.configuration import pods_cannot_start
from flexq.simulate.causes.queueing import pods_ready, quota, quota_over_pool, release
from flexq.simulate.run_result import RunResult

__all__ = ["causes", "MAX_CAUSES"]


MAX_CAUSES = 5


def causes(run: RunResult, kueue: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The causes that lost the most jobs or cost the most wait in ``run``, most costly first (at most
    ``MAX_CAUSES``). A mistake of configuration (pods the kubelet cannot start; the fallback on with no
    queue opted in) comes alone: a run whose jobs cannot start says nothing about capacity."""
    rows = run.jobs
    config = pods_cannot_start(run, rows)
    stock = stockout(run, rows)
    if stock is not None and stock["code"] == "FallbackNotOptedIn":
        config.append(stock)
    if config:
        config.sort(key=lambda c: (-c["jobsLost"], -c["waitHours"], c["code"]))
        return config[:MAX_CAUSES]
    found = [
        c
        for c in (
            nodepool_size_reached(run, rows),
            pods_ready(run, rows, kueue or {}),
            stock,
            idle_preferred(run, rows),
            quota(run, rows),
            quota_over_pool(run, rows),
            release(run, rows, kueue or {}),
        )
        if c is not None
    ]
    idle = next((c["waitHours"] for c in found if c["code"] == "IdlePreferredFlavor"), 0.0)
    dws = dws_queue(run, rows, idle)
    if dws is not None:
        found.append(dws)
    found.sort(key=lambda c: (-c["jobsLost"], -c["waitHours"], c["code"]))
    return found[:MAX_CAUSES]
