"""Kueue's manager configuration, read as the real controller reads it.

Owns: ``KueueConfig`` (waitForPodsReady with requeuingStrategy, feature gates, integrations,
manageJobsWithoutQueueName), its v0.19 defaults (``apis/config/v1beta2/defaults.go``: waitForPodsReady
on with a 30 m timeout unless ``DisableWaitForPodsReady``; backoff 60 s base, 3600 s max; v1beta1
configurations keep the old opt-in ``enable``; v0.20's ``unscheduledTimeout`` behind the alpha gate
``WaitForPodsReadyUnscheduledTimeout``, a gate 0.19.2 does not have), the feature-gate defaults of the twin's
Kueue release (given by the cache, from ``flexq.api.kueue_versions``; a gate the release lacks stays off), and
parsing the ``controller_manager_config.yaml`` key
of ConfigMap ``kueue-manager-config`` in ``kueue-system`` (Go duration strings such as ``5m``, ``1h30m``).
Must not import anything in flexq.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from flexq.api.wellknown import KUEUE_CONFIG_KEY, KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE

__all__ = [
    "CONFIG_KEY",
    "CONFIG_NAME",
    "CONFIG_NAMESPACE",
    "KueueConfig",
    "parse_duration",
    "shipped_configuration",
]

CONFIG_NAME, CONFIG_NAMESPACE, CONFIG_KEY = KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE, KUEUE_CONFIG_KEY

# v0.19 feature gate defaults that change behaviour modelled here (a twin's Kueue release brings its own table,
# ``flexq.api.kueue_versions``, which the cache passes as ``gates``).
DEFAULT_GATES = {
    "ElasticJobsViaWorkloadSlices": True,
    "FlavorFungibility": True,
    "PartialAdmission": True,
    "PrioritySortingWithinCohort": True,
    "CleanupProvisioningRequestsOnEviction": True,
    "UnadmittedWorkloadsObservability": True,
    "DisableWaitForPodsReady": False,
    "FlavorFungibilityPreserveScanProgress": True,
    "WaitForPodsReadyUnscheduledTimeout": False,  # alpha in v0.20 (KEP-13502)
}


def shipped_configuration() -> dict:
    """The ``Configuration`` Kueue v0.19.2's release manifests ship in ConfigMap ``kueue-manager-config``
    (``config/components/manager/controller_manager_config.yaml``, its commented-out parts left out): what a
    change to Kueue's configuration starts from, so that a whole ConfigMap applied to a cluster keeps every
    other setting as the install had it."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "Cohort.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {
            "frameworks": [
                "batch/job",
                "kubeflow.org/mpijob",
                "ray.io/rayjob",
                "ray.io/raycluster",
                "ray.io/rayservice",
                "jobset.x-k8s.io/jobset",
                "workload.codeflare.dev/appwrapper",
                "trainer.kubeflow.org/trainjob",
                "pod",
                "deployment",
                "statefulset",
                "leaderworkerset.x-k8s.io/leaderworkerset",
            ]
        },
    }


_DUR = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | int | float | None, default: float) -> float:
    """Go ``time.ParseDuration`` (seconds); numbers are taken as seconds."""
    if text is None or text == "":
        return default
    if isinstance(text, int | float):
        return float(text)
    s = str(text).strip()
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _DUR.finditer(s):
        if m.start() != pos:
            raise ValueError(f'time: invalid duration "{s}"')
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f'time: invalid duration "{s}"')
    return total


