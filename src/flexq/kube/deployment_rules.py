"""Pure pieces of the Deployment and ReplicaSet controllers (``pkg/controller/deployment/util``,
``pkg/controller/replicaset``, ``pkg/controller/controller_utils.go``).

Owns the fixed strings (the ``pod-template-hash`` label, the ``deployment.kubernetes.io/revision``,
``desired-replicas`` and ``max-replicas`` annotations, the condition reasons and messages), ``template_hash``
(a stable hash of a pod template: FNV-32a over its canonical JSON and the collision count, its decimal digits
encoded with ``rand.SafeEncodeString``'s alphabet, as ``controller.ComputeHash`` makes it — upstream hashes Go's
``spew`` print of the struct, so the value is not upstream's, but it has upstream's shape and stability), the
ReplicaSet a Deployment makes (``new_replicaset``) and the pod a ReplicaSet makes (``pod_from_template``),
``resolve_fenceposts`` (maxSurge rounds up, maxUnavailable down, both 0 makes unavailable 1), pod availability
(``IsPodAvailable``: Ready for ``minReadySeconds``), the order in which surplus pods go (``ActivePods``), and
``rollout_message`` (what ``kubectl rollout status`` prints, for tests and the docs), and the Deployment's
conditions and progress (``set_condition``, ``complete``, ``progressing``, ``timed_out``, ``stuck_wake``: when the
progress deadline passes). Pure; must not import the
store, the runtime or other domains.
"""

from __future__ import annotations

import json
import math

from flexq.api.jsoncopy import clone
from flexq.clock import format_time, parse_time
from flexq.semantics.conditions import is_true

TEMPLATE_HASH = "pod-template-hash"
ANN_REVISION = "deployment.kubernetes.io/revision"
ANN_DESIRED = "deployment.kubernetes.io/desired-replicas"
ANN_MAX = "deployment.kubernetes.io/max-replicas"
ANN_REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
# annotations a Deployment does not pass on to its ReplicaSets (skipCopyAnnotation)
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        ANN_REVISION,
        ANN_REVISION_HISTORY,
        ANN_DESIRED,
        ANN_MAX,
    }
)
MAX_PODS_PER_SYNC = 500  # burstReplicas
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet

# conditions
AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"
MIN_AVAILABLE, MIN_UNAVAILABLE = "MinimumReplicasAvailable", "MinimumReplicasUnavailable"
NEW_RS_CREATED, FOUND_NEW_RS = "NewReplicaSetCreated", "FoundNewReplicaSet"
RS_UPDATED, NEW_RS_AVAILABLE, TIMED_OUT = (
    "ReplicaSetUpdated",
    "NewReplicaSetAvailable",
    "ProgressDeadlineExceeded",
)
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"
MSG_AVAILABLE = "Deployment has minimum availability."
MSG_UNAVAILABLE = "Deployment does not have minimum availability."


