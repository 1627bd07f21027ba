"""The explicit list of what flexq.kube contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns this package's controllers for one cluster — the scheduler, the kubelet,
the batch/v1 Job controller, the apps/v1 Deployment and ReplicaSet controllers, the registration of hand-made Nodes, each Node's Lease, the API server's event
TTL, the clusterrole aggregation and the seeds real clients expect (``kubernetes`` Service, each namespace's ``default`` ServiceAccount and
``kube-root-ca.crt``) — sharing one ``ClusterCache``
(created first, so its watch sees every event before the controllers' mappers do). ``bootstrap(store)``
creates the two system PriorityClasses the API server makes at start (nodes come from GKE node pools or from
tests) and the default RBAC policy. ``executors(settings)`` returns the simulated executor, which accepts every pod
and so must stay last in ``ctx.executors`` (the assembly puts kuberay's first).
"""

from __future__ import annotations

from flexq.api.apiextensions import definition
from flexq.api.scheduling import system_priority_classes
from flexq.clock import format_time
from flexq.kube.cache import ClusterCache
from flexq.kube.cluster_seeds import ClusterSeeds
from flexq.kube.clusterrole_aggregation import ClusterRoleAggregation, bootstrap_policy
from flexq.kube.deployment_controller import DeploymentController
from flexq.kube.events import EventTTL
from flexq.kube.job_controller import JobController
from flexq.kube.kubelet import Kubelet
from flexq.kube.node_leases import NodeLeases
from flexq.kube.nodes import NodeRegistration
from flexq.kube.replicaset_controller import ReplicaSetController
from flexq.kube.scheduler import Scheduler
from flexq.kube.simulated import SimulatedExecutor
from flexq.runtime import Context, Controller, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Store


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster."""
    cache = ClusterCache(ctx.store)
    ctrls: list[Controller] = [
        Scheduler(ctx, cache),
        Kubelet(ctx, cache),
        JobController(ctx, cache),
        DeploymentController(ctx, cache),
        ReplicaSetController(ctx, cache),
        NodeRegistration(ctx),
        NodeLeases(ctx),
        EventTTL(ctx, ctx.settings.event_ttl_seconds),
        ClusterSeeds(ctx),
        ClusterRoleAggregation(ctx),
    ]
    return ctrls


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (idempotent): the system PriorityClasses (the API server's
    ``scheduling/bootstrap-system-priority-classes`` hook), the default RBAC roles and bindings (its
    ``rbac/bootstrap-roles`` hook) and, as a cluster with Kueue, KubeRay (its addon) and
    GKE's own CRDs installed has them, the established CustomResourceDefinition of each custom kind served
    (``kubectl get crd``); each created if missing."""
    for pc in system_priority_classes():
        if store.peek("PriorityClass", pc["metadata"]["name"]) is None:
            store.create(pc, take=True)
    bootstrap_policy(store)
    install_definitions(store)


def _versions(crd: dict) -> list[tuple]:
    return [
        (v.get("name"), v.get("served"), v.get("storage"))
        for v in (crd.get("spec") or {}).get("versions") or []
    ]


def install_definitions(store: Store) -> None:
    """A CustomResourceDefinition, established, for each custom kind this cluster serves that has none; one whose
    versions (which are served, which is stored) are not the kind's is replaced by the kind's, as an upgrade of
    the operator that installed it does (a twin restarted with another Kueue release)."""
    now = format_time(store.clock.now())
    for info in store.registry:
        if not info.custom or info.key in store.disabled:
            continue
        have = store.peek("CustomResourceDefinition", f"{info.plural}.{info.group}")
        if have is not None:
            want = definition(info)
            if _versions(have) != _versions(want):
                store.update({**have, "spec": want["spec"]})
            continue
        crd = definition(info)
        status = crd.pop("status")
        for c in status["conditions"]:
            c["lastTransitionTime"] = now
        created = store.create(crd, take=True)
        store.update_status({**created, "status": status}, take=True)


def executors(settings: TwinSettings) -> list[PodExecutor]:
    """Pod executors this package provides: the simulated one (accepts every pod, so it goes last)."""
    return [SimulatedExecutor()]
