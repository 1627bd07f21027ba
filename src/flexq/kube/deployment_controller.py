"""The apps/v1 Deployment controller (kube-controller-manager's ``deployment`` controller).

Owns Deployment ``status`` (``observedGeneration``, ``replicas``, ``updatedReplicas``, ``readyReplicas``,
``availableReplicas``, ``unavailableReplicas``, ``collisionCount``, conditions ``Available``
(``MinimumReplicasAvailable`` / ``MinimumReplicasUnavailable``), ``Progressing`` (``NewReplicaSetCreated``,
``FoundNewReplicaSet``, ``ReplicaSetUpdated``, ``NewReplicaSetAvailable``, ``ProgressDeadlineExceeded``,
``DeploymentPaused`` / ``DeploymentResumed``) and ``ReplicaFailure`` (the new ReplicaSet's)), its
``deployment.kubernetes.io/revision`` annotation, the ReplicaSets it makes — ``<deployment>-<pod-template-hash>``
(``deployment_rules.template_hash``) with the hash in their labels, selector and template, the revision and
``desired-replicas`` / ``max-replicas`` annotations, an owner reference with ``controller: true`` and
``blockOwnerDeletion`` (so ``store.gc`` cascades a deleted Deployment through them to their pods) — and their
``spec.replicas``, and the ``ScalingReplicaSet`` events (``Scaled up replica set X from 0 to 1``). Each
reconcile is ``syncDeployment``:

1. A Deployment being deleted is left to the garbage collector. The paused conditions are written first
   (``checkPausedConditions``).
2. Paused, or a scaling event (an active ReplicaSet's ``desired-replicas`` differs from ``spec.replicas``):
   ``sync`` — scale without rolling out (one active ReplicaSet takes the new count; a saturated new one has
   the old ones go to 0; else every active one proportionally, by its ``max-replicas``, leftovers to the
   largest), old ReplicaSets beyond ``revisionHistoryLimit`` deleted when paused, status.
3. ``Recreate``: every old ReplicaSet to 0, then, once none of their pods is left, the new ReplicaSet
   (created if missing) to ``spec.replicas``.
4. ``RollingUpdate``: the new ReplicaSet (created if missing) scaled up within ``replicas + maxSurge`` pods in
   all, then old ones scaled down keeping ``replicas - maxUnavailable`` available (unhealthy ones first,
   oldest first); surge rounds up, unavailable down, and both 0 make unavailable 1. Once complete, old
   ReplicaSets beyond ``revisionHistoryLimit`` (with no pods left) are deleted.
5. Status (``syncRolloutStatus``): counts summed over the ReplicaSets; ``Progressing`` as upstream moves it,
   ``ProgressDeadlineExceeded`` once ``progressDeadlineSeconds`` pass after the last progress (the reconcile asks
   to be woken then).

Not modelled: ``spec.rollbackTo`` (deprecated; ``kubectl rollout undo`` writes the old template itself, which
works), adopting or releasing ReplicaSets by selector (only the ReplicaSets it made, by their controller
reference, are its), the ``revision-history`` annotation. Must not import other domain packages.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable

from flexq.clock import format_time, parse_time
from flexq.errors import AlreadyExists, Conflict, NotFound
from flexq.kube import deployment_rules as rules
from flexq.kube.cache import ClusterCache, controller_owner, is_terminal
from flexq.runtime import Context, Controller, Result, Watch
from flexq.store.store import WatchEvent

OWNER_INDEX = "deployment-controller.owner"
Key = tuple[str, str]


def _controller_uid(rs: dict) -> Iterable[str]:
    ref = controller_owner(rs)
    return [str(ref.get("uid"))] if ref is not None and ref.get("kind") == "Deployment" else []


def _owner_deployment(ev: WatchEvent) -> Iterable[Key]:
    ref = controller_owner(ev.object)
    if ref is None or ref.get("kind") != "Deployment":
        return []
    return [(ev.object["metadata"].get("namespace") or "default", ref.get("name", ""))]


def _replicas(rs: dict | None) -> int:
    return int(((rs or {}).get("spec") or {}).get("replicas") or 0)


def _st(rs: dict | None, field: str) -> int:
    return int(((rs or {}).get("status") or {}).get(field) or 0)


def _created(rs: dict) -> tuple[float, str]:
    ts = rs["metadata"].get("creationTimestamp")
    return (parse_time(ts) if ts else 0.0, rs["metadata"]["name"])


def _round(x: float) -> int:
    """Go's ``math.Round`` (half away from zero)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


