"""Why a workload waits, coded: Kueue's reasons and the cloud's, each with a one-line explanation and what to do.

Owns: ``REASONS`` (code -> ``Reason``) and ``explain(wl, prs, pod_events, now)``, a pure function over plain
Kubernetes JSON dicts (Kueue v1beta1 or v1beta2 Workloads, autoscaling.x-k8s.io ProvisioningRequests, core
Events about the workload's pods) that returns the ``Explanation`` of the one thing a workload waits for, or
None when it waits for nothing (running, finished). Kueue's codes are the reasons Kueue writes itself: the
``QuotaReserved=False`` reasons of ``UnadmittedWorkloadsObservability`` (``WaitingForQuota``,
``NoMatchingFlavor``, ``ExceedsMaxQuota``, ``AdmissionGated``, ``PendingEvaluation``, …), the ``Evicted``
reasons and the admission checks' states. The cloud's are the ProvisioningRequest's conditions
(``BookingExpired``, ``CapacityRevoked``, ``Failed``), DWS queueing (``Accepted``, not yet ``Provisioned``,
with the time waited), GCE's stock-out code (``ZONE_RESOURCE_POOL_EXHAUSTED``, read from the node pool's
``GCE_STOCKOUT`` condition or the cluster autoscaler's ``FailedScaleUp`` event) and spot preemption.

Used by ``flexq status`` and the dashboard alike; it works on objects read from a real cluster too.
Imports nothing from flexq but the clock's time parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from flexq.clock import format_duration, parse_time

__all__ = ["Reason", "Explanation", "REASONS", "CapacityRefusal", "classify_capacity", "explain", "reason"]


@dataclass(frozen=True)
class Reason:
    """A coded reason: who says it (``kueue`` or ``cloud``), what it means, what to do about it."""

    code: str
    source: str
    summary: str
    action: str


_R = [
    # Kueue: QuotaReserved=False reasons (pkg/workload: WorkloadQuotaReservedReason*)
    Reason(
        "PendingEvaluation",
        "kueue",
        "Kueue has not evaluated the workload yet, or its admission checks "
        "failed and it waits to be evaluated again.",
        "Wait for the next scheduling cycle; if it stays, look at the admission checks' messages.",
    ),
    Reason(
        "Pending",
        "kueue",
        "Kueue evaluated the workload and could not reserve quota for it; the detail is Kueue's message.",
        "Read the message: it names the flavor and resource that did not fit.",
    ),
    Reason(
        "Inadmissible",
        "kueue",
        "Kueue cannot queue the workload: its LocalQueue or ClusterQueue is missing or stopped (Kueue 0.19's "
        "reason; 0.20 says Misconfigured or Suspended); the message names which.",
        "Create the queue the message names, or set its stopPolicy back to None.",
    ),
    Reason(
        "Waiting",
        "kueue",
        "waitForPodsReady.blockAdmission: Kueue admits nothing until every admitted workload's pods are ready "
        "(Kueue 0.19's reason; 0.20 says WaitingForPodsReady).",
        "Wait for the admitted workloads' pods to start; see their events if they do not.",
    ),
    Reason(
        "WaitingForQuota",
        "kueue",
        "Every flavor the workload could use lacks free quota in its ClusterQueue (and its cohort).",
        "Wait for running workloads to finish, raise nominalQuota or allow borrowing in a cohort.",
    ),
    Reason(
        "NoMatchingFlavor",
        "kueue",
        "No ResourceFlavor of the ClusterQueue matches the pod sets' node "
        "selectors, affinity or tolerations.",
        "Fix the job's nodeSelector/tolerations or add a flavor whose nodeLabels/nodeTaints match.",
    ),
    Reason(
        "ExceedsMaxQuota",
        "kueue",
        "The workload asks for more than the ClusterQueue could ever give, even "
        "with all quota and borrowing.",
        "Ask for fewer resources or raise the ClusterQueue's quota.",
    ),
    Reason(
        "AdmissionGated",
        "kueue",
        "The workload is held by an admission gate (kueue.x-k8s.io/admission-gated-by).",
        "Remove the gate once whatever set it is done.",
    ),
    Reason(
        "Misconfigured",
        "kueue",
        "The workload's LocalQueue or its ClusterQueue does not exist, or the "
        "namespace does not match the ClusterQueue's namespaceSelector.",
        "Create the queue or fix spec.queueName (the job's kueue.x-k8s.io/queue-name label).",
    ),
    Reason(
        "Suspended",
        "kueue",
        "The LocalQueue or ClusterQueue is stopped or inactive (stopPolicy, a missing "
        "flavor or admission check).",
        "Resume the queue (stopPolicy: None) or create what it references.",
    ),
    Reason(
        "WaitingForPodsReady",
        "kueue",
        "waitForPodsReady.blockAdmission holds admissions until every admitted workload's pods are ready.",
        "Wait for the admitted workloads' pods to start.",
    ),
    Reason(
        "WaitingForPreemptedWorkloads",
        "kueue",
        "Kueue preempted workloads to make room and waits for them to release their quota.",
        "Wait: the preempted workloads are stopping.",
    ),
    Reason(
        "TopologyPlacementFailed",
        "kueue",
        "Topology-aware scheduling found no placement for the pod sets.",
        "Relax the topology request or free capacity in one domain.",
    ),
    Reason(
        "Deactivated",
        "kueue",
        "The workload is deactivated (spec.active=false), by a user or by Kueue "
        "after a rejected admission check or too many requeues.",
        "Fix the cause in the Evicted message, then set spec.active back to true or resubmit.",
    ),
    # Kueue: admission checks and evictions
    Reason(
        "AdmissionCheckPending",
        "kueue",
        "Quota is reserved; Kueue waits for the admission checks to be Ready before it admits.",
        "Wait for the check's controller (the message says what it waits for).",
    ),
    Reason(
        "AdmissionCheckRetry",
        "kueue",
        "An admission check asked to retry: Kueue releases the quota and tries again after a backoff.",
        "Wait for the retry; see the check's message for why it failed.",
    ),
    Reason(
        "Preempted",
        "kueue",
        "Kueue evicted the workload to make room for another.",
        "It is requeued and starts again when quota frees; give it a higher priority to avoid this.",
    ),
    Reason(
        "PodsReadyTimeout",
        "kueue",
        "The admitted workload's pods were not all ready within "
        "waitForPodsReady.timeout, so Kueue evicted and requeued it.",
        "Look at why the pods did not start (capacity, image, scheduling); it retries after a backoff.",
    ),
    Reason(
        "WaitingForPods",
        "kueue",
        "Admitted: the job is starting and Kueue waits for its pods to be ready.",
        "Wait; if pods stay Pending, see their events.",
    ),
    Reason(
        "ReactivatedNotRequeued",
        "kueue",
        "The workload was reactivated (spec.active=true) after Kueue deactivated it with a cause "
        "(Requeued=False DeactivatedDueTo...): Kueue 0.19 requeues only a bare Deactivated reason, so it is "
        "never admitted again (kueue#14874, fixed in 0.20).",
        "Delete the Workload (its job makes a fresh one, which queues) or upgrade Kueue to 0.20.",
    ),
    Reason(
        "Requeued",
        "kueue",
        "Evicted earlier; the workload waits out its requeue backoff.",
        "Wait until requeueAt; the Evicted condition says why it was evicted.",
    ),
    # the cloud
    Reason(
        "GCE_STOCKOUT",
        "cloud",
        "The zone has no capacity for the node pool's machines: the pods cannot be "
        "placed (GCE error code in the detail).",
        "Wait for capacity, fall back to another flavor (DWS, another zone) or lower the request.",
    ),
    Reason(
        "GCE_QUOTA_EXCEEDED",
        "cloud",
        "The project's Compute Engine quota for the machines (or their accelerators) is used up: the cluster "
        "autoscaler cannot add nodes until the quota is raised or other VMs go.",
        "Request a quota increase, or fall back to a flavor billed on another quota (DWS, spot); "
        "flexq fallback treats it as a stock-out.",
    ),
    Reason(
        "NodePoolMaxSize",
        "cloud",
        "The node pool is at its maximum size: the cluster autoscaler (or DWS) cannot add the nodes the "
        "workload needs.",
        "Raise the node pool's maximum node count, or lower the flavor's nominalQuota to what the pool holds.",
    ),
    Reason(
        "DWSQueued",
        "cloud",
        "The DWS flex-start ProvisioningRequest is accepted and queued: GKE provisions "
        "all nodes at once when capacity frees (up to 7 days).",
        "Wait; the time queued is in the detail. To stop waiting, delete the job (kubectl delete rayjob NAME): "
        "Kueue deletes its ProvisioningRequest with it.",
    ),
    Reason(
        "ProvisioningRequestPending",
        "cloud",
        "The ProvisioningRequest was created and the cluster autoscaler has not accepted it yet.",
        "Wait a few seconds; if it stays, check the request's class.",
    ),
    Reason(
        "BookingExpired",
        "cloud",
        "The provisioned capacity was not used within the booking time (10 minutes), so GKE released it.",
        "Make sure the pods start right after provisioning; Kueue retries.",
    ),
    Reason(
        "CapacityRevoked",
        "cloud",
        "GKE reclaimed the flex-start capacity (maxRunDurationSeconds reached).",
        "Checkpoint and resubmit, or ask for a longer maxRunDurationSeconds (up to 7 days).",
    ),
    Reason(
        "ProvisioningFailed",
        "cloud",
        "The ProvisioningRequest failed (wait time exceeded or rejected).",
        "Read the message; Kueue retries per the ProvisioningRequestConfig's retry strategy.",
    ),
    Reason(
        "SpotPreempted",
        "cloud",
        "A spot VM the workload ran on was preempted by Compute Engine.",
        "The job restarts when capacity returns; use on-demand or DWS for long runs.",
    ),
]
REASONS: dict[str, Reason] = {r.code: r for r in _R}
_EVICTION = {
    "Preempted": "Preempted",
    "PodsReadyTimeout": "PodsReadyTimeout",
    "AdmissionCheck": "AdmissionCheckRetry",
    "ClusterQueueStopped": "Suspended",
    "LocalQueueStopped": "Suspended",
}


# the cluster autoscaler's condition messages (ProvisioningRequest), as Kueue quotes them when it deactivates
_CLOUD_MESSAGES = (
    ("was reclaimed and is no longer available", "CapacityRevoked"),
    ("capacity booking for the provisioning request has expired", "BookingExpired"),
)
# what Kueue's provisioning check says of a ProvisioningRequest when it puts the check in Retry (its message
# then travels in the eviction's): the request is gone by the time the workload waits out the back-off
_RETRY_MESSAGES = (
    ("retrying after failure:", "ProvisioningFailed"),
    ("retrying after booking expired:", "BookingExpired"),
)


# The one reading of "the cloud refused capacity" (used by ``explain``, flexq fallback and flexq simulate): the
# cluster autoscaler's FailedScaleUp / NotTriggerScaleUp messages, GKE's visibility messageIds, GCE's error codes
# and the ProvisioningRequest's failure reasons, each put in one kind:
#   stockout  the zone has no machines now (GCE_STOCKOUT, ZONE_RESOURCE_POOL_EXHAUSTED, "GCE out of resources")
#   quota     the project's GCE quota is used up (QUOTA_EXCEEDED, "GCE quota exceeded")
#   pool-max  the node pool is at its maximum size ("max node group size reached", NodepoolSizeReached), or the
#             specific reservation it consumes is all in use ("specific reservation ... is insufficient")
#   backoff   the autoscaler backs off a node group after a failed scale-up (says nothing new by itself)
# A stock-out and a quota refusal both mean the flavor cannot grow now, whatever its quota in Kueue says; a
# pool at its maximum means the configuration caps it.
_CAPACITY_KINDS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "pool-max",
        "NodepoolSizeReached",
        re.compile(
            r"max node group size reached|NodepoolSizeReached|max nodepool size|would exceed its maximum of|"
            r"scale\.up\.error\.max\.node\.group|specific reservation \"[^\"]*\" is insufficient",
            re.I,
        ),
    ),
    (
        "quota",
        "GCE_QUOTA_EXCEEDED",
        re.compile(
            r"quota exceeded|QUOTA_EXCEEDED|scale\.up\.error\.quota\.exceeded|Quota '[^']*' exceeded", re.I
        ),
    ),
    (
        "stockout",
        "GCE_STOCKOUT",
        re.compile(
            r"GCE out of resources|RESOURCE_POOL_EXHAUSTED|GCE_STOCKOUT|does not have enough resources "
            r"available|stock-?out|scale\.up\.error\.out\.of\.resources|CapacityCheckFailed|"
            r"Capacity is not found|CapacityIsNotFound|CA could not find requested capacity",
            re.I,
        ),
    ),
    ("backoff", "", re.compile(r"in backoff after failed scale-up", re.I)),
)
_REFUSAL_CODES = {"stockout": "GCE_STOCKOUT", "quota": "GCE_QUOTA_EXCEEDED", "pool-max": "NodePoolMaxSize"}
_GCE_CODE = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")


@dataclass(frozen=True)
class CapacityRefusal:
    """The cloud's refusal of capacity, classified: ``kind`` (``stockout``, ``quota``, ``pool-max``,
    ``backoff``) and ``code`` (GCE's own all-caps code when the message carries one, else the kind's code)."""

    kind: str
    code: str

    @property
    def cannot_grow(self) -> bool:
        """The flavor's machines cannot be had now (a stock-out or the project's quota), whatever Kueue's quota."""
        return self.kind in ("stockout", "quota")


