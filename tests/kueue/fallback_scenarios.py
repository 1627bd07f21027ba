"""Scenario runner for issue 13's Concurrent Admission and plan-A ProvisioningRequest check, on the virtual twin.

A run builds the tutorial's cluster and node pools (gcloud's exact requests), applies a capacity profile, the
tutorial's queue configuration changed by one mechanism's manifests, submits the tutorial's RayJob ``jobs``
times (each running ``run_seconds`` on the simulated executor) and follows them minute by minute: when each
job started (``spec.suspend`` going false), which flavor its ``tpu-group`` had, which node pools its pods ran
on, when it finished, and what it cost (``Twin.billing``). ``MECHANISMS`` name the manifests; ``CAPACITY``
the three stock-out situations of the acceptance: (a) plan A available, (b) on-demand stocked out for the first
2 h, (c) on-demand stocked out for the whole run. DWS grants after a fixed 30 min queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "demo-project"
H = 3600.0
TPU = {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
QUEUED = {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"}

GATE_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: kueue-manager-config
  namespace: kueue-system
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    featureGates:
      ConcurrentAdmission: true
"""

PLAN_A_CHECK = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: on-demand-config
spec:
  provisioningClassName: {cls}
  managedResources:
  - google.com/tpu
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: on-demand-prov
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: on-demand-config
"""


def capacity(case: str) -> dict[str, Any]:
    """(a) ``available``, (b) ``stockout-2h``, (c) ``stockout``: one 4x4 v6e slice on demand (or none)."""
    rule: dict[str, Any] = {
        "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["on-demand"]},
        "available": 4,
    }
    if case == "stockout-2h":
        rule["windows"] = [{"start": "0s", "end": "2h", "available": 0}]
    elif case == "stockout":
        rule["available"] = 0
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": "default"},
        "spec": {
            "seed": 7,
            "defaults": {
                "available": "unlimited",
                "provisionTime": {"fixed": "90s"},
                "queueWait": {"fixed": "30m"},
            },
            "rules": [rule],
        },
    }


def queue_docs(
    mechanism: str,
    mode: str = "TryPreferredFlavors",
    plan_a_class: str = "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
    plan_a_params: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The tutorial's ``dws-tpu-queue.yaml`` as changed by ``mechanism``.

    ``tutorial``: unchanged (as v1beta2: the twin runs Kueue 0.20.7, which serves only v1beta2). ``concurrent-verbatim``: the ClusterQueue in v1beta2 with a
    ``concurrentAdmissionPolicy`` and nothing else changed. ``concurrent``: Concurrent Admission made workable
    for a RayJob whose head shares its flavor with the workers (one resource group, one flavor per Variant): the
    ``default-cpu`` flavor leaves the queue, ``on-demand`` and ``dws`` carry the TPU (and queued) tolerations
    for the head and submitter. ``plan-a-check``: the tutorial's queue plus an AdmissionCheck on ``on-demand``
    (a ProvisioningRequestConfig of ``plan_a_class``). ``race``: ``concurrent`` plus that check."""
    docs = list(yaml.safe_load_all(T.queue_yaml(api="v1beta2")))
    concurrent = mechanism in ("concurrent", "race", "concurrent-verbatim")
    adapted = mechanism in ("concurrent", "race")
    checked = mechanism in ("plan-a-check", "race")
    out = []
    for d in docs:
        if adapted and d["kind"] == "ResourceFlavor":
            if d["metadata"]["name"] == "default-cpu":
                continue
            d["apiVersion"] = "kueue.x-k8s.io/v1beta2"
            d["spec"]["tolerations"] = [TPU] + ([QUEUED] if d["metadata"]["name"] == "dws" else [])
        if d["kind"] == "ClusterQueue":
            d["apiVersion"] = "kueue.x-k8s.io/v1beta2"
            if adapted:
                d["spec"]["resourceGroups"][0]["flavors"] = [
                    f for f in d["spec"]["resourceGroups"][0]["flavors"] if f["name"] != "default-cpu"
                ]
            if concurrent:
                d["spec"]["concurrentAdmissionPolicy"] = {"migration": {"mode": mode}}
            if checked:
                d["spec"]["admissionChecksStrategy"]["admissionChecks"].append(
                    {"name": "on-demand-prov", "onFlavors": ["on-demand"]}
                )
        out.append(d)
    if checked:
        extra = list(yaml.safe_load_all(PLAN_A_CHECK.format(cls=plan_a_class)))
        if plan_a_params:
            extra[0]["spec"]["parameters"] = dict(plan_a_params)
        out += extra
    return out


def rayjob(job_id: int, run_seconds: float, mechanism: str) -> dict[str, Any]:
    """The tutorial's RayJob; with ``concurrent``/``race`` its head loses the ``default-pool`` nodeSelector."""
    d = yaml.safe_load(T.rayjob_yaml(job_id))
    d["metadata"]["annotations"]["twin.flexq.dev/run-seconds"] = str(int(run_seconds))
    if mechanism in ("concurrent", "race"):
        d["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"].pop("nodeSelector")
    return d


@dataclass
class JobReport:
    name: str
    starts: list[tuple[float, str]] = field(
        default_factory=list
    )  # (seconds since submission, tpu-group flavor)
    stops: list[float] = field(default_factory=list)
    finished: float | None = None
    outcome: str = ""
    pools: set[str] = field(default_factory=set)
    cost: float = 0.0
    parent_conditions: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Run:
    twin: Twin
    t0: float
    jobs: dict[str, JobReport]

    seen_events: dict[str, dict[str, Any]] = field(default_factory=dict)  # every event of the run, by name

    def events(self, reason: str | None = None) -> list[tuple[str, str, str]]:
        """Every event of the run in namespace default (expired ones too), by name as the API lists them."""
        return [
            (e["involvedObject"]["name"], e["reason"], e["message"])
            for _, e in sorted(self.seen_events.items())
            if e["metadata"].get("namespace") == "default" and (reason is None or e["reason"] == reason)
        ]


