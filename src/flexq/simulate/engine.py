"""One simulation run: the twin itself (``Twin(clock="virtual")``, the simulated executor, every controller)
fed with a study's cluster, manifests, capacity profile and traffic, observed through watches.

Owns ``run_one`` (variant x seed -> ``RunResult``) and ``preflight`` (build the cluster and apply the
manifests of every variant, check every queue and priority class the traffic names and that the API takes one
object of each job shape, all before anything is simulated). The run:

1. the capacity profile becomes the project's ``default`` profile, its seed replaced by the run's seed;
2. the GKE cluster and node pools are created through the GKE REST API in-process (``Twin.gke``), waiting
   for each operation; then the profile's relative times are made to count from now (``spec.origin``);
3. the manifests are applied (``Twin.apply``, as ``kubectl apply``; on a Kueue release that no longer serves
   kueue.x-k8s.io/v1beta1, its v1beta1 objects as an upgraded cluster holds them, converted as ``flexq convert``
   does), then each job is created (``Twin.create``)
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
import re
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from flexq.api import gke_catalog
from flexq.api.kueue_convert import SOURCE as V1BETA1
from flexq.api.kueue_convert import convert_object
from flexq.api.quantity import parse_quantity
from flexq.api.scheme import ADMIT
from flexq.clock import format_time
from flexq.errors import ApiError, CloudError, InputError
from flexq.fallback.api import CAPACITY_EVENT_REASONS
from flexq.fallback.model import OPT_IN_LABEL, FallbackConfig
from flexq.gke.metrics import SCALE_UP_REASONS
from flexq.gke.storage import BILLING, cluster_key
from flexq.kueue.config import CONFIG_KEY, CONFIG_NAME, CONFIG_NAMESPACE, KueueConfig
from flexq.loop import tune_gc
from flexq.simulate.configcheck import (
    pod_refs,
)
from flexq.simulate.jobs import JobSpec
from flexq.simulate.objects import build_object
from flexq.simulate.recorder import Recorder
from flexq.simulate.records import CAPACITY_REASONS, START_ERRORS
from flexq.simulate.run_result import RunResult, bill_to_horizon, job_row
from flexq.simulate.study import Study, Variant, cluster_requests
from flexq.simulate.teardown import discard, free_closed, stopped_clock
from flexq.twin import Twin, load_documents

__all__ = ["run_one", "Sim"]

Progress = Callable[[dict[str, Any]], None]
DRAIN_CHUNK = 3600.0


def _rescue(setting: Any) -> bool:
    """Whether flexq's fallback will reactivate a Workload Kueue deactivated (then the run waits for it)."""
    if not setting:
        return False
    cfg = setting if isinstance(setting, FallbackConfig) else None
    if cfg is None:
        with contextlib.suppress(TypeError):
            cfg = FallbackConfig(**setting) if isinstance(setting, dict) else FallbackConfig()
    return bool(getattr(cfg, "rescue", False))


def _all_queues(setting: Any) -> bool:
    """Whether flexq's fallback acts on every LocalQueue (``all_queues``), not only those opted in."""
    return isinstance(setting, dict) and bool(setting.get("all_queues"))


def _doc_lines(text: str) -> list[int]:
    """The first line of each YAML document in ``text`` (1-based)."""
    lines = [1]
    for n, line in enumerate(text.splitlines(), start=1):
        if re.match(r"^---(\s|$)", line):
            lines.append(n + 1)
    return lines


# the reasons of the Events a simulation reads: the recorder's start errors and capacity refusals, the fallback's
# capacity Events, the GKE metrics' scale-ups. A simulated twin records no other Event (nothing would read it)
READ_EVENTS = frozenset((*START_ERRORS, *CAPACITY_REASONS, *CAPACITY_EVENT_REASONS, *SCALE_UP_REASONS))