@dataclass
class KueueConfig:
    """The parts of ``Configuration`` flexq's Kueue uses."""

    wait_for_pods_ready: bool = True
    pods_ready_timeout: float = 1800.0
    pods_ready_recovery_timeout: float = 1800.0
    pods_ready_unscheduled_timeout: float = 0.0  # v0.20 ``unscheduledTimeout``; 0 = off
    block_admission: bool = False
    requeuing_timestamp: str = "Eviction"
    backoff_limit_count: int | None = None
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    manage_jobs_without_queue_name: bool = False
    frameworks: tuple[str, ...] = ("batch/job", "ray.io/rayjob")
    enable_cluster_queue_resources: bool = False  # metrics.enableClusterQueueResources
    gates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES))
    # the gates the release has (its defaults' keys): one it does not have is off whatever the configuration
    # says (``WaitForPodsReadyUnscheduledTimeout`` on 0.19.2); None: every gate set is taken
    known: frozenset[str] | None = None

    def gate(self, name: str) -> bool:
        """Whether a feature gate is on."""
        if self.known is not None and name not in self.known:
            return False
        return bool(self.gates.get(name, False))

    @property
    def unscheduled_timeout(self) -> float:
        """``waitForPodsReady.unscheduledTimeout`` in force (gate ``WaitForPodsReadyUnscheduledTimeout``), else 0."""
        if not self.wait_for_pods_ready or not self.gate("WaitForPodsReadyUnscheduledTimeout"):
            return 0.0
        return self.pods_ready_unscheduled_timeout

    @classmethod
    def from_configmap(cls, cm: Mapping | None, gates: Mapping[str, bool] | None = None) -> KueueConfig:
        """From ConfigMap ``kueue-manager-config`` (None → defaults); ``gates``: the release's gate defaults
        (v0.19's when None)."""
        data = ((cm or {}).get("data") or {}).get(CONFIG_KEY)
        if not data:
            return cls(
                gates=dict(DEFAULT_GATES if gates is None else gates),
                known=None if gates is None else frozenset(gates),
            )
        return cls.from_dict(yaml.safe_load(data) or {}, gates)

    @classmethod
    def from_dict(cls, doc: Mapping, defaults: Mapping[str, bool] | None = None) -> KueueConfig:
        """From a ``Configuration`` document (config.kueue.x-k8s.io v1beta1 or v1beta2); ``defaults``: the
        release's gate defaults (v0.19's when None)."""
        cfg = cls(known=None if defaults is None else frozenset(defaults))
        gates = dict(DEFAULT_GATES if defaults is None else defaults)
        for k, v in (doc.get("featureGates") or {}).items():
            gates[k] = bool(v)
        cfg.gates = gates
        v1beta1 = str(doc.get("apiVersion", "")).endswith("/v1beta1")
        w = doc.get("waitForPodsReady")
        if v1beta1:
            cfg.wait_for_pods_ready = bool(w and w.get("enable"))
            default_timeout = 300.0
        else:
            cfg.wait_for_pods_ready = not gates.get("DisableWaitForPodsReady", False)
            default_timeout = 1800.0
        w = w or {}
        cfg.pods_ready_timeout = parse_duration(w.get("timeout"), default_timeout) or default_timeout
        cfg.pods_ready_recovery_timeout = parse_duration(w.get("recoveryTimeout"), cfg.pods_ready_timeout)
        cfg.pods_ready_unscheduled_timeout = parse_duration(w.get("unscheduledTimeout"), 0.0)
        cfg.block_admission = bool(w.get("blockAdmission", False))
        rs = w.get("requeuingStrategy") or {}
        cfg.requeuing_timestamp = rs.get("timestamp") or "Eviction"
        blc = rs.get("backoffLimitCount")
        cfg.backoff_limit_count = None if blc is None else int(blc)
        cfg.backoff_base_seconds = int(rs.get("backoffBaseSeconds") or 60)
        cfg.backoff_max_seconds = int(rs.get("backoffMaxSeconds") or 3600)
        cfg.manage_jobs_without_queue_name = bool(doc.get("manageJobsWithoutQueueName", False))
        cfg.enable_cluster_queue_resources = bool(
            (doc.get("metrics") or {}).get("enableClusterQueueResources")
        )
        fw = (doc.get("integrations") or {}).get("frameworks")
        if fw:
            cfg.frameworks = tuple(fw)
        return cfg