def classify_capacity(message: str) -> CapacityRefusal | None:
    """The kind of capacity refusal ``message`` states (None: not a refusal of capacity)."""
    for kind, code, pattern in _CAPACITY_KINDS:
        if pattern.search(message or ""):
            m = _GCE_CODE.search(message)
            own = m.group(1) if m and kind in ("stockout", "quota") else ""
            return CapacityRefusal(kind, own or code)
    return None


@dataclass(frozen=True)
class Explanation:
    """What one workload waits for: the coded reason and the detail (Kueue's or the cloud's own message)."""

    code: str
    detail: str

    @property
    def reason(self) -> Reason:
        return REASONS[self.code]

    def as_dict(self) -> dict[str, str]:
        r = self.reason
        return {
            "code": self.code,
            "source": r.source,
            "summary": r.summary,
            "action": r.action,
            "detail": self.detail,
        }


def reason(code: str) -> Reason:
    """The catalog entry of ``code`` (KeyError when unknown)."""
    return REASONS[code]


def _conds(obj: dict) -> dict[str, dict]:
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def _true(conds: dict[str, dict], t: str) -> bool:
    return conds.get(t, {}).get("status") == "True"


def _since(cond: dict | None, now: float) -> float:
    try:
        return max(0.0, now - parse_time((cond or {}).get("lastTransitionTime") or ""))
    except ValueError:
        return 0.0


