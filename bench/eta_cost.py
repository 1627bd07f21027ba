"""What the ETA costs: 100 waiting jobs on the tutorial's cluster, and the API's latency while a live twin's ETA
service computes.

1. **Compute**: the tutorial's cluster (its queues, its node pools, the tutorial's capacity profile) in a virtual
   twin with one job running and ``--jobs`` (100) tutorial RayJobs waiting; the ETA of every one of them
   (``--replicas`` forward runs; when they are long, shared with ``--workers`` other processes): wall seconds, and
   the CPU seconds of this process (the shared replicas' processes are the fork server's children, which this
   process's usage does not count).
2. **API latency**: a served live twin (real clock, simulated executor, HTTPS) with the same cluster and jobs and an
   ``EtaService`` (its computation in a process of its own); a merge PATCH of a ConfigMap every 20 ms for
   ``--seconds``, once with no ETA being computed and once while refreshes run back to back: median, p99 and max
   latency of each.

    .venv/bin/python bench/eta_cost.py
    .venv/bin/python bench/eta_cost.py --jobs 100 --replicas 8 --workers 2 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests
import yaml

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.cli import tutorial as T
from flexq.eta import EtaConfig, estimate, state_from_twin

TRAIN = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "jax-train-script", "namespace": "default"},
    "data": {"train.py": "print('training')\n"},
}


def rayjob(i: int) -> dict[str, Any]:
    obj = yaml.safe_load(T.rayjob_yaml(i))
    obj["metadata"].setdefault("annotations", {})["twin.flexq.dev/run-seconds"] = "1800"
    return obj


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def compute(jobs: int, replicas: int, workers: int, horizon_hours: float | None = None) -> None:
    twin = Twin(clock="virtual", seed=3)
    p = tutorial_profile()
    p["metadata"]["name"] = "default"
    twin.core.project.create(p)
    twin.gke("POST", *T.create_cluster_request("p"))
    twin.advance(600)
    for dws in (False, True):
        twin.gke("POST", *T.create_node_pool_request("p", dws=dws))
        twin.advance(300)
    twin.cluster(T.TUTORIAL_ENV["CLUSTER_NAME"])
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(TRAIN)
    for i in range(1, jobs + 2):
        twin.create(rayjob(i))
        twin.advance(5)
    twin.advance(300)
    state = state_from_twin(twin, declared=False)
    twin.close()
    t, c = time.monotonic(), _cpu()
    cfg = EtaConfig(replicas=replicas, workers=workers)
    if horizon_hours is not None:
        cfg = EtaConfig(replicas=replicas, workers=workers, horizon=horizon_hours * 3600)
    fc = estimate(state, cfg)
    wall, cpu = time.monotonic() - t, _cpu() - c
    waiting = len(fc.jobs)
    timed = sum(1 for j in fc.jobs.values() if j.median is not None)
    print(
        f"compute: {waiting} waiting jobs ({len(fc.running)} running) on the tutorial's cluster, {replicas} "
        f"forward runs, up to {workers} processes: {wall:.1f} s wall, {cpu:.1f} s CPU in this process; {timed} "
        f"with a time within {fc.horizon / 86400:g} d, the rest not within it or never"
    )


def latency(jobs: int, replicas: int, seconds: float) -> None:
    from flexq.eta.service import EtaService
    from flexq.http.server import Server

    home = Path(tempfile.mkdtemp(prefix="eta-cost-"))
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    server.write_files()
    try:
        twin.core.project.create(
            {
                "apiVersion": "twin.flexq.dev/v1alpha1",
                "kind": "CapacityProfile",
                "metadata": {"name": "default"},
                "spec": {"defaults": {"provisionTime": {"fixed": "1s"}, "queueWait": {"fixed": "6h"}}},
            }
        )

        def done() -> bool:
            return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

        for path, body in (
            T.create_cluster_request("p"),
            T.create_node_pool_request("p", dws=False),
            T.create_node_pool_request("p", dws=True),
        ):
            twin.gke("POST", path, body)
            while not done():
                time.sleep(0.2)
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(TRAIN)
        twin.apply(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": "default"}}
        )
        for i in range(1, jobs + 2):
            twin.create(rayjob(i))
        time.sleep(5)
        session = requests.Session()
        session.trust_env = False  # REQUESTS_CA_BUNDLE would override the twin's CA (requests#3829)
        session.verify = str(server.creds.ca_cert)
        session.headers["Authorization"] = f"Bearer {server.creds.token}"
        session.headers["Content-Type"] = "application/merge-patch+json"
        url = f"{server.url}/api/v1/namespaces/default/configmaps/probe"

        def probe(window: float) -> list[float]:
            out, end, n = [], time.monotonic() + window, 0
            while time.monotonic() < end:
                n += 1
                t = time.monotonic()
                r = session.patch(url, data=f'{{"data": {{"n": "{n}"}}}}', timeout=30)
                out.append(time.monotonic() - t)
                assert r.status_code == 200, r.text
                time.sleep(max(0.0, 0.02 - (time.monotonic() - t)))
            return out

        quiet = probe(seconds)
        service = EtaService(twin, cfg=EtaConfig(replicas=replicas, workers=1), period=1e9).start(
            background=False
        )
        refreshes: list[float] = []
        stop = threading.Event()

        def churn() -> None:
            while not stop.is_set():
                t = time.monotonic()
                service.refresh()
                refreshes.append(time.monotonic() - t)

        th = threading.Thread(target=churn, daemon=True)
        th.start()
        busy = probe(seconds)
        stop.set()
        th.join(timeout=300)
        service.stop()

        def show(xs: list[float]) -> str:
            xs = sorted(xs)
            return (
                f"median {statistics.median(xs) * 1000:.1f} ms, p99 {xs[int(0.99 * (len(xs) - 1))] * 1000:.1f} ms, "
                f"max {xs[-1] * 1000:.1f} ms ({len(xs)} writes)"
            )

        print(f"API writes with no ETA running: {show(quiet)}")
        print(f"API writes while the ETA refreshes back to back: {show(busy)}")
        print(
            f"  {len(refreshes)} refreshes of {len(service.latest().jobs) if service.latest() else 0} waiting "
            f"jobs, {statistics.median(refreshes) if refreshes else 0:.1f} s each (in the service's process)"
        )
    finally:
        server.stop()
        twin.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument(
        "--horizon-hours",
        type=float,
        help="the forward runs' horizon (default: the ETA's, 7 days); a deep queue's "
        "runs go to the horizon, so this bounds what one measurement costs",
    )
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    compute(args.jobs, args.replicas, args.workers, args.horizon_hours)
    if not args.skip_latency:
        latency(args.jobs, args.replicas, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