def workloads_of(t: Twin, job: str) -> tuple[dict | None, list[dict]]:
    """(the job's Workload — the Parent under Concurrent Admission —, its Variants)."""
    wls = t.list("workload", "default")
    rj = t.try_get("rayjob", job, "default")
    uid = (rj or {}).get("metadata", {}).get("uid")
    top = next(
        (w for w in wls if any(r.get("uid") == uid for r in w["metadata"].get("ownerReferences") or [])), None
    )
    if top is None:
        return None, []
    puid = top["metadata"]["uid"]
    return top, [
        w for w in wls if any(r.get("uid") == puid for r in w["metadata"].get("ownerReferences") or [])
    ]


def _flavor(wl: dict | None) -> str:
    adm = ((wl or {}).get("status") or {}).get("admission") or {}
    for psa in adm.get("podSetAssignments") or []:
        if psa["name"] == "tpu-group":
            return psa["flavors"].get("google.com/tpu", "")
    return ""


def run(
    mechanism: str,
    case: str,
    *,
    jobs: int = 2,
    run_seconds: float = H,
    horizon: float = 8 * H,
    mode: str = "TryPreferredFlavors",
    plan_a_class: str = "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
    plan_a_params: dict[str, str] | None = None,
    step: float = 60.0,
) -> Run:
    """One scenario, followed every ``step`` seconds until every job finished or ``horizon``."""
    t = Twin(clock="virtual")
    t.core.project.create(capacity(case))
    path, body = T.create_cluster_request(PROJECT)
    t.gke("POST", path, body)
    t.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        t.gke("POST", path, body)
        t.run_until_idle(600)
    if mechanism in ("concurrent", "race", "concurrent-verbatim"):
        t.apply(GATE_CONFIG)
    t.apply(queue_docs(mechanism, mode, plan_a_class, plan_a_params))
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    t0 = t.now()
    reports: dict[str, JobReport] = {}
    running: dict[str, bool] = {}

    def on_rayjob(ev) -> None:  # every suspend flip, at the moment it is written
        name = ev.object["metadata"]["name"]
        rep = reports.get(name)
        if rep is None or ev.type == "DELETED":
            return
        active = ev.object["spec"].get("suspend") is False
        if active and not running.get(name):
            rep.starts.append((round(t.now() - t0), _flavor(workloads_of(t, name)[0])))
        elif running.get(name) and not active:
            rep.stops.append(round(t.now() - t0))
        running[name] = active

    sub = t.store.watch(on_rayjob, ["RayJob"])
    # every event of the run, kept here: the API server's event TTL (1 h) removes them from the cluster
    seen_events: dict[str, dict[str, Any]] = {}
    ev_sub = t.store.watch(
        lambda ev: seen_events.__setitem__(ev.object["metadata"]["name"], ev.object), ["events"]
    )
    for j in range(1, jobs + 1):
        name = f"rayjob-tpu-v6e-dws-{j}"
        reports[name] = JobReport(name)
        t.apply(rayjob(j, run_seconds, mechanism))
        t.advance(1)
    while t.now() - t0 < horizon:
        t.advance(step)
        now = t.now() - t0
        done = True
        for name, rep in reports.items():
            st = t.get("rayjob", name, "default").get("status") or {}
            for p in t.list("pod", "default"):
                if p["metadata"]["name"].startswith(name + "-") and p["spec"].get("nodeName"):
                    rep.pools.add(
                        p["spec"]["nodeName"].split("-pool-")[0].split("tpu-cluster-")[-1] + "-pool"
                    )
            if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
                if rep.finished is None:
                    rep.finished, rep.outcome = round(now), st.get("jobStatus", "")
            else:
                done = False
        if done:
            break
    sub.cancel()
    ev_sub.cancel()
    bill = t.billing()
    for name, rep in reports.items():
        rep.cost = round(float((bill.get("jobs") or {}).get(f"RayJob/default/{name}", 0.0)), 2)
        top, variants = workloads_of(t, name)
        rep.parent_conditions = {
            c["type"]: (c["status"], c["reason"], c["message"])
            for c in ((top or {}).get("status") or {}).get("conditions") or []
        }
        for v in variants:
            flavor = (v["metadata"].get("annotations") or {}).get(
                "kueue.x-k8s.io/workload-allowed-resource-flavors"
            )
            rep.variants[flavor] = {
                "active": v["spec"].get("active", True),
                "conditions": {
                    c["type"]: (c["status"], c["reason"], c["message"])
                    for c in (v.get("status") or {}).get("conditions") or []
                },
                "checks": [
                    (c["name"], c["state"], c.get("message", ""))
                    for c in (v.get("status") or {}).get("admissionChecks") or []
                ],
            }
    return Run(t, t0, reports, seen_events)


def table(r: Run) -> str:
    """One line per job: starts (min, flavor), stops, finish, pools, cost."""
    out = []
    for rep in r.jobs.values():
        starts = ", ".join(f"{int(s // 60)}m {f}" for s, f in rep.starts) or "never"
        stops = ", ".join(f"{int(s // 60)}m" for s in rep.stops)
        fin = f"{int(rep.finished // 60)}m {rep.outcome}" if rep.finished is not None else "not finished"
        out.append(
            f"{rep.name}: started {starts}; stopped {stops or '-'}; finished {fin}; "
            f"pools {sorted(rep.pools)}; ${rep.cost:.2f}"
        )
    return "\n".join(out)
