"""The apps/v1 Deployment and ReplicaSet controllers (kube-controller-manager's ``deployment`` and
``replicaset`` controllers), so that a Deployment rolls out in the twin as on GKE: ``kubectl rollout status``,
``kubectl get deploy,rs,pods``, a template change rolling to a new ReplicaSet, ``kubectl delete`` taking the
ReplicaSets and pods with it (ownerReferences; the store's garbage collector).

**ReplicaSetController** owns a ReplicaSet's pods (``<rs>-<5 chars>`` from the ``replicaset-controller`` RNG
stream, the template's labels, the ReplicaSet as controller owner) and its ``status`` (``replicas``,
``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` — Ready for ``minReadySeconds`` —,
``observedGeneration``). Towards ``spec.replicas`` it creates at most 500 pods a sync in slow-start batches of
1, 2, 4, ... that stop after a batch with a refusal (a pod the API server refused — Pod Security, a quota — is a
``FailedCreate`` event and a back-off of 1 s doubling to 1 min, never a retry at the same instant), and deletes
the extra ones, not-ready and unscheduled first (events ``SuccessfulCreate`` / ``SuccessfulDelete``).

**DeploymentController** owns the Deployment's ReplicaSets and its ``status``:
1. the new ReplicaSet is ``<deployment>-<pod-template-hash>`` (the hash of the template, the
   ``pod-template-hash`` label added to its selector, template and pods), created at the next revision
   (``deployment.kubernetes.io/revision``, also set on the Deployment);
2. ``RollingUpdate``: the new ReplicaSet grows while all pods stay within ``replicas + maxSurge`` (a percentage
   rounded up), the old ones shrink while at least ``replicas - maxUnavailable`` (rounded down) stay available,
   their unhealthy pods first (``NewRSNewReplicas``, ``reconcileOldReplicaSets``); ``Recreate``: the old ones go
   to 0, and the new one is scaled up once their pods are gone;
3. old ReplicaSets at 0 beyond ``revisionHistoryLimit`` are deleted, oldest first; a ``paused`` Deployment only
   has its status kept;
4. ``status``: ``observedGeneration``, ``replicas``, ``updatedReplicas``, ``readyReplicas``,
   ``availableReplicas``, ``unavailableReplicas``, the conditions ``Available`` (MinimumReplicasAvailable /
   MinimumReplicasUnavailable) and ``Progressing`` (NewReplicaSetCreated, FoundNewReplicaSet,
   ReplicaSetUpdated, NewReplicaSetAvailable; ProgressDeadlineExceeded once ``progressDeadlineSeconds`` pass
   without progress), with upstream's messages; events ``ScalingReplicaSet`` ("Scaled up replica set X from 0 to
   3").

Not modelled: rollback (``kubectl rollout undo`` of an old revision's template), the ``scale`` subresource,
hash collisions (``collisionCount``), adoption of orphaned ReplicaSets by selector. Must not import other domain
packages.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

from flexq.api.jsoncopy import clone, clone_kept
from flexq.clock import format_time, parse_time
from flexq.errors import AlreadyExists, Conflict, Forbidden, Invalid, NotFound
from flexq.kube.cache import ClusterCache
from flexq.runtime import Context, Controller, Result, Watch
from flexq.semantics.conditions import is_true
from flexq.semantics.owners import controller_owner
from flexq.semantics.pods import is_terminal
from flexq.store.store import WatchEvent

Key = tuple[str, str]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
MAX_PER_SYNC = 500  # the controllers' burstReplicas
MAX_BACKOFF = 60.0
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet


def _owned_by(kind: str) -> Any:
    def mapper(ev: WatchEvent) -> Iterable[Key]:
        ref = controller_owner(ev.object)
        if ref is None or ref.get("kind") != kind:
            return []
        return [(ev.object["metadata"].get("namespace") or "default", str(ref.get("name", "")))]

    return mapper


def _active(pod: dict) -> bool:
    return not is_terminal(pod) and not pod["metadata"].get("deletionTimestamp")


def _ready_since(pod: dict) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            when = c.get("lastTransitionTime")
            return parse_time(when) if when else 0.0
    return None


def _owner_ref(obj: dict) -> dict:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _replicas(obj: dict) -> int:
    n = (obj.get("spec") or {}).get("replicas")
    return 1 if n is None else int(n)


def template_hash(template: dict) -> str:
    """``ComputeHash``: FNV-1a (32 bits) of the template as JSON, its decimal digits safe-encoded."""
    h = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALNUM[int(d) % len(_ALNUM)] for d in str(h))


def _scaled(value: Any, total: int, round_up: bool) -> int:
    """An int-or-percent of ``total`` (``GetScaledValueFromIntOrPercent``)."""
    if isinstance(value, int):
        return value
    text = str(value or "0")
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            return 0
        whole, rest = divmod(pct * total, 100)
        return whole + (1 if round_up and rest else 0)
    try:
        return int(text)
    except ValueError:
        return 0


# -- ReplicaSets ----------------------------------------------------------------------------------------------
class ReplicaSetController(Controller):
    """apps/v1 ReplicaSets: their pods and status."""

    name = "replicaset-controller"

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.rng = ctx.rng("replicaset-controller")
        self.refused: dict[str, int] = {}  # ReplicaSet uid -> creations refused in a row

    def watches(self) -> list[Watch]:
        return [Watch("ReplicaSet"), Watch("Pod", _owned_by("ReplicaSet"))]

    def reconcile(self, key: Key) -> Result | None:
        ns, name = key
        rs = self.store.peek("ReplicaSet", name, ns)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return None  # its pods go with it (garbage collection)
        uid = rs["metadata"]["uid"]
        pods = [
            p
            for p in self.cache.owned_pods(ns, "ReplicaSet", name)
            if (controller_owner(p) or {}).get("uid") == uid and _active(p)
        ]
        want = _replicas(rs)
        wait: float | None = None
        if len(pods) < want:
            made, refused = self._create(rs, min(want - len(pods), MAX_PER_SYNC))
            pods += made
            if refused:
                n = self.refused.get(uid, 0)
                self.refused[uid] = n + 1
                wait = min(MAX_BACKOFF, 2.0**n)
            else:
                self.refused.pop(uid, None)
                if want - len(pods) > 0:
                    wait = 1.0  # more than a sync's worth: the next 500 a second later
        elif len(pods) > want:
            extra = sorted(
                pods,
                key=lambda p: (
                    bool((p.get("spec") or {}).get("nodeName")),
                    is_true(p, "Ready"),
                    p["metadata"]["name"],
                ),
            )[: min(len(pods) - want, MAX_PER_SYNC)]
            self._delete(rs, extra)
            gone = {p["metadata"]["name"] for p in extra}
            pods = [p for p in pods if p["metadata"]["name"] not in gone]
        avail_wait = self._status(rs, pods)
        waits = [w for w in (wait, avail_wait) if w is not None]
        return Result(requeue_after=min(waits)) if waits else None

    def _create(self, rs: dict, count: int) -> tuple[list[dict], bool]:
        """Slow start: batches of 1, 2, 4, ...; a batch with a refusal ends it."""
        made: list[dict] = []
        done, batch = 0, 1
        while done < count:
            size = min(batch, count - done)
            refused = False
            for _ in range(size):
                pod = self._create_one(rs)
                if pod is None:
                    refused = True
                else:
                    made.append(pod)
            done += size
            batch *= 2
            if refused:
                return made, True
        return made, False

    def _create_one(self, rs: dict) -> dict | None:
        meta = rs["metadata"]
        template = (rs.get("spec") or {}).get("template") or {}
        tmeta = template.get("metadata") or {}
        base = f"{meta['name']}-"
        for _ in range(5):
            name = base + "".join(self.rng.choice(_ALNUM) for _ in range(5))
            pod_meta: dict[str, Any] = {
                "name": name,
                "generateName": base,
                "namespace": meta.get("namespace") or "default",
                "labels": dict(tmeta.get("labels") or {}),
                "ownerReferences": [_owner_ref(rs)],
            }
            if tmeta.get("annotations"):
                pod_meta["annotations"] = dict(tmeta["annotations"])
            if tmeta.get("finalizers"):
                pod_meta["finalizers"] = list(tmeta["finalizers"])
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": pod_meta,
                "spec": clone(template.get("spec") or {}),
            }
            try:
                stored = self.store.create(pod, take=True, copy_result=False)
            except AlreadyExists:
                continue
            except (Forbidden, Invalid) as err:  # refused (admission, validation): upstream's FailedCreate
                why = err.message.replace(f'"{name}"', f'"{base}"', 1)
                self.events.record(rs, "Warning", "FailedCreate", f"Error creating: {why}")
                return None
            self.events.record(rs, "Normal", "SuccessfulCreate", f"Created pod: {name}")
            return stored
        return None

    def _delete(self, rs: dict, pods: list[dict]) -> None:
        for pod in pods:
            try:
                self.store.delete(
                    "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], copy_result=False
                )
            except NotFound:
                continue
            self.events.record(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

    def _status(self, rs: dict, pods: list[dict]) -> float | None:
        """Write the counts; returns when a Ready pod will have been Ready for ``minReadySeconds``."""
        now = self.ctx.now()
        min_ready = (rs.get("spec") or {}).get("minReadySeconds") or 0
        selector = ((rs.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        ready = available = labelled = 0
        soonest: float | None = None
        for p in pods:
            labels = p["metadata"].get("labels") or {}
            labelled += all(labels.get(k) == v for k, v in selector.items())
            since = _ready_since(p)
            if since is None:
                continue
            ready += 1
            if since + min_ready <= now:
                available += 1
            else:
                left = since + min_ready - now
                soonest = left if soonest is None else min(soonest, left)
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": labelled,
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")}
        if status != (rs.get("status") or {}):
            try:
                self.store.update_status({**rs, "status": status}, take=True, copy_result=False)
            except (NotFound, Conflict):
                return None
        return soonest


# -- Deployments ----------------------------------------------------------------------------------------------
def _condition(conds: list[dict], type_: str, status: str, reason: str, message: str, now: str) -> None:
    """Set a Deployment condition: ``lastUpdateTime`` on every change of reason or message,
    ``lastTransitionTime`` when the status flips (``SetDeploymentCondition``)."""
    for c in conds:
        if c.get("type") == type_:
            if c.get("status") == status and c.get("reason") == reason and c.get("message") == message:
                return
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message, lastUpdateTime=now)
            return
    conds.append(
        {
            "type": type_,
            "status": status,
            "lastUpdateTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
    )


class DeploymentController(Controller):
    """apps/v1 Deployments: their ReplicaSets, rollouts and status."""

    name = "deployment-controller"

    def watches(self) -> list[Watch]:
        return [Watch("Deployment"), Watch("ReplicaSet", _owned_by("Deployment"))]

    def reconcile(self, key: Key) -> Result | None:
        ns, name = key
        dep = self.store.peek("Deployment", name, ns)
        if dep is None or dep["metadata"].get("deletionTimestamp"):
            return None
        uid = dep["metadata"]["uid"]
        spec = dep.get("spec") or {}
        mine = [
            rs
            for rs in self.store.peek_list("ReplicaSet", ns, owner_uid=uid)
            if (controller_owner(rs) or {}).get("uid") == uid and not rs["metadata"].get("deletionTimestamp")
        ]
        template = spec.get("template") or {}
        tmpl_hash = template_hash(template)
        new = next(
            (rs for rs in mine if (rs["metadata"].get("labels") or {}).get(HASH_LABEL) == tmpl_hash), None
        )
        old = sorted(
            (rs for rs in mine if rs is not new),
            key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]),
        )
        created = False
        if not spec.get("paused"):
            if new is None:
                new = self._new_replica_set(dep, tmpl_hash, mine)
                created = new is not None
            if new is not None:
                strategy = (spec.get("strategy") or {}).get("type") or "RollingUpdate"
                if strategy == "Recreate":
                    self._recreate(dep, new, old)
                else:
                    self._rolling(dep, new, old)
                self._cleanup(dep, old)
        return self._status(dep, new, old, created)

    # -- the new ReplicaSet ---------------------------------------------------------------------------------
    def _new_replica_set(self, dep: dict, tmpl_hash: str, mine: list[dict]) -> dict | None:
        meta, spec = dep["metadata"], dep.get("spec") or {}
        revision = 1 + max(
            (int((rs["metadata"].get("annotations") or {}).get(REVISION, "0") or 0) for rs in mine), default=0
        )
        template = clone(spec.get("template") or {})
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: tmpl_hash}
        selector = clone(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: tmpl_hash}
        rs_name = f"{meta['name']}-{tmpl_hash}"
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": meta.get("namespace") or "default",
                "labels": dict(tmeta["labels"]),
                "annotations": {
                    "deployment.kubernetes.io/desired-replicas": str(_replicas(dep)),
                    "deployment.kubernetes.io/max-replicas": str(_replicas(dep) + self._surge(dep)),
                    REVISION: str(revision),
                },
                "ownerReferences": [_owner_ref(dep)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": spec.get("minReadySeconds") or 0,
                "selector": selector,
                "template": template,
            },
        }
        try:
            stored = self.store.create(rs, take=True, copy_result=False)
        except AlreadyExists:
            return self.store.peek("ReplicaSet", rs_name, meta.get("namespace"))
        except (Forbidden, Invalid) as err:
            self.events.record(
                dep, "Warning", "FailedCreate", f"Failed to create new replica set {rs_name!r}: {err}"
            )
            return None
        if (meta.get("annotations") or {}).get(REVISION) != str(revision):
            with contextlib.suppress(NotFound):
                self.store.patch(
                    "Deployment",
                    meta["name"],
                    {"metadata": {"annotations": {REVISION: str(revision)}}},
                    meta.get("namespace"),
                    validate=False,
                )
        return stored

    # -- scaling ----------------------------------------------------------------------------------------------
    def _surge(self, dep: dict) -> int:
        strategy = (dep.get("spec") or {}).get("strategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return 0
        ru = strategy.get("rollingUpdate") or {}
        return _scaled(ru.get("maxSurge", "25%"), _replicas(dep), True)

    def _unavailable(self, dep: dict) -> int:
        strategy = (dep.get("spec") or {}).get("strategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return 0
        ru = strategy.get("rollingUpdate") or {}
        surge = self._surge(dep)
        unavailable = _scaled(ru.get("maxUnavailable", "25%"), _replicas(dep), False)
        if surge == 0 and unavailable == 0:
            unavailable = 1  # ResolveFenceposts: never both 0
        return min(unavailable, _replicas(dep))

    def _scale(self, dep: dict, rs: dict, to: int) -> dict:
        have = _replicas(rs)
        if have == to:
            return rs
        try:
            stored = self.store.patch(
                "ReplicaSet",
                rs["metadata"]["name"],
                {
                    "metadata": {
                        "annotations": {
                            "deployment.kubernetes.io/desired-replicas": str(_replicas(dep)),
                            "deployment.kubernetes.io/max-replicas": str(_replicas(dep) + self._surge(dep)),
                        }
                    },
                    "spec": {"replicas": to},
                },
                rs["metadata"].get("namespace"),
                validate=False,
            )
        except NotFound:
            return rs
        way = "up" if to > have else "down"
        self.events.record(
            dep,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled {way} replica set {rs['metadata']['name']} from {have} to {to}",
        )
        return stored

    def _rolling(self, dep: dict, new: dict, old: list[dict]) -> None:
        want = _replicas(dep)
        every = [new, *old]
        # NewRSNewReplicas: grow the new one while all pods stay within replicas + maxSurge
        current = sum(_replicas(rs) for rs in every)
        if not old:
            new = self._scale(dep, new, want)
        elif _replicas(new) < want:
            room = want + self._surge(dep) - current
            if room > 0:
                new = self._scale(dep, new, _replicas(new) + min(room, want - _replicas(new)))
        elif _replicas(new) > want:
            new = self._scale(dep, new, want)
        # reconcileOldReplicaSets: shrink the old ones while replicas - maxUnavailable stay available
        if not old:
            return
        min_available = want - self._unavailable(dep)
        all_pods = sum(_replicas(rs) for rs in [new, *old])
        new_unavailable = _replicas(new) - int((new.get("status") or {}).get("availableReplicas", 0))
        budget = all_pods - min_available - new_unavailable
        if budget <= 0:
            return
        scaled = []
        for rs in old:  # their unhealthy pods first, oldest ReplicaSet first
            unhealthy = _replicas(rs) - int((rs.get("status") or {}).get("availableReplicas", 0))
            cut = min(max(0, unhealthy), budget)
            if cut:
                rs = self._scale(dep, rs, _replicas(rs) - cut)
                budget -= cut
            scaled.append(rs)
        available = sum(int((rs.get("status") or {}).get("availableReplicas", 0)) for rs in [new, *scaled])
        budget = min(budget, available - min_available)
        for rs in scaled:
            if budget <= 0:
                break
            cut = min(_replicas(rs), budget)
            if cut:
                self._scale(dep, rs, _replicas(rs) - cut)
                budget -= cut

    def _recreate(self, dep: dict, new: dict, old: list[dict]) -> None:
        running = False
        for rs in old:
            if _replicas(rs):
                self._scale(dep, rs, 0)
                running = True
            elif int((rs.get("status") or {}).get("replicas", 0)):
                running = True
        if not running:
            self._scale(dep, new, _replicas(dep))

    def _cleanup(self, dep: dict, old: list[dict]) -> None:
        limit = (dep.get("spec") or {}).get("revisionHistoryLimit")
        limit = 10 if limit is None else limit
        idle = [
            rs for rs in old if not _replicas(rs) and not int((rs.get("status") or {}).get("replicas", 0))
        ]
        for rs in idle[: max(0, len(idle) - limit)]:
            try:
                self.store.delete("ReplicaSet", rs["metadata"]["name"], rs["metadata"].get("namespace"))
            except NotFound:
                continue

    # -- status -----------------------------------------------------------------------------------------------
    def _status(self, dep: dict, new: dict | None, old: list[dict], created: bool) -> Result | None:
        now = self.ctx.now()
        stamp = format_time(now)
        want = _replicas(dep)
        every = [rs for rs in [new, *old] if rs is not None]
        counts = {
            k: sum(int((rs.get("status") or {}).get(k, 0)) for rs in every)
            for k in (
                "replicas",
                "readyReplicas",
                "availableReplicas",
            )
        }
        updated = int(((new or {}).get("status") or {}).get("replicas", 0))
        status = clone_kept(dep.get("status") or {})
        before = {
            k: status.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
        }
        status.update(
            observedGeneration=dep["metadata"].get("generation", 1),
            replicas=counts["replicas"],
            updatedReplicas=updated,
            readyReplicas=counts["readyReplicas"],
            availableReplicas=counts["availableReplicas"],
            unavailableReplicas=max(0, want - counts["availableReplicas"]),
        )
        for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status[k]:
                del status[k]
        conds: list[dict] = status.setdefault("conditions", [])
        if counts["availableReplicas"] >= want - self._unavailable(dep):
            _condition(
                conds,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                stamp,
            )
        else:
            _condition(
                conds,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                stamp,
            )
        wait: float | None = None
        rs_name = new["metadata"]["name"] if new is not None else ""
        complete = (
            new is not None
            and updated == want
            and counts["replicas"] == want
            and counts["availableReplicas"] >= want
        )
        progressing = next((c for c in conds if c.get("type") == "Progressing"), None)
        deadline = (dep.get("spec") or {}).get("progressDeadlineSeconds")
        moved = before != {k: status.get(k) for k in before}
        if (dep.get("spec") or {}).get("paused"):
            _condition(conds, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", stamp)
        elif complete:
            _condition(
                conds,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs_name}" has successfully progressed.',
                stamp,
            )
        elif created:
            _condition(
                conds,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                f'Created new replica set "{rs_name}"',
                stamp,
            )
        elif new is not None and (moved or progressing is None):
            if progressing is not None and progressing.get("reason") == "ReplicaSetUpdated":
                progressing["lastUpdateTime"] = stamp  # progress: the deadline counts from now
            else:
                _condition(
                    conds,
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    f'ReplicaSet "{rs_name}" is progressing.',
                    stamp,
                )
        progressing = next((c for c in conds if c.get("type") == "Progressing"), None)
        if (
            deadline is not None
            and not complete
            and progressing is not None
            and progressing.get("status") == "True"
            and progressing.get("reason") != "NewReplicaSetAvailable"
        ):
            left = parse_time(progressing["lastUpdateTime"]) + deadline - now
            if left <= 0:
                _condition(
                    conds,
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    f'ReplicaSet "{rs_name}" has timed out progressing.',
                    stamp,
                )
            else:
                wait = left
        if status != (dep.get("status") or {}):
            try:
                self.store.update_status({**dep, "status": status}, take=True, copy_result=False)
            except (NotFound, Conflict):
                return None
        return Result(requeue_after=wait) if wait is not None else None
