"""The apps/v1 ReplicaSet controller (kube-controller-manager's ``replicaset`` controller).

Owns ReplicaSet ``status`` (``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas``,
``observedGeneration``, the ``ReplicaFailure`` condition: ``FailedCreate`` with the API server's refusal while
pods cannot be made), the pods it creates (``<rs>-<5 chars>`` from the ``replicaset-controller`` RNG stream,
as the API server names a ``generateName`` of ``<rs>-``; the template's labels, annotations and spec, an owner
reference with ``controller: true`` and ``blockOwnerDeletion``, so ``store.gc`` takes them with the ReplicaSet)
and the events ``SuccessfulCreate`` / ``FailedCreate`` (``Error creating: <refusal>``, the pod named by its
``generateName``) / ``SuccessfulDelete``. Each reconcile (``syncReplicaSet``):

1. The pods it controls (its uid in their controller reference), active ones only (not terminal, not being
   deleted: ``FilterActivePods``).
2. Too few: create the missing ones, at most 500 a sync (``burstReplicas``), in slow-start batches of 1, 2,
   4, ... that stop after a batch with a refusal. A refusal (Pod Security, quota, validation) is a
   ``FailedCreate`` event and the ReplicaSet's ``ReplicaFailure`` condition, and the next try waits a back-off
   (5 ms doubling to 1000 s, the controller queue's ``DefaultControllerRateLimiter``) whatever wakes the
   ReplicaSet meanwhile: a refused pod never makes the twin spin at one instant. Too many: delete the surplus,
   those ``ActivePods`` ranks first (unscheduled, pending, not ready, newest).
3. Status: ``availableReplicas`` counts pods Ready for ``minReadySeconds``; a pod Ready but not yet available
   wakes the ReplicaSet when it will be.

Pods are not adopted or released by selector (a pod the ReplicaSet did not make is not counted): the twin's
ReplicaSets are made by its Deployment controller, which never leaves orphans behind. Must not import other
domain packages.
"""

from __future__ import annotations

from collections.abc import Iterable

from flexq.errors import AlreadyExists, Forbidden, Invalid, NotFound
from flexq.kube import deployment_rules as rules
from flexq.kube.cache import ClusterCache, controller_owner, is_terminal
from flexq.kube.client_limit import ClientRateLimit
from flexq.runtime import Context, Controller, Result, Watch
from flexq.semantics.conditions import is_true, set_core_condition
from flexq.store.store import WatchEvent

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"
BACKOFF_BASE, BACKOFF_MAX = 0.005, 1000.0  # workqueue.DefaultControllerRateLimiter's per-item back-off
Key = tuple[str, str]
KEEP = "\x00keep"  # what ``_manage`` returns when it tried nothing (in back-off): the condition stays


def _owner_rs(ev: WatchEvent) -> Iterable[Key]:
    ref = controller_owner(ev.object)
    if ref is None or ref.get("kind") != "ReplicaSet":
        return []
    return [(ev.object["metadata"].get("namespace") or "default", ref.get("name", ""))]


def _active(pod: dict) -> bool:
    return not is_terminal(pod) and not pod["metadata"].get("deletionTimestamp")


