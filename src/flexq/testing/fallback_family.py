"""A seeded family of scenarios for judging flexq's fallback: the tutorial's configuration, with and without the
fallback, over what clusters meet.

Each ``FamilyScenario`` is a small study (``write_study`` writes it as a directory ``flexq simulate`` reads) with two
variants on the same traffic and cloud (common random numbers): ``tutorial`` (the tutorial's ClusterQueue:
plan A on-demand first, plan B DWS, Kueue deciding which) and ``fallback`` (the same, with flexq's fallback on
and the LocalQueue opted in). The dimensions, each drawn or set per scenario:

- **stock-outs** of on-demand v6e: ``none``; ``short-frequent`` (30-60 minutes every 3-5 hours);
  ``long-rare`` (one or two windows of 6-12 hours); ``whole-day`` (no on-demand for 24 hours);
- **the DWS pool**: ``tight`` (one or two slices: at its maximum during peaks) or ``ample`` (16 slices);
- **DWS waits**: ``short`` (10 minutes on average) or ``long`` (2 hours on average, at most 8);
- **load**: from 30 % to 95 % of plan A's capacity (one to three on-demand slices), in a busy-hours pattern;
- **jobs**: the tutorial's elastic RayJob, one slice or (a share of them) two;
- **priorities**: none, or two WorkloadPriorityClasses with preemption within the ClusterQueue;
- **spot**: none, or a spot v6e flavor between on-demand and DWS (spot VMs preempted after 2 hours on average).

``family(n, seed)`` lists ``n`` scenarios: every stock-out pattern with tight and ample pools first, then the rest
drawn. ``priority_family(n, seed)`` lists ``n`` more (``p00``, ``p01``, ...), drawn from a stream of their own so
that ``family``'s scenarios keep every draw they had: **priorities as users set them** —

- two or three WorkloadPriorityClasses (``high`` 1000, ``mid`` 500, ``low`` 100), the high class 10-50 % of the
  jobs, ``withinClusterQueue: LowerPriority``;
- one ClusterQueue, or two teams' ClusterQueues in a cohort (on-demand quota split between them, each may
  borrow the other's; ``reclaimWithinCohort: Any``, ``borrowWithinCohort: LowerPriority``), the jobs half on each;
- Kueue's default flavor fungibility (``whenCanPreempt: TryNextFlavor``: a job that would have to preempt on
  on-demand goes to DWS), or ``whenCanPreempt: Preempt`` (it preempts lower-priority jobs on on-demand first).

``eta_family(n, seed)`` is ``family``'s scenarios with, in about a third of them (drawn from a stream of its own),
a team's DWS budget: the DWS flavor's quota capped at 1, 2 or 4 slices and 60-130 % of plan A's capacity brought,
so that jobs queue in Kueue past the quota at busy hours (``bench/eta_calibration.py``'s deep queues).

Used by ``bench/fallback_robustness.py`` and the fallback's property tests. Imports nothing from flexq: it writes
files.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from flexq.fallback.model import OPT_IN_LABEL

__all__ = [
    "FamilyScenario",
    "family",
    "eta_family",
    "priority_family",
    "write_study",
    "STOCKOUTS",
    "PRIORITY_CLASSES",
]

STOCKOUTS = ("none", "short-frequent", "long-rare", "whole-day")
PRIORITY_CLASSES = {"high": 1000, "mid": 500, "low": 100}  # WorkloadPriorityClass -> value
TEAMS = ("team-a", "team-b")  # the ClusterQueues of a cohort scenario (LocalQueue <team>-queue each)


@dataclass(frozen=True)
class FamilyScenario:
    name: str
    stockout: str = "none"
    dws_slices: int = 16  # the DWS pool's maximum, in v6e 4x4 slices (4 nodes each)
    dws_wait: str = "short"
    load: float = 0.6  # offered TPU load over plan A's capacity
    od_slices: int = 1  # on-demand slices (pool max and quota)
    two_slice: float = 0.0  # share of jobs asking for two slices
    priorities: bool = False
    spot: bool = False
    days: float = 2.0  # days of traffic
    seed: int = 1  # the scenario's own draws (stock-out windows, traffic)
    # priorities as users set them (``priority_family``); the defaults are ``family``'s two classes
    classes: int = 2  # WorkloadPriorityClasses (2: high, low; 3: high, mid, low)
    high_share: float = 0.3  # the high class's share of the jobs
    cohort: bool = False  # two teams' ClusterQueues in a cohort, borrowing and reclaiming
    preempt_first: bool = False  # whenCanPreempt: Preempt (preempt on on-demand before trying DWS)
    dws_quota: int = 0  # the DWS flavor's TPU quota in slices (0: unbounded, the tutorial's; ``eta_family``)

    @property
    def has_stockout(self) -> bool:
        return self.stockout != "none"

    def describe(self) -> str:
        parts = [
            self.stockout,
            f"DWS {'tight' if self.dws_slices <= 2 else 'ample'} ({self.dws_slices} slices)",
            f"DWS wait {self.dws_wait}",
            f"load {self.load:.0%} of {self.od_slices} on-demand slice(s)",
        ]
        if self.two_slice:
            parts.append(f"{self.two_slice:.0%} two-slice jobs")
        if self.priorities:
            if self.classes == 2 and self.high_share == 0.3 and not self.cohort and not self.preempt_first:
                parts.append("priorities with preemption")
            else:
                parts.append(
                    f"{self.classes} priorities ({self.high_share:.0%} high)"
                    + (", two ClusterQueues in a cohort" if self.cohort else "")
                    + (", preempt before DWS" if self.preempt_first else "")
                )
        if self.spot:
            parts.append("spot in the mix")
        if self.dws_quota:
            parts.append(f"DWS quota {self.dws_quota} slice(s)")
        return ", ".join(parts)


def family(n: int, seed: int = 1) -> list[FamilyScenario]:
    """``n`` scenarios: the corners first (each stock-out pattern with a tight and an ample DWS pool), then drawn."""
    rng = random.Random(f"flexq-fallback-family:{seed}")
    out: list[FamilyScenario] = []
    corners = [(s, d) for s in STOCKOUTS for d in (1, 16)]
    for i in range(n):
        if i < len(corners):
            stock, dws = corners[i]
            wait = "short" if i % 2 == 0 else "long"
        else:
            stock = rng.choice(STOCKOUTS)
            dws = rng.choice((1, 2, 16))
            wait = rng.choice(("short", "long"))
        out.append(
            FamilyScenario(
                name=f"s{i:02d}",
                stockout=stock,
                dws_slices=dws,
                dws_wait=wait,
                load=round(rng.uniform(0.3, 0.95), 2),
                od_slices=rng.choice((1, 1, 2, 3)),
                two_slice=rng.choice((0.0, 0.0, 0.25)),
                priorities=rng.random() < 0.3,
                spot=rng.random() < 0.25,
                days=2.0,
                seed=rng.randrange(1, 10**6),
            )
        )
    return out


def eta_family(n: int, seed: int = 1) -> list[FamilyScenario]:
    """``family(n, seed)`` (every draw it makes kept), with what the ETA's calibration also needs to meet, drawn
    from a stream of its own: in about a third of the scenarios a team caps its DWS spending — the DWS flavor's
    quota 1, 2 or 4 slices — and brings 60-130 % of plan A's capacity, so that jobs queue in Kueue past the
    quota at busy hours (the deep queues of kueue#14477, which a DWS flavor of unbounded quota never forms)."""
    rng = random.Random(f"flexq-eta-family:{seed}")
    out = []
    for sc in family(n, seed):
        if rng.random() < 1 / 3:
            sc = replace(sc, dws_quota=rng.choice((1, 2, 4)), load=round(rng.uniform(0.6, 1.3), 2))
        out.append(sc)
    return out


def priority_family(n: int, seed: int = 1) -> list[FamilyScenario]:
    """``n`` scenarios with priorities as users set them (see the module docstring): the corners first (one
    ClusterQueue or a cohort, Kueue's default fungibility or preempt-first, under short and whole-day stock-outs),
    then drawn; mostly with stock-outs (where the fallback acts), some without."""
    rng = random.Random(f"flexq-fallback-family-priorities:{seed}")
    corners = [
        (s, c, p) for s in ("short-frequent", "whole-day") for c in (False, True) for p in (False, True)
    ]
    out: list[FamilyScenario] = []
    for i in range(n):
        if i < len(corners):
            stock, cohort, first = corners[i]
        else:
            stock = rng.choice(
                ("none", "short-frequent", "short-frequent", "long-rare", "long-rare", "whole-day")
            )
            cohort, first = rng.random() < 0.5, rng.random() < 0.5
        out.append(
            FamilyScenario(
                name=f"p{i:02d}",
                stockout=stock,
                dws_slices=rng.choice((1, 2, 4, 16)),
                dws_wait=rng.choice(("short", "long")),
                load=round(rng.uniform(0.4, 0.95), 2),
                od_slices=rng.choice((1, 2, 2, 3)) if not cohort else rng.choice((2, 3, 4)),
                two_slice=rng.choice((0.0, 0.0, 0.25)),
                priorities=True,
                spot=False,
                days=2.0,
                seed=rng.randrange(1, 10**6),
                classes=rng.choice((2, 3)),
                high_share=round(rng.uniform(0.1, 0.5), 2),
                cohort=cohort,
                preempt_first=first,
            )
        )
    return out


def shares(sc: FamilyScenario) -> list[tuple[str, float]]:
    """Each priority class and its share of the jobs (one unnamed class without priorities)."""
    if not sc.priorities:
        return [("", 1.0)]
    if sc.classes == 2:
        return [("high", sc.high_share), ("low", round(1 - sc.high_share, 4))]
    rest = 1 - sc.high_share
    return [("high", sc.high_share), ("mid", round(0.4 * rest, 4)), ("low", round(0.6 * rest, 4))]


# -- the study ---------------------------------------------------------------------------------------------------
RUN_MIX = [  # (name, weight, median run, sigma): debug runs, experiments, trainings
    ("debug", 50, "10m", 0.6),
    ("experiment", 40, "45m", 0.6),
    ("training", 10, "3h", 0.4),
]
MEAN_RUN_HOURS = 0.5 * 0.2 + 0.4 * 0.9 + 0.1 * 3.2  # about each mix's mean (lognormal mean = median e^(s²/2))
BUSY_FACTOR = 2.0  # arrivals 2x as dense 08:00-20:00 (the generator's thinning keeps the mean at...)


def _windows(sc: FamilyScenario) -> list[dict[str, Any]]:
    rng = random.Random(f"stockouts:{sc.seed}")
    hours = sc.days * 24 + 24
    out: list[dict[str, Any]] = []
    if sc.stockout == "short-frequent":
        t = rng.uniform(1, 4)
        while t < hours:
            length = rng.uniform(0.5, 1.0)
            out.append({"start": f"{t:.2f}h", "end": f"{t + length:.2f}h", "available": 0})
            t += length + rng.uniform(3, 5)
    elif sc.stockout == "long-rare":
        for _ in range(rng.choice((1, 2))):
            start = rng.uniform(2, hours - 14)
            out.append(
                {"start": f"{start:.2f}h", "end": f"{start + rng.uniform(6, 12):.2f}h", "available": 0}
            )
    elif sc.stockout == "whole-day":
        start = rng.uniform(6, 24)
        out.append({"start": f"{start:.2f}h", "end": f"{start + 24:.2f}h", "available": 0})
    return out


def _capacity(sc: FamilyScenario) -> dict[str, Any]:
    wait = (
        {"exponential": {"mean": "10m"}, "max": "1h"}
        if sc.dws_wait == "short"
        else {
            "exponential": {"mean": "2h"},
            "max": "8h",
        }
    )
    rules: list[dict[str, Any]] = [
        {
            "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["on-demand"]},
            "stockoutMessage": "ZONE_RESOURCE_POOL_EXHAUSTED",
            **({"windows": _windows(sc)} if sc.has_stockout else {}),
        }
    ]
    if sc.spot:
        rules.append(
            {
                "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["spot"]},
                "preemption": {"exponential": {"mean": "2h"}},
            }
        )
    return {
        "seed": sc.seed,
        "defaults": {
            "available": "unlimited",
            "provisionTime": {"uniform": {"min": "60s", "max": "150s"}},
            "queueWait": wait,
        },
        "rules": rules,
    }


def _cluster(sc: FamilyScenario) -> dict[str, Any]:
    pools = [
        {
            "name": "default-pool",
            "machineType": "n2-standard-16",
            "nodes": 3,
            "autoscaling": {"min": 3, "max": 12},
        },
        {
            "name": "on-demand-pool",
            "machineType": "ct6e-standard-4t",
            "tpuTopology": "4x4",
            "nodes": 0,
            "autoscaling": {"min": 0, "max": 4 * sc.od_slices},
        },
    ]
    if sc.spot:
        pools.append(
            {
                "name": "spot-pool",
                "machineType": "ct6e-standard-4t",
                "tpuTopology": "4x4",
                "nodes": 0,
                "autoscaling": {"min": 0, "max": 8},
                "spot": True,
            }
        )
    pools.append(
        {
            "name": "dws-pool",
            "machineType": "ct6e-standard-4t",
            "tpuTopology": "4x4",
            "nodes": 0,
            "autoscaling": {"min": 0, "max": 4 * sc.dws_slices},
            "flexStart": True,
            "queuedProvisioning": True,
        }
    )
    return {
        "project": "flexq-sim",
        "location": "us-east5-b",
        "name": "tpu-cluster",
        "version": "1.34",
        "addons": ["RayOperator"],
        "nodePools": pools,
    }


def _flavor(name: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": pool}},
    }


def _res(cpu: Any, memory: str, tpu: Any) -> list[dict[str, Any]]:
    return [
        {"name": "cpu", "nominalQuota": cpu},
        {"name": "memory", "nominalQuota": memory},
        {"name": "google.com/tpu", "nominalQuota": tpu},
    ]


def _cluster_queue(sc: FamilyScenario, name: str, slices: int, heads: int) -> dict[str, Any]:
    """The tutorial's ClusterQueue with ``slices`` on-demand slices of quota and CPU for ``heads`` Ray heads."""
    n = slices
    flavors = [
        {"name": "default-cpu", "resources": _res(heads, f"{2 * heads}Gi", 0)},
        {"name": "on-demand", "resources": _res(40 * n, f"{75 * n}Gi", 16 * n)},
    ]
    if sc.spot:
        flavors.append({"name": "spot", "resources": _res(80, "150Gi", 32)})
    if sc.dws_quota:  # a team's DWS budget: Kueue queues the jobs past it
        q = sc.dws_quota
        flavors.append({"name": "dws", "resources": _res(40 * q, f"{75 * q}Gi", 16 * q)})
    else:
        flavors.append({"name": "dws", "resources": _res(1000000000, "1000000000Gi", 1000000000)})
    cq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "google.com/tpu"], "flavors": flavors}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "dws-prov", "onFlavors": ["dws"]}]},
        },
    }
    if sc.priorities:
        cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    if sc.cohort:
        cq["spec"]["cohortName"] = "tpu"
        cq["spec"]["preemption"].update(
            reclaimWithinCohort="Any", borrowWithinCohort={"policy": "LowerPriority"}
        )
    if sc.preempt_first:
        # v1beta2: try preempting in a flavor before the next one (v1beta1's Borrow/Preempt)
        cq["spec"]["flavorFungibility"] = {
            "whenCanBorrow": "MayStopSearch",
            "whenCanPreempt": "MayStopSearch",
        }
    return cq


