"""The kill -9 soak: 160 Kueue-managed Jobs submitted over HTTPS to ``flexq up --executor simulated`` while
another thread kills the daemon with SIGKILL at random moments (mid-request, mid-reconcile) at least 16 times and
restarts it with ``flexq up`` on the same FLEXQ_HOME. Every acknowledged Job must finish, each admitted and run
once (one Workload, one pod), and the workloads holding quota never need more than the ClusterQueue has (16 cpu
for 160 one-cpu jobs: ten waves of admission, each restart lands among them). Bounded: about 45 s on two cores,
a minute and a half busy (each restart pays the daemon's start-up)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

JOBS = 160
KILLS = 16
QUOTA_CPU = 16
SEED = 12


class Api:
    """A small HTTPS client for the served twin; it re-reads server.json after every restart."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.info: dict[str, Any] = {}
        self.reload()

    def reload(self) -> None:
        self.info = json.loads((self.home / "server.json").read_text())
        self.token = Path(self.info["token_file"]).read_text().strip()
        self.ctx = ssl.create_default_context(cafile=self.info["ca"])

    def call(
        self, method: str, path: str, body: dict | None = None, content_type: str = "application/json"
    ) -> tuple[int, dict]:
        conn = http.client.HTTPSConnection(self.info["host"], self.info["port"], context=self.ctx, timeout=20)
        try:
            conn.request(
                method,
                path,
                body=json.dumps(body) if body is not None else None,
                headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type},
            )
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()


def job(i: int) -> dict:
    ann = {"twin.flexq.dev/run-seconds": "1"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"soak-{i}", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "template": {
                "metadata": {"annotations": ann},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            }
        },
    }


SETUP = [
    (
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}},
    ),
    (
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": QUOTA_CPU}]}],
                    }
                ],
            },
        },
    ),
    (
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq"},
            "spec": {"clusterQueue": "cq"},
        },
    ),
    ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
]
NODE_STATUS = {
    "status": {
        "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
        "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    }
}


class Soak:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**os.environ, "FLEXQ_HOME": str(home)}
        self.rnd = random.Random(SEED)
        self.acked: set[int] = set()
        self.kills = 0
        self.pids: list[int] = []
        self.done = threading.Event()
        self.up_now = threading.Event()
        self.samples = 0
        self.peak = 0
        self.errors: list[str] = []
        self.api: Api | None = None

    def up(self) -> None:
        res = subprocess.run(
            [sys.executable, "-m", "flexq.cli", "up", "--executor", "simulated", "--timeout", "150"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=200,
        )
        assert res.returncode == 0 and "flexq is up at" in res.stdout, res.stdout + res.stderr
        self.api = Api(self.home)
        self.pids.append(self.api.info["pid"])
        self.up_now.set()

    def call(
        self, method: str, path: str, body: dict | None = None, content_type: str = "application/json"
    ) -> tuple[int, dict]:
        """One request, retried (the same request again) while the twin is down or restarting."""
        deadline = time.monotonic() + 300
        while True:
            self.up_now.wait(timeout=300)
            assert self.api is not None
            try:
                return self.api.call(method, path, body, content_type)
            except (OSError, http.client.HTTPException, ValueError):
                assert time.monotonic() < deadline, "the twin did not come back"
                time.sleep(0.1)

    def submit(self) -> None:
        for path, body in SETUP:
            code, out = self.call("POST", path, body)
            assert code in (201, 409), (code, out)
        code, out = self.call("PATCH", "/api/v1/nodes/n1/status", NODE_STATUS, "application/merge-patch+json")
        assert code == 200, (code, out)
        for i in range(JOBS):
            code, out = self.call("POST", "/apis/batch/v1/namespaces/default/jobs", job(i))
            # 409: created before a kill took the reply away (an acknowledged write survives, so it is there)
            assert code in (201, 409), (code, out)
            self.acked.add(i)
            time.sleep(self.rnd.uniform(0.0, 0.08))
        self.done.set()

    def killer(self) -> None:
        try:
            while self.kills < KILLS:  # while jobs are submitted, then while the last ones run
                start = len(self.acked)
                want = self.rnd.randint(2, 14)
                while len(self.acked) < start + want and not self.done.is_set():
                    time.sleep(0.02)
                time.sleep(self.rnd.uniform(0.0, 0.4))  # somewhere in the middle of requests and reconciles
                assert self.api is not None
                self.up_now.clear()
                os.kill(self.api.info["pid"], signal.SIGKILL)
                self.kills += 1
                self.up()
        except BaseException as exc:  # surfaced by the test
            self.errors.append(repr(exc))
            self.up_now.set()

    def sampler(self) -> None:
        """The workloads holding quota, as often as the API answers: never more cpu than the quota."""
        while not self.done.is_set() or self.samples < 5:
            try:
                assert self.api is not None
                code, out = self.api.call("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads")
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.1)
                continue
            if code == 200:
                self.samples += 1
                used = sum(_reserved_cpu(w) for w in out["items"])
                self.peak = max(self.peak, used)
            time.sleep(0.2)


