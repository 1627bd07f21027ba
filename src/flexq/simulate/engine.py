"""One simulation run: the twin itself (``Twin(clock="virtual")``, the simulated executor, every controller)
fed with a study's cluster, manifests, capacity profile and traffic, observed through watches.

Owns ``run_one`` (variant x seed -> ``RunResult``) and ``preflight`` (build the cluster and apply the
manifests of every variant, check every queue and priority class the traffic names and that the API takes one
object of each job shape, all before anything is simulated). The run:

1. the capacity profile becomes the project's ``default`` profile, its seed replaced by the run's seed;
2. the GKE cluster and node pools are created through the GKE REST API in-process (``Twin.gke``), waiting
   for each operation; then the profile's relative times are made to count from now (``spec.origin``);
3. the manifests are applied (``Twin.apply``, as ``kubectl apply``), then each job is created (``Twin.create``)
   at its submit time as the clock advances; bare Workloads are run like Kueue's perf-harness runner does
   (finished ``run`` seconds after admission, evictions completed);
4. the recorder (store watches: Workload, RayJob, Job, ProvisioningRequest) notes each job's admission,
   start (PodsReady), end, flavors, evictions and preemptions (Kueue's reasons), quota reservation over time
   and ProvisioningRequest conditions; finished jobs are deleted once recorded (``keepFinished: false``), as
   a team's cleanup would, so the store holds only live work;
5. the run ends when every job has finished, or at the study's ``until``; node records come from the
   cluster's billing ledger (``GkeBilling``).

Must not import flexq.http.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from flexq.api import scheme
from flexq.api.quantity import parse_quantity
from flexq.clock import format_time
from flexq.errors import ApiError, CloudError, InputError
from flexq.fallback.policy import ANN_MOVE
from flexq.kueue.config import CONFIG_KEY, CONFIG_NAME, CONFIG_NAMESPACE, KueueConfig
from flexq.simulate.study import Study, Variant, cluster_requests
from flexq.simulate.traffic import JobSpec, build_object
from flexq.twin import Twin, load_documents

__all__ = ["RunResult", "run_one", "preflight", "JobRecord"]

Progress = Callable[[dict[str, Any]], None]
DRAIN_CHUNK = 3600.0


@dataclass
class JobRecord:
    spec: JobSpec
    submit: float
    cluster_queue: str = ""
    reserved: float | None = None
    admitted: float | None = None
    started: float | None = None
    finished: float | None = None
    outcome: str = ""
    flavors: str = ""
    evictions: int = 0
    preemptions: int = 0
    holding: set[str] = field(default_factory=set)  # workloads of this job holding quota now
    pending: bool = True
    closed: bool = False  # finished, or deactivated by Kueue


@dataclass
class RunResult:
    """What one run produced; plain data (pickled back from worker processes and Ray tasks)."""

    study: str
    variant: str
    replica: int
    seed: int
    duration: float  # simulated seconds from the first possible submission to the end
    jobs: list[dict[str, Any]]  # one row per job (times relative to the start)
    pending: list[tuple[float, int]]  # (time, jobs waiting for quota) after each change
    node_records: list[dict[str, Any]]  # pool, model, created, deleted, price per hour
    evictions: dict[str, dict[str, int]]  # cluster queue -> Kueue reason -> count
    preemptions: dict[str, dict[str, int]]  # preempting... cluster queue of the victim -> reason -> count
    admission_waits: list[tuple[str, str, float]]  # (cluster queue, priority class, seconds) per admission
    provisioning: dict[str, int]  # ProvisioningRequest outcome -> count
    usage: dict[str, dict[str, float]]  # "cq/flavor/resource" -> {reserved (unit*s), nominal}
    steps: int = 0


def _cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c
    return None


def _true(obj: dict[str, Any], ctype: str) -> bool:
    c = _cond(obj, ctype)
    return c is not None and c.get("status") == "True"


def _doc_lines(text: str) -> list[int]:
    """The first line of each YAML document in ``text`` (1-based)."""
    lines = [1]
    for n, line in enumerate(text.splitlines(), start=1):
        if re.match(r"^---(\s|$)", line):
            lines.append(n + 1)
    return lines


class _Sim:
    def __init__(self, study: Study, variant: Variant, replica: int, jobs: list[JobSpec]) -> None:
        self.study, self.variant, self.replica = study, variant, replica
        self.seed = study.seed + replica
        self.jobs = jobs
        self.twin = Twin(clock="virtual", seed=self.seed, **variant.settings)
        self.t0 = 0.0
        self.records: dict[tuple[str, str, str], JobRecord] = {}
        self.wl_state: dict[tuple[str, str], dict[str, Any]] = {}
        self.pending_now = 0
        self.pending: list[tuple[float, int]] = [(0.0, 0)]
        self.evictions: dict[str, Counter[str]] = defaultdict(Counter)
        self.preemptions: dict[str, Counter[str]] = defaultdict(Counter)
        self.admission_waits: list[tuple[str, str, float]] = []
        self.pr_seen: dict[tuple[str, str], set[str]] = {}
        self.usage: dict[str, list[float]] = {}
        self.priorities: dict[str, int] = {}  # WorkloadPriorityClass -> value
        self.pod_priorities: dict[str, int] = {}  # scheduling.k8s.io PriorityClass -> value
        self.open_jobs = 0
        self.location = self.project = self.cluster = ""

    # -- setup ---------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        twin, study = self.twin, self.study
        if self.variant.capacity is not None:
            prof = dict(self.variant.capacity)
            prof["metadata"] = {"name": "default"}
            prof["spec"] = {**(prof.get("spec") or {}), "seed": self.seed}
            try:
                twin.core.project.create(prof)
            except ApiError as exc:
                raise InputError(exc.message, source=study.source, field="capacity") from None
        if self.variant.cluster is not None:
            self.project, self.location, self.cluster, reqs = cluster_requests(self.variant.cluster)
            for i, (method, path, body) in enumerate(reqs):
                where = f"cluster (request {i + 1}: {method} {path})"
                try:
                    op = twin.gke(method, path, body)
                except CloudError as exc:
                    raise InputError(
                        f"the GKE API refused it: {exc}", source=study.source, field=where
                    ) from None
                except (TypeError, AttributeError, KeyError, ValueError) as exc:
                    # a body of the wrong shape deep inside (the GKE API would answer 400)
                    raise InputError(
                        f"the GKE API cannot read this request body: {type(exc).__name__}: {exc}",
                        source=study.source,
                        field=where,
                    ) from None
                self._wait_operation(op, where)
            twin.cluster(self.cluster)
        if self.variant.capacity is not None:
            prof = twin.core.project.get("CapacityProfile", "default")
            if not (prof.get("spec") or {}).get("origin"):
                prof["spec"]["origin"] = format_time(twin.now())
                twin.core.project.update(prof)
        for m in self.variant.manifests:
            try:
                docs = load_documents(m.text)
            except ApiError as exc:
                raise InputError(exc.message, source=m.source) from None
            starts = _doc_lines(m.text)
            for i, doc in enumerate(docs):
                line = starts[i] if i < len(starts) and len(starts) == len(docs) else None
                raw_meta = doc.get("metadata")
                meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
                what = f"{doc.get('kind', '?')}/{meta.get('name', '?')}"
                if (
                    doc.get("kind") == "ConfigMap"
                    and meta.get("name") == CONFIG_NAME
                    and meta.get("namespace") == CONFIG_NAMESPACE
                ):
                    try:  # Kueue reads it at start; a configuration it cannot read stops it
                        KueueConfig.from_configmap(doc)
                    except Exception as exc:  # whatever the configuration reader raises
                        raise InputError(
                            f"Kueue cannot read its configuration ({CONFIG_KEY}): {str(exc)[:300]}",
                            source=m.source,
                            line=line,
                            field=f"document {i + 1}",
                        ) from None
                try:
                    twin.apply(doc)
                except ApiError as exc:
                    raise InputError(
                        f"the API refused {what}: {exc.message}",
                        source=m.source,
                        line=line,
                        field=f"document {i + 1}",
                    ) from None
        twin.advance(1)
        for pc in twin.list("WorkloadPriorityClass"):
            self.priorities[pc["metadata"]["name"]] = int(pc.get("value", 0))
        with contextlib.suppress(ApiError):  # scheduling.k8s.io PriorityClass, where the twin serves it
            for p in twin.list("PriorityClass"):
                self.pod_priorities[p["metadata"]["name"]] = int(p.get("value", 0))
        known_pc = set(self.priorities) | set(self.pod_priorities)
        queues = {(q["metadata"]["namespace"], q["metadata"]["name"]) for q in twin.list("LocalQueue")}
        checked: set[tuple[str, str, str]] = set()
        for job in self.jobs:
            key = (job.namespace, job.queue, job.priority_class)
            if key in checked:
                continue
            checked.add(key)
            if (job.namespace, job.queue) not in queues:
                raise InputError(
                    f"no LocalQueue {job.queue!r} in namespace {job.namespace!r} (variant "
                    f"{self.variant.name!r})",
                    source=job.source,
                    field="queue",
                )
            if job.priority_class and job.priority_class not in known_pc:
                raise InputError(
                    f"no WorkloadPriorityClass or PriorityClass {job.priority_class!r} (variant "
                    f"{self.variant.name!r})",
                    source=job.source,
                    field="priority",
                )
        for cq in twin.list("ClusterQueue"):
            for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
                for fl in rg.get("flavors") or []:
                    for r in fl.get("resources") or []:
                        ukey = f"{cq['metadata']['name']}/{fl['name']}/{r['name']}"
                        self.usage[ukey] = [0.0, float(parse_quantity(str(r.get("nominalQuota", 0))))]
        self.t0 = twin.now()

    def _wait_operation(self, op: Any, what: str) -> None:
        if not isinstance(op, dict) or not op.get("name") or "status" not in op:
            return  # not a long-running operation (a GET)
        path = f"/v1/projects/{self.project}/locations/{self.location}/operations/{op.get('name')}"
        for _ in range(10_000):
            if op.get("status") == "DONE":
                break
            self.twin.advance(5)
            try:
                op = self.twin.gke("GET", path)
            except CloudError as exc:
                raise InputError(
                    f"cannot follow the GKE operation: {exc}", source=self.study.source, field=what
                ) from None
        else:
            raise InputError(
                f"the GKE operation did not finish in {10_000 * 5 / 3600:.0f} simulated hours (the capacity "
                "profile's `operations` times?)",
                source=self.study.source,
                field=what,
            )
        if op.get("error"):
            raise InputError(
                f"GKE operation failed: {op['error'].get('message')}", source=self.study.source, field=what
            )

    def check_objects(self) -> None:
        """Check every job's name (the API's rule for its kind; no two jobs of one kind with one name in one
        namespace), and create one object of each job shape (kind, template, pod sets, namespace, queue,
        priority, class) to see the API take it."""
        seen: set[tuple[Any, ...]] = set()
        names: dict[tuple[str, str, str], str] = {}
        infos: dict[str, Any] = {}
        for job in self.jobs:
            ident = (job.kind, job.namespace, job.name)
            if ident in names:
                raise InputError(
                    f"{job.kind} {job.namespace}/{job.name} is submitted twice (also at {names[ident]})",
                    source=job.source,
                    field="name",
                )
            names[ident] = job.source
            if job.kind not in infos:
                try:
                    infos[job.kind] = scheme.resolve_object(
                        self.twin.store.registry, build_object(job, self.priorities, self.pod_priorities)
                    )
                except ApiError as exc:
                    raise InputError(
                        f"the API does not serve {job.kind}: {exc.message}", source=job.source, field="kind"
                    ) from None
            causes = scheme.check_name(infos[job.kind], {"name": job.name})
            if causes:
                raise InputError(
                    f"the API refuses this name: {causes[0].message}", source=job.source, field="name"
                )
            key = (
                job.kind,
                job.template_source,
                job.pod_sets,
                job.namespace,
                job.queue,
                job.priority_class,
                job.priority,
                job.klass,
            )
            if key in seen:
                continue
            seen.add(key)
            try:
                self.twin.create(build_object(job, self.priorities, self.pod_priorities))
            except ApiError as exc:
                raise InputError(
                    f"the API refused this {job.kind}: {exc.message}",
                    source=job.template_source or job.source,
                    field="template" if job.template_source else "podsets",
                ) from None

    # -- observing -----------------------------------------------------------------------------------------------
    def rel(self) -> float:
        """Seconds since the start of the traffic, to the millisecond (the virtual clock counts epoch seconds,
        whose last digits are float noise)."""
        return round(self.twin.now() - self.t0, 3)

    def _set_pending(self, rec: JobRecord) -> None:
        want = not rec.closed and not rec.holding
        if want != rec.pending:
            rec.pending = want
            self.pending_now += 1 if want else -1
            t = round(self.rel(), 3)
            if self.pending and self.pending[-1][0] == t:
                self.pending[-1] = (t, self.pending_now)
            else:
                self.pending.append((t, self.pending_now))

    def _job_of(self, wl: dict[str, Any]) -> JobRecord | None:
        md = wl["metadata"]
        ns = md.get("namespace", "default")
        for ref in md.get("ownerReferences") or ():
            rec = self.records.get((ref.get("kind", ""), ns, ref.get("name", "")))
            if rec is not None:
                return rec
        return self.records.get(("Workload", ns, md["name"]))

    def on_workload(self, ev: Any) -> None:
        wl = ev.object
        rec = self._job_of(wl)
        if rec is None:
            return
        md = wl["metadata"]
        key = (md.get("namespace", "default"), md["name"])
        st = self.wl_state.setdefault(
            key,
            {
                "reserved": False,
                "admitted": False,
                "since": 0.0,
                "usage": [],
                "queued_at": self.rel(),
                "evict_lt": None,
                "preempt_lt": None,
                "ready": False,
                "seq": 0,
            },
        )
        now = self.rel()
        gone = ev.type == "DELETED"
        admission = (wl.get("status") or {}).get("admission")
        reserved = not gone and _true(wl, "QuotaReserved") and admission is not None
        admitted = not gone and reserved and _true(wl, "Admitted")
        finished = _true(wl, "Finished")
        if reserved and not st["reserved"]:
            assert admission is not None
            st["reserved"], st["since"] = True, now
            cq = admission.get("clusterQueue", "")
            rec.cluster_queue = cq
            usage = []
            flavors = []
            for psa in admission.get("podSetAssignments") or ():
                fl = psa.get("flavors") or {}
                flavors.append(f"{psa.get('name')}={'+'.join(sorted(set(fl.values())))}")
                for res, qty in (psa.get("resourceUsage") or {}).items():
                    ukey = f"{cq}/{fl.get(res, '')}/{res}"
                    if ukey in self.usage:
                        usage.append((ukey, float(parse_quantity(str(qty)))))
            st["usage"] = usage
            rec.flavors = ",".join(flavors)
            if rec.reserved is None:
                rec.reserved = now
            rec.holding.add(md["name"])
            self._set_pending(rec)
        elif st["reserved"] and (not reserved or finished):
            st["reserved"] = False
            for ukey, qty in st["usage"]:
                self.usage[ukey][0] += qty * (now - st["since"])
            rec.holding.discard(md["name"])
            self._set_pending(rec)
        if admitted and not st["admitted"]:
            st["admitted"] = True
            st["seq"] += 1
            if rec.admitted is None:
                rec.admitted = now
            pc = rec.spec.priority_class or (str(rec.spec.priority) if rec.spec.priority is not None else "")
            self.admission_waits.append((rec.cluster_queue, pc, now - st["queued_at"]))
            if rec.spec.kind == "Workload":
                if rec.started is None:
                    rec.started = now
                seq = st["seq"]
                self.twin.core.loop.call_at(
                    self.twin.now() + rec.spec.run, functools.partial(self._finish_bare, key, seq)
                )
        elif not admitted and st["admitted"]:
            st["admitted"] = False
        ev_c = _cond(wl, "Evicted")
        if (
            ev_c is not None
            and ev_c.get("status") == "True"
            and ev_c.get("lastTransitionTime") != st["evict_lt"]
        ):
            st["evict_lt"] = ev_c.get("lastTransitionTime")
            self.evictions[rec.cluster_queue or "?"][ev_c.get("reason", "")] += 1
            rec.evictions += 1
            st["queued_at"] = now
            if rec.spec.kind == "Workload" and admission is not None:
                self.twin.core.loop.call_soon(functools.partial(self._complete_eviction, key))
        pr_c = _cond(wl, "Preempted")
        if (
            pr_c is not None
            and pr_c.get("status") == "True"
            and pr_c.get("lastTransitionTime") != st["preempt_lt"]
        ):
            st["preempt_lt"] = pr_c.get("lastTransitionTime")
            self.preemptions[rec.cluster_queue or "?"][pr_c.get("reason", "")] += 1
            rec.preemptions += 1
        if not st["ready"] and _true(wl, "PodsReady"):
            st["ready"] = True
            if rec.started is None:
                rec.started = now
        if (
            (wl.get("spec") or {}).get("active") is False
            and not rec.closed
            and not gone
            and not self._fallback_moving(wl, rec)
        ):
            # deactivated (e.g. an admission check Rejected, the requeuing limit reached): Kueue will not
            # admit it again unless someone reactivates it, so the run does not wait for it
            rec.closed = True
            rec.outcome = "Deactivated"
            self.open_jobs -= 1
            self._set_pending(rec)
        if rec.spec.kind == "Workload" and finished and not rec.closed:
            c = _cond(wl, "Finished") or {}
            self._finish(rec, "Failed" if c.get("reason") == "Failed" else "Succeeded")
        if gone:
            self.wl_state.pop(key, None)

    def _fallback_moving(self, wl: dict[str, Any], rec: JobRecord) -> bool:
        """flexq's fallback (twin setting ``fallback``) deactivates a workload to move its job to the next flavor,
        or back to the first one: the job's ``fallback.flexq.dev/move`` annotation says so (step ``deactivating``
        or ``returning``), and the job gets a new Workload, so the run keeps waiting for it."""
        if not self.variant.settings.get("fallback"):
            return False
        job = self.twin.store.try_get(rec.spec.kind, rec.spec.name, rec.spec.namespace)
        text = ((job or {}).get("metadata", {}).get("annotations") or {}).get(ANN_MOVE)
        if not text:
            return False
        try:
            return json.loads(text).get("step") in ("deactivating", "returning")
        except ValueError:
            return False

    def _finish_bare(self, key: tuple[str, str], seq: int) -> None:
        st = self.wl_state.get(key)
        if st is None or st["seq"] != seq or not st["admitted"]:
            return
        wl = self.twin.store.try_get("Workload", key[1], key[0])
        if wl is None:
            return
        from flexq.kueue.workload import set_condition

        rec = self.records[("Workload", key[0], key[1])]
        ok = rec.spec.outcome != "Failed"
        set_condition(
            wl,
            "Finished",
            True,
            "Succeeded" if ok else "Failed",
            "Job finished successfully" if ok else "Job failed",
            self.twin.now(),
        )
        self.twin.store.update_status(wl)

    def _complete_eviction(self, key: tuple[str, str]) -> None:
        from flexq.kueue.workload import unset_quota_reservation

        wl = self.twin.store.try_get("Workload", key[1], key[0])
        if wl is None or not (wl.get("status") or {}).get("admission") or not _true(wl, "Evicted"):
            return
        unset_quota_reservation(wl, "Pending", "Evicted by the simulator's runner", self.twin.now())
        self.twin.store.update_status(wl)

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
                self._finish(rec, "Succeeded" if st.get("jobStatus") == "SUCCEEDED" else "Failed")
        elif _true(obj, "Complete"):
            self._finish(rec, "Succeeded")
        elif _true(obj, "Failed"):
            self._finish(rec, "Failed")

    def _finish(self, rec: JobRecord, outcome: str) -> None:
        if rec.closed:
            return
        rec.closed = True
        rec.finished = self.rel()
        rec.outcome = outcome
        if rec.started is None and rec.admitted is not None:
            rec.started = rec.admitted
        self.open_jobs -= 1
        self._set_pending(rec)
        if not self.study.keep_finished:
            spec = rec.spec
            self.twin.core.loop.call_later(1.0, lambda: self._delete(spec))

    def _delete(self, spec: JobSpec) -> None:
        with contextlib.suppress(ApiError):  # already gone
            self.twin.store.delete(spec.kind, spec.name, spec.namespace, propagation="Background")

    def on_pr(self, ev: Any) -> None:
        pr = ev.object
        md = pr["metadata"]
        seen = self.pr_seen.setdefault((md.get("namespace", ""), md["name"]), set())
        for c in (pr.get("status") or {}).get("conditions") or ():
            if c.get("status") == "True":
                seen.add(c["type"] if c["type"] != "Failed" else f"Failed/{c.get('reason', '')}")

    # -- running -------------------------------------------------------------------------------------------------
    def run(self, progress: Progress | None) -> RunResult:
        twin = self.twin
        store = twin.store
        store.watch(self.on_workload, ["Workload"])
        kinds = sorted({j.kind for j in self.jobs} - {"Workload"})
        if kinds:
            store.watch(self.on_job, kinds)
        with contextlib.suppress(ApiError):  # a twin without the autoscaling.x-k8s.io kinds
            store.watch(self.on_pr, ["ProvisioningRequest"])
        last_submit = self.jobs[-1].submit if self.jobs else 0.0
        horizon = self.study.until if self.study.until is not None else last_submit + 7 * 86400
        total = len(self.jobs)
        submitted = 0

        def report(done: bool = False) -> None:
            if progress is not None:
                progress(
                    {
                        "done": done,
                        "variant": self.variant.name,
                        "replica": self.replica,
                        "time": self.rel(),
                        "horizon": horizon,
                        "submitted": submitted,
                        "total": total,
                        "finished": submitted - self.open_jobs,
                        "pending": self.pending_now,
                    }
                )

        for job in self.jobs:
            if job.submit > horizon:
                break
            gap = self.t0 + job.submit - twin.now()
            if gap > 0:
                twin.advance(gap)
            obj = build_object(job, self.priorities, self.pod_priorities)
            rec = JobRecord(job, submit=job.submit)
            self.records[(job.kind, job.namespace, job.name)] = rec
            self.pending_now += 1
            self._set_pending_point()
            self.open_jobs += 1
            try:
                twin.create(obj)
            except ApiError as exc:
                raise InputError(
                    f"the API refused this {job.kind}: {exc.message}", source=job.source
                ) from None
            submitted += 1
            if submitted % 25 == 0:
                report()
        while self.open_jobs > 0 and self.rel() < horizon:
            twin.advance(min(DRAIN_CHUNK, horizon - self.rel()))
            report()
        end = (
            min(self.rel(), horizon)
            if self.open_jobs > 0
            else max([r.finished for r in self.records.values() if r.finished is not None] or [0.0])
        )
        report(done=True)
        return self._result(end)

    def _set_pending_point(self) -> None:
        t = round(self.rel(), 3)
        if self.pending and self.pending[-1][0] == t:
            self.pending[-1] = (t, self.pending_now)
        else:
            self.pending.append((t, self.pending_now))

    def _result(self, end: float) -> RunResult:
        for (_ns, _name), st in self.wl_state.items():  # quota still held at the end
            if st["reserved"]:
                for ukey, qty in st["usage"]:
                    self.usage[ukey][0] += qty * (end - st["since"])
        rows = []
        for rec in sorted(self.records.values(), key=lambda r: r.spec.index):
            s = rec.spec
            outcome = rec.outcome or (
                "Running"
                if rec.started is not None
                else "Admitted"
                if rec.admitted is not None
                else "NeverStarted"
            )
            rows.append(
                {
                    "job": s.name,
                    "namespace": s.namespace,
                    "kind": s.kind,
                    "class": s.klass,
                    "queue": s.queue,
                    "cluster_queue": rec.cluster_queue,
                    "priority": s.priority_class or ("" if s.priority is None else str(s.priority)),
                    "submit": rec.submit,
                    "admitted": rec.admitted,
                    "started": rec.started,
                    "finished": rec.finished,
                    "wait_admission": None if rec.admitted is None else rec.admitted - rec.submit,
                    "wait_start": None if rec.started is None else rec.started - rec.submit,
                    "run": s.run,
                    "outcome": outcome,
                    "flavors": rec.flavors,
                    "evictions": rec.evictions,
                    "preemptions": rec.preemptions,
                }
            )
        nodes = []
        if self.cluster:
            from flexq.gke.storage import BILLING, cluster_key

            ledger = self.twin.core.project.try_get(
                BILLING, cluster_key(self.project, self.location, self.cluster)
            )
            for name, r in sorted(((ledger or {}).get("status") or {}).get("nodes", {}).items()):
                created = float(r["created"]) - self.t0
                deleted = None if r.get("deleted") is None else float(r["deleted"]) - self.t0
                if deleted is not None and deleted <= 0:
                    continue
                nodes.append(
                    {
                        "node": name,
                        "pool": r["pool"],
                        "model": r["model"],
                        "machineType": r.get("machineType", ""),
                        "created": max(0.0, created),
                        "deleted": deleted if deleted is None or deleted < end else None,
                        "pricePerHour": float(Fraction(r["pricePerHour"])),
                    }
                )
        prov: Counter[str] = Counter()
        for conds in self.pr_seen.values():
            for c in conds:
                prov[c] += 1
        prov["total"] = len(self.pr_seen)
        return RunResult(
            study=self.study.name,
            variant=self.variant.name,
            replica=self.replica,
            seed=self.seed,
            duration=end,
            jobs=rows,
            pending=[(t, n) for t, n in self.pending if t <= end],
            node_records=nodes,
            evictions={cq: dict(sorted(c.items())) for cq, c in sorted(self.evictions.items())},
            preemptions={cq: dict(sorted(c.items())) for cq, c in sorted(self.preemptions.items())},
            admission_waits=self.admission_waits,
            provisioning=dict(sorted(prov.items())),
            usage={k: {"reserved": v[0], "nominal": v[1]} for k, v in sorted(self.usage.items())},
            steps=self.twin.core.loop.steps,
        )


def run_one(study: Study, variant: str, replica: int, progress: Progress | None = None) -> RunResult:
    """Simulate ``variant`` of ``study`` with seed ``study.seed + replica``."""
    v = study.variant(variant)
    sim = _Sim(study, v, replica, study.jobs(study.seed + replica))
    try:
        sim.setup()
        return sim.run(progress)
    finally:
        sim.twin.close()


def preflight(study: Study) -> None:
    """Raise ``InputError`` for anything a run would refuse, before simulating anything."""
    jobs = study.jobs(study.seed)
    if not jobs:
        raise InputError("the traffic has no jobs", source=study.source)
    for v in study.variants:
        sim = _Sim(study, v, 0, jobs)
        try:
            sim.setup()
            sim.check_objects()
        finally:
            sim.twin.close()