def _local_queue(name: str, cq: str, opt_in: bool) -> dict[str, Any]:
    lq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"namespace": "default", "name": name},
        "spec": {"clusterQueue": cq},
    }
    if opt_in:
        lq["metadata"]["labels"] = {OPT_IN_LABEL: "true"}
    return lq


def _queues(sc: FamilyScenario, opt_in: bool) -> list[dict[str, Any]]:
    """The tutorial's dws-tpu-queue.yaml, sized for the scenario (heads for a team, plan A's slices); in a cohort
    scenario, one per team, plan A's slices split between them (the first team the odd one)."""
    if sc.cohort:
        a = (sc.od_slices + 1) // 2
        queues = [
            _cluster_queue(sc, TEAMS[0], a, 40),
            _cluster_queue(sc, TEAMS[1], sc.od_slices - a, 40),
            *(_local_queue(f"{t}-queue", t, opt_in) for t in TEAMS),
        ]
    else:
        queues = [
            _cluster_queue(sc, "cluster-queue", sc.od_slices, 80),
            _local_queue("user-queue", "cluster-queue", opt_in),
        ]
    docs = [
        _flavor("default-cpu", "default-pool"),
        _flavor("on-demand", "on-demand-pool"),
        *([_flavor("spot", "spot-pool")] if sc.spot else []),
        _flavor("dws", "dws-pool"),
        *queues,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": "dws-prov"},
            "spec": {
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "ProvisioningRequestConfig",
                    "name": "dws-config",
                },
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "dws-config"},
            "spec": {
                "provisioningClassName": "queued-provisioning.gke.io",
                "managedResources": ["google.com/tpu"],
            },
        },
    ]
    if sc.priorities:
        for name, _share in shares(sc):
            value = PRIORITY_CLASSES[name]
            docs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
    return docs


RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: ${NAME}
  labels:
    kueue.x-k8s.io/queue-name: user-queue
  annotations:
    kueue.x-k8s.io/elastic-job: "true"
spec:
  shutdownAfterJobFinishes: true
  entrypoint: python /app/train.py
  rayClusterSpec:
    enableInTreeAutoscaling: true
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          nodeSelector:
            cloud.google.com/gke-nodepool: default-pool
          containers:
            - name: ray-head
              image: rayproject/ray:2.53.0-py311
              resources:
                limits: {cpu: "2", memory: "4Gi"}
                requests: {cpu: "2", memory: "4Gi"}
              volumeMounts:
                - {mountPath: /app, name: train-script-volume}
          volumes:
            - name: train-script-volume
              configMap: {name: jax-train-script}
    workerGroupSpecs:
      - replicas: SLICES
        minReplicas: 1
        maxReplicas: 2
        numOfHosts: 4
        groupName: tpu-group
        rayStartParams: {}
        template:
          spec:
            tolerations:
              - {key: "google.com/tpu", operator: "Exists", effect: "NoSchedule"}
              - {key: "cloud.google.com/gke-queued", operator: "Exists", effect: "NoSchedule"}
              - {key: "cloud.google.com/gke-spot", operator: "Exists", effect: "NoSchedule"}
            containers:
              - name: ray-worker
                image: rayproject/ray:2.53.0-py311
                resources:
                  limits: {cpu: "8", google.com/tpu: "4", memory: "16Gi"}
                  requests: {cpu: "8", google.com/tpu: "4", memory: "16Gi"}
            nodeSelector:
              cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
              cloud.google.com/gke-tpu-topology: 4x4
