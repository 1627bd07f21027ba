"""GKE custom ComputeClasses as the cluster autoscaler applies them: which node pool is which priority.

Owns, as pure functions over objects:
- ``class_of_pod`` (``nodeSelector: cloud.google.com/compute-class``) and ``class_of_pool`` (a manual pool is
  bound to a class by the node label ``cloud.google.com/compute-class=NAME``; GKE's docs pair it with the taint
  ``cloud.google.com/compute-class=NAME:NoSchedule`` that pods selecting the class tolerate automatically);
- ``rule_index(cc, pool)``: the first ``priorities[]`` rule the pool satisfies — ``nodepools`` by name, else
  every attribute the rule sets must hold: ``machineFamily``, ``machineType``, ``tpu {type, count, topology}``
  (accelerator label, chips per node, topology), ``gpu``, ``spot``, ``flexStart.enabled``,
  ``reservations.affinity``, ``maxRunDurationSeconds`` (flex-start run duration), ``minCores``,
  ``minMemoryGb``. A bound pool no rule matches is a last resort under ``whenUnsatisfiable: ScaleUpAnyway``
  and never used under ``DoNotScaleUp`` (the default). Pool auto-creation (``nodePoolAutoCreation``) is not
  modelled: rules are satisfied by existing pools only.
- ``backoff_after(streak)``: how long a stocked-out option is skipped (cluster-autoscaler's node-group backoff:
  5 minutes, doubling per failure in a row up to 30, forgotten after 3 h without a failure);
- ``flex_wait(rule)``: how long a flex-start rule waits for capacity before the autoscaler falls back
  (``capacityCheckWaitTimeSeconds``; GKE's default for flex-start rules, about 3 minutes [inferred from
  Google's published examples and skills notes]).
Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.wellknown import COMPUTE_CLASS_LABEL

__all__ = [
    "STOCKOUT_BACKOFF_SECONDS",
    "MAX_BACKOFF_SECONDS",
    "BACKOFF_RESET_SECONDS",
    "FLEX_DEFAULT_WAIT_SECONDS",
    "backoff_after",
    "class_of_pod",
    "class_of_pool",
    "flex_wait",
    "rule_index",
    "rules",
]

STOCKOUT_BACKOFF_SECONDS = 300.0  # cluster-autoscaler --initial-node-group-backoff-duration=5m
MAX_BACKOFF_SECONDS = 1800.0  # --max-node-group-backoff-duration=30m
BACKOFF_RESET_SECONDS = 3 * 3600.0  # --node-group-backoff-reset-timeout=3h
FLEX_DEFAULT_WAIT_SECONDS = 180.0


def class_of_pod(pod: dict[str, Any]) -> str | None:
    sel = (pod.get("spec") or {}).get("nodeSelector") or {}
    name = sel.get(COMPUTE_CLASS_LABEL)
    return name if isinstance(name, str) and name else None


def class_of_pool(pool: dict[str, Any]) -> str | None:
    name = ((pool["spec"].get("config") or {}).get("labels") or {}).get(COMPUTE_CLASS_LABEL)
    return name or None


def rules(cc: dict[str, Any]) -> list[dict[str, Any]]:
    return list((cc.get("spec") or {}).get("priorities") or [])


def _matches(rule: dict[str, Any], pool: dict[str, Any]) -> bool:
    spec, twin = pool["spec"], pool["status"]
    if rule.get("nodepools") is not None:
        return spec["name"] in rule["nodepools"]
    cfg = spec.get("config") or {}
    mt = catalog.machine_type(cfg.get("machineType", "e2-medium"))
    model = twin.get("provisioningModel")
    if rule.get("machineFamily") and rule["machineFamily"] != mt.family:
        return False
    if rule.get("machineType") and rule["machineType"] != mt.name:
        return False
    if rule.get("minCores") is not None and mt.vcpus < int(rule["minCores"]):
        return False
    if rule.get("minMemoryGb") is not None and mt.memory_gb < float(rule["minMemoryGb"]):
        return False
    tpu = rule.get("tpu")
    if tpu:
        topology = (spec.get("placementPolicy") or {}).get("tpuTopology") or (
            mt.single_host_topologies[0] if mt.single_host_topologies else ""
        )
        if (
            mt.tpu is None
            or tpu.get("type") != mt.tpu.accelerator_label
            or tpu.get("topology") != topology
            or int(tpu.get("count") or 0) != mt.chips
        ):
            return False
    gpu = rule.get("gpu")
    if gpu and (gpu.get("type") != mt.gpu_type or int(gpu.get("count") or 0) != mt.gpus):
        return False
    if rule.get("spot") is not None and bool(rule["spot"]) != (model == catalog.SPOT):
        return False
    flex = (rule.get("flexStart") or {}).get("enabled")
    if flex is not None and bool(flex) != (model == catalog.FLEX_START):
        return False
    if model == catalog.FLEX_START and twin.get("queued"):
        return False  # queued-provisioning pools take only ProvisioningRequests
    affinity = (rule.get("reservations") or {}).get("affinity")
    if affinity in ("Specific", "AnyBestEffort"):
        pool_aff = (cfg.get("reservationAffinity") or {}).get("consumeReservationType", "")
        want = "SPECIFIC_RESERVATION" if affinity == "Specific" else "ANY_RESERVATION"
        if pool_aff != want:
            return False
    mrd = rule.get("maxRunDurationSeconds")
    if mrd is not None and model == catalog.FLEX_START:
        have = cfg.get("maxRunDuration")
        seconds = int(float(have.rstrip("s"))) if have else catalog.FLEX_START_MAX_RUN_SECONDS
        if seconds != int(mrd):
            return False
    return True


def rule_index(cc: dict[str, Any], pool: dict[str, Any]) -> int | None:
    """Priority of ``pool`` in ``cc`` (0 = most preferred), or None when the class may not use it."""
    rs = rules(cc)
    for i, rule in enumerate(rs):
        if _matches(rule, pool):
            return i
    if ((cc.get("spec") or {}).get("whenUnsatisfiable") or "DoNotScaleUp") == "ScaleUpAnyway":
        return len(rs)
    return None


def backoff_after(streak: int) -> float:
    """Cluster-autoscaler's exponential node-group backoff for the ``streak``-th failure in a row (≥ 1):
    5 min, 10, 20, then 30 min."""
    return min(STOCKOUT_BACKOFF_SECONDS * 2 ** max(streak - 1, 0), MAX_BACKOFF_SECONDS)


def flex_wait(rule: dict[str, Any] | None) -> float:
    """Seconds a flex-start rule waits for capacity before the next rule is tried (0 for other rules)."""
    if not rule or not (rule.get("flexStart") or {}).get("enabled"):
        return 0.0
    wait = rule.get("capacityCheckWaitTimeSeconds")
    return float(wait) if wait is not None else FLEX_DEFAULT_WAIT_SECONDS
