"""A bounded load test of a served twin: many concurrent clients against a twin holding ~10,000 objects,
printing operations per second and latency percentiles (p50, p99, max) per verb and overall.

    .venv/bin/python bench/api_load.py [--clients 50] [--seconds 10] [--objects 10000] [--processes 5]
                                       [--no-tls] [--hostile] [--profile FILE] [--client requests]

The twin and its server run in a child process, as ``flexq up`` serves them (HTTPS, bearer token). The
clients run in ``--processes`` other processes (threads spread evenly), so that client-side Python does not
limit the figures as much. Each client loops over a kubectl-like mix — get 40 %, list of one namespace's 200
objects 10 %, create 20 %, merge patch 20 %, delete 10 % — on its own keep-alive connection (as kubectl and
the Python client keep theirs), for ``--seconds``. The clients use ``http.client`` (``--client requests``:
the ``requests`` library, which costs about three times the client CPU per request and on a 2-core machine
takes that CPU from the server).
``--hostile`` adds one more client that sends a YAML alias bomb and 3 MiB bodies in a loop (each must be
refused with a 4xx) to show what a hostile client costs the others.

Besides the figures it prints the CPU seconds the server process and the client processes used during the
run and the load average, since a shared machine's other work depresses the figures. ``--profile FILE``
writes a cProfile (pstats) of the server's threads — its HTTP thread and the twin's loop (once seeded),
merged — to FILE and prints its top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import json
import multiprocessing as mp
import os
import pstats
import random
import ssl
import tempfile
import threading
import time
import urllib.parse
from typing import Any

SEED_NS = 50  # namespaces of seed objects: ``--objects`` spread evenly (200 each at 10,000)


class ServerProfile:
    """cProfiles of a served twin's two working threads, merged into one pstats file: the HTTP server's
    (``flexq-http``, from its start: it is idle while the twin is seeded) and the twin's loop (from
    ``start_loop``, called once the seed objects are in, so that the seeding is not in it). Built before the
    server is started."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self.loop_profile: cProfile.Profile | None = None
        run = threading.Thread.run

        def profiled(thread: threading.Thread) -> None:
            if thread.name != "flexq-http":
                return run(thread)
            prof = cProfile.Profile()
            self.profiles.append(prof)
            prof.enable()
            try:
                return run(thread)
            finally:
                prof.disable()

        threading.Thread.run = profiled  # type: ignore[method-assign]

    def start_loop(self, loop: Any) -> None:
        self.loop_profile = cProfile.Profile()
        self.profiles.append(self.loop_profile)
        loop.call_sync(self.loop_profile.enable)  # cProfile follows the thread that enables it

    def stop_loop(self, loop: Any) -> None:
        if self.loop_profile is not None:
            loop.call_sync(self.loop_profile.disable)

    def write(self, path: str) -> None:
        for p in self.profiles:
            p.create_stats()
        stats = pstats.Stats(self.profiles[0])
        for p in self.profiles[1:]:
            stats.add(p)
        stats.dump_stats(path)


def print_profile(path: str, top: int = 25) -> None:
    print(f"profile of the server's threads written to {path}; top {top} by own time:")
    pstats.Stats(path).sort_stats("tottime").print_stats(top)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a live process has used so far (NaN where /proc is not available)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _serve(home: str, objects: int, tls: bool, out: Any, stop: Any, profile: str | None = None) -> None:
    from flexq import Twin
    from flexq.http.server import Server

    prof = ServerProfile() if profile else None
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home, tls=tls).start()
    info = server.write_files()
    per_ns = max(1, objects // SEED_NS)
    docs = []
    for n in range(SEED_NS):
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"seed-{n}"}})
        docs.extend(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "namespace": f"seed-{n}", "labels": {"bench": "seed"}},
                "data": {"k": "v" * 64},
            }
            for i in range(per_ns)
        )
    twin._call(lambda: [twin.store.create(d) for d in docs])
    server.warmed.wait(120)  # the OpenAPI documents are built in the background at start: not measured
    if prof:
        prof.start_loop(twin.core.loop)
    out.put(
        {"url": server.url, "token": server.creds.token, "ca": info["ca"] if tls else False, "per_ns": per_ns}
    )
    stop.wait()
    server.stop()
    if prof and profile:
        prof.stop_loop(twin.core.loop)
        prof.write(profile)
    twin.close()


