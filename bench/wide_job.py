"""One batch/v1 Job of many pods through the whole twin (``flexq.Twin``, virtual clock): the loop time its
first virtual seconds cost (pods created, bound, started and ready; the Job controller syncing), and how many
times the Job controller reconciled it.

Each sync of a Job looks at every pod of the job, so the number of syncs is what matters: pod events reach
the Job after ``syncJobBatchPeriod`` (1 s) as upstream, one sync per burst instead of one per pod event.

    .venv/bin/python bench/wide_job.py [--pods 1000 2000 5000] [--seconds 1]
"""

from __future__ import annotations

import argparse
import time

from flexq import Twin

NODE_CPU = "100000"


def run(pods: int, seconds: float) -> tuple[float, float, int]:
    """(wall seconds of ``advance(seconds)``, reconciles of the Job controller, loop steps) for one Job."""
    twin = Twin(clock="virtual", seed=1)
    try:
        twin.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "big", "labels": {"kubernetes.io/hostname": "big"}},
                "status": {
                    "capacity": {"cpu": NODE_CPU, "memory": "100000Gi", "pods": str(pods + 10)},
                    "allocatable": {"cpu": NODE_CPU, "memory": "100000Gi", "pods": str(pods + 10)},
                },
            }
        )
        key = {"controller": "job-controller", "result": "success"}
        before = twin.metric("controller_runtime_reconcile_total", key) or 0
        twin.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "wide", "namespace": "default"},
                "spec": {
                    "parallelism": pods,
                    "completions": pods,
                    "template": {
                        "metadata": {"annotations": {"twin.flexq.dev/run-seconds": "600"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                            ],
                        },
                    },
                },
            }
        )
        t0 = time.perf_counter()
        steps = twin.advance(seconds)
        wall = time.perf_counter() - t0
        syncs = twin.metric("controller_runtime_reconcile_total", key) - before
        return wall, syncs, steps
    finally:
        twin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, nargs="+", default=[1000, 2000, 5000])
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    print(f"{'pods':>6} {'wall s':>8} {'job syncs':>10} {'loop steps':>11}")
    for n in args.pods:
        wall, syncs, steps = run(n, args.seconds)
        print(f"{n:>6} {wall:>8.2f} {syncs:>10.0f} {steps:>11}")


if __name__ == "__main__":
    main()