"""
TRAIN_SCRIPT = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "jax-train-script", "namespace": "default"},
    "data": {"train.py": "print('training')\n"},
}


def _generator(sc: FamilyScenario) -> dict[str, Any]:
    size = 1 + sc.two_slice
    # offered load = arrival rate x mean size x mean run / plan-A slices; the busy-hours thinning keeps a third
    # of the off-hours arrivals, so the mean rate is the peak rate x (12 + 12/BUSY) / 24
    rate_per_hour = sc.load * sc.od_slices / (size * MEAN_RUN_HOURS)
    peak = rate_per_hour * 24 / (12 + 12 / BUSY_FACTOR)
    mean_gap_s = 3600 / peak
    mix = []
    for name, weight, median, sigma in RUN_MIX:
        for slices, share in ((1, 1 - sc.two_slice), (2, sc.two_slice)):
            if share <= 0:
                continue
            for prio, pshare in shares(sc):
                for team, tshare in ((t, 0.5) for t in TEAMS) if sc.cohort else (("", 1.0),):
                    entry: dict[str, Any] = {
                        "name": f"{name}{'-2s' if slices == 2 else ''}{'-' + prio if prio else ''}"
                        f"{'-' + team if team else ''}",
                        "weight": round(weight * share * pshare * tshare, 4),
                        "kind": "RayJob",
                        "template": f"rayjob-{slices}.yaml",
                        "queue": f"{team}-queue" if team else "user-queue",
                        "class": name,
                        "run": {"lognormal": {"median": median, "sigma": sigma}},
                    }
                    if prio:
                        entry["priority"] = prio
                    mix.append(entry)
    return {
        "seed": sc.seed,
        "duration": f"{sc.days * 24:g}h",
        "arrivals": {"exponential": {"mean": f"{mean_gap_s:.1f}s"}},
        "diurnal": {"busyHours": [8, 20], "busyFactor": BUSY_FACTOR, "weekend": 1},
        "mix": mix,
    }


def write_study(sc: FamilyScenario, root: Path, *, fallback_settings: Any = True) -> Path:
    """The scenario as a study directory (``simulation.yaml`` and its files) under ``root``; returns its path."""
    d = root / sc.name
    d.mkdir(parents=True, exist_ok=True)
    (d / "queues-tutorial.yaml").write_text(yaml.safe_dump_all(_queues(sc, False), sort_keys=False))
    (d / "queues-fallback.yaml").write_text(yaml.safe_dump_all(_queues(sc, True), sort_keys=False))
    (d / "train-script.yaml").write_text(yaml.safe_dump(TRAIN_SCRIPT, sort_keys=False))
    for slices in (1, 2):
        (d / f"rayjob-{slices}.yaml").write_text(RAYJOB.replace("SLICES", str(slices)))
    doc = {
        "name": sc.name,
        "description": sc.describe(),
        "seed": 1,
        "until": f"{sc.days * 24 + 48:g}h",
        "cluster": _cluster(sc),
        "capacity": _capacity(sc),
        "generator": _generator(sc),
        "variants": [
            {"name": "tutorial", "manifests": ["queues-tutorial.yaml", "train-script.yaml"]},
            {
                "name": "fallback",
                "manifests": ["queues-fallback.yaml", "train-script.yaml"],
                "settings": {"fallback": fallback_settings},
            },
        ],
    }
    (d / "simulation.yaml").write_text(
        f"# {sc.describe()}\n# {asdict(sc)}\n" + yaml.safe_dump(doc, sort_keys=False)
    )
    return d