def _bomb() -> bytes:
    doc = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, 9):
        doc += f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nx:\n  " + doc.replace("\n", "\n  ")
    ).encode()


class Reply:
    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code, self.content = status_code, content


class Conn:
    """One keep-alive HTTP/1.1 connection over TLS with the bearer token — what kubectl and the Python
    client hold — on ``http.client``, the Python client with the least work of its own per request (about a
    third of ``requests``'), so that 50 clients on the server's machine leave it the CPU the figures are about.
    The same interface as the part of ``requests.Session`` the workers use; every body is read in full."""

    def __init__(self, url: str, token: str, ca: str | bool) -> None:
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.tls = u.hostname or "127.0.0.1", u.port, u.scheme == "https"
        self.prefix = f"{u.scheme}://{u.netloc}"
        self.ctx = ssl.create_default_context(cafile=ca) if self.tls and isinstance(ca, str) else None
        self.auth = {"Authorization": f"Bearer {token}"}
        self.conn: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def request(
        self, method: str, url: str, data: Any = None, headers: dict[str, str] | None = None
    ) -> Reply:
        path = url[len(self.prefix) :] if url.startswith(self.prefix) else url
        body = data.encode() if isinstance(data, str) else data
        hdrs = {**self.auth, **(headers or {})}
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = self._connect()
            try:
                self.conn.request(method, path, body=body, headers=hdrs)
                r = self.conn.getresponse()
                return Reply(r.status, r.read())
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None  # the server closed the keep-alive connection: once more on a new one
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def get(self, url: str, **kw: Any) -> Reply:
        return self.request("GET", url, **kw)

    def post(self, url: str, **kw: Any) -> Reply:
        return self.request("POST", url, **kw)

    def patch(self, url: str, **kw: Any) -> Reply:
        return self.request("PATCH", url, **kw)

    def delete(self, url: str, **kw: Any) -> Reply:
        return self.request("DELETE", url, **kw)


def _clients(
    proc: int, threads: int, seconds: float, info: dict, hostile: bool, out: Any, client: str = "http.client"
) -> None:
    import requests

    url, per_ns = info["url"], info["per_ns"]
    results: list[tuple[str, float, int]] = []
    lock = threading.Lock()
    start = threading.Barrier(threads + (1 if hostile else 0))
    deadline = [0.0]

    def session() -> requests.Session:
        s = requests.Session()
        s.headers["Authorization"] = f"Bearer {info['token']}"
        s.verify = info["ca"]
        s.trust_env = False
        return s

    def worker(i: int) -> None:
        s: Any = session() if client == "requests" else Conn(url, info["token"], info["ca"])
        rng, mine = random.Random(proc * 1000 + i), []
        created: list[str] = []
        ns = f"seed-{(proc * threads + i) % SEED_NS}"
        base = f"{url}/api/v1/namespaces/{ns}/configmaps"
        json_ct = {"Content-Type": "application/json"}
        start.wait()
        n = 0
        while time.perf_counter() < deadline[0]:
            n += 1
            roll = rng.random()
            t0 = time.perf_counter()
            if roll < 0.4:
                verb, r = "get", s.get(f"{base}/cm-{rng.randrange(per_ns)}")
            elif roll < 0.5:
                verb, r = "list", s.get(base)
            elif roll < 0.7:
                name = f"p{proc}-t{i}-{n}"
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name},
                    "data": {"k": "v"},
                }
                verb, r = "create", s.post(base, data=json.dumps(body), headers=json_ct)
                created.append(name)
            elif roll < 0.9:
                verb, r = (
                    "patch",
                    s.patch(
                        f"{base}/cm-{rng.randrange(per_ns)}",
                        data=json.dumps({"data": {"n": str(n)}}),
                        headers={"Content-Type": "application/merge-patch+json"},
                    ),
                )
            elif created:
                verb, r = "delete", s.delete(f"{base}/{created.pop()}")
            else:
                continue
            mine.append((verb, time.perf_counter() - t0, r.status_code))
        with lock:
            results.extend(mine)

    def attacker() -> None:
        s = session()
        base = f"{url}/api/v1/namespaces/default/configmaps"
        big = json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "big"},
                "data": {"a": "x" * (3 * 1024 * 1024 - 200)},
            }
        ).encode()
        start.wait()
        mine = []
        while time.perf_counter() < deadline[0]:
            for body, ctype in ((_bomb(), "application/yaml"), (big, "application/json")):
                t0 = time.perf_counter()
                r = s.post(base, data=body, headers={"Content-Type": ctype})
                mine.append(("hostile", time.perf_counter() - t0, r.status_code))
        with lock:
            results.extend(mine)

    cpu0 = time.process_time()
    deadline[0] = time.perf_counter() + seconds + 0.5
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    if hostile:
        ts.append(threading.Thread(target=attacker))
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put((results, time.process_time() - cpu0))


