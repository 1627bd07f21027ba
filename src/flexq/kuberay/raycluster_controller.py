"""The RayCluster controller: head Service, head Pod, worker Pods per replica, and ``RayCluster.status``.

Owns (one writer): ``RayCluster.status`` (``state``, ``desiredWorkerReplicas``, ``availableWorkerReplicas``,
``readyWorkerReplicas``, ``desiredCPU``/``desiredMemory``/``desiredGPU``/``desiredTPU``, ``head``, ``endpoints``,
conditions ``HeadPodReady``, ``RayClusterProvisioned``, ``RayClusterSuspended``), and the Pods and the
``<cluster>-head-svc`` Service it creates. Semantics follow KubeRay's ``raycluster_controller.go``:

1. a suspended cluster (``spec.suspend``) has no pods; state ``suspended``;
2. the head Service and one head Pod; a head Pod that ended is deleted and made again;
3. per worker group, ``replicas`` clamped to ``[minReplicas, maxReplicas]`` replicas, each ``numOfHosts``
   pods created and deleted together (one TPU slice); a replica with an ended pod is deleted whole;
   ``scaleStrategy.workersToDelete`` names go first when shrinking;
4. ``state: ready`` once every desired pod is Running and Ready (it then stays ready, as in KubeRay).

Pods are only created here; the kube scheduler binds them and the kubelet runs them through the executors.
Must not import kube, kueue or gke (objects only).
"""

from __future__ import annotations

from flexq.api.jsoncopy import ByIdentity
from flexq.api.quantity import format_quantity, parse_quantity
from flexq.api.scheme import BUILT
from flexq.api.wellknown import RESOURCE_TPU
from flexq.clock import format_time
from flexq.errors import Forbidden, Invalid
from flexq.runtime import Controller, Result, Watch, predicates
from flexq.store.store import WatchEvent

from . import names, pods


def _cluster_of_pod(ev: WatchEvent) -> list:
    labels = ev.object["metadata"].get("labels") or {}
    name = labels.get(names.LABEL_CLUSTER)
    return [(ev.object["metadata"].get("namespace", ""), name)] if name else []


def pod_ready(pod: dict) -> bool:
    """Running with condition Ready=True."""
    st = pod.get("status") or {}
    ok = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
    return st.get("phase") == "Running" and ok


