"""Issue 36's attacks on a served twin, each while a probe client writes every 100 ms: the probe's worst write
latency, its errors and lost writes, and the twin's peak RSS above idle (goals: no 5xx, worst <= 1 s, no write
lost, <= 1 GiB above idle).

- ``copy-bomb``: a JSON patch copying a ConfigMap's annotations (1 KB) into themselves N = 30 times, sent 20
  times, half a second apart (a 3 KB patch that grew a twin to gigabytes before issue 36);
- ``wide-job``: a batch Job with ``parallelism: 100000`` (no node can run its pods), for 30 s, then deleted;
- ``idle-connections``: 2,000 TCP connections that send nothing, held 40 s (past the 32 s header timeout).

Each runs on its own twin (``python -m flexq.cli.daemon``, simulated executor), in its own temporary home.

    .venv/bin/python bench/hardening.py [--only copy-bomb|wide-job|idle-connections]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests

CM = "/api/v1/namespaces/default/configmaps"


@dataclass
class Twin:
    proc: subprocess.Popen
    url: str
    token: str
    ca: str

    def session(self) -> requests.Session:
        s = requests.Session()
        s.headers.update({"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        s.verify = self.ca
        s.trust_env = False  # a REQUESTS_CA_BUNDLE in the environment would replace the twin's CA
        return s

    def rss(self, key: str = "VmRSS") -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        return 0


def start_twin(home: Path) -> Twin:
    proc = subprocess.Popen(
        [sys.executable, "-m", "flexq.cli.daemon", "--home", str(home), "--executor", "simulated"],
        stdout=subprocess.DEVNULL,
        stderr=open(home.parent / "twin.log", "wb"),  # noqa: SIM115 - kept for the process's life
    )
    deadline = time.monotonic() + 120
    while not (home / "server.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the twin did not start: {(home.parent / 'twin.log').read_text()[-2000:]}")
        time.sleep(0.2)
    info = json.loads((home / "server.json").read_text())
    twin = Twin(proc, info["url"], Path(info["token_file"]).read_text().strip(), info["ca"])
    s = twin.session()
    while True:  # ready: the API answers
        try:
            if s.get(twin.url + "/readyz", timeout=5).status_code == 200:
                return twin
        except requests.RequestException:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


@dataclass
class Probe:
    """Writes a ConfigMap every 100 ms until stopped."""

    twin: Twin
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    written: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        s = self.twin.session()
        i = 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            i += 1
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"probe-{i}", "labels": {"probe": "1"}},
            }
            t0 = time.monotonic()
            try:
                r = s.post(self.twin.url + CM, data=json.dumps(body), timeout=60)
                if r.status_code == 201:
                    self.written += 1
                else:
                    self.errors.append(f"{r.status_code} {r.text[:120]}")
            except requests.RequestException as exc:
                self.errors.append(type(exc).__name__)
            self.latencies.append(time.monotonic() - t0)
            next_at += 0.1
            time.sleep(max(0.0, next_at - time.monotonic()))

    def stored(self) -> int:
        r = self.twin.session().get(self.twin.url + CM + "?labelSelector=probe%3D1", timeout=60)
        return len(r.json()["items"])


def copy_bomb(twin: Twin) -> str:
    s = twin.session()
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "bomb", "annotations": {"a": "x" * 1000}},
    }
    assert s.post(twin.url + CM, data=json.dumps(body), timeout=30).status_code == 201
    ops = [
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/c{i}"}
        for i in range(30)
    ]
    patch = json.dumps(ops)
    codes, worst = [], 0.0
    for _ in range(20):
        t0 = time.monotonic()
        r = s.patch(
            twin.url + CM + "/bomb",
            data=patch,
            headers={"Content-Type": "application/json-patch+json"},
            timeout=120,
        )
        worst = max(worst, time.monotonic() - t0)
        codes.append(r.status_code)
        time.sleep(0.5)
    return f"20 patches of {len(patch)} bytes: answers {sorted(set(codes))}, slowest {worst:.3f} s"


def wide_job(twin: Twin) -> str:
    s = twin.session()
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "wide"},
        "spec": {
            "parallelism": 100_000,
            "completions": 100_000,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            },
        },
    }
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    assert s.post(twin.url + jobs, data=json.dumps(job), timeout=30).status_code == 201
    time.sleep(30)
    pods = len(s.get(twin.url + "/api/v1/namespaces/default/pods", timeout=120).json()["items"])
    t0 = time.monotonic()
    r = s.delete(twin.url + jobs + "/wide", data=json.dumps({"propagationPolicy": "Background"}), timeout=120)
    took = time.monotonic() - t0
    time.sleep(10)
    left = len(s.get(twin.url + "/api/v1/namespaces/default/pods", timeout=120).json()["items"])
    return f"{pods} pods after 30 s; delete answered {r.status_code} in {took:.2f} s; {left} pods 10 s later"


def idle_connections(twin: Twin) -> str:
    host, port = twin.url.split("//")[1].rsplit(":", 1)
    socks = [socket.create_connection((host, int(port)), timeout=10) for _ in range(2000)]
    time.sleep(40)
    closed = 0
    for sock in socks:
        sock.settimeout(0.01)
        try:
            closed += sock.recv(1) == b""
        except TimeoutError:  # still open
            pass
        except OSError:  # reset by the twin
            closed += 1
        sock.close()
    return f"2000 idle connections held 40 s: {closed} closed by the twin"


SCENARIOS: dict[str, Callable[[Twin], str]] = {
    "copy-bomb": copy_bomb,
    "wide-job": wide_job,
    "idle-connections": idle_connections,
}


def run(name: str) -> None:
    with tempfile.TemporaryDirectory(prefix="flexq-harden-") as tmp:
        twin = start_twin(Path(tmp) / "home")
        try:
            time.sleep(3)
            idle = twin.rss()
            probe = Probe(twin)
            thread = threading.Thread(target=probe.run, daemon=True)
            thread.start()
            time.sleep(2)
            what = SCENARIOS[name](twin)
            time.sleep(2)
            probe.stop.set()
            thread.join(70)
            peak = twin.rss("VmHWM")
            stored = probe.stored()
            fivexx = sum(1 for e in probe.errors if e[:1] == "5")
            lat = sorted(probe.latencies)
            print(f"{name}: {what}")
            print(
                f"  probe: {len(lat)} writes, worst {lat[-1]:.3f} s, p99 {lat[int(len(lat) * 0.99) - 1]:.3f} s, "
                f"errors {len(probe.errors)} ({fivexx} 5xx){' ' + probe.errors[0] if probe.errors else ''}, "
                f"lost {probe.written - stored}"
            )
            print(
                f"  twin RSS: idle {idle / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB (+{(peak - idle) / 2**20:.0f} MiB)"
            )
        finally:
            twin.proc.terminate()
            twin.proc.wait(30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=sorted(SCENARIOS), help="run one scenario (default: all three)")
    args = p.parse_args()
    for name in [args.only] if args.only else list(SCENARIOS):
        run(name)


if __name__ == "__main__":
    main()
