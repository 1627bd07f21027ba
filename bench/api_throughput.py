"""API throughput of a served twin: kubectl-style get, list, create and patch per second over HTTPS with a
bearer token, next to the same server stack answering a no-op route (``/healthz``), as a ratio.

    .venv/bin/python bench/api_throughput.py [--seconds 3] [--threads 1] [--objects 200] [--profile FILE]

The twin and its server run in a child process (as ``flexq up`` does), so the client does not share their
GIL. Each figure is requests per second over keep-alive connections (``requests.Session``, one per thread);
the ratio is (verb rate) / (no-op rate): how much of the stack's capacity the store and its loop keep.
Next to each rate: the server process's CPU milliseconds per request (the client's own work does not
count there), and the load average, since a shared machine's other work depresses the rates.
``--profile FILE`` writes a cProfile of the server's threads (HTTP and loop, merged) to FILE.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import requests
from api_load import ServerProfile, print_profile, process_cpu

from flexq import Twin
from flexq.http.server import Server

CM = "/api/v1/namespaces/default/configmaps"


def measure(
    seconds: float,
    threads: int,
    make: Callable[[], Callable[[requests.Session, int], None]],
    url: str,
    token: str,
    ca: str,
) -> float:
    """Requests per second of ``make()``'s call, from ``threads`` threads for ``seconds``."""
    counts = [0] * threads
    errors: list[BaseException] = []
    stop = threading.Event()

    def worker(i: int) -> None:
        s = requests.Session()
        s.headers["Authorization"] = f"Bearer {token}"
        s.verify = ca
        s.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise replace the twin's CA
        call = make()
        n = 0
        try:
            while not stop.is_set():
                call(s, i * 10_000_000 + n)
                n += 1
        except BaseException as exc:
            errors.append(exc)
            stop.set()
        counts[i] = n

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return sum(counts) / (time.perf_counter() - t0)


def _serve(home: str, objects: int, out: Any, stop: Any, profile: str | None = None) -> None:
    """Child process: a live twin with ``objects`` seed configmaps, served until ``stop`` is set."""
    prof = ServerProfile() if profile else None
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    info = server.write_files()
    for i in range(objects):
        twin.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"seed-{i}", "labels": {"bench": "seed"}},
                "data": {"k": "v" * 64},
            }
        )
    server.warmed.wait(120)  # the OpenAPI documents are built in the background at start: not measured
    if prof:
        prof.start_loop(twin.core.loop)
    out.put({"url": server.url, "token": server.creds.token, "ca": info["ca"]})
    stop.wait()
    server.stop()
    if prof and profile:
        prof.stop_loop(twin.core.loop)
        prof.write(profile)
    twin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--objects", type=int, default=200, help="configmaps in the namespace the list returns")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the server's threads to FILE")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="flexq-bench-")
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_serve, args=(home, args.objects, out, stop, args.profile), daemon=True)
    child.start()
    info = out.get(timeout=120)
    url, token, ca = info["url"], info["token"], info["ca"]

    def get(s: requests.Session, n: int) -> None:
        r = s.get(f"{url}{CM}/seed-{n % args.objects}")
        assert r.status_code == 200, r.text

    def lst(s: requests.Session, n: int) -> None:
        r = s.get(f"{url}{CM}?labelSelector=bench%3Dseed&limit=500")
        assert r.status_code == 200 and len(r.json()["items"]) == args.objects

    def create(s: requests.Session, n: int) -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"new-{n}"}, "data": {"k": "v"}}
        r = s.post(
            f"{url}{CM}?fieldValidation=Strict",
            data=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code == 201, r.text

    def patch(s: requests.Session, n: int) -> None:
        r = s.patch(
            f"{url}{CM}/seed-{n % args.objects}",
            data=json.dumps({"data": {"n": str(n)}}),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text

    def noop(s: requests.Session, n: int) -> None:
        r = s.get(f"{url}/healthz")
        assert r.status_code == 200

    def timed(fn: Callable[[requests.Session, int], None]) -> tuple[float, float]:
        cpu0 = process_cpu(child.pid)
        rate = measure(args.seconds, args.threads, lambda: fn, url, token, ca)
        return rate, (process_cpu(child.pid) - cpu0) / max(rate * args.seconds, 1)

    load0 = os.getloadavg()
    try:
        rows = [("no-op (/healthz)", *timed(noop))]
        for name, fn in (
            ("get", get),
            (f"list ({args.objects} objects)", lst),
            ("create", create),
            ("patch (merge)", patch),
        ):
            rows.append((name, *timed(fn)))
        load1 = os.getloadavg()
        base = rows[0][1]
        print(
            f"flexq API throughput, {args.threads} client thread(s), {args.seconds:.0f}s each, HTTPS + token"
        )
        print(f"{'request':<24}{'req/s':>10}{'vs no-op':>10}{'server CPU ms/req':>19}")
        for name, rate, cpu in rows:
            print(f"{name:<24}{rate:>10.0f}{rate / base:>10.2f}{cpu * 1e3:>19.2f}")
        print(f"load average {load0[0]:.1f} before, {load1[0]:.1f} after, on {os.cpu_count()} cores")
    finally:
        stop.set()
        child.join(30)
    if args.profile:
        print_profile(args.profile)


if __name__ == "__main__":
    main()
