"""Kueue's baseline performance scenario through the whole twin: real batch/v1 Jobs on the virtual clock.

Kueue's ``test/performance/scheduler/configs/baseline`` (per ClusterQueue 350 small / 100 medium / 50 large
jobs, 1 / 5 / 20 cpu, run 200 / 500 / 1000 ms, priority 50 / 100 / 200, one every 100 / 500 / 1200 ms; 6
ClusterQueues per cohort, nominal 20 cpu, borrowingLimit 100, ``reclaimWithinCohort: Any``,
``withinClusterQueue: LowerPriority``), submitted as **batch/v1 Jobs** labelled with
``kueue.x-k8s.io/queue-name`` and ``kueue.x-k8s.io/priority-class`` and annotated
``twin.flexq.dev/run-seconds``, through ``flexq.Twin(clock="virtual")``'s public methods only. Each job goes
the whole way: Job -> Workload -> admission -> unsuspend -> pod -> kube-scheduler -> (autoscaler) -> node ->
kubelet -> simulated executor -> Job complete -> Workload Finished. The cluster is a GKE cluster whose
default pool has 20 n2-standard-32 nodes (640 vCPU; the five cohorts' nominal quota is 600), autoscaled
between 1 and 20 nodes.

Prints jobs per wall second, wall time per job (and, with two ``--cohorts`` values, the growth ratio of the
larger scale to the smaller), peak RSS and the average time to admission per class next to Kueue's
thresholds (small 260 s, medium 90 s, large 23 s), and the time of ``Twin.list('Workload')`` of every
Workload: the first list (each copied by an orjson round trip, its JSON text kept by the store) and a later
one (the kept texts decoded). ``--profile FILE`` writes a cProfile of the largest run.

    .venv/bin/python bench/whole_twin_baseline.py --cohorts 1 5 [--scale 1.0] [--profile whole.prof]

Wall time depends on the machine's load: the 1-minute load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import resource
import time
from collections import defaultdict

from flexq import Twin
from flexq.clock import parse_time

CLASSES = [  # name, count per CQ, interval s, runtime s, priority, cpu
    ("small", 350, 0.1, 0.2, 50, 1),
    ("medium", 100, 0.5, 0.5, 100, 5),
    ("large", 50, 1.2, 1.0, 200, 20),
]
THRESHOLDS = {"large": 23.0, "medium": 90.0, "small": 260.0}
QUEUES_PER_COHORT = 6
PROJECT, ZONE, CLUSTER = "perf-project", "us-central1-a", "perf"
NODES, MACHINE = 20, "n2-standard-32"
SETUP_SECONDS = 120.0  # virtual seconds given to the cluster's creation (well under the 10 min scale-down)


def make_twin(cohorts: int) -> Twin:
    twin = Twin(clock="virtual")
    parent = f"projects/{PROJECT}/locations/{ZONE}"
    twin.gke(
        "POST",
        f"/v1/{parent}/clusters",
        {
            "parent": parent,
            "cluster": {
                "name": CLUSTER,
                "nodePools": [
                    {
                        "name": "default-pool",
                        "initialNodeCount": NODES,
                        "config": {"machineType": MACHINE},
                        "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": NODES},
                    }
                ],
            },
        },
    )
    # the cluster is up with its 20 nodes in seconds; waiting longer (an hour, as this bench did) lets the
    # autoscaler remove the idle nodes after scale-down-unneeded-time (10 min) and the jobs would start on
    # one node, waiting for scale-ups: not the scenario above
    twin.run_until_idle(SETUP_SECONDS)
    objs: list[dict] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    ]
    for cls, _n, _i, _r, prio, _c in CLASSES:
        objs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": cls},
                "value": prio,
            }
        )
    for c in range(cohorts):
        for q in range(QUEUES_PER_COHORT):
            name = f"cq-0-{q}-cohort-{c}"
            objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            objs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ClusterQueue",
                    "metadata": {"name": name},
                    "spec": {
                        "cohortName": f"cohort-{c}",
                        "namespaceSelector": {},
                        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu"],
                                "flavors": [
                                    {
                                        "name": "default",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                }
            )
            objs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": name, "namespace": name},
                    "spec": {"clusterQueue": name},
                }
            )
    twin.apply(objs)
    twin.run_until_idle(60)
    nodes = len(twin.list("Node"))
    if nodes != NODES:
        raise SystemExit(f"the cluster has {nodes} nodes before the jobs arrive, not {NODES}")
    return twin


def job(ns: str, name: str, cls: str, runtime: float, cpu: int) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": ns, "kueue.x-k8s.io/priority-class": cls},
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {"twin.flexq.dev/run-seconds": str(runtime)}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.52",
                            "resources": {"requests": {"cpu": str(cpu)}},
                        }
                    ],
                },
            },
        },
    }


class GcTimer:
    """CPU time spent in the cyclic garbage collector while installed (it grows with the live heap)."""

    def __init__(self) -> None:
        self.cpu, self.collections, self.per_gen, self._t = 0.0, [0, 0, 0], [0.0, 0.0, 0.0], 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.process_time()
        else:
            dt = time.process_time() - self._t
            self.cpu += dt
            self.collections[info["generation"]] += 1
            self.per_gen[info["generation"]] += dt


class Recorder:
    """Watches Workloads (an observer only): the first admission of each, for time to admission."""

    def __init__(self, twin: Twin) -> None:
        self.admitted: dict[tuple[str, str], float] = {}
        self.twin = twin
        twin.store.watch(self.on_event, ["Workload"])

    def on_event(self, ev) -> None:
        md = ev.object["metadata"]
        key = (md["namespace"], md["ownerReferences"][0]["name"] if md.get("ownerReferences") else md["name"])
        if key in self.admitted:
            return
        for c in (ev.object.get("status") or {}).get("conditions") or ():
            if c["type"] == "Admitted" and c["status"] == "True":
                self.admitted[key] = self.twin.now()


def run(cohorts: int, scale: float, profile: str | None) -> dict:
    twin = make_twin(cohorts)
    rec = Recorder(twin)
    t0 = twin.now()
    plan = []  # (virtual time, namespace, name, class, runtime, cpu)
    for c in range(cohorts):
        for q in range(QUEUES_PER_COHORT):
            ns = f"cq-0-{q}-cohort-{c}"
            for si, (cls, count, interval, runtime, _p, cpu) in enumerate(CLASSES):
                for i in range(max(1, int(count * scale))):
                    plan.append((round(t0 + (i + 1) * interval, 6), ns, f"{cls}-{si}-{i}", cls, runtime, cpu))
    plan.sort()
    created: dict[tuple[str, str], tuple[float, str]] = {}
    prof = cProfile.Profile() if profile else None
    gc.collect()
    gct = GcTimer()
    gc.callbacks.append(gct)
    load0 = os.getloadavg()[0]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    for at, ns, name, cls, runtime, cpu in plan:
        if at > twin.now():
            twin.advance(at - twin.now())
        twin.create(job(ns, name, cls, runtime, cpu))
        created[(ns, name)] = (twin.now(), cls)
    twin.run_until_idle(3600)
    if prof:
        prof.disable()
    wall, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    gc.callbacks.remove(gct)
    if prof:
        prof.dump_stats(profile)
    jobs = twin.list("Job")
    done = sum(
        1
        for j in jobs
        if any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in (j.get("status") or {}).get("conditions") or ()
        )
    )
    # the first list of the Workloads copies each (an orjson round trip) and keeps its JSON text; a later list
    # of the same versions decodes the kept text only (the store's cache, as an API server's watch cache)
    t, c = time.perf_counter(), time.process_time()
    wls = twin.list("Workload")
    cold_s, cold_cpu = time.perf_counter() - t, time.process_time() - c
    finished_wl = sum(
        1
        for w in wls
        if any(
            c["type"] == "Finished" and c["status"] == "True"
            for c in (w.get("status") or {}).get("conditions") or ()
        )
    )
    tta: dict[str, list[float]] = defaultdict(list)
    for key, (at, cls) in created.items():
        if key in rec.admitted:
            tta[cls].append(rec.admitted[key] - at)
    last_done = max(
        (
            parse_time(j["status"]["completionTime"])
            for j in jobs
            if (j.get("status") or {}).get("completionTime")
        ),
        default=t0,
    )
    del wls
    t, c = time.perf_counter(), time.process_time()
    n_wl = len(twin.list("Workload"))
    list_s, list_cpu = time.perf_counter() - t, time.process_time() - c
    twin.close()
    return {
        "cohorts": cohorts,
        "jobs": len(plan),
        "done": done,
        "finished_wl": finished_wl,
        "wall": wall,
        "cpu": cpu_s,
        "virtual": last_done - t0,
        "tta": tta,
        "load0": load0,
        "load1": os.getloadavg()[0],
        "list_s": list_s,
        "list_cpu": list_cpu,
        "cold_s": cold_s,
        "cold_cpu": cold_cpu,
        "n_wl": n_wl,
        "admitted": len(rec.admitted),
        "gc": gct,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cohorts", type=int, nargs="+", default=[1, 5], help="cohort counts to run (each 6 CQs)"
    )
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the per-ClusterQueue job counts")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the largest run to FILE")
    args = ap.parse_args()
    results = []
    for c in sorted(args.cohorts):
        r = run(c, args.scale, args.profile if c == max(args.cohorts) else None)
        results.append(r)
        per_job = r["wall"] / r["jobs"] * 1000
        print(
            f"{c} cohort(s), {r['jobs']} batch/v1 Jobs (scale {args.scale}): {r['done']} complete, "
            f"{r['finished_wl']} Workloads Finished, {r['admitted']} admitted"
        )
        print(
            f"  wall {r['wall']:.1f} s (process CPU {r['cpu']:.1f} s), {r['jobs'] / r['wall']:.0f} jobs per wall "
            f"second [target >= 750, issue 47], {per_job:.2f} ms wall per job; {r['jobs'] / max(r['cpu'], 1e-9):.0f} jobs "
            f"per CPU second, {r['cpu'] / r['jobs'] * 1000:.2f} ms CPU per job; virtual time to the last "
            f"completion {r['virtual']:.0f} s"
        )
        g = r["gc"]
        print(
            f"  of which cyclic GC {g.cpu:.1f} s CPU ({g.cpu / r['jobs'] * 1000:.2f} ms per job), collections per "
            f"generation {g.collections}, CPU s per generation {[round(x, 1) for x in g.per_gen]}"
        )
        for cls, *_ in CLASSES:
            v = r["tta"][cls]
            avg = sum(v) / len(v) if v else float("nan")
            print(
                f"  avg time to admission {cls:6s} {avg:7.1f} s (max {max(v, default=float('nan')):7.1f} s) "
                f"[Kueue threshold {THRESHOLDS[cls]:.0f} s]"
            )
        print(
            f"  Twin.list('Workload') of {r['n_wl']} objects: {r['list_s']:.2f} s (CPU {r['list_cpu']:.2f} s) "
            f"[target <= 0.5 s at 15,000]; the first list of them (copying each, keeping its JSON text) "
            f"{r['cold_s']:.2f} s (CPU {r['cold_cpu']:.2f} s)"
        )
        print(f"  load average {r['load0']:.1f} before, {r['load1']:.1f} after, on {os.cpu_count()} CPUs")
    if len(results) > 1 and args.profile:
        # the largest run ran under cProfile (several times slower): a growth ratio against it would measure that
        print("growth: not measured (the largest run was profiled); run without --profile for it")
    elif len(results) > 1:
        lo, hi = results[0], results[-1]
        ratio = (hi["wall"] / hi["jobs"]) / (lo["wall"] / lo["jobs"])
        cpu_ratio = (hi["cpu"] / hi["jobs"]) / (lo["cpu"] / lo["jobs"])
        print(
            f"growth: wall per job at {hi['cohorts']} cohorts / at {lo['cohorts']} cohort(s) = {ratio:.2f} "
            f"[target <= 1.5]; CPU per job {cpu_ratio:.2f}"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MiB")
    if args.profile:
        print(f"profile written to {args.profile}")


if __name__ == "__main__":
    main()
