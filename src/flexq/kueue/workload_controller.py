"""The Workload controller (``pkg/controller/core/workload_controller.go``), step by step.

Writes, on Workloads: ``spec.active=false`` when a DeactivationTarget is set; the Evicted condition
for deactivation (``Deactivated`` / ``DeactivatedDueTo<Cause>``), for admission checks in Retry
(``AdmissionCheck``; from Kueue 0.20.7 at once, not after the check's back-off, kueue#18785) and for the PodsReady timeout (``PodsReadyTimeout``, with ``requeueState``);
``DeactivationTarget`` for Rejected checks (from Kueue 0.20 also while the workload is being evicted,
kueue#14309), for exceeding ``backoffLimitCount`` and for exceeding
``spec.maximumExecutionTimeSeconds`` (``MaximumExecutionTimeExceeded``); the
``Requeued`` condition when a backoff finishes (``BackoffFinished``) or a workload is reactivated;
``requeueState.requeueAt`` from checks' ``requeueAfterSeconds``; the list of
``status.admissionChecks`` (missing ones added as Pending, no-longer-applicable ones removed); the
Admitted condition (``SyncAdmittedCondition``); QuotaReserved=False for queue blockers (missing or
inactive LocalQueue / ClusterQueue). Events: ``Admitted``, ``AdmissionCheckRejected``,
``MaximumExecutionTimeExceeded``, evictions.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from flexq.kueue import variants
from flexq.kueue.cache import KueueCache
from flexq.kueue.pods_ready import admitted_not_ready, requeue_wait
from flexq.kueue.scheduler import evict
from flexq.kueue.workload import (
    OBSERVABILITY_GATE,
    admission_checks_for,
    has_quota_reservation,
    has_retry_checks,
    is_active,
    is_admitted,
    is_evicted,
    parse_ts,
    sync_admitted_condition,
    ts,
    unadmitted_reason,
    unset_quota_reservation,
)
from flexq.runtime import predicates
from flexq.runtime.controller import Controller, Result, Watch
from flexq.semantics.conditions import find_condition, is_true, remove_status_condition, set_status_condition
from flexq.store import status_copy

__all__ = ["WorkloadController", "checks_message"]


def checks_message(checks: list[dict], state: str) -> str:
    """``buildAdmissionChecksMessage``."""
    parts = []
    for c in sorted(checks, key=lambda c: c["name"]):
        parts.append(f'"{c["name"]}" ({c["message"]})' if c.get("message") else f'"{c["name"]}"')
    noun = "AdmissionChecks" if len(checks) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: " + "; ".join(parts)


def _stop_policy(obj: dict) -> str:
    return (obj.get("spec") or {}).get("stopPolicy") or "None"


def _cq_update(old: dict, new: dict) -> bool:
    """``workloadQueueHandler.Update`` for a ClusterQueue: deleting, or its admission checks or stop policy
    changed."""
    return (
        bool(new["metadata"].get("deletionTimestamp"))
        or (old.get("spec") or {}).get("admissionChecksStrategy")
        != (new.get("spec") or {}).get("admissionChecksStrategy")
        or _stop_policy(old) != _stop_policy(new)
    )


def _lq_update(old: dict, new: dict) -> bool:
    """``workloadQueueHandler.Update`` for a LocalQueue: deleting, or its stop policy changed."""
    return bool(new["metadata"].get("deletionTimestamp")) or _stop_policy(old) != _stop_policy(new)


_CQ_UPDATE = predicates.update_changed(_cq_update)
_LQ_UPDATE = predicates.update_changed(_lq_update)


class WorkloadController(Controller):
    """Kueue's workload reconciler."""

    name = "kueue-workload"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events

    def watches(self) -> list[Watch]:
        # SetupWithManager: Watches(ClusterQueue / LocalQueue, workloadQueueHandler), whose Update queues the
        # workloads only for a deletion mark or a changed admission-checks strategy or stop policy
        return [
            Watch("Workload"),
            Watch("ClusterQueue", self._of_cq, predicate=_CQ_UPDATE),
            Watch("LocalQueue", self._of_lq, predicate=_LQ_UPDATE),
        ]

    def _of_cq(self, ev) -> list:
        """Workloads of a ClusterQueue (reserving in it or queued to it)."""
        name = ev.object["metadata"]["name"]
        out = []
        for k, wl in self.cache.workloads.items():
            adm = (wl.get("status") or {}).get("admission") or {}
            if adm.get("clusterQueue") == name or self.cache.queues.cluster_queue_for(wl) == name:
                out.append(tuple(k.split("/", 1)))
        return out

    def _of_lq(self, ev) -> list:
        """Workloads of a LocalQueue."""
        md = ev.object["metadata"]
        return [
            tuple(k.split("/", 1))
            for k, wl in self.cache.workloads.items()
            if k.startswith(md.get("namespace", "") + "/")
            and (wl.get("spec") or {}).get("queueName") == md["name"]
        ]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        ns, name = key
        cur = self.store.peek("Workload", name, ns)
        if cur is None or is_true(cur, "Finished"):
            return None
        if self._label_parent(cur):
            return None
        wl = status_copy(cur)  # the steps below change only status and spec.active before they write
        now = self.ctx.now()
        for step in (self._requeue_at, self._activation):
            done, res = step(wl, now)
            if done:
                return res
        lq = self.cache.local_queues.get(f"{ns}/{(wl.get('spec') or {}).get('queueName', '')}")
        cq_name = self.cache.queues.cluster_queue_for(wl)
        if has_quota_reservation(wl):
            cq_name = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", cq_name)
        cq = self.cache.cqs.get(cq_name or "")
        if cq is not None and self._sync_checks(wl, cq, now):
            return None
        if not is_admitted(wl) and self._sync_unadmitted(wl, lq, cq, now):
            return None
        if has_quota_reservation(wl):
            if self._check_based_eviction(wl, now):
                return None
            if self._stop_policy(wl, "LocalQueue", (wl.get("spec") or {}).get("queueName", ""), lq, now):
                return None
            if self._stop_policy(wl, "ClusterQueue", cq_name or "", cq, now):
                return None
            ready = self._pods_ready_timeout(wl, now)
            limit = self._max_execution_time(wl, now)
            # the sooner of the two re-checks
            waits = [r.requeue_after for r in (ready, limit) if r is not None and r.requeue_after]
            return Result(requeue_after=min(waits)) if waits else None
        return None

    def _max_execution_time(self, wl: dict, now: float) -> Result | None:
        """``reconcileMaxExecutionTime``: an admitted workload past ``spec.maximumExecutionTimeSeconds`` (less
        ``status.accumulatedPastExecutionTimeSeconds`` from earlier admissions) gets DeactivationTarget
        ``MaximumExecutionTimeExceeded`` (and is then deactivated and evicted); before that, a re-check when due."""
        admitted = find_condition(wl, "Admitted")
        limit = (wl.get("spec") or {}).get("maximumExecutionTimeSeconds")
        if admitted is None or admitted.get("status") != "True" or limit is None:
            return None
        st = wl.setdefault("status", {})
        left = (
            int(limit)
            - int(st.get("accumulatedPastExecutionTimeSeconds") or 0)
            - (now - parse_ts(admitted["lastTransitionTime"]))
        )
        if left > 0:
            return Result(requeue_after=left)
        if not is_true(wl, "DeactivationTarget"):
            set_status_condition(
                wl,
                "DeactivationTarget",
                True,
                "MaximumExecutionTimeExceeded",
                "exceeding the maximum execution time",
                now,
            )
            st.pop("accumulatedPastExecutionTimeSeconds", None)
            out = self.store.update_status(wl)
            self.events.record(
                out,
                "Warning",
                "MaximumExecutionTimeExceeded",
                f"The maximum execution time ({int(limit)}s) exceeded",
            )
        return None

    def _label_parent(self, wl: dict) -> bool:
        """ConcurrentAdmission: a workload of a ClusterQueue with a policy that is neither Parent nor Variant
        gets the Parent label (``SetParentVariantLabel``)."""
        if not self.cache.config.gate(variants.GATE) or variants.is_parent(wl) or variants.is_variant(wl):
            return False
        if not self.cache.concurrent_admission_enabled(self.cache.queues.cluster_queue_for(wl) or ""):
            return False
        out = dict(wl)
        out["metadata"] = dict(wl["metadata"])
        out["metadata"]["labels"] = {**(wl["metadata"].get("labels") or {}), variants.PARENT_LABEL: "true"}
        self.store.update(out)
        return True

    def _stop_policy(self, wl: dict, kind: str, name: str, q: dict | None, now: float) -> bool:
        """``reconcileOn{Local,Cluster}QueueActiveState``: HoldAndDrain evicts, Hold cancels reservations."""
        policy = ((q or {}).get("spec") or {}).get("stopPolicy") or "None"
        if is_admitted(wl):
            if policy != "HoldAndDrain" or is_evicted(wl):
                return False
            evict(
                self.store,
                self.events,
                wl,
                f"{kind}Stopped",
                f"The {kind} is stopped",
                now,
                merge_patch=self.cache.config.gate("WorkloadRequestUseMergePatch"),
                metrics=self.cache.metrics,
            )
            return True
        obs = self.cache.config.gate(OBSERVABILITY_GATE)
        if q is None or q["metadata"].get("deletionTimestamp"):
            reason = unadmitted_reason("Misconfigured", "Inadmissible", obs)
            unset_quota_reservation(wl, reason, f"{kind} {name} is terminating or missing", now, obs)
        elif policy != "None":
            reason = unadmitted_reason("Suspended", "Inadmissible", obs)
            unset_quota_reservation(wl, reason, f"{kind} {name} is stopped", now, obs)
        else:
            return False
        self.store.update_status(wl)
        return True

    # steps --------------------------------------------------------------------------------------
    def _requeue_at(self, wl: dict, now: float) -> tuple[bool, Result | None]:
        """``NeedsRequeueAtUpdate``: requeueAt = max(check transition + requeueAfterSeconds)."""
        best = 0.0
        for c in (wl.get("status") or {}).get("admissionChecks") or []:
            if (
                c.get("state") != "Retry"
                or c.get("requeueAfterSeconds") is None
                or not c.get("lastTransitionTime")
            ):
                continue
            best = max(best, parse_ts(c["lastTransitionTime"]) + float(c["requeueAfterSeconds"]))
        if best <= now:
            return False, None
        rs = (wl.get("status") or {}).get("requeueState") or {}
        if rs.get("requeueAt") and parse_ts(rs["requeueAt"]) >= best:
            return False, None
        wl["status"].setdefault("requeueState", {})["requeueAt"] = ts(best)
        self.store.update_status(wl)
        return True, None

    def _activation(self, wl: dict, now: float) -> tuple[bool, Result | None]:
        st = wl.setdefault("status", {})
        if is_active(wl):
            if is_true(wl, "DeactivationTarget"):
                wl["spec"]["active"] = False
                self.store.update(wl)
                return True, None
            rs = st.get("requeueState") or {}
            if rs.get("requeueAt"):
                left = parse_ts(rs["requeueAt"]) - now
                if left > 0:
                    if (
                        self.cache.profile.retry_evicts_at_once
                        and has_quota_reservation(wl)
                        and has_retry_checks(wl)
                        and not is_evicted(wl)
                    ):
                        # kueue#18785 (v0.20.7): a check's retry back-off no longer delays the eviction it asks
                        # for (v0.19.2 waits here first, holding the quota for the whole back-off); the
                        # workload is evicted now and waits for requeueAt without quota
                        return False, None
                    return True, Result(requeue_after=left)
                if not has_quota_reservation(wl):
                    rs.pop("requeueAt", None)
                    self._set_backoff_finished(wl, now)
                    self.store.update_status(wl)
                    return True, None
            rq = find_condition(wl, "Requeued")
            if rq is not None and rq.get("status") == "False":
                restarted = self._queue_restarted(wl, rq.get("reason", ""))
                if restarted:
                    set_status_condition(wl, "Requeued", True, restarted[0], restarted[1], now)
                    self.store.update_status(wl)
                    return True, None
                if self._reactivated(rq.get("reason", "")):
                    set_status_condition(
                        wl, "Requeued", True, "Reactivated", "The workload was reactivated", now
                    )
                    self.store.update_status(wl)
                    return True, None
                if rq.get("reason") in ("PodsReadyTimeout", "AdmissionCheck"):
                    self._set_backoff_finished(wl, now)
                    self.store.update_status(wl)
                    return True, None
            return False, None
        # deactivated
        dt = find_condition(wl, "DeactivationTarget")
        if not is_evicted(wl):
            cause, msg = "", "The workload is deactivated"
            if dt is not None:
                cause, msg = dt.get("reason", ""), f"{msg} due to {dt.get('message', '')}"

            def prep(obj: dict) -> None:
                remove_status_condition(obj, "DeactivationTarget")
                (obj.get("status") or {}).pop("requeueState", None)

            evict(
                self.store,
                self.events,
                wl,
                "Deactivated",
                msg,
                now,
                cause,
                prepare=prep,
                merge_patch=self.cache.config.gate("WorkloadRequestUseMergePatch"),
                metrics=self.cache.metrics,
            )
            return True, None
        if st.get("requeueState"):
            st.pop("requeueState")
            self.store.update_status(wl)
            return True, None
        return False, None

    def _reactivated(self, reason: str) -> bool:
        """Whether ``Requeued=False`` with ``reason`` is a deactivation that reactivation clears: the bare
        ``Deactivated`` on every release; from v0.20 (kueue#14874) also ``DeactivatedDueTo<Cause>``
        (``DeactivatedDueToAdmissionCheck``, ``DeactivatedDueToRequeuingLimitExceeded``, ...)."""
        if reason == "Deactivated":
            return True
        return self.cache.profile.reactivates_any_deactivation_cause and reason.startswith("DeactivatedDueTo")

    def _queue_restarted(self, wl: dict, reason: str) -> tuple[str, str] | None:
        """``isDisabledRequeuedBy{Local,Cluster}QueueStopped``: the stopped queue runs again."""
        if reason == "LocalQueueStopped":
            md = wl["metadata"]
            lq = self.cache.local_queues.get(
                f"{md.get('namespace', '')}/{(wl.get('spec') or {}).get('queueName', '')}"
            )
            if lq is not None and ((lq.get("spec") or {}).get("stopPolicy") or "None") == "None":
                return "LocalQueueRestarted", "The LocalQueue was restarted after being stopped"
        if reason == "ClusterQueueStopped":
            cq = self.cache.cqs.get(self.cache.queues.cluster_queue_for(wl) or "")
            if cq is not None and ((cq.get("spec") or {}).get("stopPolicy") or "None") == "None":
                return "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped"
        return None

    @staticmethod
    def _set_backoff_finished(wl: dict, now: float) -> None:
        rs = (wl.get("status") or {}).get("requeueState")
        if rs:
            rs.pop("requeueAt", None)
        set_status_condition(
            wl, "Requeued", True, "BackoffFinished", "The workload backoff was finished", now
        )

    def _sync_checks(self, wl: dict, cq: dict, now: float) -> bool:
        """``reconcileSyncAdmissionChecks``: add applicable checks as Pending, drop the rest."""
        if self.cache.config.gate(variants.GATE) and variants.is_parent(wl):
            return False  # Parents have no admission checks: their Variants run them
        spec = cq.get("spec") or {}
        all_flavors = {f["name"] for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []}
        checks = {
            a["name"]: frozenset(a.get("onFlavors") or all_flavors)
            for a in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        }
        for n in spec.get("admissionChecks") or []:
            checks[n] = frozenset(all_flavors)
        want = admission_checks_for(checks, all_flavors, (wl.get("status") or {}).get("admission"))
        cur = list((wl.get("status") or {}).get("admissionChecks") or [])
        names = {c["name"] for c in cur}
        new = [c for c in cur if c["name"] in want]
        for n in sorted(want - names):
            new.append({"name": n, "state": "Pending", "message": "", "lastTransitionTime": ts(now)})
        new.sort(key=lambda c: c["name"])
        if new == sorted(cur, key=lambda c: c["name"]) and len(new) == len(cur):
            return False
        if new:
            wl["status"]["admissionChecks"] = new
        else:
            wl["status"].pop("admissionChecks", None)
        self.store.update_status(wl)
        return True

    def _sync_unadmitted(self, wl: dict, lq: dict | None, cq: dict | None, now: float) -> bool:
        changed = False
        obs = self.cache.config.gate(OBSERVABILITY_GATE)
        if not has_quota_reservation(wl):
            blocker = self._queue_blocker(wl, lq, cq)
            # ``resolveLegacyUnadmittedQuotaReservedCondition`` (gate off): only the queues' blockers, as
            # Inadmissible (a deactivated workload's conditions are the eviction's)
            if blocker is not None and (obs or blocker[0] != "Deactivated"):
                reason = unadmitted_reason(blocker[0], "Inadmissible", obs)
                changed = set_status_condition(wl, "QuotaReserved", False, reason, blocker[1], now)
        if sync_admitted_condition(wl, now, obs):
            changed = True
        if not changed:
            return False
        out = self.store.update_status(wl)
        if is_admitted(out):
            qr = find_condition(out, "QuotaReserved")
            waited = now - parse_ts(qr.get("lastTransitionTime")) if qr else 0
            self.events.record(
                out,
                "Normal",
                "Admitted",
                f"Admitted by ClusterQueue "
                f"{out['status']['admission']['clusterQueue']}, wait time since reservation was {waited:.0f}s",
            )
        return True

    def _queue_blocker(self, wl: dict, lq: dict | None, cq: dict | None) -> tuple[str, str] | None:
        qn = (wl.get("spec") or {}).get("queueName", "")
        if not is_active(wl):
            return "Deactivated", "The workload is deactivated"
        if lq is None:
            return "Misconfigured", f"LocalQueue {qn} doesn't exist"
        if ((lq.get("spec") or {}).get("stopPolicy") or "None") != "None":
            return "Suspended", f"LocalQueue {qn} is inactive"
        if cq is None:
            return (
                "Misconfigured",
                f"ClusterQueue {(lq.get('spec') or {}).get('clusterQueue', '')} doesn't exist",
            )
        if self.cache.inactive_reason(cq["metadata"]["name"]) is not None:
            return "Suspended", f"ClusterQueue {cq['metadata']['name']} is inactive"
        return None

    def _check_based_eviction(self, wl: dict, now: float) -> bool:
        """``reconcileCheckBasedEviction``: Rejected → deactivation target; Retry → eviction. An evicted workload is
        skipped, except (from 0.20, kueue#14309) for a Rejected check: a Retry must not evict a workload already
        being evicted, but a rejection is final."""
        if self.cache.config.gate(variants.GATE) and variants.is_parent(wl):
            return False
        evicted = is_evicted(wl)
        if evicted and not self.cache.profile.rejected_check_deactivates_evicted:
            return False  # v0.19.2: an evicted workload's Rejected check is ignored (Admitted=True stays)
        checks = (wl.get("status") or {}).get("admissionChecks") or []
        rejected = [c for c in checks if c.get("state") == "Rejected"]
        retry = [c for c in checks if c.get("state") == "Retry"]
        if evicted:  # kueue#14309 (v0.20): a check Rejected during an eviction still deactivates the workload
            if not rejected or is_true(wl, "DeactivationTarget"):
                return False
            retry = []  # a Retry never evicts a workload already being evicted
        if rejected:
            msg = checks_message(rejected, "Rejected")
            wl["status"].setdefault("conditions", []).append(
                {
                    "type": "DeactivationTarget",
                    "status": "True",
                    "reason": "AdmissionCheck",
                    "message": msg,
                    "observedGeneration": wl["metadata"].get("generation", 0),
                    "lastTransitionTime": ts(now),
                }
            )
            out = self.store.update_status(wl)
            self.events.record(out, "Warning", "AdmissionCheckRejected", f"Deactivated due to {msg}")
            return True
        if retry:
            evict(
                self.store,
                self.events,
                wl,
                "AdmissionCheck",
                f"Evicted due to {checks_message(retry, 'Retry')}",
                now,
                merge_patch=self.cache.config.gate("WorkloadRequestUseMergePatch"),
                metrics=self.cache.metrics,
            )
            return True
        return False

    def _pods_ready_timeout(self, wl: dict, now: float) -> Result | None:
        """``reconcileNotReadyTimeout`` (waitForPodsReady; the timer is ``pods_ready.admitted_not_ready``)."""
        cfg = self.cache.config
        if cfg.gate(variants.GATE) and variants.is_variant(wl):
            return None  # the Parent's PodsReady counts; the controller copies it to the admitted Variant
        if not is_active(wl) or is_evicted(wl):
            return None
        cause, left = admitted_not_ready(wl, cfg, now)
        if not cause:
            return None
        if left > 0:
            return Result(requeue_after=left)
        count = int(((wl.get("status") or {}).get("requeueState") or {}).get("count") or 0)
        if cfg.backoff_limit_count is not None and count + 1 > cfg.backoff_limit_count:
            set_status_condition(
                wl,
                "DeactivationTarget",
                True,
                "RequeuingLimitExceeded",
                "exceeding the maximum number of re-queuing retries",
                now,
            )
            self.store.update_status(wl)
            return None
        ns, name = wl["metadata"]["namespace"], wl["metadata"]["name"]
        rng = self.ctx.rng("kueue.requeue-backoff")

        def prep(obj: dict) -> None:
            """``workload.UpdateRequeueState`` + ``SetRequeueState`` (never moves requeueAt earlier)."""
            rs = obj.setdefault("status", {}).setdefault("requeueState", {})
            n = int(rs.get("count") or 0) + 1
            at = now + requeue_wait(cfg, n, rng)
            if not rs.get("requeueAt") or parse_ts(rs["requeueAt"]) < at:
                rs["requeueAt"] = ts(at)
            rs["count"] = n

        evict(
            self.store,
            self.events,
            wl,
            "PodsReadyTimeout",
            f"Exceeded the PodsReady timeout {ns}/{name}",
            now,
            cause,
            prepare=prep,
            merge_patch=self.cache.config.gate("WorkloadRequestUseMergePatch"),
            metrics=self.cache.metrics,
        )
        return None