def _mine(wl: dict, prs: Iterable[dict]) -> list[dict]:
    md = wl["metadata"]
    out = []
    for pr in prs:
        pm = pr.get("metadata") or {}
        if pm.get("namespace") != md.get("namespace"):
            continue
        owners = pm.get("ownerReferences") or []
        if any(o.get("kind") == "Workload" and o.get("name") == md["name"] for o in owners) or (
            not owners and pm.get("name", "").startswith(md["name"] + "-")
        ):
            out.append(pr)
    return sorted(out, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))


def _provisioning(pr: dict, now: float) -> Explanation:
    c = _conds(pr)
    name = pr["metadata"]["name"]
    for t, code in (
        ("Failed", "ProvisioningFailed"),
        ("CapacityRevoked", "CapacityRevoked"),
        ("BookingExpired", "BookingExpired"),
    ):
        if _true(c, t):
            return Explanation(
                code, f"ProvisioningRequest {name}: {c[t].get('reason', t)}: {c[t].get('message', '')}"
            )
    if _true(c, "Accepted"):
        waited = _since(c["Accepted"], now)
        msg = c.get("Provisioned", {}).get("message") or c["Accepted"].get("message", "")
        return Explanation(
            "DWSQueued", f"ProvisioningRequest {name} queued for {format_duration(waited)}: {msg}"
        )
    return Explanation("ProvisioningRequestPending", f"ProvisioningRequest {name} created, not accepted yet")