def template_hash(template: dict, collision_count: int | None = None) -> str:
    """``controller.ComputeHash``'s shape: FNV-32a of the template (and the collision count), encoded."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in str(h).encode())


def without_hash(template: dict) -> dict:
    """The template with the ``pod-template-hash`` label taken out (``EqualIgnoreHash``'s view)."""
    labels = (template.get("metadata") or {}).get("labels") or {}
    if TEMPLATE_HASH not in labels:
        return template
    out = dict(template)
    out["metadata"] = dict(template["metadata"])
    out["metadata"]["labels"] = {k: v for k, v in labels.items() if k != TEMPLATE_HASH}
    if not out["metadata"]["labels"]:
        del out["metadata"]["labels"]
    return out


def _canonical(template: dict) -> dict:
    t = without_hash(template)
    meta = t.get("metadata") or {}
    if "labels" not in meta and not meta:
        t = {k: v for k, v in t.items() if k != "metadata"}
    return t


def same_template(a: dict, b: dict) -> bool:
    """``EqualIgnoreHash``: the two pod templates are equal but for ``pod-template-hash``."""
    return _canonical(a) == _canonical(b)


def revision(obj: dict) -> int:
    raw = (obj["metadata"].get("annotations") or {}).get(ANN_REVISION)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def _scaled(value: object, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            pct = int(value[:-1])
        except ValueError:
            return 0
        v = pct * total / 100
        return math.ceil(v) if round_up else math.floor(v)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def resolve_fenceposts(dep: dict) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) of a RollingUpdate Deployment (``ResolveFenceposts``)."""
    spec = dep.get("spec") or {}
    ru = ((spec.get("strategy") or {}).get("rollingUpdate")) or {}
    desired = desired_replicas(dep)
    surge = _scaled(ru.get("maxSurge", "25%"), desired, True)
    unavailable = _scaled(ru.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def desired_replicas(obj: dict) -> int:
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def is_rolling(dep: dict) -> bool:
    return ((dep.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def max_unavailable(dep: dict) -> int:
    """``MaxUnavailable``: 0 for Recreate or no replicas, else the resolved value, at most ``replicas``."""
    desired = desired_replicas(dep)
    if not is_rolling(dep) or desired == 0:
        return 0
    return min(resolve_fenceposts(dep)[1], desired)


def max_surge(dep: dict) -> int:
    return resolve_fenceposts(dep)[0] if is_rolling(dep) else 0


def new_replicaset(dep: dict, pod_hash: str, replicas: int, rev: int) -> dict:
    """The ReplicaSet ``<deployment>-<hash>`` a Deployment makes for its current template."""
    dm, spec = dep["metadata"], dep.get("spec") or {}
    template = clone(spec.get("template") or {})
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), TEMPLATE_HASH: pod_hash}
    selector = clone(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), TEMPLATE_HASH: pod_hash}
    annotations = {k: v for k, v in (dm.get("annotations") or {}).items() if k not in _NOT_COPIED}
    annotations[ANN_REVISION] = str(rev)
    annotations.update(replica_annotations(dep))
    rs_spec: dict = {"replicas": replicas, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{dm['name']}-{pod_hash}",
            "namespace": dm.get("namespace") or "default",
            "labels": dict(tmeta["labels"]),
            "annotations": annotations,
            "ownerReferences": [owner_ref(dep)],
        },
        "spec": rs_spec,
    }


def replica_annotations(dep: dict) -> dict[str, str]:
    """``desired-replicas`` and ``max-replicas`` (``SetReplicasAnnotations``)."""
    desired = desired_replicas(dep)
    return {ANN_DESIRED: str(desired), ANN_MAX: str(desired + max_surge(dep))}


def owner_ref(owner: dict) -> dict:
    return {
        "apiVersion": owner.get("apiVersion") or "apps/v1",
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"].get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(rs: dict, name: str) -> dict:
    """The Pod a ReplicaSet creates (``GetPodFromTemplate``): the template's labels, annotations and
    finalizers, an owner reference with ``controller: true``; no status."""
    rm = rs["metadata"]
    tmpl = (rs.get("spec") or {}).get("template") or {}
    tmeta = tmpl.get("metadata") or {}
    meta: dict = {
        "name": name,
        "namespace": rm.get("namespace") or "default",
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [owner_ref(rs)],
    }
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": clone(tmpl.get("spec") or {})}


def ready_since(pod: dict) -> float | None:
    """When the pod became Ready, if it is."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            if c.get("status") != "True":
                return None
            at = c.get("lastTransitionTime")
            return parse_time(at) if at else 0.0
    return None


def available_in(pod: dict, min_ready: int, now: float) -> float | None:
    """Seconds until the pod is available (``IsPodAvailable``): 0 if it is, None if it is not Ready."""
    since = ready_since(pod)
    if since is None:
        return None
    return max(0.0, since + min_ready - now) if min_ready else 0.0


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pod: dict) -> tuple:
    """``controller.ActivePods``' order, the pod to delete first sorting first: unassigned before assigned,
    Pending before Unknown before Running, not Ready before Ready, Ready more recently before longer, more
    restarts first, created more recently before older."""
    st = pod.get("status") or {}
    restarts = sum(int(c.get("restartCount", 0)) for c in st.get("containerStatuses") or [])
    since = ready_since(pod)
    created = pod["metadata"].get("creationTimestamp")
    return (
        bool((pod.get("spec") or {}).get("nodeName")),
        _PHASE_RANK.get(st.get("phase", "Pending"), 0),
        is_true(pod, "Ready"),
        -(since or 0.0),
        -restarts,
        -(parse_time(created) if created else 0.0),
    )


