"""A live twin (real clock, real Ray) set up as the tutorial does it, plus a memory sampler.

Steps as in the tutorial: GKE cluster and both TPU node pools through the GKE API (gcloud's bodies), the
Kueue objects of ``dws-tpu-queue.yaml``, the ``jax-train-script`` ConfigMap holding ``train.py`` verbatim,
then RayJobs from ``rayjob-tpu-v6e-dws.yaml`` with ``JOB_ID`` substituted.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import yaml

from flexq import Twin
from flexq.cli import tutorial
from flexq.kuberay import localproc
from flexq.kuberay.local_ray_executor import LocalRayExecutor

PROJECT = "flexq-ray-tests"
TRAIN_PY = tutorial.train_script()


def wait_op(twin: Twin, op: dict, timeout: float = 300) -> None:
    path = f"/v1/projects/{PROJECT}/locations/{tutorial.TUTORIAL_ENV['ZONE']}/operations/{op['name']}"
    deadline = time.monotonic() + timeout
    while op.get("status") != "DONE":
        assert time.monotonic() < deadline, f"operation {op['name']} did not finish"
        time.sleep(0.2)
        op = twin.gke("GET", path)
    assert not op.get("error"), op


def tutorial_live_twin(ray_dir: Path) -> Twin:
    """A live twin running real Ray, with the tutorial's cluster, pools, queues and ConfigMap."""
    twin = Twin(clock="real", executor="ray", ray_dir=str(ray_dir))
    path, body = tutorial.create_cluster_request(PROJECT)
    wait_op(twin, twin.gke("POST", path, body))
    for dws in (False, True):
        path, body = tutorial.create_node_pool_request(PROJECT, dws=dws)
        wait_op(twin, twin.gke("POST", path, body))
    twin.cluster(tutorial.TUTORIAL_ENV["CLUSTER_NAME"])
    twin.apply(tutorial.queue_yaml(api="v1beta2"))  # the twin runs Kueue 0.20.7: v1beta2 only
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script", "namespace": "default"},
            "data": {"train.py": TRAIN_PY},
        }
    )
    return twin


def rayjob(job_id: int, **spec) -> dict:
    obj = yaml.safe_load(tutorial.rayjob_yaml(job_id))
    obj["spec"].update(spec)
    return obj


def ray_executor(twin: Twin) -> LocalRayExecutor:
    return next(e for e in twin.core.current().executors if isinstance(e, LocalRayExecutor))


def status(twin: Twin, name: str) -> dict:
    return (twin.try_get("RayJob", name, "default") or {}).get("status") or {}


def wait_until(cond, timeout: float, what: str, detail=None, step: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}" + (f"\n{detail()}" if detail else "")
    )


def describe(twin: Twin) -> str:
    """RayJobs, workloads and pods, for failure messages."""
    out = []
    for rj in twin.list("RayJob", "default"):
        out.append(f"RayJob {rj['metadata']['name']} suspend={rj['spec'].get('suspend')} {rj.get('status')}")
    for wl in twin.list("Workload", "default"):
        out.append(
            f"Workload {wl['metadata']['name']}: "
            f"{[(c['type'], c['status'], c.get('reason')) for c in (wl.get('status') or {}).get('conditions', [])]}"
        )
    for p in twin.list("Pod", "default"):
        st = p.get("status") or {}
        out.append(
            f"Pod {p['metadata']['name']} node={p['spec'].get('nodeName')} phase={st.get('phase')} "
            f"{[(c['type'], c['status']) for c in st.get('conditions', [])]} "
            f"{[c.get('restartCount') for c in st.get('containerStatuses') or []]}"
        )
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions") or [])
        if not ready:
            try:
                out.append(twin.logs(p["metadata"]["name"], "default")[-2000:])
            except Exception as exc:
                out.append(f"(no log: {exc})")
    return "\n".join(out)


class PeakMemory:
    """Samples the summed PSS of every process this executor started (Ray nodes, drivers, CLIs)."""

    def __init__(self, ex: LocalRayExecutor, period: float = 1.0) -> None:
        self.ex, self.period = ex, period
        self.peak_bytes = 0
        self.peak_procs = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            pids = localproc.owned_pids(self.ex._token + ":") + [os.getpid()]
            total = 0
            for pid in pids:
                try:
                    with open(f"/proc/{pid}/smaps_rollup") as f:
                        for line in f:
                            if line.startswith("Pss:"):
                                total += int(line.split()[1]) * 1024
                                break
                except OSError:
                    continue
            if total > self.peak_bytes:
                self.peak_bytes, self.peak_procs = total, len(pids)
