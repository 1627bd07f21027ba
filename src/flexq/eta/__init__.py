"""``flexq eta``: when will each waiting job start? From the cluster's own state and history, its 80 % interval
corrected online from the starts it sees (``flexq.eta.calibration``; the measured coverage is in docs/eta.md).

    from flexq import Twin
    from flexq.eta import estimate, state_from_twin
    forecast = estimate(state_from_twin(twin))          # every waiting job's ETA
    forecast.find("rayjob-tpu-v6e-dws-2").median        # seconds from now (None: not within the horizon)

The state (``flexq.forecast.state``: queues, flavors, admission checks, Workloads and their jobs, ProvisioningRequests,
node pools and nodes, the autoscaler's events; read through the Kubernetes API, so a real cluster's works as the
twin's) is loaded into a fresh virtual twin and carried forward under a capacity model fitted to the cluster's
own history (``flexq.forecast.fit``), several replicas with different draws (``flexq.eta.scenario``: each replica is
a ``flexq simulate`` study); a waiting job's ETA is the distribution of its start over the replicas
(``flexq.eta.estimate``). ``flexq.eta.service`` keeps a live twin's ETAs fresh in the background. Documented in
``docs/eta.md``.
"""

from __future__ import annotations

from flexq.eta.estimate import Forecast, JobEta, estimate, fmt_eta, naive_eta
from flexq.eta.read import state_from_twin
from flexq.forecast.config import EtaConfig
from flexq.forecast.fit import fit
from flexq.forecast.model import FittedCapacity
from flexq.forecast.state import ClusterState, infer_pools, pools_from_gke

__all__ = [
    "ClusterState",
    "EtaConfig",
    "Forecast",
    "JobEta",
    "FittedCapacity",
    "estimate",
    "fit",
    "fmt_eta",
    "infer_pools",
    "naive_eta",
    "pools_from_gke",
    "state_from_twin",
]