def _conds(obj: dict) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def _reserved_cpu(wl: dict) -> int:
    c = _conds(wl)
    if c.get("QuotaReserved") != "True" or c.get("Finished") == "True":
        return 0
    adm = (wl.get("status") or {}).get("admission") or {}
    return sum(int(ps.get("count", 1)) for ps in adm.get("podSetAssignments") or [])  # one cpu per pod


def test_kill_9_soak_leaves_no_job_behind(tmp_path: Path) -> None:
    soak = Soak(tmp_path / "home")
    soak.up()
    started = time.monotonic()
    threads = [
        threading.Thread(target=soak.killer, name="killer"),
        threading.Thread(target=soak.sampler, name="sampler", daemon=True),
    ]
    try:
        for t in threads:
            t.start()
        soak.submit()
        threads[0].join(timeout=400)
        assert not soak.errors, soak.errors
        assert soak.kills >= KILLS and len(soak.acked) == JOBS
        deadline = time.monotonic() + 240
        while True:
            code, out = soak.call("GET", "/apis/batch/v1/namespaces/default/jobs")
            jobs = {j["metadata"]["name"]: j for j in out["items"]}
            finished = [n for n, j in jobs.items() if _conds(j).get("Complete") == "True"]
            if len(finished) == JOBS or time.monotonic() > deadline:
                break
            time.sleep(1)
        stuck = sorted(set(jobs) - set(finished))
        assert not stuck, f"{len(stuck)} acknowledged jobs did not finish: " + json.dumps(
            {n: [jobs[n]["spec"].get("suspend"), jobs[n].get("status")] for n in stuck[:5]}
        )
        assert sorted(jobs) == sorted(f"soak-{i}" for i in soak.acked)
        _, wls = soak.call("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads")
        _, pods = soak.call("GET", "/api/v1/namespaces/default/pods")
        for name, j in jobs.items():
            uid = j["metadata"]["uid"]
            owned = [
                w for w in wls["items"] if any(r["uid"] == uid for r in w["metadata"]["ownerReferences"])
            ]
            assert len(owned) == 1 and _conds(owned[0]).get("Finished") == "True", (name, len(owned))
            ran = [
                p
                for p in pods["items"]
                if any(r["uid"] == uid for r in p["metadata"].get("ownerReferences") or [])
            ]
            assert len(ran) == 1, f"{name} was admitted and ran {len(ran)} times"
        assert soak.samples >= 20 and soak.peak <= QUOTA_CPU, (soak.samples, soak.peak)
        print(
            f"\nsoak: {soak.kills} kills, {len(soak.acked)} jobs acknowledged and finished, "
            f"peak quota in use {soak.peak}/{QUOTA_CPU} cpu over {soak.samples} samples, "
            f"{time.monotonic() - started:.0f}s"
        )
    finally:
        soak.done.set()
        with contextlib.suppress(Exception):
            subprocess.run(
                [sys.executable, "-m", "flexq.cli", "down"], env=soak.env, capture_output=True, timeout=120
            )
        for pid in soak.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    # nothing a killed daemon started outlives it (its ETA worker, a pool's fork server: flexq.loop.procpool)
    deadline = time.monotonic() + 15
    while (left := _processes_of(soak.home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} processes of the killed daemons live on: {left}"


def _processes_of(home: Path) -> list[int]:
    """The live processes whose environment holds this FLEXQ_HOME (every process a daemon started inherits it)."""
    needle = f"FLEXQ_HOME={home}".encode() + b"\0"
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if needle in env + b"\0" and state != "Z":
            out.append(int(entry))
    return out