def _pct(xs: list[float], p: float) -> float:
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--objects", type=int, default=10_000)
    ap.add_argument("--processes", type=int, default=5, help="client processes the clients are spread over")
    ap.add_argument("--no-tls", action="store_true", help="plain HTTP (TLS is what kubectl gets)")
    ap.add_argument(
        "--hostile", action="store_true", help="one more client sending alias bombs and 3 MiB bodies"
    )
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the server's threads to FILE")
    ap.add_argument(
        "--client",
        choices=("http.client", "requests"),
        default="http.client",
        help="the clients' HTTP library (requests: the earlier figures' harness, ~3x the client CPU)",
    )
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(
        target=_serve,
        args=(tempfile.mkdtemp(prefix="flexq-load-"), args.objects, not args.no_tls, out, stop, args.profile),
        daemon=True,
    )
    t0 = time.perf_counter()
    server.start()
    info = out.get(timeout=600)
    print(
        f"twin up with {args.objects} configmaps in {SEED_NS} namespaces in {time.perf_counter() - t0:.1f}s"
    )
    procs, per = (
        [],
        [
            args.clients // args.processes + (1 if i < args.clients % args.processes else 0)
            for i in range(args.processes)
        ],
    )
    results_q = ctx.Queue()
    client_cpu = 0.0
    load0 = os.getloadavg()
    server_cpu0, wall0 = process_cpu(server.pid), time.perf_counter()
    try:
        for i, n in enumerate(per):
            if n:
                p = ctx.Process(
                    target=_clients,
                    args=(i, n, args.seconds, info, args.hostile and i == 0, results_q, args.client),
                )
                p.start()
                procs.append(p)
        results: list[tuple[str, float, int]] = []
        for _ in procs:
            got, cpu = results_q.get(timeout=args.seconds + 600)
            results.extend(got)
            client_cpu += cpu
        server_cpu, wall = process_cpu(server.pid) - server_cpu0, time.perf_counter() - wall0
        load1 = os.getloadavg()
        for p in procs:
            p.join(60)
    finally:
        stop.set()
        server.join(30)
    normal = [r for r in results if r[0] != "hostile"]
    bad = [r for r in normal if r[2] >= 400]
    print(
        f"flexq API load: {args.clients} clients ({args.client}) over {args.processes} processes, "
        f"{args.seconds:.0f}s, "
        f"{'HTTP' if args.no_tls else 'HTTPS'} + token, {args.objects} objects stored"
        + (", with one hostile client" if args.hostile else "")
    )
    print(f"{'verb':<10}{'ops':>8}{'ops/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
    for verb in ("get", "list", "create", "patch", "delete", "hostile", "all"):
        rows = normal if verb == "all" else [r for r in results if r[0] == verb]
        if not rows:
            continue
        lat = sorted(r[1] for r in rows)
        errors = sum(1 for r in rows if (r[2] >= 400) != (verb == "hostile") or r[2] >= 500)
        print(
            f"{verb:<10}{len(rows):>8}{len(rows) / args.seconds:>9.0f}{_pct(lat, 0.5) * 1e3:>9.1f}"
            f"{_pct(lat, 0.99) * 1e3:>9.1f}{lat[-1] * 1e3:>9.1f}{errors:>8}"
        )
    print(
        f"CPU: server {server_cpu:.1f}s ({server_cpu / max(len(normal), 1) * 1e3:.2f} ms per operation), "
        f"clients {client_cpu:.1f}s, over {wall:.1f}s wall; load average {load0[0]:.1f} before, "
        f"{load1[0]:.1f} after, on {os.cpu_count()} cores"
    )
    if bad:
        print(f"{len(bad)} failed requests, e.g. {bad[:3]}")
    if args.profile:
        print_profile(args.profile)


if __name__ == "__main__":
    main()
