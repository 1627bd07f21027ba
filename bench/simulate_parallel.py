"""flexq simulate's fan-out: a study of 2 variants x 8 replicas, run in one process and then on every core.

    .venv/bin/python bench/simulate_parallel.py [--replicas 8] [--jobs 150] [--workers N]

The study is small batch/v1 Jobs on a GKE cluster whose default pool autoscales (the whole twin: Job ->
Workload -> admission -> pod -> autoscaler -> node -> simulated executor), one variant with a 12-cpu
ClusterQueue and one with 24. Prints the sequential and the parallel wall time, their ratio (target <= 0.6 on
2 cores) and whether both gave byte-identical jobs.csv. Wall time depends on the machine's load: the
1-minute load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import flexq
from flexq.simulate.fanout import default_workers
from flexq.simulate.results import csv_text

QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: QUOTA}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=150, help="jobs per run")
    ap.add_argument("--workers", type=int, default=None, help="processes (default: one per core)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "small.yaml").write_text(QUEUES.replace("QUOTA", "12"))
        (root / "large.yaml").write_text(QUEUES.replace("QUOTA", "24"))
        (root / "simulation.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": "parallel-bench",
                    "seed": 1,
                    "replicas": args.replicas,
                    "cluster": {
                        "project": "p",
                        "location": "us-central1-a",
                        "name": "c",
                        "nodePools": [
                            {
                                "name": "default-pool",
                                "machineType": "n2-standard-8",
                                "nodes": 1,
                                "autoscaling": {"min": 1, "max": 4},
                            }
                        ],
                    },
                    "generator": {
                        "count": args.jobs,
                        "arrivals": {"exponential": {"mean": "2m"}},
                        "mix": [
                            {
                                "kind": "Job",
                                "podsets": "main:1:cpu=3",
                                "queue": "q",
                                "run": {"exponential": {"mean": "8m"}},
                            }
                        ],
                    },
                    "variants": [
                        {"name": "small", "manifests": ["small.yaml"]},
                        {"name": "large", "manifests": ["large.yaml"]},
                    ],
                }
            )
        )
        workers = args.workers or default_workers()
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        seq = flexq.simulate(root, workers=1, plots=False)
        t_seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        par = flexq.simulate(root, workers=workers, plots=False)
        t_par = time.perf_counter() - t0
    runs = len(seq.runs)
    print(
        f"flexq simulate fan-out: 2 variants x {args.replicas} replicas = {runs} runs of {args.jobs} batch Jobs"
    )
    print(f"  sequential (1 process)      {t_seq:7.1f} s wall")
    print(
        f"  parallel ({workers} processes)      {t_par:7.1f} s wall   ratio {t_par / t_seq:.2f} "
        f"[target <= 0.6 on 2 cores]"
    )
    print(
        f"  identical jobs.csv: {csv_text(seq.runs) == csv_text(par.runs)}; identical summaries: "
        f"{seq.documents == par.documents}"
    )
    print(f"  load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