class DeploymentController(Controller):
    """apps/v1 Deployments: ReplicaSets, rollouts, status."""

    name = "deployment-controller"

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.store.add_indexer("ReplicaSet", OWNER_INDEX, _controller_uid)

    def watches(self) -> list[Watch]:
        # a pod going away matters to a Recreate rollout waiting for the old pods to be gone (deletePod)
        return [
            Watch("Deployment"),
            Watch("ReplicaSet", _owner_deployment),
            Watch("Pod", self._pod_gone, predicate=lambda ev: ev.type == "DELETED"),
        ]

    def _pod_gone(self, ev: WatchEvent) -> Iterable[Key]:
        ref = controller_owner(ev.object)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return []
        ns = ev.object["metadata"].get("namespace") or "default"
        rs = self.store.peek("ReplicaSet", ref.get("name", ""), ns)
        dref = controller_owner(rs) if rs is not None else None
        return [(ns, dref.get("name", ""))] if dref is not None and dref.get("kind") == "Deployment" else []

    # -- syncDeployment -----------------------------------------------------------------------------
    def reconcile(self, key: Key) -> Result | None:
        ns, name = key
        dep = self.store.peek("Deployment", name, ns)  # read-only: writes build new objects
        if dep is None or dep["metadata"].get("deletionTimestamp"):
            return None
        self.dep = dep
        uid = dep["metadata"].get("uid", "")
        self.rss: dict[str, dict] = {
            rs["metadata"]["name"]: rs
            for rs in sorted(self.store.peek_indexed("ReplicaSet", OWNER_INDEX, uid), key=_created)
            if rs["metadata"]["namespace"] == ns
        }
        self.status = {**(dep.get("status") or {})}
        if self.status.get("conditions"):
            self.status["conditions"] = [dict(c) for c in self.status["conditions"]]
        self._paused_conditions()
        try:
            if dep["spec"].get("paused") or self._scaling_event():
                return self._sync()
            if (dep["spec"].get("strategy") or {}).get("type") == "Recreate":
                return self._recreate()
            return self._rolling()
        except Conflict:
            return Result(requeue_after=0.005)  # a stale read: again at once, as the queue's retry does

    def _paused_conditions(self) -> None:
        if not rules.has_deadline(self.dep):
            return
        cond = rules.condition(self.status, rules.PROGRESSING)
        if cond is not None and cond.get("reason") == rules.TIMED_OUT:
            return
        paused_cond = cond is not None and cond.get("reason") == rules.PAUSED
        now = self.ctx.now()
        if self.dep["spec"].get("paused") and not paused_cond:
            rules.set_condition(
                self.status, rules.PROGRESSING, "Unknown", rules.PAUSED, "Deployment is paused", now
            )
        elif not self.dep["spec"].get("paused") and paused_cond:
            rules.set_condition(
                self.status, rules.PROGRESSING, "Unknown", rules.RESUMED, "Deployment is resumed", now
            )

    # -- ReplicaSets ----------------------------------------------------------------------------------
    def _new_and_old(self, create: bool) -> tuple[dict | None, list[dict]]:
        """``getAllReplicaSetsAndSyncRevision``."""
        template = self.dep["spec"].get("template") or {}
        rss = list(self.rss.values())
        new = next(
            (rs for rs in rss if rules.same_template(rs["spec"].get("template") or {}, template)), None
        )
        old = [rs for rs in rss if rs is not new]
        rev = max((rules.revision(rs) for rs in old), default=0) + 1
        now = self.ctx.now()
        if new is not None:
            if rules.revision(new) < rev or (new["spec"].get("minReadySeconds") or 0) != (
                self.dep["spec"].get("minReadySeconds") or 0
            ):
                obj = {**new, "metadata": {**new["metadata"]}, "spec": {**new["spec"]}}
                if rules.revision(new) < rev:
                    obj["metadata"]["annotations"] = {
                        **(new["metadata"].get("annotations") or {}),
                        rules.ANN_REVISION: str(rev),
                    }
                obj["spec"]["minReadySeconds"] = self.dep["spec"].get("minReadySeconds") or 0
                if not obj["spec"]["minReadySeconds"]:
                    del obj["spec"]["minReadySeconds"]
                new = self._write_rs(obj)
            if rules.has_deadline(self.dep) and rules.condition(self.status, rules.PROGRESSING) is None:
                msg = f'Found new replica set "{new["metadata"]["name"]}"'
                rules.set_condition(self.status, rules.PROGRESSING, "True", rules.FOUND_NEW_RS, msg, now)
            self._set_revision(rules.revision(new))
            return new, old
        if not create:
            return None, old
        count = self.status.get("collisionCount")
        pod_hash = rules.template_hash(template, count)
        replicas = self._new_rs_replicas(rss, None)
        rs = rules.new_replicaset(self.dep, pod_hash, replicas, rev)
        try:
            new = self.store.create(rs, take=True)
        except AlreadyExists:
            have = self.store.peek("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["namespace"])
            if (
                have is not None
                and (controller_owner(have) or {}).get("uid") == self.dep["metadata"].get("uid")
                and rules.same_template(have["spec"].get("template") or {}, template)
            ):
                self.rss[have["metadata"]["name"]] = have
                return have, old
            # a hash collision: the next collisionCount gives another name (the status write wakes us)
            self.status["collisionCount"] = (count or 0) + 1
            raise _Collision() from None
        self.rss[new["metadata"]["name"]] = new
        if replicas > 0:
            self.events.record(
                self.dep,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {new['metadata']['name']} from 0 to {replicas}",
            )
        if rules.has_deadline(self.dep):
            msg = f'Created new replica set "{new["metadata"]["name"]}"'
            rules.set_condition(self.status, rules.PROGRESSING, "True", rules.NEW_RS_CREATED, msg, now)
        self._set_revision(rev)
        return new, old

    def _set_revision(self, rev: int) -> None:
        anns = self.dep["metadata"].get("annotations") or {}
        if anns.get(rules.ANN_REVISION) == str(rev):
            return
        obj = {
            **self.dep,
            "metadata": {**self.dep["metadata"], "annotations": {**anns, rules.ANN_REVISION: str(rev)}},
        }
        self.dep = self.store.update(obj, take=True)

    def _write_rs(self, obj: dict) -> dict:
        stored = self.store.update(obj, take=True)
        self.rss[stored["metadata"]["name"]] = stored
        return stored

    def _scale_rs(self, rs: dict, count: int, op: str | None = None) -> tuple[bool, dict]:
        """``scaleReplicaSet``: ``spec.replicas`` and the replica annotations, and the event when the size
        changed. ``op`` None: ``up`` or ``down`` by the change (``scaleReplicaSetAndRecordEvent``, which does
        nothing when the size is right)."""
        before = _replicas(rs)
        if op is None:
            if before == count:
                return False, rs
            op = "up" if before < count else "down"
        want_anns = rules.replica_annotations(self.dep)
        anns = rs["metadata"].get("annotations") or {}
        if before == count and all(anns.get(k) == v for k, v in want_anns.items()):
            return False, rs
        obj = {
            **rs,
            "metadata": {**rs["metadata"], "annotations": {**anns, **want_anns}},
            "spec": {**rs["spec"], "replicas": count},
        }
        stored = self._write_rs(obj)
        if before != count:
            self.events.record(
                self.dep,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {op} replica set {rs['metadata']['name']} from {before} to {count}",
            )
        return before != count, stored

    def _new_rs_replicas(self, all_rss: list[dict], new: dict | None) -> int:
        """``NewRSNewReplicas``."""
        desired = rules.desired_replicas(self.dep)
        if not rules.is_rolling(self.dep):
            return desired
        surge = rules.max_surge(self.dep)
        current = sum(_replicas(rs) for rs in all_rss)
        max_total = desired + surge
        if current >= max_total:
            return _replicas(new)
        return _replicas(new) + min(max_total - current, desired - _replicas(new))

    def _cleanup(self, old: list[dict]) -> None:
        """``cleanupDeployment``: old ReplicaSets beyond ``revisionHistoryLimit`` that have no pods."""
        limit = self.dep["spec"].get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in old if not rs["metadata"].get("deletionTimestamp")]
        diff = len(alive) - int(limit)
        if diff <= 0:
            return
        for rs in sorted(alive, key=lambda r: (rules.revision(r), _created(r)))[:diff]:
            if (
                _st(rs, "replicas")
                or _replicas(rs)
                or rs["metadata"].get("generation", 1) > _st(rs, "observedGeneration")
            ):
                continue
            with contextlib.suppress(NotFound):
                self.store.delete("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["namespace"])
            self.rss.pop(rs["metadata"]["name"], None)

    # -- sync: paused or scaling ----------------------------------------------------------------------
    def _scaling_event(self) -> bool:
        desired = str(rules.desired_replicas(self.dep))
        for rs in self.rss.values():
            want = (rs["metadata"].get("annotations") or {}).get(rules.ANN_DESIRED)
            if _replicas(rs) > 0 and want is not None and want != desired:
                return True
        return False

    def _sync(self) -> Result | None:
        try:
            new, old = self._new_and_old(create=False)
        except _Collision:
            return self._write_status(None)
        self._scale(new, old)
        if self.dep["spec"].get("paused"):
            self._cleanup([self.rss.get(rs["metadata"]["name"], rs) for rs in old])
        return self._write_status(self._current(new), progress=False)

    def _current(self, rs: dict | None) -> dict | None:
        return None if rs is None else self.rss.get(rs["metadata"]["name"], rs)

    def _scale(self, new: dict | None, old: list[dict]) -> None:
        desired = rules.desired_replicas(self.dep)
        all_rss = ([new] if new is not None else []) + old
        active = [rs for rs in all_rss if _replicas(rs) > 0]
        if new is not None or old:
            pick = None
            if len(active) == 1:
                pick = active[0]
            elif not active:
                pick = new if new is not None else sorted(old, key=_created)[-1]
            if pick is not None:
                self._scale_rs(pick, desired)
                return
        if new is not None and self._saturated(new):
            for rs in old:
                if _replicas(rs) > 0:
                    self._scale_rs(rs, 0)
            return
        if not rules.is_rolling(self.dep):
            return
        allowed = desired + rules.max_surge(self.dep) if desired > 0 else 0
        to_add = allowed - sum(_replicas(rs) for rs in active)
        if to_add > 0:  # ReplicaSetsBySizeNewer
            active.sort(key=lambda r: (-_replicas(r), -_created(r)[0], r["metadata"]["name"]))
        elif to_add < 0:  # ReplicaSetsBySizeOlder
            active.sort(key=lambda r: (-_replicas(r), _created(r)))
        op = "up" if to_add > 0 else "down" if to_add < 0 else None
        added, sizes = 0, {}
        for rs in active:
            proportion = self._proportion(rs, to_add, added) if to_add else 0
            sizes[rs["metadata"]["name"]] = _replicas(rs) + proportion
            added += proportion
        for i, rs in enumerate(active):
            n = rs["metadata"]["name"]
            if i == 0 and to_add:
                sizes[n] = max(0, sizes[n] + to_add - added)
            self._scale_rs(rs, sizes[n], op or "up")

    def _proportion(self, rs: dict, to_add: int, added: int) -> int:
        """``GetProportion`` with ``getReplicaSetFraction``."""
        if _replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        desired = rules.desired_replicas(self.dep)
        if desired == 0:
            fraction = -_replicas(rs)
        else:
            max_now = desired + rules.max_surge(self.dep)
            try:
                before = int((rs["metadata"].get("annotations") or {}).get(rules.ANN_MAX, "0"))
            except ValueError:
                before = 0
            if before == 0:
                before = int(self.status.get("replicas") or 0)
            fraction = 0 if before == 0 else _round(_replicas(rs) * max_now / before) - _replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    def _saturated(self, rs: dict) -> bool:
        desired = rules.desired_replicas(self.dep)
        want = (rs["metadata"].get("annotations") or {}).get(rules.ANN_DESIRED)
        return want == str(desired) and _replicas(rs) == desired and _st(rs, "availableReplicas") == desired

    # -- Recreate -------------------------------------------------------------------------------------
    def _recreate(self) -> Result | None:
        try:
            new, old = self._new_and_old(create=False)
            scaled = False
            for rs in old:
                if _replicas(rs) > 0:
                    scaled = self._scale_rs(rs, 0)[0] or scaled
            if scaled or self._old_pods_running(new, old):
                return self._write_status(self._current(new))
            if new is None:
                new, old = self._new_and_old(create=True)
        except _Collision:
            return self._write_status(None)
        assert new is not None  # made when missing
        new = self._scale_rs(new, rules.desired_replicas(self.dep))[1]
        if rules.complete(self.dep, self.dep.get("status") or {}):
            self._cleanup([self.rss.get(rs["metadata"]["name"], rs) for rs in old])
        return self._write_status(new)

    def _old_pods_running(self, new: dict | None, old: list[dict]) -> bool:
        """``oldPodsRunning``: an old ReplicaSet still counts pods, or one of its pods has not finished."""
        if any(_st(self.rss.get(rs["metadata"]["name"], rs), "replicas") for rs in old):
            return True
        ns = self.dep["metadata"]["namespace"]
        for rs in old:
            uid = rs["metadata"].get("uid")
            for pod in self.cache.owned_pods(ns, "ReplicaSet", rs["metadata"]["name"]):
                if (controller_owner(pod) or {}).get("uid") == uid and not is_terminal(pod):
                    return True
        return False

    # -- RollingUpdate --------------------------------------------------------------------------------
    def _rolling(self) -> Result | None:
        try:
            new, old = self._new_and_old(create=True)
        except _Collision:
            return self._write_status(None)
        assert new is not None
        desired = rules.desired_replicas(self.dep)
        # reconcileNewReplicaSet
        if _replicas(new) > desired:
            scaled, new = self._scale_rs(new, desired)
        elif _replicas(new) < desired:
            all_rss = [new, *[self.rss.get(r["metadata"]["name"], r) for r in old]]
            scaled, new = self._scale_rs(new, self._new_rs_replicas(all_rss, new))
        else:
            scaled = False
        if scaled:
            return self._write_status(new)
        if self._scale_down_old(new, old):
            return self._write_status(self._current(new))
        if rules.complete(self.dep, self.dep.get("status") or {}):
            self._cleanup([self.rss.get(rs["metadata"]["name"], rs) for rs in old])
        return self._write_status(self._current(new))

    def _scale_down_old(self, new: dict, old: list[dict]) -> bool:
        """``reconcileOldReplicaSets``: unhealthy old pods first, then old ones down to the availability floor."""
        old = sorted((self.rss.get(r["metadata"]["name"], r) for r in old), key=_created)
        active_old = [rs for rs in old if _replicas(rs) > 0]
        if not active_old:
            return False
        desired = rules.desired_replicas(self.dep)
        min_available = desired - rules.max_unavailable(self.dep)
        all_pods = _replicas(new) + sum(_replicas(rs) for rs in active_old)
        max_down = all_pods - min_available - (_replicas(new) - _st(new, "availableReplicas"))
        if max_down <= 0:
            return False
        cleaned = 0
        for i, rs in enumerate(active_old):  # cleanupUnhealthyReplicas
            if cleaned >= max_down:
                break
            unhealthy = _replicas(rs) - _st(rs, "availableReplicas")
            if _replicas(rs) == 0 or unhealthy <= 0:
                continue
            n = min(max_down - cleaned, unhealthy)
            active_old[i] = self._scale_rs(rs, _replicas(rs) - n)[1]
            cleaned += n
        # scaleDownOldReplicaSetsForRollingUpdate
        available = _st(new, "availableReplicas") + sum(_st(rs, "availableReplicas") for rs in active_old)
        scaled = 0
        if available > min_available:
            total = available - min_available
            for rs in active_old:
                if scaled >= total:
                    break
                if _replicas(rs) == 0:
                    continue
                n = min(_replicas(rs), total - scaled)
                self._scale_rs(rs, _replicas(rs) - n)
                scaled += n
        return cleaned + scaled > 0

    # -- status ---------------------------------------------------------------------------------------
    def _calculate(self, new: dict | None) -> dict:
        """``calculateStatus``."""
        rss = list(self.rss.values())
        available = sum(_st(rs, "availableReplicas") for rs in rss)
        status = dict(self.status)
        for field, value in (
            ("observedGeneration", self.dep["metadata"].get("generation", 1)),
            ("replicas", sum(_st(rs, "replicas") for rs in rss)),
            ("updatedReplicas", _st(new, "replicas")),
            ("readyReplicas", sum(_st(rs, "readyReplicas") for rs in rss)),
            ("availableReplicas", available),
            ("unavailableReplicas", max(0, sum(_replicas(rs) for rs in rss) - available)),
        ):
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        desired = rules.desired_replicas(self.dep)
        now = self.ctx.now()
        if available >= desired - rules.max_unavailable(self.dep):
            rules.set_condition(
                status, rules.AVAILABLE, "True", rules.MIN_AVAILABLE, rules.MSG_AVAILABLE, now
            )
        else:
            rules.set_condition(
                status, rules.AVAILABLE, "False", rules.MIN_UNAVAILABLE, rules.MSG_UNAVAILABLE, now
            )
        return status

    def _write_status(self, new: dict | None, progress: bool = True) -> Result | None:
        """``syncRolloutStatus`` (``progress``) or ``syncDeploymentStatus``; the wake-up at the progress
        deadline when the status did not change (``requeueStuckDeployment``)."""
        status = self._calculate(new)
        now = self.ctx.now()
        wake = None
        if progress:
            old = self.dep.get("status") or {}
            if not rules.has_deadline(self.dep):
                rules.remove_condition(status, rules.PROGRESSING)
            cur = rules.condition(status, rules.PROGRESSING)
            done = (
                status.get("replicas", 0) == status.get("updatedReplicas", 0)
                and cur is not None
                and cur.get("reason") == rules.NEW_RS_AVAILABLE
            )
            what = (
                f'ReplicaSet "{new["metadata"]["name"]}"'
                if new is not None
                else f'Deployment "{self.dep["metadata"]["name"]}"'
            )
            if rules.has_deadline(self.dep) and not done:
                if rules.complete(self.dep, status):
                    rules.set_condition(
                        status,
                        rules.PROGRESSING,
                        "True",
                        rules.NEW_RS_AVAILABLE,
                        f"{what} has successfully progressed.",
                        now,
                    )
                elif rules.progressing(old, status):
                    t = format_time(now)
                    cond = {
                        "type": rules.PROGRESSING,
                        "status": "True",
                        "lastUpdateTime": t,
                        "lastTransitionTime": cur["lastTransitionTime"]
                        if cur and cur.get("status") == "True"
                        else t,
                        "reason": rules.RS_UPDATED,
                        "message": f"{what} is progressing.",
                    }
                    rules.remove_condition(status, rules.PROGRESSING)
                    status["conditions"].append(cond)
                elif rules.timed_out(self.dep, status, now):
                    rules.set_condition(
                        status,
                        rules.PROGRESSING,
                        "False",
                        rules.TIMED_OUT,
                        f"{what} has timed out progressing.",
                        now,
                    )
            failure = rules.condition((new or {}).get("status") or {}, rules.REPLICA_FAILURE)
            if failure is not None:
                rules.set_condition(
                    status,
                    rules.REPLICA_FAILURE,
                    failure.get("status", "True"),
                    failure.get("reason", ""),
                    failure.get("message", ""),
                    now,
                )
            else:
                rules.remove_condition(status, rules.REPLICA_FAILURE)
            wake = rules.stuck_wake(self.dep, status, now)
        if not status.get("conditions"):
            status.pop("conditions", None)
        if status == (self.dep.get("status") or {}):
            return Result(requeue_after=wake) if wake is not None else None
        obj = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self.dep["metadata"],
            "status": status,
        }
        self.store.update_status(obj, take=True)
        return None  # the write wakes the Deployment, whose next sync asks for the deadline's wake-up


class _Collision(Exception):
    """The new ReplicaSet's name is taken by another's: ``collisionCount`` goes up."""