class Sim:
    def __init__(self, study: Study, variant: Variant, replica: int, jobs: list[JobSpec]) -> None:
        self.study, self.variant, self.replica = study, variant, replica
        self.seed = study.seed + replica
        self.jobs = jobs
        release: dict[str, Any] = {"kueue": variant.kueue} if variant.kueue else {}
        tune_gc()  # batch work: the collector's total counts, not its pauses (``flexq.loop.core``)
        self.twin = Twin(
            clock="virtual", seed=self.seed, event_reasons=READ_EVENTS, **release, **variant.settings
        )
        self.release = self.twin.core.settings.kueue  # the Kueue release this variant's cluster runs
        self.converted: list[
            str
        ] = []  # v1beta1 objects held as v1beta2 (a release that does not serve v1beta1)
        self.t0 = 0.0
        fb = variant.settings.get("fallback")
        self.rec = Recorder(
            self.twin,
            keep_finished=study.keep_finished,
            fallback=bool(fb),
            rescue=_rescue(fb),
            rel=self.rel,
        )
        self.priorities: dict[str, int] = {}  # WorkloadPriorityClass -> value
        self.pod_priorities: dict[str, int] = {}  # scheduling.k8s.io PriorityClass -> value
        self.pools: dict[str, dict[str, Any]] = {}  # node pool -> {max, hosts, model, machineType, chips}
        self.queues: dict[str, dict[str, Any]] = {}  # ClusterQueue -> {groups: [[flavor...]], checks: {...}}
        self.flavors: dict[str, dict[str, str]] = {}  # ResourceFlavor -> nodeLabels
        self.checks: dict[str, dict[str, Any]] = {}  # AdmissionCheck -> controller, config, class, retry
        self.kueue: dict[str, Any] = {}  # Kueue's configuration: waitForPodsReady, requeuing limit
        self.location = self.project = self.cluster = ""
        self.local_queues: dict[str, bool] = {}  # namespace/name -> labelled fallback.flexq.dev/enabled
        self.queue_cq: dict[str, str] = {}  # namespace/name -> its ClusterQueue

    # -- setup ---------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Steps 1-3 of the module docstring, then what the run reads of the cluster it built."""
        self._capacity()
        self._cluster()
        self._capacity_origin()
        self._manifests()
        self.twin.advance(1)
        self._check_traffic()
        self._read_cluster()
        self._read_pools()
        self.t0 = self.twin.now()

    def _capacity(self) -> None:
        """Step 1: the capacity profile as the project's ``default``, its seed the run's."""
        twin, study = self.twin, self.study
        if self.variant.capacity is not None:
            prof = dict(self.variant.capacity)
            prof["metadata"] = {"name": "default"}
            prof["spec"] = {**(prof.get("spec") or {}), "seed": self.seed}
            try:
                twin.core.project.create(prof, admission=ADMIT)
            except ApiError as exc:
                raise InputError(exc.message, source=study.source, field="capacity") from None

    def _cluster(self) -> None:
        """Step 2: the GKE cluster and node pools through the GKE REST API, each operation waited for."""
        twin, study = self.twin, self.study
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

    def _capacity_origin(self) -> None:
        """Step 2, then: the profile's relative times count from now (``spec.origin``)."""
        twin = self.twin
        if self.variant.capacity is not None:
            prof = twin.core.project.get("CapacityProfile", "default")
            if not (prof.get("spec") or {}).get("origin"):
                prof["spec"]["origin"] = format_time(twin.now())
                twin.core.project.update(prof, admission=ADMIT)

    def _manifests(self) -> None:
        """Step 3: the manifests, as ``kubectl apply`` (v1beta1 objects converted on a release without it)."""
        twin = self.twin
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
                    if doc.get("apiVersion") == V1BETA1 and not self.release.serves_v1beta1:
                        # the cluster was upgraded to a Kueue that no longer serves v1beta1: the objects it holds
                        # are the v1beta2 forms (what `flexq convert` writes, the conversion the API server ran)
                        doc, _notes = convert_object(doc, source=m.source, document=i + 1, api_errors=True)
                        self.converted.append(what)
                    twin.apply(doc)
                except ApiError as exc:
                    raise InputError(
                        f"the API refused {what}: {exc.message}",
                        source=m.source,
                        line=line,
                        field=f"document {i + 1}",
                    ) from None

    def _check_traffic(self) -> None:
        """Every queue and priority class the traffic names exists (an ``InputError`` naming the job's source)."""
        twin = self.twin
        for pc in twin.list("WorkloadPriorityClass"):
            self.priorities[pc["metadata"]["name"]] = int(pc.get("value", 0))
        with contextlib.suppress(ApiError):  # scheduling.k8s.io PriorityClass, where the twin serves it
            for p in twin.list("PriorityClass"):
                self.pod_priorities[p["metadata"]["name"]] = int(p.get("value", 0))
        known_pc = set(self.priorities) | set(self.pod_priorities)
        queues = {(q["metadata"]["namespace"], q["metadata"]["name"]) for q in twin.list("LocalQueue")}
        self.local_queues = {
            f"{q['metadata']['namespace']}/{q['metadata']['name']}": (q["metadata"].get("labels") or {}).get(
                OPT_IN_LABEL
            )
            == "true"
            for q in twin.list("LocalQueue")
        }
        self.queue_cq = {
            f"{q['metadata']['namespace']}/{q['metadata']['name']}": str(
                (q.get("spec") or {}).get("clusterQueue") or ""
            )
            for q in twin.list("LocalQueue")
        }
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

    def _read_cluster(self) -> None:
        """What the causes read of the cluster: quotas, ClusterQueues, flavors, admission checks, Kueue's configuration."""
        twin = self.twin
        for cq in twin.list("ClusterQueue"):
            for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
                for fl in rg.get("flavors") or []:
                    for r in fl.get("resources") or []:
                        ukey = f"{cq['metadata']['name']}/{fl['name']}/{r['name']}"
                        self.rec.track_quota(ukey, float(parse_quantity(str(r.get("nominalQuota", 0)))))
            spec = cq.get("spec") or {}
            self.queues[cq["metadata"]["name"]] = {
                "groups": [
                    {
                        "resources": list(rg.get("coveredResources") or []),
                        "flavors": [f.get("name", "") for f in rg.get("flavors") or []],
                    }
                    for rg in spec.get("resourceGroups") or []
                ],
                "checks": {
                    c.get("name", ""): list(c.get("onFlavors") or [])
                    for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
                },
            }
        for rf in twin.list("ResourceFlavor"):
            self.flavors[rf["metadata"]["name"]] = dict((rf.get("spec") or {}).get("nodeLabels") or {})
        prcs = {p["metadata"]["name"]: p.get("spec") or {} for p in twin.list("ProvisioningRequestConfig")}
        for ac in twin.list("AdmissionCheck"):
            params = (ac.get("spec") or {}).get("parameters") or {}
            prc = (
                prcs.get(params.get("name", ""))
                if params.get("kind") == "ProvisioningRequestConfig"
                else None
            )
            self.checks[ac["metadata"]["name"]] = {
                "controller": (ac.get("spec") or {}).get("controllerName", ""),
                "config": params.get("name", "") if prc is not None else "",
                "class": (prc or {}).get("provisioningClassName", ""),
                "retry": dict((prc or {}).get("retryStrategy") or {}),
            }
        cfg = KueueConfig.from_configmap(twin.store.try_get("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE))
        self.kueue = {
            "waitForPodsReady": cfg.wait_for_pods_ready,
            "podsReadyTimeout": cfg.pods_ready_timeout if cfg.wait_for_pods_ready else 0.0,
            "backoffLimitCount": cfg.backoff_limit_count,
            "release": self.release.version,  # the Kueue release (the causes name what differs in it)
            "converted": list(self.converted),  # v1beta1 objects held as v1beta2 on a release without v1beta1
        }

    def _read_pools(self) -> None:
        """The cluster's node pools as the GKE API describes them (what the causes' figures need)."""
        if not self.cluster:
            return
        path = f"/v1/projects/{self.project}/locations/{self.location}/clusters/{self.cluster}/nodePools"
        with contextlib.suppress(CloudError):
            for pool in (self.twin.gke("GET", path) or {}).get("nodePools") or []:
                cfg = pool.get("config") or {}
                auto = pool.get("autoscaling") or {}
                try:
                    mt = gke_catalog.machine_type(cfg.get("machineType", ""))
                    hosts = gke_catalog.hosts_per_slice(
                        mt, (pool.get("placementPolicy") or {}).get("tpuTopology") or None
                    )
                except gke_catalog.CatalogError:
                    continue
                queued = bool((pool.get("queuedProvisioning") or {}).get("enabled"))
                self.pools[pool.get("name", "")] = {
                    "machineType": mt.name,
                    "max": int(auto.get("maxNodeCount") or auto.get("totalMaxNodeCount") or 0)
                    if auto.get("enabled")
                    else int(pool.get("initialNodeCount") or 0),
                    "min": int(auto.get("minNodeCount") or auto.get("totalMinNodeCount") or 0)
                    if auto.get("enabled")
                    else int(pool.get("initialNodeCount") or 0),
                    "hosts": hosts,
                    "chipsPerNode": mt.chips,
                    "queued": queued,
                    "spot": bool(cfg.get("spot")),
                    "flexStart": bool(cfg.get("flexStart")),
                }

    def _refs(self) -> dict[str, list[str]]:
        """The ConfigMaps and Secrets the jobs' templates need, with the keys they read (what a cause's fix
        must create: ``flexq.simulate.causes``)."""
        out: dict[str, set[str]] = {}
        seen: set[tuple[str, str]] = set()
        for job in self.jobs:
            if (job.template_source, job.namespace) in seen or not job.template:
                continue
            seen.add((job.template_source, job.namespace))
            try:
                obj = build_object(job, self.priorities, self.pod_priorities, self.study.env)
            except InputError:
                continue
            for kind, name, key in pod_refs(obj):
                keys = out.setdefault(f"{kind}/{job.namespace}/{name}", set())
                if key:
                    keys.add(key)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def _fallback_actions(self) -> dict[str, int]:
        """What flexq's fallback did in this run (its controllers' actions, by verb)."""
        if not self.variant.settings.get("fallback"):
            return {}
        return _count_actions(
            c
            for rt in list(self.twin.core.clusters.values())
            for c in rt.manager.controllers
            if c.name == "flexq-fallback"
        )

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

    def discard(self) -> None:
        """The run is over: its twin discarded (``discard``) and the recorder's clock unlinked from this run (the
        last reference cycle through it), so the run is freed by reference counting."""
        discard(self.twin)
        self.rec.rel = stopped_clock

    # -- observing -----------------------------------------------------------------------------------------------
    def rel(self) -> float:
        """Seconds since the start of the traffic, to the millisecond (the virtual clock counts epoch seconds,
        whose last digits are float noise)."""
        return round(self.twin.now() - self.t0, 3)

    # -- running -------------------------------------------------------------------------------------------------
    def run(self, progress: Progress | None) -> RunResult:
        twin, rec = self.twin, self.rec
        rec.start({j.kind for j in self.jobs})
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
                        "finished": submitted - rec.open_jobs,
                        "pending": rec.pending_now,
                    }
                )

        for job in self.jobs:
            if job.submit > horizon:
                break
            gap = self.t0 + job.submit - twin.now()
            if gap > 0:
                twin.advance(gap)
            obj = build_object(job, self.priorities, self.pod_priorities, self.study.env)
            rec.submitted(job)
            try:
                twin.create(obj)
            except ApiError as exc:
                raise InputError(
                    f"the API refused this {job.kind}: {exc.message}", source=job.source
                ) from None
            submitted += 1
            if submitted % 25 == 0:
                report()
        while rec.open_jobs > 0 and self.rel() < horizon:
            twin.advance(min(DRAIN_CHUNK, horizon - self.rel()))
            report()
        end = (
            min(self.rel(), horizon)
            if rec.open_jobs > 0
            else max([r.finished for r in rec.records.values() if r.finished is not None] or [0.0])
        )
        rec.settle(horizon)
        report(done=True)
        return self._result(end, horizon)

    def _result(self, end: float, horizon: float) -> RunResult:
        rec_ = self.rec
        for seen in rec_.wl_state.values():  # quota still held at the end
            if seen.reserved:
                for ukey, qty in seen.usage:
                    rec_.usage[ukey][0] += qty * (end - seen.since)
        # what each job's pods cost while bound to nodes (the billing ledger's per-job attribution, USD)
        job_cost = (self.twin.billing().get("jobs") or {}) if self.cluster else {}
        rows = []
        for rec in sorted(rec_.records.values(), key=lambda r: r.spec.index):
            s = rec.spec
            rows.append(
                {
                    **job_row(rec, horizon),
                    "cost": float(job_cost.get(f"{s.kind}/{s.namespace}/{s.name}", 0.0)),
                }
            )
        nodes = []
        if self.cluster:
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
            bill_to_horizon(nodes, self.pools, end, horizon)
        prov: Counter[str] = Counter()
        for conds in rec_.pr_seen.values():
            for c in conds:
                prov[c] += 1
        prov["total"] = len(rec_.pr_seen)
        return RunResult(
            study=self.study.name,
            variant=self.variant.name,
            replica=self.replica,
            seed=self.seed,
            duration=end,
            jobs=rows,
            pending=[(t, n) for t, n in rec_.pending if t <= end],
            node_records=nodes,
            evictions={cq: dict(sorted(c.items())) for cq, c in sorted(rec_.evictions.items())},
            preemptions={cq: dict(sorted(c.items())) for cq, c in sorted(rec_.preemptions.items())},
            admission_waits=rec_.admission_waits,
            provisioning=dict(sorted(prov.items())),
            usage={k: {"reserved": v[0], "nominal": v[1]} for k, v in sorted(rec_.usage.items())},
            steps=self.twin.core.loop.steps,
            horizon=horizon,
            waiting=[(t, list(c)) for t, c in rec_.waiting if t <= horizon],
            reserved={
                k: [(t, v) for t, v in pts if t <= end] for k, pts in sorted(rec_.reserved_series.items())
            },
            pools=self.pools,
            queues=self.queues,
            flavors=self.flavors,
            checks=self.checks,
            kueue=self.kueue,
            fallback=bool(self.variant.settings.get("fallback")),
            fallback_actions=self._fallback_actions(),
            goodput_resource=rec_.goodput_resource,
            local_queues=dict(sorted(self.local_queues.items())),
            queue_cq=dict(sorted(self.queue_cq.items())),
            refs=self._refs(),
            fallback_all_queues=_all_queues(self.variant.settings.get("fallback")),
        )


def _count_actions(controllers: Any) -> dict[str, int]:
    out: Counter[str] = Counter()
    for c in controllers:
        for a in getattr(c, "actions", None) or ():
            out[getattr(a, "verb", "?")] += 1
    return dict(sorted(out.items()))


def run_one(study: Study, variant: str, replica: int, progress: Progress | None = None) -> RunResult:
    """Simulate ``variant`` of ``study`` with seed ``study.seed + replica``. The run's twin is freed before
    this returns (``free_closed``)."""
    try:
        return _run_one(study, variant, replica, progress)
    finally:
        free_closed()


def _run_one(study: Study, variant: str, replica: int, progress: Progress | None) -> RunResult:
    v = study.variant(variant)
    sim = Sim(study, v, replica, study.jobs(study.seed + replica))
    try:
        sim.setup()
        return sim.run(progress)
    finally:
        sim.discard()
