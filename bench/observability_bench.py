"""The dashboard's page weight and the ``/metrics`` scrape time of a served twin running the tutorial.

    .venv/bin/python bench/observability_bench.py [--scrapes 50] [--extra 200]

A live twin (real clock, simulated training) serves over HTTPS as ``flexq up`` does; the tutorial's cluster,
node pools and queues are created through the GKE API and the Kubernetes objects, and both tutorial RayJobs
run. Then, as a browser and Prometheus would:

- page weight: the bytes of ``/dashboard/`` (HTML) and of every script and stylesheet it loads, as sent and as
  gzip would send them, and the HTML fragment each live update fetches;
- scrape time: median and 95th percentile of ``GET /metrics`` over keep-alive HTTPS, with the tutorial's two
  workloads, then with ``--extra`` more pending workloads (each a series in the unadmitted gauges).
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
import tempfile
import time

import requests

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.http.server import Server

PROJECT = "bench-project"


def wait_for(pred, timeout: float = 180.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise SystemExit("timed out")


def scrape_times(s: requests.Session, url: str, n: int) -> tuple[float, float, int]:
    times, size = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        r = s.get(url + "/metrics", timeout=30)
        times.append(time.perf_counter() - t0)
        r.raise_for_status()
        size = len(r.content)
    times.sort()
    return statistics.median(times) * 1000, times[int(0.95 * (len(times) - 1))] * 1000, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--extra", type=int, default=200)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="flexq-obs-bench-")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    server.write_files()
    done = lambda: all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))  # noqa: E731
    try:
        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(done)
        for dws in (False, True):
            twin.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws))
            wait_for(done)
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "jax-train-script"},
                "data": {"train.py": T.train_script()},
            }
        )
        for job in (1, 2):
            twin.apply(
                T.rayjob_yaml(job).replace(
                    'kueue.x-k8s.io/elastic-job: "true"',
                    'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "600"',
                )
            )
        wait_for(
            lambda: (
                len(twin.list("workload", "default")) == 2
                and all(
                    any(
                        c["type"] == "Admitted" and c["status"] == "True"
                        for c in w.get("status", {}).get("conditions", [])
                    )
                    for w in twin.list("workload", "default")
                )
            )
        )
        s = requests.Session()
        s.trust_env = False
        s.headers["Accept-Encoding"] = "identity"  # sizes as sent uncompressed; gzip figures computed here
        s.verify = str(server.creds.ca_cert)
        r = s.post(server.url + "/dashboard/login", data={"token": server.creds.token}, timeout=30)
        r.raise_for_status()
        html = r.content
        assets = re.findall(rb'(?:src|href)="(/dashboard/static/[^"]+)"', html)
        total, total_gz = len(html), len(gzip.compress(html))
        print("dashboard page weight (tutorial, 2 jobs), as sent / gzipped:")
        print(f"  {'/dashboard/ (HTML)':44s} {len(html):8,d} B {len(gzip.compress(html)):8,d} B")
        for a in assets:
            body = s.get(server.url + a.decode(), timeout=30).content
            total += len(body)
            total_gz += len(gzip.compress(body))
            print(f"  {a.decode():44s} {len(body):8,d} B {len(gzip.compress(body)):8,d} B")
        print(f"  {'total (first load)':44s} {total:8,d} B {total_gz:8,d} B")
        frag = s.get(server.url + "/dashboard/part/overview", timeout=30).content
        print(
            f"  {'each live update (/dashboard/part/overview)':44s} {len(frag):8,d} B "
            f"{len(gzip.compress(frag)):8,d} B"
        )
        s.headers["Authorization"] = f"Bearer {server.creds.token}"
        med, p95, size = scrape_times(s, server.url, args.scrapes)
        print(
            f"/metrics scrape over HTTPS (tutorial, 2 jobs, {size:,d} B): median {med:.1f} ms, p95 {p95:.1f} ms "
            f"({args.scrapes} scrapes)"
        )
        wl = twin.list("workload", "default")[0]
        for i in range(args.extra):
            twin.apply(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "Workload",
                    "metadata": {"name": f"extra-{i}", "namespace": "default"},
                    "spec": {"queueName": "no-such-queue", "podSets": wl["spec"]["podSets"][:1]},
                }
            )
        wait_for(lambda: len(twin.list("workload", "default")) == 2 + args.extra)
        time.sleep(1.0)
        med, p95, size = scrape_times(s, server.url, args.scrapes)
        print(
            f"/metrics scrape over HTTPS (+{args.extra} pending workloads, {size:,d} B): median {med:.1f} ms, "
            f"p95 {p95:.1f} ms ({args.scrapes} scrapes)"
        )
        s.headers.pop("Authorization")
        frag = s.get(server.url + "/dashboard/part/overview", timeout=30).content
        t0 = time.perf_counter()
        for _ in range(10):
            s.get(server.url + "/dashboard/part/overview", timeout=30).raise_for_status()
        print(
            f"dashboard live update with {2 + args.extra} workloads: {len(frag):,d} B "
            f"({len(gzip.compress(frag)):,d} B gzipped), {(time.perf_counter() - t0) * 100:.1f} ms each"
        )
    finally:
        server.stop()
        twin.close()


if __name__ == "__main__":
    main()
