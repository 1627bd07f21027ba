"""The dashboard's overview of a busy cluster, and what rendering it costs the twin's API.

    .venv/bin/python bench/dashboard_bench.py [--workloads 8000] [--renders 10]

A live twin (real clock, simulated executor) serves over HTTPS as ``flexq up`` does. The cluster holds
``--workloads`` pending Kueue Workloads (each owned by an object of its own, as a job owns its Workload), with
their Events — two ``FailedScaleUp`` on pods of the job and three others — and a ProvisioningRequest for one in
four. Then:

- render: the time of ``GET /dashboard/`` (the whole page) and of ``GET /dashboard/part/overview`` (what each live
  update fetches), median and maximum over ``--renders``;
- API writes meanwhile: a client PATCHes a ConfigMap every 20 ms while another loads the overview for
  ``--seconds``, as fast as the live page refreshes (every 0.3 s), then back to back; the longest write and the
  median, against the same writes with no dashboard running; and the twin's loop itself: how long a no-op posted
  to it every 10 ms waits (a write waits at least that).

Targets (issue 27): the overview renders in at most 0.5 s; no API write waits more than 50 ms behind it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time

import requests

from flexq import Twin
from flexq.clock import format_time
from flexq.http.server import Server


def populate(twin: Twin, n: int) -> None:
    """``n`` Workloads with their owners, events and (one in four) a ProvisioningRequest, in one go on the loop."""
    store = twin.core.current().store
    now = format_time(twin.now())

    def run() -> None:
        store.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
            take=True,
        )
        store.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "bench-queue", "namespace": "bench"},
                "spec": {"clusterQueue": "no-such-queue"},
            },
            take=True,
        )
        for i in range(n):
            owner = store.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"job-{i}", "namespace": "bench"},
                },
                take=True,
            )
            wl = store.create(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "Workload",
                    "metadata": {
                        "name": f"job-{i}-wl",
                        "namespace": "bench",
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "ConfigMap",
                                "name": f"job-{i}",
                                "uid": owner["metadata"]["uid"],
                                "controller": True,
                            }
                        ],
                    },
                    "spec": {
                        "queueName": "bench-queue",
                        "podSets": [
                            {
                                "name": "main",
                                "count": 4,
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "c",
                                                "image": "busybox",
                                                "resources": {
                                                    "requests": {"cpu": "1", "google.com/tpu": "4"}
                                                },
                                            }
                                        ]
                                    }
                                },
                            }
                        ],
                    },
                },
                take=True,
            )
            for j, reason in enumerate(("FailedScaleUp", "FailedScaleUp", "Scheduled", "Pulled", "Started")):
                store.create(
                    {
                        "apiVersion": "v1",
                        "kind": "Event",
                        "metadata": {"name": f"job-{i}-{j}", "namespace": "bench"},
                        "involvedObject": {"kind": "Pod", "name": f"job-{i}-abcde{j}", "namespace": "bench"},
                        "reason": reason,
                        "message": "Node scale up in zones us-east5-b associated with this pod failed: GCE out of "
                        "resources. Pod is at risk of not being scheduled.",
                        "type": "Warning" if reason == "FailedScaleUp" else "Normal",
                        "firstTimestamp": now,
                        "lastTimestamp": now,
                        "count": 1,
                        "source": {"component": "cluster-autoscaler"},
                    },
                    take=True,
                )
            if i % 4 == 0:
                store.create(
                    {
                        "apiVersion": "autoscaling.x-k8s.io/v1",
                        "kind": "ProvisioningRequest",
                        "metadata": {
                            "name": f"job-{i}-wl-dws-prov-1",
                            "namespace": "bench",
                            "ownerReferences": [
                                {
                                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                                    "kind": "Workload",
                                    "name": wl["metadata"]["name"],
                                    "uid": wl["metadata"]["uid"],
                                    "controller": True,
                                }
                            ],
                        },
                        "spec": {
                            "provisioningClassName": "queued-provisioning.gke.io",
                            "podSets": [{"podTemplateRef": {"name": f"ppt-job-{i}"}, "count": 4}],
                        },
                    },
                    take=True,
                )

    done = threading.Event()
    twin.core.loop.post(lambda: (run(), done.set()))
    done.wait()


def timed_gets(s: requests.Session, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = s.get(url, timeout=300)
        out.append(time.perf_counter() - t0)
        r.raise_for_status()
    return out


def writes(s: requests.Session, url: str, stop: threading.Event) -> list[float]:
    """PATCH a ConfigMap every 20 ms until ``stop``; each write's latency."""
    out, i = [], 0
    while not stop.is_set():
        i += 1
        t0 = time.perf_counter()
        r = s.patch(
            url + "/api/v1/namespaces/bench/configmaps/job-0",
            json={"data": {"n": str(i)}},
            headers={"Content-Type": "application/merge-patch+json"},
            timeout=60,
        )
        out.append(time.perf_counter() - t0)
        r.raise_for_status()
        time.sleep(0.02)
    return out


