"""One batch/v1 Job of many pods through the whole twin (``flexq.Twin``, virtual clock): the loop time its
first virtual seconds cost (pods created, bound, started and ready; the Job controller syncing), and how many
times the Job controller reconciled it.

Each sync of a Job looks at every pod of the job, so the number of syncs is what matters: pod events reach
the Job after ``syncJobBatchPeriod`` (1 s) as upstream, one sync per burst instead of one per pod event. The
Job controller's client makes 20 calls a second (bursts of 30, as kube-controller-manager's), so by default the
twin runs until every pod can have been made (``pods / 20 + 2`` virtual seconds); the pods made are printed.

    .venv/bin/python bench/wide_job.py [--pods 1000 2000 5000] [--seconds S]
"""

from __future__ import annotations

import argparse
import time

from flexq import Twin

NODE_CPU = "100000"


def run(pods: int, seconds: float) -> tuple[float, float, int, int]:
    """(wall seconds of ``advance(seconds)``, reconciles of the Job controller, loop steps, pods made) for one
    Job."""
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

        def reconciles() -> (
            float
        ):  # every result: a sync that waits for the client's next calls requeues after
            return sum(
                twin.metric(
                    "controller_runtime_reconcile_total", {"controller": "job-controller", "result": r}
                )
                or 0
                for r in ("success", "error", "requeue", "requeue_after")
            )

        before = reconciles()
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
        syncs = reconciles() - before
        made = len([p for p in twin.list("pod", "default") if p["metadata"]["name"].startswith("wide-")])
        return wall, syncs, steps, made
    finally:
        twin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, nargs="+", default=[1000, 2000, 5000])
    ap.add_argument("--seconds", type=float, default=None, help="virtual seconds (default: pods / 20 + 2)")
    args = ap.parse_args()
    print(f"{'pods':>6} {'virtual s':>10} {'made':>6} {'wall s':>8} {'job syncs':>10} {'loop steps':>11}")
    for n in args.pods:
        seconds = args.seconds if args.seconds is not None else n / 20 + 2
        wall, syncs, steps, made = run(n, seconds)
        print(f"{n:>6} {seconds:>10.0f} {made:>6} {wall:>8.2f} {syncs:>10.0f} {steps:>11}")


if __name__ == "__main__":
    main()