def pod_ended(pod: dict) -> bool:
    """Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def desired_replicas(group: dict) -> int:
    """``replicas`` clamped to ``[minReplicas, maxReplicas]`` (0 if the group is suspended)."""
    if group.get("suspend"):
        return 0
    lo, hi = group.get("minReplicas", 0) or 0, group.get("maxReplicas", 2**31 - 1)
    reps = group.get("replicas")
    reps = lo if reps is None else reps
    return max(lo, min(hi, reps))


def _sum_resources(cluster: dict) -> dict[str, str]:
    """desiredCPU/Memory/GPU/TPU over the head and every desired worker pod."""
    totals = {
        "cpu": parse_quantity(0),
        "memory": parse_quantity(0),
        "nvidia.com/gpu": parse_quantity(0),
        RESOURCE_TPU: parse_quantity(0),
    }
    spec = cluster["spec"]
    entries = [(spec["headGroupSpec"].get("template") or {}, 1)]
    for g in spec.get("workerGroupSpecs") or []:
        entries.append((g.get("template") or {}, desired_replicas(g) * (g.get("numOfHosts") or 1)))
    for template, count in entries:
        for c in (template.get("spec") or {}).get("containers") or []:
            res = c.get("resources") or {}
            merged = {**(res.get("requests") or {}), **(res.get("limits") or {})}
            for k in totals:
                if k in merged:
                    totals[k] += parse_quantity(merged[k]) * count
    return {
        "desiredCPU": format_quantity(totals["cpu"]),
        # a Quantity sum keeps the first term's format: the BinarySI 4Gi + 4 x 16Gi prints as 68Gi
        "desiredMemory": format_quantity(totals["memory"], binary=True),
        "desiredGPU": format_quantity(totals["nvidia.com/gpu"]),
        "desiredTPU": format_quantity(totals[RESOURCE_TPU]),
    }


# the totals depend on the spec alone: remembered for the stored spec (status writes keep the same object)
_SUM_RESOURCES = ByIdentity(lambda spec: _sum_resources({"spec": spec}), size=1024)


_CLUSTER_CHANGED = predicates.any_of(
    predicates.generation_changed, predicates.labels_changed, predicates.annotations_changed
)


_POD_METADATA_UNREAD = frozenset({"resourceVersion", "managedFields", "generation"})


def _pod_status_read(pod: dict) -> tuple:
    """What the controller reads of a pod's status: its phase, its Ready condition (status and reason), its IP
    and container statuses (the head's address and readiness reason). Not its other conditions."""
    st = pod.get("status") or {}
    ready = next(
        ((c.get("status"), c.get("reason")) for c in st.get("conditions") or () if c.get("type") == "Ready"),
        None,
    )
    return (st.get("phase"), ready, st.get("podIP"), st.get("containerStatuses"))


def _pod_read_changed(ev: WatchEvent) -> bool:
    """KubeRay declares ``Owns(&corev1.Pod{})`` with no predicate (raycluster_controller.go ``SetupWithManager``);
    an update of a pod that leaves what the reconcile reads of it as it was — its metadata but the
    resourceVersion, and ``_pod_status_read`` — is dropped (a scheduler's PodScheduled, a binding: not its spec):
    the reconcile would build the same status. A pod of no RayCluster maps to nothing anyway."""
    if ev.type != "MODIFIED" or ev.old is None:
        return True
    old, new = ev.old, ev.object
    if not (
        (new["metadata"].get("labels") or {}).get(names.LABEL_CLUSTER)
        or (old["metadata"].get("labels") or {}).get(names.LABEL_CLUSTER)
    ):
        return False
    return _pod_status_read(old) != _pod_status_read(new) or predicates.metadata_changed(
        old["metadata"], new["metadata"], _POD_METADATA_UNREAD
    )


class RayClusterController(Controller):
    """Creates and deletes a RayCluster's Pods and Service; writes ``RayCluster.status``."""

    name = "kuberay-raycluster"

    def watches(self) -> list[Watch]:
        # KubeRay's ``For(&RayCluster{}, predicate.Or(GenerationChanged, LabelChanged, AnnotationChanged))``: a
        # create or delete, or an update of the spec (``generation``; a deletion mark bumps it too), the labels
        # or the annotations. The controller's own status writes do not wake it again (its Pods' changes do).
        return [
            Watch("RayCluster", predicate=_CLUSTER_CHANGED),
            Watch("Pod", _cluster_of_pod, predicate=_pod_read_changed),
        ]

    def reconcile(self, key) -> Result | None:
        ns, name = key
        stored = self.store.peek("RayCluster", name, ns)  # read-only
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            return None
        # a shallow copy: only its top-level ``status`` is ever replaced (spec and metadata are read)
        cluster = dict(stored)
        owned = self.store.peek_list("Pod", ns, labels={names.LABEL_CLUSTER: name})  # read-only
        if cluster["spec"].get("suspend"):
            for p in owned:
                self._delete_pod(p)
            return self._write_status(cluster, [], suspended=True)
        # 1. head Service and head Pod
        self._ensure_service(cluster)
        heads = [p for p in owned if (p["metadata"].get("labels") or {}).get(names.LABEL_NODE_TYPE) == "head"]
        for p in heads:
            if pod_ended(p):
                self._delete_pod(p)
        heads = [p for p in heads if not pod_ended(p)]
        for extra in heads[1:]:
            self._delete_pod(extra)
        if not heads:
            pname = f"{name}-head-{names.rand_suffix(self.ctx.rng('kuberay'))}"
            pod = pods.head_pod(cluster, name=pname)  # built for this call: the store keeps it (take)
            try:
                # read-only from here; admitted: the API server defaults (and validates) a Pod built from a custom
                # resource's template, which no one defaulted as a Pod's
                heads = [self.store.create(pod, admission=BUILT, take=True)]
            except (Forbidden, Invalid) as err:  # KubeRay asks with generateName: the refused pod has no name
                why = err.message.replace(f'"{pname}"', f'"{name}-head-"', 1)
                self.events.record(
                    cluster, "Warning", "FailedToCreateHeadPod", f"Failed to create head Pod {ns}/, {why}"
                )
                raise
            self.events.record(cluster, "Normal", "CreatedHeadPod", f"Created head Pod {ns}/{pname}")
        # 2. worker groups, replica by replica
        workers = [
            p for p in owned if (p["metadata"].get("labels") or {}).get(names.LABEL_NODE_TYPE) == "worker"
        ]
        live = list(heads[:1])
        groups = {g["groupName"]: g for g in cluster["spec"].get("workerGroupSpecs") or []}
        for p in workers:
            if (p["metadata"].get("labels") or {}).get(names.LABEL_GROUP) not in groups:
                self._delete_pod(p)
        for gname, group in groups.items():
            live += self._reconcile_group(
                cluster,
                group,
                [p for p in workers if (p["metadata"].get("labels") or {}).get(names.LABEL_GROUP) == gname],
            )
        return self._write_status(cluster, live, suspended=False)

    # -- pieces ------------------------------------------------------------------------------------

    def _delete_pod(self, pod: dict) -> None:
        if not pod["metadata"].get("deletionTimestamp"):
            self.store.delete("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"])

    def _ensure_service(self, cluster: dict) -> None:
        name = names.head_service_name(cluster["metadata"]["name"])
        if self.store.peek("Service", name, cluster["metadata"]["namespace"]) is None:
            self.store.create(
                pods.head_service(cluster, name=name, cluster_name=cluster["metadata"]["name"]),
                admission=BUILT,  # a built-in object the API server defaults (sessionAffinity...)
                take=True,  # built for this call
            )

    def _reconcile_group(self, cluster: dict, group: dict, group_pods: list[dict]) -> list[dict]:
        """Keep ``desired_replicas`` whole replicas of ``numOfHosts`` pods; returns the live pods."""
        hosts = group.get("numOfHosts") or 1
        replicas: dict[str, list[dict]] = {}
        for p in group_pods:
            rname = (p["metadata"].get("labels") or {}).get(names.LABEL_REPLICA_NAME, p["metadata"]["name"])
            replicas.setdefault(rname, []).append(p)
        # A replica with an ended pod is broken: the slice is deleted whole (multi-host atomicity).
        for rname, rpods in list(replicas.items()):
            if any(pod_ended(p) for p in rpods) or len(rpods) > hosts:
                for p in rpods:
                    self._delete_pod(p)
                del replicas[rname]
        want = desired_replicas(group)
        to_delete = set(((group.get("scaleStrategy") or {}).get("workersToDelete")) or [])
        if len(replicas) > want:

            def order(item: tuple[str, list[dict]]) -> tuple:
                rname, rpods = item
                named = any(p["metadata"]["name"] in to_delete for p in rpods)
                ready = all(pod_ready(p) for p in rpods)
                return (not named, ready, rpods[0]["metadata"].get("creationTimestamp", ""), rname)

            for rname, rpods in sorted(replicas.items(), key=order)[: len(replicas) - want]:
                for p in rpods:
                    self._delete_pod(p)
                del replicas[rname]
        rng = self.ctx.rng("kuberay")
        cname = cluster["metadata"]["name"]
        used = {
            int((rp[0]["metadata"].get("labels") or {}).get(names.LABEL_REPLICA_INDEX, "0"))
            for rp in replicas.values()
        }
        for rname, rpods in list(replicas.items()):  # a replica missing hosts (deleted by hand): refill
            have = {
                int((p["metadata"].get("labels") or {}).get("ray.io/worker-group-host-index", "0"))
                for p in rpods
            }
            index = int((rpods[0]["metadata"].get("labels") or {}).get(names.LABEL_REPLICA_INDEX, "0"))
            for h in sorted(set(range(hosts)) - have):
                rpods.append(self._create_worker(cluster, group, rname, index, h, rng))
        while len(replicas) < want:
            index = min(set(range(len(used) + 1)) - used)
            used.add(index)
            rname = f"{cname}-{group['groupName']}-{names.rand_suffix(rng)}"
            replicas[rname] = [
                self._create_worker(cluster, group, rname, index, h, rng) for h in range(hosts)
            ]
        return [p for rp in replicas.values() for p in rp]

    def _create_worker(self, cluster: dict, group: dict, rname: str, index: int, host: int, rng) -> dict:
        pname = f"{cluster['metadata']['name']}-{group['groupName']}-worker-{names.rand_suffix(rng)}"
        pod = pods.worker_pod(
            cluster, group, name=pname, replica_name=rname, replica_index=index, host_index=host
        )
        try:  # the pod is built for this call: the store keeps it (take); the result is read-only
            return self.store.create(pod, admission=BUILT, take=True)  # defaulted, as the head
        except (Forbidden, Invalid) as err:  # asked with generateName (as KubeRay does): named by it
            meta = cluster["metadata"]
            why = err.message.replace(f'"{pname}"', f'"{pname[: -len(pname.rsplit("-", 1)[1])]}"', 1)
            self.events.record(
                cluster,
                "Warning",
                "FailedToCreateWorkerPod",
                f"Failed to create worker Pod for the cluster {meta['namespace']}/{meta['name']}, {why}",
            )
            raise

    def _write_status(self, cluster: dict, live: list[dict], *, suspended: bool) -> Result | None:
        old = cluster.get("status") or {}
        st = dict(old)
        groups = cluster["spec"].get("workerGroupSpecs") or []
        desired = sum(desired_replicas(g) * (g.get("numOfHosts") or 1) for g in groups)
        workers = [
            p for p in live if (p["metadata"].get("labels") or {}).get(names.LABEL_NODE_TYPE) == "worker"
        ]
        head = next(
            (p for p in live if (p["metadata"].get("labels") or {}).get(names.LABEL_NODE_TYPE) == "head"),
            None,
        )
        st.update(_SUM_RESOURCES(cluster["spec"]))
        st.update(
            {
                "desiredWorkerReplicas": desired,
                "minWorkerReplicas": sum(
                    (g.get("minReplicas") or 0) * (g.get("numOfHosts") or 1) for g in groups
                ),
                "maxWorkerReplicas": sum(
                    min(g.get("maxReplicas", 2**31 - 1), 2**31 - 1) * (g.get("numOfHosts") or 1)
                    for g in groups
                ),
                "availableWorkerReplicas": sum(
                    1 for p in workers if (p.get("status") or {}).get("phase") == "Running"
                ),
                "readyWorkerReplicas": sum(1 for p in workers if pod_ready(p)),
                "observedGeneration": cluster["metadata"].get("generation", 1),
            }
        )
        now = self.ctx.now()
        all_ready = (
            head is not None
            and pod_ready(head)
            and len(workers) == desired
            and all(pod_ready(p) for p in workers)
        )
        if suspended:
            st["state"] = "suspended"
            st.pop("head", None)
        elif all_ready and old.get("state") != "ready":
            st["state"] = "ready"
            st["stateTransitionTimes"] = {
                **(old.get("stateTransitionTimes") or {}),
                "ready": format_time(now),
            }
        elif old.get("state") == "suspended":
            st.pop("state", None)
        if head is not None:
            svc_name = names.head_service_name(cluster["metadata"]["name"])
            svc = self.store.peek("Service", svc_name, cluster["metadata"]["namespace"])  # read-only
            cluster_ip = ((svc or {}).get("spec") or {}).get("clusterIP", "")
            pod_ip = (head.get("status") or {}).get("podIP", "")
            st["head"] = {  # getHeadServiceIPAndName: a headless head Service's IP is the head pod's
                "podName": head["metadata"]["name"],
                "podIP": pod_ip,
                "serviceName": svc_name,
                "serviceIP": pod_ip if cluster_ip == "None" else cluster_ip,
            }
            st["endpoints"] = {
                "client": str(names.PORT_CLIENT),
                "dashboard": str(names.PORT_DASHBOARD),
                "gcs-server": str(names.PORT_GCS),
                "metrics": str(names.PORT_METRICS),
            }
        st["conditions"] = _conditions(
            old.get("conditions") or [],
            now,
            suspended=suspended,
            head=_head_ready_reason(head),
            provisioned=st.get("state") == "ready",
        )
        st["lastUpdateTime"] = old.get("lastUpdateTime") if st == old else format_time(now)
        if st != old:
            cluster["status"] = st  # new top level; nested parts shared with the stored version (read-only)
            self.store.update_status(cluster, take=True)
        return None