def explain(
    wl: dict,
    prs: Iterable[dict] = (),
    pod_events: Iterable[dict] = (),
    now: float = 0.0,
    stockouts: dict[str, str] | None = None,
) -> Explanation | None:
    """The one thing ``wl`` waits for now (None when it waits for nothing).

    ``prs``: ProvisioningRequests (any; the workload's own are picked); ``pod_events``: Events about the
    workload's pods (FailedScaleUp, node preemption); ``stockouts``: GCE's message per flavor-selected node
    pool name that is stocked out now (read from the node pool's ``GCE_STOCKOUT`` condition), when known."""
    c = _conds(wl)
    if _true(c, "Finished"):
        return None
    mine = _mine(wl, prs)
    if (wl.get("spec") or {}).get("active") is False:
        msg = (c.get("Evicted") or c.get("DeactivationTarget") or {}).get("message") or "spec.active is false"
        for phrase, code in _CLOUD_MESSAGES:  # Kueue carries the ProvisioningRequest's own words
            if phrase in msg.lower():
                return Explanation(code, msg)
        return Explanation("Deactivated", msg)
    if _true(c, "Admitted"):
        if _true(c, "PodsReady"):
            return None
        if mine:
            last = _provisioning(mine[-1], now)
            if last.code in ("BookingExpired", "CapacityRevoked", "ProvisioningFailed"):
                return last
        events = list(pod_events)
        for ev in sorted(events, key=lambda e: e.get("lastTimestamp") or "", reverse=True):
            if ev.get("reason") == "Preempted" and "spot" in (ev.get("message") or ""):
                return Explanation("SpotPreempted", ev.get("message", ""))
        for pool, msg in sorted((stockouts or {}).items()):
            return Explanation("GCE_STOCKOUT", f"node pool {pool}: {msg}")
        for ev in events:
            if ev.get("reason") in ("FailedScaleUp", "NotTriggerScaleUp"):
                refusal = classify_capacity(ev.get("message") or "")
                if refusal is not None and refusal.kind in _REFUSAL_CODES:
                    return Explanation(_REFUSAL_CODES[refusal.kind], ev.get("message", ""))
        return Explanation("WaitingForPods", c.get("PodsReady", {}).get("message") or "waiting for the pods")
    if _true(c, "QuotaReserved"):
        checks = (wl.get("status") or {}).get("admissionChecks") or []
        retry = [k for k in checks if k.get("state") == "Retry"]
        if mine:
            last = _provisioning(mine[-1], now)
            if last.code in ("BookingExpired", "CapacityRevoked", "ProvisioningFailed"):
                return last
        if retry:
            return Explanation(
                "AdmissionCheckRetry", f"{retry[0].get('name')}: {retry[0].get('message', '')}"
            )
        if mine:
            return _provisioning(mine[-1], now)
        pending = [k for k in checks if k.get("state") != "Ready"]
        detail = "; ".join(f"{k.get('name')}: {k.get('state')} ({k.get('message', '')})" for k in pending)
        return Explanation("AdmissionCheckPending", detail or c.get("Admitted", {}).get("message", ""))
    # no quota reservation
    rq = c.get("Requeued")
    ev = c.get("Evicted") or {}
    if (
        rq is not None
        and rq.get("status") == "False"
        and str(rq.get("reason", "")).startswith("DeactivatedDueTo")
    ):
        # active again, but Requeued=False kept a deactivation's cause: Kueue 0.19 never requeues it (0.20 clears
        # it at once, so a workload seen here on 0.20 is requeued within a reconcile)
        return Explanation("ReactivatedNotRequeued", rq.get("message") or ev.get("message", ""))
    if rq is not None and rq.get("status") == "False":
        code = _EVICTION.get(ev.get("reason", ""), "Requeued")
        if mine and code == "AdmissionCheckRetry":
            last = _provisioning(mine[-1], now)
            if last.code in ("BookingExpired", "CapacityRevoked", "ProvisioningFailed"):
                return last
        if code == "AdmissionCheckRetry":
            code = next(
                (c for phrase, c in _RETRY_MESSAGES if phrase in (ev.get("message") or "").lower()), code
            )
        at = ((wl.get("status") or {}).get("requeueState") or {}).get("requeueAt")
        return Explanation(
            code, (ev.get("message") or rq.get("message", "")) + (f"; requeued at {at}" if at else "")
        )
    qr = c.get("QuotaReserved")
    if qr is None:
        return Explanation("PendingEvaluation", "not evaluated by Kueue yet")
    code = qr.get("reason", "") or "PendingEvaluation"
    if code not in REASONS:
        return Explanation("PendingEvaluation", f"{qr.get('reason')}: {qr.get('message', '')}")
    return Explanation(code, qr.get("message", ""))
