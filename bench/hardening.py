"""Issues 36 and 49's attacks on a served twin, each while a probe client writes every 100 ms: the probe's worst
write latency, its errors and lost writes, and the twin's RSS above idle, at its peak and at the end (goals: no
5xx, worst <= 1 s, no write lost, <= 1 GiB above idle).

- ``copy-bomb``: a JSON patch copying a ConfigMap's annotations (1 KB) into themselves N = 30 times, sent 20
  times, half a second apart (a 3 KB patch that grew a twin to gigabytes before issue 36);
- ``wide-job``: a batch Job with ``parallelism: 100000`` (no node can run its pods), for 30 s, then deleted;
- ``idle-connections``: 2,000 TCP connections that send nothing, held 40 s (past the 32 s header timeout);
- ``move-bomb``: a 380 KB JSON patch of a ConfigMap: a 100,000-element list added, moved 2,000 times, removed;
- ``owner-refs``: a strategic-merge patch giving a ConfigMap 25,000 owner references (merge key ``uid``);
- ``finalizers``: a strategic-merge patch giving a ConfigMap 40,000 finalizers (a primitive list, merged);
- ``deployment-flood``: a Deployment of ``replicas: 2147483647`` for 30 s, then deleted: pods and Events made;
- ``deployment-flap``: a Deployment's ``spec.replicas`` patched 0 <-> 300 every 100 ms for ``--flap-seconds``
  (40 by default; the issue's goal is for 600): Events written, RSS above idle at the end;
- ``protobuf-repeat``: a 3.1 MB protobuf ConfigMap repeating its ObjectMeta 780,000 times.

Each runs on its own twin (``python -m flexq.cli.daemon``, simulated executor), in its own temporary home.

    .venv/bin/python bench/hardening.py [--only NAME] [--flap-seconds 600]
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


def _configmap(s: requests.Session, twin: Twin, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    assert s.post(twin.url + CM, data=json.dumps(body), timeout=30).status_code == 201


def _timed_patch(s: requests.Session, url: str, body: str, ctype: str) -> tuple[int, float, str]:
    t0 = time.monotonic()
    r = s.patch(url, data=body, headers={"Content-Type": ctype}, timeout=300)
    return r.status_code, time.monotonic() - t0, "" if r.status_code < 300 else r.text[:160]


def move_bomb(twin: Twin) -> str:
    s = twin.session()
    _configmap(s, twin, "moves")
    ops: list[dict] = [{"op": "add", "path": "/x", "value": [0] * 100_000}]
    for _ in range(1000):
        ops += [{"op": "move", "from": "/x", "path": "/y"}, {"op": "move", "from": "/y", "path": "/x"}]
    ops.append({"op": "remove", "path": "/x"})
    patch = json.dumps(ops, separators=(",", ":"))
    code, took, why = _timed_patch(s, twin.url + CM + "/moves", patch, "application/json-patch+json")
    return f"{len(patch) // 1000} KB JSON patch of 2,000 moves over 100,000 elements: {code} in {took:.2f} s {why}"


def owner_refs(twin: Twin) -> str:
    s = twin.session()
    _configmap(s, twin, "owners")
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{i}", "uid": f"00000000-0000-0000-0000-{i:012d}"}
        for i in range(25_000)
    ]
    patch = json.dumps({"metadata": {"ownerReferences": refs}}, separators=(",", ":"))
    ctype = "application/strategic-merge-patch+json"
    code, took, why = _timed_patch(s, twin.url + CM + "/owners", patch, ctype)
    return (
        f"strategic merge of 25,000 ownerReferences ({len(patch) // 1000} KB): {code} in {took:.2f} s {why}"
    )


def finalizers(twin: Twin) -> str:
    s = twin.session()
    _configmap(s, twin, "finals")
    patch = json.dumps({"metadata": {"finalizers": [f"example.com/f{i}" for i in range(40_000)]}})
    ctype = "application/strategic-merge-patch+json"
    code, took, why = _timed_patch(s, twin.url + CM + "/finals", patch, ctype)
    return f"strategic merge of 40,000 finalizers ({len(patch) // 1000} KB): {code} in {took:.2f} s {why}"


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "flood"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "flood"}},
            "template": {
                "metadata": {"labels": {"app": "flood"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def _count(s: requests.Session, twin: Twin, path: str) -> int:
    # a list of names only would be lighter, but the count is what matters: a limit-less list is what users run
    return len(s.get(twin.url + path, timeout=300).json()["items"])


def deployment_flood(twin: Twin) -> str:
    s = twin.session()
    assert (
        s.post(twin.url + DEPLOYMENTS, data=json.dumps(_deployment(2147483647)), timeout=30).status_code
        == 201
    )
    time.sleep(30)
    pods = _count(s, twin, "/api/v1/namespaces/default/pods")
    events = _count(s, twin, "/api/v1/namespaces/default/events")
    r = s.delete(twin.url + DEPLOYMENTS + "/flood", timeout=120)
    return f"after 30 s: {pods} pods, {events} Events; delete answered {r.status_code}"


FLAP_SECONDS = [40.0]


def deployment_flap(twin: Twin) -> str:
    s = twin.session()
    assert s.post(twin.url + DEPLOYMENTS, data=json.dumps(_deployment(300)), timeout=30).status_code == 201
    end, i, worst, codes = time.monotonic() + FLAP_SECONDS[0], 0, 0.0, set()
    while time.monotonic() < end:
        i += 1
        body = json.dumps({"spec": {"replicas": 0 if i % 2 else 300}})
        code, took, _ = _timed_patch(
            s, twin.url + DEPLOYMENTS + "/flood", body, "application/merge-patch+json"
        )
        codes.add(code)
        worst = max(worst, took)
        time.sleep(0.1)
    events = _count(s, twin, "/api/v1/namespaces/default/events")
    return (
        f"{i} patches 0<->300 over {FLAP_SECONDS[0]:.0f} s (answers {sorted(codes)}, slowest {worst:.2f} s): "
        f"{events} Events stored, RSS now {twin.rss() / 2**20:.0f} MiB"
    )


def _pb_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _pb(num: int, payload: bytes) -> bytes:
    return _pb_varint(num << 3 | 2) + _pb_varint(len(payload)) + payload


def protobuf_repeat(twin: Twin) -> str:
    s = twin.session()
    meta = _pb(1, _pb(1, b"")) * 780_000 + _pb(1, _pb(1, b"repeat"))
    raw = meta + _pb(2, _pb(1, b"k") + _pb(2, b"v"))
    body = b"k8s\x00" + _pb(1, _pb(1, b"v1") + _pb(2, b"ConfigMap")) + _pb(2, raw)
    t0 = time.monotonic()
    r = s.post(
        twin.url + CM, data=body, headers={"Content-Type": "application/vnd.kubernetes.protobuf"}, timeout=300
    )
    return f"{len(body) / 1e6:.1f} MB body, ObjectMeta x780,000: {r.status_code} in {time.monotonic() - t0:.2f} s"


SCENARIOS: dict[str, Callable[[Twin], str]] = {
    "copy-bomb": copy_bomb,
    "wide-job": wide_job,
    "idle-connections": idle_connections,
    "move-bomb": move_bomb,
    "owner-refs": owner_refs,
    "finalizers": finalizers,
    "deployment-flood": deployment_flood,
    "deployment-flap": deployment_flap,
    "protobuf-repeat": protobuf_repeat,
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
            now = twin.rss()
            print(
                f"  twin RSS: idle {idle / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB (+{(peak - idle) / 2**20:.0f} MiB), "
                f"at the end {now / 2**20:.0f} MiB (+{(now - idle) / 2**20:.0f} MiB)"
            )
        finally:
            twin.proc.terminate()
            twin.proc.wait(30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=sorted(SCENARIOS), help="run one scenario (default: every one)")
    p.add_argument("--flap-seconds", type=float, default=40.0, help="how long deployment-flap flaps")
    args = p.parse_args()
    FLAP_SECONDS[0] = args.flap_seconds
    for name in [args.only] if args.only else list(SCENARIOS):
        run(name)


if __name__ == "__main__":
    main()