def _head_ready_reason(head: dict | None) -> tuple[bool, str]:
    """``FindHeadPodReadyCondition``: the head pod's Ready condition, its reason (``HeadPodRunningAndReady`` when
    ready without one; for ``ContainersNotReady`` the first waiting container's reason), ``Unknown`` without
    one, ``HeadPodNotFound`` without a head pod."""
    if head is None:
        return False, "HeadPodNotFound"
    st = head.get("status") or {}
    for c in st.get("conditions") or []:
        if c.get("type") != "Ready":
            continue
        ok = c.get("status") == "True"
        reason = c.get("reason") or ("HeadPodRunningAndReady" if ok else "Unknown")
        if reason == "ContainersNotReady":
            waiting = [
                ((cs.get("state") or {}).get("waiting") or {}).get("reason")
                for cs in st.get("containerStatuses") or []
                if not cs.get("ready")
            ]
            reason = next((w for w in waiting if w), reason)
        return ok, reason
    return False, "Unknown"


def _conditions(
    old: list[dict], now: float, *, suspended: bool, head: tuple[bool, str], provisioned: bool
) -> list[dict]:
    want = {
        "HeadPodReady": head,
        "RayClusterProvisioned": (
            provisioned,
            "AllPodRunningAndReadyFirstTime" if provisioned else "RayClusterPodsProvisioning",
        ),
        "RayClusterSuspended": (suspended, "RayClusterSuspended" if suspended else "RayClusterNotSuspended"),
    }
    by_type = {c["type"]: c for c in old}
    out = []
    for ctype, (ok, reason) in want.items():
        status = "True" if ok else "False"
        cur = by_type.get(ctype)
        if ctype == "RayClusterProvisioned" and cur and cur.get("status") == "True":
            out.append(cur)  # KubeRay: provisioned once, stays provisioned
            continue
        if cur and cur.get("status") == status and cur.get("reason") == reason:
            out.append(cur)
        else:
            out.append(
                {
                    "type": ctype,
                    "status": status,
                    "reason": reason,
                    "message": "",
                    "lastTransitionTime": format_time(now),
                }
            )
    return out
