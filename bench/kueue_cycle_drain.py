"""How fast Kueue admits a deep queue: one head per ClusterQueue per scheduling cycle (kueue#14477).

500 workloads are queued at once in one ClusterQueue with quota for all of them (a deep queue on free quota), and
a second ClusterQueue gets a few workloads during the drain (a shallow queue on the same Kueue). Kueue pops one
Workload per ClusterQueue per cycle (``Manager.Heads``), so the deep queue drains at the cycle's rate however much
quota is free, while the shallow queue's workloads are admitted within a cycle or two. Runs Kueue alone
(``MinimalKueue``) on the virtual clock for each cycle duration (``TwinSettings.kueue_cycle_seconds``): free
cycles (0, the twin's default), a small cluster's (0.01 s) and the one kueue#14477's production cluster implies (~25 cycles a
minute: 2.4 s), and prints the drain time and the waits beside the issue's measured figures.

    .venv/bin/python bench/kueue_cycle_drain.py [--depth 500] [--cycles 0,0.01,2.4]
"""

from __future__ import annotations

import argparse
import statistics

from flexq.semantics.conditions import find_condition
from flexq.testing.minimal_kueue import MinimalKueue

ISSUE = (
    "kueue#14477 (production, ~1,300 nodes, v0.18, Fair Sharing + TAS): ~25 cycles/min, 38 % of pops admitted, "
    "9.6 admissions/min; depth 536: predicted 56 min, measured p50 64 min / p90 78 min; shallow queues p50 12 s"
)


def _queues(depth: int) -> list[dict]:
    objs: list[dict] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    ]
    for name, quota in (("deep", depth), ("shallow", 50)):
        objs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": quota}]}
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
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"clusterQueue": name},
            }
        )
    return objs


def _workload(name: str, queue: str) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                    },
                }
            ],
        },
    }


def drain(depth: int, cycle: float) -> dict[str, list[float]]:
    """Waits (seconds from creation to quota reservation) per queue."""
    k = MinimalKueue(cycle_seconds=cycle)
    k.apply(_queues(depth))
    k.settle()
    created: dict[str, float] = {}
    waits: dict[str, list[float]] = {"deep": [], "shallow": []}

    def on_event(ev) -> None:
        wl = ev.object
        name = wl["metadata"]["name"]
        qr = find_condition(wl, "QuotaReserved")
        if ev.type != "DELETED" and name in created and qr is not None and qr.get("status") == "True":
            waits[wl["spec"]["queueName"]].append(k.now() - created.pop(name))

    k.store.watch(on_event, ["Workload"])
    t0 = k.now()
    for i in range(depth):
        k.store.create(_workload(f"deep-{i}", "deep"))
        created[f"deep-{i}"] = t0
    # the shallow queue's workloads arrive one by one during the drain
    gap = max(cycle, 0.01) * depth / 10
    for i in range(5):

        def arrive(i: int = i) -> None:
            k.store.create(_workload(f"shallow-{i}", "shallow"))
            created[f"shallow-{i}"] = k.now()

        k.loop.call_at(t0 + (i + 1) * gap, arrive)
    while created and k.loop.run_until_idle(3600) > 0:
        pass
    assert not created, f"not admitted: {sorted(created)[:5]}"
    return waits


def _fmt(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=500, help="workloads queued at once in the deep queue")
    ap.add_argument("--cycles", default="0,0.01,2.4", help="cycle durations to run, seconds, comma-separated")
    args = ap.parse_args()
    print(
        f"A deep queue of {args.depth} workloads on free quota, and a shallow queue beside it (Kueue alone)."
    )
    print(f"  {ISSUE}")
    for cycle in (float(c) for c in args.cycles.split(",")):
        waits = drain(args.depth, cycle)
        deep, shallow = sorted(waits["deep"]), sorted(waits["shallow"])
        predicted = args.depth * cycle
        print(
            f"  cycle {cycle:g} s: deep queue drained in {_fmt(max(deep))} (depth x cycle = {_fmt(predicted)}), "
            f"wait p50 {_fmt(statistics.median(deep))} p90 {_fmt(deep[int(0.9 * (len(deep) - 1))])}; "
            f"shallow queue wait p50 {_fmt(statistics.median(shallow))}, max {_fmt(max(shallow))}"
        )


if __name__ == "__main__":
    main()