def loop_delays(twin: Twin, stop: threading.Event) -> list[float]:
    """Every 10 ms, how long a no-op posted to the twin's loop waits to run (what any API write waits for)."""
    out: list[float] = []
    while not stop.is_set():
        ran = threading.Event()
        t0 = time.perf_counter()
        twin.core.loop.post(ran.set)
        ran.wait(30)
        out.append(time.perf_counter() - t0)
        time.sleep(0.01)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=8000)
    ap.add_argument("--renders", type=int, default=10)
    ap.add_argument(
        "--seconds", type=float, default=10.0, help="how long the overview is loaded while writing"
    )
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="flexq-dashboard-bench-")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    server.write_files()
    try:
        t0 = time.perf_counter()
        populate(twin, args.workloads)
        print(
            f"{args.workloads} workloads, {5 * args.workloads} events, {args.workloads // 4} requests "
            f"made in {time.perf_counter() - t0:.1f}s"
        )
        time.sleep(2.0)  # let Kueue see them all
        auth = {"Authorization": f"Bearer {server.creds.token}"}
        s = requests.Session()
        s.trust_env = False  # the twin's CA, whatever REQUESTS_CA_BUNDLE says
        s.verify = str(server.creds.ca_cert)
        s.headers.update(auth)
        page = timed_gets(s, server.url + "/dashboard/", args.renders)
        part = timed_gets(s, server.url + "/dashboard/part/overview", args.renders)
        for what, t in (("GET /dashboard/", page), ("GET /dashboard/part/overview", part)):
            print(f"{what}: median {statistics.median(t):.3f}s, max {max(t):.3f}s over {len(t)}")
        w = requests.Session()
        w.trust_env, w.verify, w.headers = False, s.verify, s.headers
        stop = threading.Event()
        alone: list[float] = []
        quiet: list[float] = []
        th = threading.Thread(target=lambda: alone.extend(writes(w, server.url, stop)))
        probe = threading.Thread(target=lambda: quiet.extend(loop_delays(twin, stop)))
        th.start()
        probe.start()
        time.sleep(args.seconds / 2)
        stop.set()
        th.join()
        probe.join()
        print(
            f"the twin's loop alone: a no-op waits median {statistics.median(quiet) * 1000:.1f} ms, "
            f"max {max(quiet) * 1000:.1f} ms"
        )
        print(
            f"API writes alone: {len(alone)} writes, median {statistics.median(alone) * 1000:.1f} ms, "
            f"max {max(alone) * 1000:.1f} ms"
        )
        for label, pause in (
            ("as fast as the live page refreshes (every 0.3 s)", 0.3),
            ("back to back", 0.0),
        ):
            stop = threading.Event()
            busy: list[float] = []
            delays: list[float] = []
            th = threading.Thread(target=lambda: busy.extend(writes(w, server.url, stop)))  # noqa: B023
            probe = threading.Thread(target=lambda: delays.extend(loop_delays(twin, stop)))  # noqa: B023
            th.start()
            probe.start()
            loads: list[float] = []
            end = time.perf_counter() + args.seconds
            while time.perf_counter() < end:
                loads += timed_gets(s, server.url + "/dashboard/part/overview", 1)
                time.sleep(pause)
            stop.set()
            th.join()
            probe.join()
            print(
                f"the twin's loop while the overview loads {label}: a no-op waits median "
                f"{statistics.median(delays) * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms ({len(delays)} probes)"
            )
            print(
                f"API writes while the overview loads {label}: {len(busy)} writes, median "
                f"{statistics.median(busy) * 1000:.1f} ms, max {max(busy) * 1000:.1f} ms "
                f"({len(loads)} loads, median {statistics.median(loads):.3f}s, max {max(loads):.3f}s)"
            )
    finally:
        server.stop()
        twin.close()


if __name__ == "__main__":
    main()