class ReplicaSetController(Controller):
    """apps/v1 ReplicaSets: pods and status."""

    name = "replicaset-controller"

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.rng = ctx.rng("replicaset-controller")
        # (namespace, name) -> (uid, creations refused in a row, when creating may be tried again); forgotten
        # when the ReplicaSet goes or its count is met, so a ReplicaSet of the same name starts afresh
        self.backoff: dict[Key, tuple[str, int, float]] = {}
        # kube-controller-manager's client rate limit: a ReplicaSet of two billion replicas, or one flapping
        # between 0 and 300, makes and deletes pods at 20 a second, not as fast as the twin can write (issue 49)
        self.client = ClientRateLimit()

    def watches(self) -> list[Watch]:
        return [Watch("ReplicaSet"), Watch("Pod", _owner_rs)]

    def reconcile(self, key: Key) -> Result | None:
        ns, name = key
        rs = self.store.peek("ReplicaSet", name, ns)  # read-only
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            self.backoff.pop(key, None)
            return None  # its pods go with it (store.gc)
        uid = rs["metadata"].get("uid", "")
        pods = [
            p
            for p in self.cache.owned_pods(ns, "ReplicaSet", name)
            if (controller_owner(p) or {}).get("uid") == uid and _active(p)
        ]
        now = self.ctx.now()
        failure, wait = self._manage(key, rs, pods, now)
        status, wake = self._status(rs, pods, failure, now)
        if status != (rs.get("status") or {}):
            obj = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": rs["metadata"],
                "status": status,
            }
            try:
                self.store.update_status(obj, take=True)
            except NotFound:
                return None
        waits = [w for w in (wait, wake) if w is not None and w > 0]
        return Result(requeue_after=min(waits)) if waits else None

    # -- step 2 -----------------------------------------------------------------------------------------
    def _manage(self, key: Key, rs: dict, pods: list[dict], now: float) -> tuple[str | None, float | None]:
        """Create or delete pods (``pods`` is changed to what is active afterwards). Returns the refusal
        (``KEEP``: nothing was tried, the condition stays as it is) and the back-off left."""
        uid = rs["metadata"].get("uid", "")
        diff = len(pods) - rules.desired_replicas(rs)
        held = self.backoff.get(key)
        if held is not None and (held[0] != uid or diff >= 0):
            del self.backoff[key]  # another ReplicaSet of that name, or nothing left to create
            held = None
        allowed = self.client.allowance(now)
        if diff != 0 and allowed == 0:
            return KEEP, self.client.next_token()  # the client's rate limit: wait for the next call it allows
        if diff > 0:
            surplus = sorted(pods, key=rules.deletion_order)[: min(diff, rules.MAX_PODS_PER_SYNC, allowed)]
            self.client.take(len(surplus))
            gone = {p["metadata"]["name"] for p in surplus}
            for pod in surplus:
                try:
                    self.store.delete("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"])
                except NotFound:
                    continue
                self.events.record(
                    rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}"
                )
            pods[:] = [p for p in pods if p["metadata"]["name"] not in gone]
            return None, (self.client.next_token() if len(surplus) < diff else None)
        if diff == 0:
            return None, None
        if held is not None and held[2] > now:
            return KEEP, held[2] - now
        want, made, batch = min(-diff, rules.MAX_PODS_PER_SYNC, allowed), 0, 1
        self.client.take(want)
        while made < want:  # slowStartBatch
            size = min(batch, want - made)
            refusal = None
            for _ in range(size):
                made_pod, why = self._create(rs)
                if made_pod is not None:
                    pods.append(made_pod)
                elif why is not None:
                    refusal = why
            made += size
            batch *= 2
            if refusal is not None:
                n = held[1] if held is not None else 0
                delay = min(BACKOFF_MAX, BACKOFF_BASE * 2.0**n)
                self.backoff[key] = (uid, n + 1, now + delay)
                return refusal, delay
        self.backoff.pop(key, None)
        return None, (self.client.next_token() if want < -diff else None)

    def _create(self, rs: dict) -> tuple[dict | None, str | None]:
        base = rs["metadata"]["name"]
        for _ in range(5):
            name = f"{base}-{''.join(self.rng.choice(_ALNUM) for _ in range(5))}"
            try:
                pod = self.store.create(rules.pod_from_template(rs, name), take=True)
            except AlreadyExists:
                continue
            except (Forbidden, Invalid) as err:  # refused by admission or validation (RealPodControl's event)
                why = err.message.replace(f'"{name}"', f'"{base}-"', 1)
                self.events.record(rs, "Warning", "FailedCreate", f"Error creating: {why}")
                return None, why
            self.events.record(rs, "Normal", "SuccessfulCreate", f"Created pod: {name}")
            return pod, None
        return None, None

    # -- step 3 -----------------------------------------------------------------------------------------
    def _status(
        self, rs: dict, pods: list[dict], failure: str | None, now: float
    ) -> tuple[dict, float | None]:
        spec = rs.get("spec") or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        available, wake = 0, None
        for p in pods:
            left = rules.available_in(p, min_ready, now)
            if left == 0:
                available += 1
            elif left is not None:
                wake = left if wake is None else min(wake, left)
        full = sum(
            1 for p in pods if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        )
        ready = sum(1 for p in pods if is_true(p, "Ready"))
        old = rs.get("status") or {}
        status: dict = {"replicas": len(pods)}
        for field, value in (
            ("fullyLabeledReplicas", full),
            ("readyReplicas", ready),
            ("availableReplicas", available),
            ("observedGeneration", rs["metadata"].get("generation", 1)),
        ):
            if value:
                status[field] = value
        conds = [dict(c) for c in old.get("conditions") or []]
        if failure is not KEEP:
            if failure and len(pods) < rules.desired_replicas(rs):
                set_core_condition(conds, rules.REPLICA_FAILURE, "True", "FailedCreate", failure, now)
            else:
                conds = [c for c in conds if c.get("type") != rules.REPLICA_FAILURE]
        if conds:
            status["conditions"] = conds
        return status, wake