def rollout_message(dep: dict) -> tuple[str, bool]:
    """What ``kubectl rollout status`` says of ``dep`` (``DeploymentStatusViewer.Status``) and whether it is
    done; an exceeded progress deadline is reported as the error kubectl exits with."""
    name, st, spec = dep["metadata"]["name"], dep.get("status") or {}, dep.get("spec") or {}
    if dep["metadata"].get("generation", 0) > st.get("observedGeneration", 0):
        return "Waiting for deployment spec update to be observed...", False
    for c in st.get("conditions") or []:
        if c.get("type") == PROGRESSING and c.get("reason") == TIMED_OUT:
            return f'deployment "{name}" exceeded its progress deadline', False
    want, updated = desired_replicas(dep), st.get("updatedReplicas", 0)
    if spec.get("replicas") is not None and updated < want:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {updated} out of {want} new replicas have '
            "been updated...",
            False,
        )
    if st.get("replicas", 0) > updated:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {st.get("replicas", 0) - updated} old replicas '
            "are pending termination...",
            False,
        )
    if st.get("availableReplicas", 0) < updated:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {st.get("availableReplicas", 0)} of {updated} '
            "updated replicas are available...",
            False,
        )
    return f'deployment "{name}" successfully rolled out', True


# -- the Deployment's conditions and progress (deploymentutil: SetDeploymentCondition, DeploymentComplete,
# DeploymentProgressing, DeploymentTimedOut; the controller's requeueStuckDeployment) ---------------------------
MAX_INT32 = 2**31 - 1


def has_deadline(dep: dict) -> bool:
    """``HasProgressDeadline``: ``progressDeadlineSeconds`` set and not the "never" of MaxInt32."""
    pds = (dep.get("spec") or {}).get("progressDeadlineSeconds")
    return pds is not None and pds != MAX_INT32


def condition(status: dict, ctype: str) -> dict | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)


def set_condition(status: dict, ctype: str, cstatus: str, reason: str, message: str, now: float) -> None:
    """``SetDeploymentCondition``: the same status and reason leaves the condition alone; the same status keeps
    its ``lastTransitionTime``."""
    cur = condition(status, ctype)
    if cur is not None and cur.get("status") == cstatus and cur.get("reason") == reason:
        return
    t = format_time(now)
    new = {
        "type": ctype,
        "status": cstatus,
        "lastUpdateTime": t,
        "lastTransitionTime": cur["lastTransitionTime"]
        if cur is not None and cur.get("status") == cstatus
        else t,
        "reason": reason,
        "message": message,
    }
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != ctype] + [new]


def remove_condition(status: dict, ctype: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != ctype]


def complete(dep: dict, status: dict) -> bool:
    """``DeploymentComplete``."""
    desired = desired_replicas(dep)
    return (
        int(status.get("updatedReplicas") or 0) == desired
        and int(status.get("replicas") or 0) == desired
        and int(status.get("availableReplicas") or 0) == desired
        and int(status.get("observedGeneration") or 0) >= dep["metadata"].get("generation", 1)
    )


def progressing(old: dict, new: dict) -> bool:
    """``DeploymentProgressing``."""

    def g(s: dict, f: str) -> int:
        return int(s.get(f) or 0)

    return (
        g(new, "updatedReplicas") > g(old, "updatedReplicas")
        or g(new, "replicas") - g(new, "updatedReplicas") < g(old, "replicas") - g(old, "updatedReplicas")
        or g(new, "readyReplicas") > g(old, "readyReplicas")
        or g(new, "availableReplicas") > g(old, "availableReplicas")
    )


def timed_out(dep: dict, status: dict, now: float) -> bool:
    """``DeploymentTimedOut``."""
    cond = condition(status, PROGRESSING)
    if not has_deadline(dep) or cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    at = cond.get("lastUpdateTime")
    return at is not None and parse_time(at) + dep["spec"]["progressDeadlineSeconds"] < now


def stuck_wake(dep: dict, status: dict, now: float) -> float | None:
    """``requeueStuckDeployment``: when the progress deadline would pass."""
    cond = condition(status, PROGRESSING)
    if not has_deadline(dep) or cond is None or cond.get("reason") in (NEW_RS_AVAILABLE, TIMED_OUT):
        return None
    if complete(dep, status) or not cond.get("lastUpdateTime"):
        return None
    left = parse_time(cond["lastUpdateTime"]) + dep["spec"]["progressDeadlineSeconds"] - now
    return max(left, 0.0) + 0.001
