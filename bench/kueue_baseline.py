"""Kueue's baseline scheduler performance scenario, on flexq's virtual clock.

Reproduces ``test/performance/scheduler/configs/baseline`` of kubernetes-sigs/kueue: 5 cohorts × 6
ClusterQueues (nominal 20 CPU, borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue
LowerPriority); per ClusterQueue 350 small (1 CPU, 200 ms, priority 50, one every 100 ms), 100 medium
(5 CPU, 500 ms, priority 100, every 500 ms) and 50 large (20 CPU, 1000 ms, priority 200, every 1200 ms)
bare Workloads = 15,000. Like upstream's runner, a "test runner" finishes each workload ``runtimeMs``
after it is admitted and completes evictions (``UnsetQuotaReservation``, reason Pending). Kueue runs
alone (``MinimalKueue``, the counterpart of upstream's ``minimalkueue``).

Prints wall time, admissions per wall second, average time to admission per class and ClusterQueue
usage, next to Kueue's published thresholds (``rangespec.yaml``).

    .venv/bin/python bench/kueue_baseline.py [--scale 1.0]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

from flexq.kueue.workload import unset_quota_reservation
from flexq.semantics.conditions import find_condition
from flexq.testing.minimal_kueue import MinimalKueue

CLASSES = [  # name, count per CQ, interval s, runtime s, priority, cpu
    ("small", 350, 0.1, 0.2, 50, 1),
    ("medium", 100, 0.5, 0.5, 100, 5),
    ("large", 50, 1.2, 1.0, 200, 20),
]
THRESHOLDS = {"maxWallMs": 425_000, "cqMinUsage": 50.0, "large": 23_000, "medium": 90_000, "small": 260_000}
UPSTREAM_AVG = {"wallMs": 351_116, "usage": 55.9, "large": 16_501, "medium": 76_768, "small": 215_468}


def setup(k: MinimalKueue) -> list[str]:
    objs = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    ]
    names = []
    for c in range(5):
        for q in range(6):
            name = f"cq-0-{q}-cohort-{c}"
            names.append(name)
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
    k.apply(objs)
    k.settle()
    return names


class Runner:
    """Creates the workloads on schedule, finishes admitted ones, completes evictions; records figures."""

    def __init__(self, k: MinimalKueue, cqs: list[str], scale: float) -> None:
        self.k, self.cqs, self.scale = k, cqs, scale
        self.created: dict[str, float] = {}
        self.klass: dict[str, str] = {}
        self.admitted_at: dict[str, float] = {}
        self.tta: dict[str, list[float]] = defaultdict(list)
        self.finished = 0
        self.admissions = 0
        self.total = 0
        self.cpu_time: dict[str, float] = defaultdict(float)  # cpu·seconds per CQ
        self.first = self.last = k.now()
        k.store.watch(self.on_event, ["Workload"])

    def schedule(self) -> None:
        loop = self.k.loop
        t0 = self.k.now()
        for cq in self.cqs:
            for set_idx, (cls, count, interval, runtime, prio, cpu) in enumerate(CLASSES):
                n = max(1, int(count * self.scale))
                self.total += n
                for i in range(n):
                    loop.call_at(
                        t0 + (i + 1) * interval,
                        lambda cq=cq, cls=cls, si=set_idx, i=i, rt=runtime, p=prio, c=cpu: self.create(
                            cq, cls, si, i, rt, p, c
                        ),
                    )

    def create(self, cq: str, cls: str, si: int, i: int, runtime: float, prio: int, cpu: int) -> None:
        name = f"{cls}-{si}-{i}-0"
        self.k.store.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {
                    "name": name,
                    "namespace": cq,
                    "labels": {"runtime-ms": str(int(runtime * 1000)), "class": cls},
                },
                "spec": {
                    "queueName": cq,
                    "priority": prio,
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}
                                    ]
                                }
                            },
                        }
                    ],
                },
            }
        )
        self.created[f"{cq}/{name}"] = self.k.now()
        self.klass[f"{cq}/{name}"] = cls

    def on_event(self, ev) -> None:
        wl = ev.object
        key = f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"
        if ev.type == "DELETED" or key not in self.created:
            return
        now = self.k.now()
        adm = find_condition(wl, "Admitted")
        ev_cond = find_condition(wl, "Evicted")
        fin = find_condition(wl, "Finished")
        if fin is not None and fin.get("status") == "True":
            self._stop_usage(key, wl, now)
            return
        if (
            ev_cond is not None
            and ev_cond.get("status") == "True"
            and (wl.get("status") or {}).get("admission")
        ):
            self._stop_usage(key, wl, now)
            self.k.loop.call_soon(lambda key=key: self.finish_eviction(key))
            return
        if adm is not None and adm.get("status") == "True" and key not in self.admitted_at:
            self.admitted_at[key] = now
            self.admissions += 1
            self.tta[self.klass[key]].append(now - self.created[key])
            self.first = min(self.first, now)
            runtime = int(wl["metadata"]["labels"]["runtime-ms"]) / 1000
            self.k.loop.call_at(now + runtime, lambda key=key, at=now: self.finish(key, at))

    def _stop_usage(self, key: str, wl: dict, now: float) -> None:
        at = self.admitted_at.pop(key, None)
        if at is None:
            return
        cpu = int(
            wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        )
        self.cpu_time[wl["metadata"]["namespace"]] += cpu * (now - at)
        self.last = max(self.last, now)

    def finish(self, key: str, at: float) -> None:
        if self.admitted_at.get(key) != at:
            return  # evicted meanwhile
        ns, name = key.split("/")
        wl = self.k.store.get("Workload", name, ns)
        wl["status"].setdefault("conditions", []).append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "ByTest",
                "message": "By test runner",
                "observedGeneration": 1,
                "lastTransitionTime": wl["metadata"]["creationTimestamp"],
            }
        )
        self.k.store.update_status(wl)
        self.finished += 1

    def finish_eviction(self, key: str) -> None:
        ns, name = key.split("/")
        wl = self.k.store.try_get("Workload", name, ns)
        if wl is None or not (wl.get("status") or {}).get("admission"):
            return
        unset_quota_reservation(wl, "Pending", "Evicted by the test runner", self.k.now())
        self.k.store.update_status(wl)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the 15,000 workloads to create")
    ap.add_argument(
        "--cycle-seconds",
        type=float,
        default=0.0,
        help="how long one scheduling cycle takes on the virtual clock (TwinSettings.kueue_cycle_seconds; 0: free)",
    )
    args = ap.parse_args()
    k = MinimalKueue(namespaces=("default", "kueue-system"), cycle_seconds=args.cycle_seconds)
    cqs = setup(k)
    r = Runner(k, cqs, args.scale)
    r.schedule()
    t_start = k.now()
    load0 = os.getloadavg()[0]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while r.finished < r.total:
        if k.loop.run_until_idle(600) == 0 and r.finished < r.total:
            break
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    virtual = k.now() - t_start
    print(
        f"Kueue baseline (test/performance/scheduler/configs/baseline), flexq virtual clock, scale {args.scale}, "
        f"scheduling cycle {args.cycle_seconds:g} s"
    )
    print(
        f"  workloads created {r.total}, admissions {r.admissions}, finished {r.finished}, scheduling cycles "
        f"{k.controllers[0].scheduler.cycle_no}"
    )
    print(
        f"  wall time {wall:.1f} s ; virtual (simulated) time {virtual:.1f} s "
        f"[Kueue maxWallMs {THRESHOLDS['maxWallMs'] / 1000:.0f} s, upstream average {UPSTREAM_AVG['wallMs'] / 1000:.0f} s]"
    )
    print(
        f"  admissions per wall second {r.admissions / wall:.0f} (target >= 1000); process CPU time {cpu:.1f} s, "
        f"admissions per CPU second {r.admissions / max(cpu, 1e-9):.0f} (wall time depends on the machine's load: "
        f"1-minute load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs)"
    )
    for cls, *_ in CLASSES:
        v = r.tta[cls]
        avg = sum(v) / len(v) * 1000 if v else float("nan")
        print(
            f"  avg time to admission {cls:6s} {avg:9.0f} ms  [Kueue max {THRESHOLDS[cls]:>7} ms, upstream avg {UPSTREAM_AVG[cls]:>7} ms]"
        )
    elapsed = max(r.last - r.first, 1e-9)
    usages = [r.cpu_time[cq] * 100 / (20 * elapsed) for cq in cqs]
    print(
        f"  ClusterQueue usage (cpu used / nominal x elapsed): mean {sum(usages) / len(usages):.1f} %, "
        f"min {min(usages):.1f} % [Kueue min {THRESHOLDS['cqMinUsage']} %, upstream avg {UPSTREAM_AVG['usage']} %]"
    )


if __name__ == "__main__":
    main()
