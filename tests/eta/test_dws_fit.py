"""Issue 46: a DWS wait that ended when its full pool had room again is not counted to the nodes' arrival.

The Workloads keep no ProvisioningRequest (it goes with the eviction or the end), so the model reads a DWS wait
from a job's quota reservation to its admission. When the DWS pool was full just before the job's nodes came, its
grant came somewhere while the pool was full — and the forward run adds the time the pool stays full again (a
grant looks again every minute). The midpoint of that span was taken, which counted DWS waits twice on a tight
pool; the wait is now censored where the pool became full (it was at least that long)."""

from __future__ import annotations

import random

from flexq.clock import format_time
from flexq.forecast.config import EtaConfig
from flexq.forecast.fit import fit
from flexq.forecast.state import ClusterState

T0 = 1_800_000_000.0
H = 3600.0


def _wl(name: str, held: float, admitted: float | None, finished: float | None) -> dict:
    conds = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": format_time(held)}]
    if admitted is not None:
        conds.append({"type": "Admitted", "status": "True", "lastTransitionTime": format_time(admitted)})
        conds.append(
            {"type": "PodsReady", "status": "True", "lastTransitionTime": format_time(admitted + 10)}
        )
    if finished is not None:
        conds.append({"type": "Finished", "status": "True", "lastTransitionTime": format_time(finished)})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"namespace": "default", "name": name, "creationTimestamp": format_time(held - 1)},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "w", "count": 4}]},
        "status": {
            "conditions": conds,
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "w", "count": 4, "flavors": {"google.com/tpu": "dws"}}],
            },
        },
    }


def _state(waits: list[float], run: float, gap: float) -> tuple[ClusterState, float]:
    """A DWS pool of one 4-node slice; a job reserves quota every ``gap`` seconds, is granted after its own wait
    but gets its nodes only when the one before it has ended (and its nodes gone). Returns the state and the
    mean of the true waits."""
    wls, free_at = [], T0
    for i, w in enumerate(waits):
        held = T0 + i * gap
        made = max(held + w, free_at)  # the pool has room again when the job before has ended, its nodes gone
        admitted = made + 90.0  # node provisioning (the prior's midpoint)
        end = admitted + run
        wls.append(_wl(f"j{i}", held, admitted, end))
        free_at = end + 600.0  # the cluster autoscaler's scale-down delay
    now = free_at + H
    data = {
        "now": now,
        "node_pools": [
            {
                "name": "dws-pool",
                "machineType": "ct6e-standard-4t",
                "tpuTopology": "4x4",
                "autoscaling": {"min": 0, "max": 4},
                "queuedProvisioning": True,
            }
        ],
        "flavors": [
            {
                "metadata": {"name": "dws"},
                "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": "dws-pool"}},
            }
        ],
        "clusterqueues": [
            {
                "metadata": {"name": "cq"},
                "spec": {
                    "resourceGroups": [
                        {"coveredResources": ["google.com/tpu"], "flavors": [{"name": "dws"}]}
                    ],
                    "admissionChecksStrategy": {
                        "admissionChecks": [{"name": "dws-prov", "onFlavors": ["dws"]}]
                    },
                },
            }
        ],
        "admission_checks": [
            {
                "metadata": {"name": "dws-prov"},
                "spec": {
                    "controllerName": "kueue.x-k8s.io/provisioning-request",
                    "parameters": {"name": "dws-config"},
                },
            }
        ],
        "provisioning_configs": [
            {
                "metadata": {"name": "dws-config"},
                "spec": {"provisioningClassName": "queued-provisioning.gke.io"},
            }
        ],
        "workloads": wls,
    }
    return ClusterState.from_dict(data), sum(waits) / len(waits)


def test_a_tight_pool_does_not_lengthen_the_fitted_dws_wait() -> None:
    for seed in range(5):
        rng = random.Random(seed)
        waits = [rng.expovariate(1 / 600.0) for _ in range(12)]  # DWS grants within minutes
        # a job every 40 minutes, each holding the pool an hour: the pool is full for most of the grants
        state, true_mean = _state(waits, run=H, gap=2400.0)
        model = fit(state, EtaConfig())
        # the jobs after the first waited hours for the pool, not for DWS: the fitted mean stays near the true
        # waits (with its one pseudo-observation of the 30-minute prior), far from the hours the pool was full
        assert model.dws_mean <= max(3 * true_mean, 1800.0), (model.dws_mean / 60, true_mean / 60)
        assert model.dws_bounded >= len(waits) // 2
