"""What one simulation run saw, job by job: the recorder behind ``flexq.simulate.engine``.

Owns ``JobRecord`` (one job of the traffic as the run saw it) and ``Recorder``, which hears the twin's store
(watches on Workloads, the job kinds, ProvisioningRequests, Pods and the cluster autoscaler's Events) and notes
for each job:

- its admission, start (``PodsReady``), end, flavors, evictions and preemptions (Kueue's reasons), and the
  quota its Workloads hold over time (ClusterQueue reservation);
- **where its wait went**: every second from submission to the first start is in exactly one bucket
  (``WAIT_BUCKETS``): ``quota`` (no quota reserved yet), ``dws`` (quota reserved, an admission check such as
  the DWS ProvisioningRequest not ready yet), ``scaleUp`` (admitted, pods waiting for nodes the autoscaler is
  making), ``stockout`` (admitted, pods waiting for nodes the cloud refused: a stock-out or GCE quota, per
  ``flexq.api.reasons.classify_capacity``), ``poolMax`` (admitted, pods waiting for nodes their node pool,
  at its maximum size, cannot add), ``pods`` (admitted, pods on nodes or being created, not ready
  yet), ``podErrors`` (admitted, a pod on its node that the kubelet cannot start: a missing ConfigMap or
  Secret volume, ``FailedMount``; an env reference, ``CreateContainerConfigError``; an image reference,
  ``InvalidImageName``), ``evicted`` (evicted before it started: waiting to be admitted again) and ``deactivated`` (Kueue
  deactivated it: it waits for someone to reactivate it, until the run's horizon if nobody does);
- the time its Workloads held quota while an admission check was in ``Retry`` (the check's back-off, which Kueue
  0.19 waits out holding the quota; 0.20.7 evicts at once, kueue#18785);
- **why a job was lost**: Kueue's reason when it deactivated the job (``DeactivatedDueToAdmissionCheck``,
  ``DeactivatedDueToRequeuingLimitExceeded``, …) with its message, the failures of the job's
  ProvisioningRequests by reason (``NodepoolSizeReached`` ×3), the capacity refusals its pods met, the last
  flavor/resource Kueue said had no quota for it, and what the kubelet said when it could not start its
  pods (its Warning Events: ``FailedMount``, ``Failed``, ``InspectFailed``, with their messages);
- the run's series: jobs waiting per bucket over time, and quota reserved per ClusterQueue/flavor/resource
  (for the studies of a team; not for Kueue's 2,000-queue perf files).

Under Kueue's Concurrent Admission (gate ``ConcurrentAdmission``, a ClusterQueue with a
``concurrentAdmissionPolicy``), a job's Workload is a Parent that holds no quota of its own (Kueue's cache
counts its Variants', one per flavor): the job's quota, its admission checks, its wait on DWS and its flavor
come from its Variants; its evictions (the job stopped: ``VariantEvicted`` after a ``FlavorMigration``), its
start and a deactivation come from the Parent. A Variant deactivated by the policy is not the job lost.

It also runs bare Workloads as Kueue's perf-harness runner does (finished ``run`` seconds after admission,
evictions completed). Finished jobs are deleted once recorded (``keepFinished: false``), as a team's cleanup
would. Must not import flexq.http.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from flexq.api.quantity import parse_quantity
from flexq.errors import ApiError
from flexq.fallback.model import ANN_MOVE
from flexq.kueue.variants import is_parent, is_variant, parent_name
from flexq.kueue.workload import unset_quota_reservation
from flexq.semantics.conditions import find_condition, is_true, set_status_condition
from flexq.semantics.resources import pod_requests
from flexq.simulate.jobs import JobSpec
from flexq.simulate.pod_watch import PodWatch
from flexq.simulate.records import TPU, WAIT_BUCKETS, JobRecord, WorkloadSeen
from flexq.twin import Twin

__all__ = ["Recorder"]

MAX_SERIES_KEYS = (
    64  # quota series only for studies with at most this many ClusterQueue/flavor/resource entries
)
_QUOTA_MSG = re.compile(r"insufficient (?:unused )?quota for (\S+) in flavor (\S+)")
_GROW_BY = re.compile(r"[Nn]ode pool (\S+) cannot grow by (\d+) nodes")


class Recorder:
    """Hears one run's twin and keeps a ``JobRecord`` per job (see the module docstring)."""

    def __init__(
        self,
        twin: Twin,
        *,
        keep_finished: bool,
        fallback: bool,
        rescue: bool,
        rel: Callable[[], float],
    ) -> None:
        self.twin = twin
        self.keep_finished = keep_finished
        self.fallback, self.rescue = fallback, rescue
        self.rel = rel
        self.records: dict[tuple[str, str, str], JobRecord] = {}
        self.wl_state: dict[tuple[str, str], WorkloadSeen] = {}
        self.wl_job: dict[tuple[str, str], JobRecord] = {}
        self.pending_now = 0
        self.pending: list[tuple[float, int]] = [(0.0, 0)]
        self.waiting_now = dict.fromkeys(WAIT_BUCKETS, 0)
        self.waiting: list[tuple[float, tuple[int, ...]]] = [(0.0, (0,) * len(WAIT_BUCKETS))]
        self.evictions: dict[str, Counter[str]] = defaultdict(Counter)
        self.preemptions: dict[str, Counter[str]] = defaultdict(Counter)
        self.admission_waits: list[tuple[str, str, float]] = []
        self.pr_seen: dict[tuple[str, str], set[str]] = {}
        self.usage: dict[str, list[float]] = {}  # "cq/flavor/resource" -> [reserved unit*s, nominal]
        self.reserved_now: dict[str, float] = {}
        self.reserved_series: dict[str, list[tuple[float, float]]] = {}
        self.open_jobs = 0
        self.goodput_resource = ""

    # -- set-up --------------------------------------------------------------------------------------------------
    def track_quota(self, key: str, nominal: float) -> None:
        self.usage[key] = [0.0, nominal]

    def start(self, job_kinds: set[str]) -> None:
        store = self.twin.store
        if len(self.usage) <= MAX_SERIES_KEYS:
            self.reserved_now = dict.fromkeys(self.usage, 0.0)
            self.reserved_series = {k: [(0.0, 0.0)] for k in self.usage}
        store.watch(self.on_workload, ["Workload"])
        kinds = sorted(job_kinds - {"Workload"})
        if kinds:
            store.watch(self.on_job, kinds)
            pods = PodWatch(self.twin, self.records, self.rebucket)
            store.watch(pods.on_pod, ["Pod"])
            store.watch(pods.on_event, ["Event"])
        with contextlib.suppress(ApiError):  # a twin without the autoscaling.x-k8s.io kinds
            store.watch(self.on_pr, ["ProvisioningRequest"])

    def submitted(self, job: JobSpec) -> JobRecord:
        now = self.rel()
        rec = JobRecord(job, submit=job.submit, bucket_since=now)
        self.records[(job.kind, job.namespace, job.name)] = rec
        self.pending_now += 1
        self._point(self.pending, self.pending_now)
        self.open_jobs += 1
        self._count("quota", +1, now)
        return rec

    # -- series --------------------------------------------------------------------------------------------------
    def _point(self, series: list[tuple[float, int]], value: int) -> None:
        t = round(self.rel(), 3)
        if series and series[-1][0] == t:
            series[-1] = (t, value)
        else:
            series.append((t, value))

    def _count(self, bucket: str, delta: int, now: float) -> None:
        self.waiting_now[bucket] += delta
        t = round(now, 3)
        row = tuple(self.waiting_now[b] for b in WAIT_BUCKETS)
        if self.waiting[-1][0] == t:
            self.waiting[-1] = (t, row)
        else:
            self.waiting.append((t, row))

    def _reserve(self, key: str, delta: float, now: float) -> None:
        if key not in self.reserved_now:
            return
        self.reserved_now[key] += delta
        series = self.reserved_series[key]
        t = round(now, 3)
        if series[-1][0] == t:
            series[-1] = (t, self.reserved_now[key])
        else:
            series.append((t, self.reserved_now[key]))

    def _set_pending(self, rec: JobRecord) -> None:
        want = not rec.closed and not rec.holding
        if want != rec.pending:
            rec.pending = want
            self.pending_now += 1 if want else -1
            self._point(self.pending, self.pending_now)

    def _bucket_of(self, rec: JobRecord) -> str | None:
        if rec.started is not None or rec.finished is not None:
            return None
        if rec.deactivated:
            return "deactivated"
        if not rec.holding:
            return "evicted" if rec.evictions else "quota"
        if not rec.admitted_now:
            return "dws"
        if rec.unscheduled:
            if rec.refused in ("stockout", "quota"):
                return "stockout"
            return "poolMax" if rec.refused == "pool-max" else "scaleUp"
        return "podErrors" if rec.blocked else "pods"

    def rebucket(self, rec: JobRecord) -> None:
        """Move the job's wait to the bucket its state says (time so far to the old bucket)."""
        want = self._bucket_of(rec)
        if want == rec.bucket:
            return
        now = self.rel()
        self._close_bucket(rec, now)
        if rec.bucket is not None:
            self._count(rec.bucket, -1, now)
        rec.bucket, rec.bucket_since = want, now
        if want is not None:
            self._count(want, +1, now)

    def _close_bucket(self, rec: JobRecord, now: float) -> None:
        if rec.bucket is None:
            return
        dt = max(0.0, now - rec.bucket_since)
        rec.waits[rec.bucket] = rec.waits.get(rec.bucket, 0.0) + dt
        if rec.bucket in ("quota", "evicted") and rec.quota_key:
            qw = rec.owned_quota_waits()
            qw[rec.quota_key] = qw.get(rec.quota_key, 0.0) + dt
        rec.bucket_since = now

    def settle(self, horizon: float) -> None:
        """At the end: every job still waiting waits until the horizon (a job that never started counts until
        the end: the censored wait)."""
        for rec in self.records.values():
            if rec.bucket is not None:
                self._close_bucket(rec, max(horizon, rec.bucket_since))

    # -- workloads -----------------------------------------------------------------------------------------------
    def _job_of(self, wl: dict[str, Any]) -> JobRecord | None:
        md = wl["metadata"]
        ns = md.get("namespace", "default")
        if is_variant(wl):  # Concurrent Admission: a Variant is its Parent's job's
            parent = parent_name(wl)
            rec = self.wl_job.get((ns, parent))
            if rec is None:
                pwl = self.twin.store.try_get("Workload", parent, ns)
                rec = self._job_of(pwl) if pwl is not None and not is_variant(pwl) else None
            return rec
        for ref in md.get("ownerReferences") or ():
            rec = self.records.get((ref.get("kind", ""), ns, ref.get("name", "")))
            if rec is not None:
                return rec
        return self.records.get(("Workload", ns, md["name"]))

    def on_workload(self, ev: Any) -> None:
        """One Workload's change: its state before (``WorkloadSeen``) and after (quota reserved, admitted,
        finished, inactive), each transition to its handler, as KubeRay's state switch dispatches on a job's
        status; then the conditions that count each time they are set again (Evicted, Preempted) and the first
        PodsReady."""
        wl = ev.object
        md = wl["metadata"]
        key = (md.get("namespace", "default"), md["name"])
        rec = self.wl_job.get(key)
        if rec is None:
            rec = self._job_of(wl)
            if rec is None:
                return
            self.wl_job[key] = rec
            if not rec.size:
                rec.size = self._size(wl)
        seen = self.wl_state.get(key)
        if seen is None:
            seen = self.wl_state[key] = WorkloadSeen(queued_at=self.rel())
        now = self.rel()
        gone = ev.type == "DELETED"
        status = wl.get("status") or {}
        admission = status.get("admission")
        # Concurrent Admission: the Parent's admission is a copy of its admitted Variant's, which holds the quota
        parent, variant = is_parent(wl), is_variant(wl)
        if parent:
            admission = None
        reserved = not gone and is_true(wl, "QuotaReserved") and admission is not None
        admitted = not gone and reserved and is_true(wl, "Admitted")
        finished = is_true(wl, "Finished")
        if not reserved and not gone and not parent:
            self._quota_refused(rec, wl, now)
        if reserved and not seen.reserved:
            assert admission is not None
            self._reserved(rec, seen, admission, md["name"], now)
        elif seen.reserved and (not reserved or finished):
            self._released(rec, seen, md["name"], now)
        retrying = (
            reserved
            and not finished
            and any(c.get("state") == "Retry" for c in status.get("admissionChecks") or ())
        )
        if retrying and seen.retry_since is None:
            self._retry_began(rec, seen, admission, now)
        elif not retrying and seen.retry_since is not None:
            rec.retry_hold += now - seen.retry_since
            seen.retry_since = None
        if admitted and not seen.admitted:
            self._admitted(rec, seen, key, now)
            if variant and admission is not None:
                rec.flavors = _flavors(admission)  # the Variant that runs the job
        elif not admitted and seen.admitted:
            seen.admitted = False
            rec.discard("admitted_now", md["name"])
        ev_c = find_condition(wl, "Evicted")
        if (
            ev_c is not None
            and ev_c.get("status") == "True"
            and ev_c.get("lastTransitionTime") != seen.evict_lt
        ):
            if variant:  # Kueue's reason counted (FlavorMigration); the job's stop is the Parent's eviction
                seen.evict_lt = ev_c.get("lastTransitionTime")
                self.evictions[rec.cluster_queue or "?"][ev_c.get("reason", "")] += 1
            else:
                self._evicted(rec, seen, ev_c, key, admission is not None, now)
        pr_c = find_condition(wl, "Preempted")
        if (
            pr_c is not None
            and pr_c.get("status") == "True"
            and pr_c.get("lastTransitionTime") != seen.preempt_lt
        ):
            seen.preempt_lt = pr_c.get("lastTransitionTime")
            self.preemptions[rec.cluster_queue or "?"][pr_c.get("reason", "")] += 1
            rec.preemptions += 1
            rec.owned_after_preemption().append(0)
            seen.preempted = True
        if not seen.ready and not variant and is_true(wl, "PodsReady"):
            seen.ready = True
            if rec.started is None:
                rec.started = now
            if rec.after_preemption:
                # started again: later moves are not because of that preemption
                rec.owned_after_preemption().append(-1)
        # a Variant the policy deactivated (a less preferred flavor once one is admitted) is not the job's
        inactive = (wl.get("spec") or {}).get("active") is False and not gone and not variant
        if inactive and self.fallback and not seen.fallback_moved:
            self._fallback_moved(rec, seen)
        if inactive and not rec.deactivated and not rec.closed and not self._fallback_moving(rec):
            self._deactivated(rec, wl, ev_c)
        elif not inactive and rec.deactivated and not gone and not rec.closed:
            rec.deactivated = False  # reactivated (flexq fallback's rescue, or by hand)
        if rec.spec.kind == "Workload" and finished and not rec.closed:
            c = find_condition(wl, "Finished") or {}
            self.finish(rec, "Failed" if c.get("reason") == "Failed" else "Succeeded")
        if gone:
            self.wl_state.pop(key, None)
            self.wl_job.pop(key, None)
        self.rebucket(rec)

    # -- a Workload's transitions (on_workload) ------------------------------------------------------------------
    def _quota_refused(self, rec: JobRecord, wl: dict[str, Any], now: float) -> None:
        """No quota reserved: the flavor/resource Kueue's QuotaReserved message says has no quota for it."""
        qr = find_condition(wl, "QuotaReserved")
        m = _QUOTA_MSG.search((qr or {}).get("message") or "")
        if m is not None:
            k = f"{m.group(2).rstrip(',.')}/{m.group(1).rstrip(',.')}"
            if k != rec.quota_key:
                self._close_bucket(rec, now)
                rec.quota_key = k

    def _reserved(
        self, rec: JobRecord, seen: WorkloadSeen, admission: dict[str, Any], name: str, now: float
    ) -> None:
        """Quota reserved: its ClusterQueue, flavors and the usage it now holds."""
        seen.reserved, seen.since = True, now
        cq = admission.get("clusterQueue", "")
        rec.cluster_queue = cq
        usage = []
        for psa in admission.get("podSetAssignments") or ():
            fl = psa.get("flavors") or {}
            for res, qty in (psa.get("resourceUsage") or {}).items():
                ukey = f"{cq}/{fl.get(res, '')}/{res}"
                if ukey in self.usage:
                    usage.append((ukey, float(parse_quantity(str(qty)))))
        seen.usage = usage
        for ukey, qty in usage:
            self._reserve(ukey, qty, now)
        rec.flavors = _flavors(admission)
        if rec.reserved is None:
            rec.reserved = now
        rec.owned_set("holding").add(name)
        self._set_pending(rec)

    def _released(self, rec: JobRecord, seen: WorkloadSeen, name: str, now: float) -> None:
        """Quota given back (evicted, finished, deleted): the usage it held, counted."""
        seen.reserved = False
        for ukey, qty in seen.usage:
            self.usage[ukey][0] += qty * (now - seen.since)
            self._reserve(ukey, -qty, now)
        rec.discard("holding", name)
        self._set_pending(rec)

    def _retry_began(
        self, rec: JobRecord, seen: WorkloadSeen, admission: dict[str, Any] | None, now: float
    ) -> None:
        """An admission check in Retry while the quota is held: the hold starts, on the goodput flavors."""
        seen.retry_since = now
        rec.owned_set("retry_hold_flavors").update(
            fl
            for psa in (admission or {}).get("podSetAssignments") or ()
            for res, fl in (psa.get("flavors") or {}).items()
            if res == (self.goodput_resource or TPU)
        )

    def _admitted(self, rec: JobRecord, seen: WorkloadSeen, key: tuple[str, str], now: float) -> None:
        """Admitted: its wait for admission; a bare Workload runs for its ``run`` seconds from now."""
        seen.admitted = True
        seen.seq += 1
        if not rec.admitted_now:
            rec.refused = rec.refused_code = ""
        rec.owned_set("admitted_now").add(key[1])
        if rec.admitted is None:
            rec.admitted = now
        pc = rec.spec.priority_class or (str(rec.spec.priority) if rec.spec.priority is not None else "")
        self.admission_waits.append((rec.cluster_queue, pc, now - seen.queued_at))
        if rec.spec.kind == "Workload":
            if rec.started is None:
                rec.started = now
            self.twin.core.loop.call_at(
                self.twin.now() + rec.spec.run, functools.partial(self._finish_bare, key, seen.seq)
            )

    def _evicted(
        self,
        rec: JobRecord,
        seen: WorkloadSeen,
        ev_c: dict[str, Any],
        key: tuple[str, str],
        holds_admission: bool,
        now: float,
    ) -> None:
        """Evicted (again): counted by Kueue's reason; a bare Workload's eviction completed as Kueue's runner does."""
        seen.evict_lt = ev_c.get("lastTransitionTime")
        self.evictions[rec.cluster_queue or "?"][ev_c.get("reason", "")] += 1
        rec.evictions += 1
        rec.check_evictions += ev_c.get("reason") == "AdmissionCheck"
        seen.queued_at = now
        if str(ev_c.get("reason", "")).startswith("Deactivated") and rec.deactivated:
            rec.lost_reason = ev_c.get("reason", "")
            rec.lost_message = ev_c.get("message", "")
        if rec.spec.kind == "Workload" and holds_admission:
            self.twin.core.loop.call_soon(functools.partial(self._complete_eviction, key))

    def _fallback_moved(self, rec: JobRecord, seen: WorkloadSeen) -> None:
        """Made inactive by flexq's fallback (a move or a return): counted against the last preemption."""
        step = self._fallback_step(rec)
        if step in ("deactivating", "returning"):
            seen.fallback_moved = True
            if rec.after_preemption and rec.after_preemption[-1] >= 0:
                rec.owned_after_preemption()[-1] += 1
            if step == "returning" and seen.preempted:
                rec.undid_preemption += 1

    def _deactivated(self, rec: JobRecord, wl: dict[str, Any], ev_c: dict[str, Any] | None) -> None:
        """Deactivated (an admission check Rejected, the requeuing limit reached): Kueue will not admit it again
        unless someone reactivates it; with nobody to (no rescue), the run does not wait for it."""
        rec.deactivated = True
        dt = find_condition(wl, "DeactivationTarget")
        if dt is not None:
            rec.lost_reason = f"DeactivatedDueTo{dt.get('reason', '')}"
            rec.lost_message = f"The workload is deactivated due to {dt.get('message', '')}"
        elif ev_c is not None and str(ev_c.get("reason", "")).startswith("Deactivated"):
            rec.lost_reason, rec.lost_message = ev_c.get("reason", ""), ev_c.get("message", "")
        else:
            rec.lost_reason, rec.lost_message = "Deactivated", "spec.active is false"
        if not self.rescue:
            rec.closed = True
            rec.outcome = "Deactivated"
            self.open_jobs -= 1
            self._set_pending(rec)

    def _size(self, wl: dict[str, Any]) -> float:
        """What the workload asks for of the goodput resource (TPU chips when the study has TPUs, else CPUs)."""
        total: dict[str, float] = defaultdict(float)
        for ps in (wl.get("spec") or {}).get("podSets") or ():
            count = int(ps.get("count") or 1)
            for r, q in pod_requests((ps.get("template") or {}).get("spec") or {}).items():
                if r in (TPU, "cpu"):
                    total[r] += count * float(q)
        if not self.goodput_resource:
            self.goodput_resource = TPU if total.get(TPU) else "cpu"
        return total.get(self.goodput_resource, 0.0)

    def _fallback_moving(self, rec: JobRecord) -> bool:
        """flexq's fallback (twin setting ``fallback``) deactivates a workload to move its job to the next flavor,
        or back to the first one: the job's ``fallback.flexq.dev/move`` annotation says so (step ``deactivating``
        or ``returning``), and the job gets a new Workload, so the run keeps waiting for it."""
        return self._fallback_step(rec) in ("deactivating", "returning")

    def _fallback_step(self, rec: JobRecord) -> str:
        """The step of the fallback's move the job's ``fallback.flexq.dev/move`` annotation names ("" if none)."""
        if not self.fallback:
            return ""
        job = self.twin.store.try_get(rec.spec.kind, rec.spec.name, rec.spec.namespace)
        text = ((job or {}).get("metadata", {}).get("annotations") or {}).get(ANN_MOVE)
        if not text:
            return ""
        try:
            doc = json.loads(text)
        except ValueError:
            return ""
        return str(doc.get("step") or "") if isinstance(doc, dict) else ""

    def _finish_bare(self, key: tuple[str, str], seq: int) -> None:
        seen = self.wl_state.get(key)
        if seen is None or seen.seq != seq or not seen.admitted:
            return
        wl = self.twin.store.try_get("Workload", key[1], key[0])
        if wl is None:
            return
        rec = self.records[("Workload", key[0], key[1])]
        ok = rec.spec.outcome != "Failed"
        set_status_condition(
            wl,
            "Finished",
            True,
            "Succeeded" if ok else "Failed",
            "Job finished successfully" if ok else "Job failed",
            self.twin.now(),
        )
        self.twin.store.update_status(wl)

    def _complete_eviction(self, key: tuple[str, str]) -> None:
        wl = self.twin.store.try_get("Workload", key[1], key[0])
        if wl is None or not (wl.get("status") or {}).get("admission") or not is_true(wl, "Evicted"):
            return
        unset_quota_reservation(wl, "Pending", "Evicted by the simulator's runner", self.twin.now())
        self.twin.store.update_status(wl)

    # -- jobs ----------------------------------------------------------------------------------------------------
    def on_job(self, ev: Any) -> None:
        obj = ev.object
        md = obj["metadata"]
        rec = self.records.get((obj.get("kind", ""), md.get("namespace", "default"), md["name"]))
        if rec is None or rec.closed or ev.type == "DELETED":
            return
        st = obj.get("status") or {}
        if obj.get("kind") == "RayJob":
            dep = st.get("jobDeploymentStatus")
            if dep in ("Complete", "Failed"):
                self.finish(rec, "Succeeded" if st.get("jobStatus") == "SUCCEEDED" else "Failed")
        elif is_true(obj, "Complete"):
            self.finish(rec, "Succeeded")
        elif is_true(obj, "Failed"):
            self.finish(rec, "Failed")

    def finish(self, rec: JobRecord, outcome: str) -> None:
        if rec.closed:
            return
        rec.closed = True
        rec.deactivated = False
        rec.finished = self.rel()
        rec.outcome = outcome
        if rec.started is None and rec.admitted is not None:
            rec.started = rec.admitted
        self.open_jobs -= 1
        self._set_pending(rec)
        self.rebucket(rec)
        if not self.keep_finished:
            spec = rec.spec
            self.twin.core.loop.call_later(1.0, lambda: self._delete(spec))

    def _delete(self, spec: JobSpec) -> None:
        with contextlib.suppress(ApiError):  # already gone
            self.twin.store.delete(spec.kind, spec.name, spec.namespace, propagation="Background")

    # -- ProvisioningRequests ------------------------------------------------------------------------------------
    def on_pr(self, ev: Any) -> None:
        pr = ev.object
        md = pr["metadata"]
        ns = md.get("namespace", "")
        seen = self.pr_seen.setdefault((ns, md["name"]), set())
        for c in (pr.get("status") or {}).get("conditions") or ():
            if c.get("status") != "True":
                continue
            what = c["type"] if c["type"] != "Failed" else f"Failed/{c.get('reason', '')}"
            if what in seen:
                continue
            seen.add(what)
            if c["type"] != "Failed":
                continue
            owner = next((r for r in md.get("ownerReferences") or () if r.get("kind") == "Workload"), None)
            rec = self.wl_job.get((ns, owner.get("name", ""))) if owner else None
            if rec is None:
                continue
            rec.owned_counter("pr_failed")[c.get("reason", "")] += 1
            m = _GROW_BY.search(c.get("message") or "")
            if m is not None:
                rec.owned_refusals().append((self.rel(), m.group(1), int(m.group(2))))


def _flavors(admission: dict[str, Any]) -> str:
    """``head=default-cpu,tpu-group=res-a``: each pod set's flavors in an admission."""
    return ",".join(
        f"{psa.get('name')}={'+'.join(sorted(set((psa.get('flavors') or {}).values())))}"
        for psa in admission.get("podSetAssignments") or ()
    )
