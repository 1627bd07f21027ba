"""A tiny stand-in for the kubelet, to drive the local Ray executor directly (no twin).

Builds the pods KubeRay would create for the tutorial's RayJob (through ``flexq.kuberay.pods``), launches them
with the environment a GKE v6e 4x4 slice gives, and collects their logs.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import yaml

from flexq.kuberay import localproc, names, pods
from flexq.kuberay.local_ray_executor import LocalRayExecutor
from flexq.runtime.executor import PodLaunch

DATA = Path(__file__).resolve().parent.parent / "kuberay" / "data"
TRAIN_PY = (DATA / "train.py").read_text()


def tutorial_rayjob(job_id: int = 1, namespace: str = "default") -> dict:
    """The tutorial's RayJob manifest with ``${JOB_ID}`` substituted."""
    text = (DATA / "rayjob-tpu-v6e-dws.yaml").read_text().replace("${JOB_ID}", str(job_id))
    obj = yaml.safe_load(text)
    obj["metadata"]["namespace"] = namespace
    obj["metadata"]["uid"] = f"uid-rayjob-{job_id}"
    return obj


class Logs:
    """A thread-safe LogSink keeping each container's text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.text: dict[tuple[str, str, str], str] = {}

    def write(self, namespace: str, pod: str, container: str, text: str) -> None:
        with self._lock:
            key = (namespace, pod, container)
            self.text[key] = self.text.get(key, "") + text

    def of(self, pod: str) -> str:
        with self._lock:
            return "".join(v for (_, p, _), v in self.text.items() if p == pod)


class Slice:
    """Head + workers (+ submitter) of one RayCluster built from a RayJob, launched on an executor."""

    def __init__(
        self,
        ex: LocalRayExecutor,
        rayjob: dict,
        cluster_name: str,
        *,
        entrypoint: str | None = None,
        files: dict[str, str] | None = None,
    ) -> None:
        self.ex = ex
        self.logs = Logs()
        self.rayjob = rayjob
        if entrypoint is not None:
            rayjob["spec"]["entrypoint"] = entrypoint
        ns = rayjob["metadata"]["namespace"]
        self.cluster = {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": cluster_name, "namespace": ns, "uid": "uid-" + cluster_name},
            "spec": rayjob["spec"]["rayClusterSpec"],
        }
        self.files = {"/app": files if files is not None else {"train.py": TRAIN_PY}}
        self.head = pods.head_pod(self.cluster, name=f"{cluster_name}-head-abcde")
        group = self.cluster["spec"]["workerGroupSpecs"][0]
        self.workers = [
            pods.worker_pod(
                self.cluster,
                group,
                name=f"{cluster_name}-tpu-group-worker-{i}",
                replica_name=f"{cluster_name}-tpu-group-0",
                replica_index=0,
                host_index=i,
            )
            for i in range(group.get("numOfHosts", 1))
        ]
        self.job_id = f"{rayjob['metadata']['name']}-x7k2p"
        # the status KubeRay's RayJob controller records before it creates the submitter
        rayjob["status"] = {"jobId": self.job_id, "dashboardURL": names.dashboard_url(cluster_name, ns)}
        job = pods.submitter_job(
            rayjob, job_id=self.job_id, dashboard_url=names.dashboard_url(cluster_name, ns)
        )
        self.job = job
        self.submitter = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{rayjob['metadata']['name']}-sub12",
                "namespace": ns,
                "labels": {
                    **job["spec"]["template"]["metadata"]["labels"],
                    "job-name": rayjob["metadata"]["name"],
                },
            },
            "spec": job["spec"]["template"]["spec"],
        }

    def owners(self, pod: dict) -> tuple[dict, ...]:
        """The pod's controller chain, as the kubelet resolves it: the RayCluster, or the Job and the RayJob."""
        if pod is self.submitter:
            return (self.job, self.rayjob)
        return (self.cluster,)

    def launch(self, pod: dict, node: str, env: dict[str, str] | None = None) -> None:
        pod["spec"]["nodeName"] = node
        files = self.files if any(v.get("configMap") for v in pod["spec"].get("volumes") or []) else {}
        self.ex.start(
            PodLaunch(
                pod=pod,
                node={"metadata": {"name": node}},
                files=files,
                env=env or {},
                logs=self.logs,
                notify=lambda: None,
                owners=self.owners(pod),
            )
        )

    def start_cluster(self) -> None:
        self.launch(self.head, "gke-default-pool-1")
        for i, w in enumerate(self.workers):
            env = {
                "TPU_ACCELERATOR_TYPE": "v6e-16",
                "TPU_TOPOLOGY": "4x4",
                "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1",
                "TPU_HOST_BOUNDS": "2,2,1",
                "TPU_WORKER_ID": str(i),
                "TPU_NAME": "gke-node-slice",
            }
            self.launch(w, f"gke-tpu-{i}", env)

    def key(self, pod: dict) -> tuple[str, str]:
        return (pod["metadata"]["namespace"], pod["metadata"]["name"])

    def state(self, pod: dict):
        return self.ex.poll(self.key(pod))

    def all_pods(self) -> list[dict]:
        return [self.head, *self.workers, self.submitter]

    def describe(self) -> str:
        """States of every launched pod, with the log tail of those not ready (for failure messages)."""
        out = []
        for p in self.all_pods():
            st = self.state(p)
            if st is None:
                continue
            out.append(f"{p['metadata']['name']}: {st}")
            if not st.ready:
                out.append(self.logs.of(p["metadata"]["name"])[-2500:])
        return "\n".join(out)

    def stop_all(self) -> None:
        for p in self.all_pods():
            self.ex.stop(self.key(p))


def wait_for(cond, timeout: float, what: str, step: float = 0.5, detail=None):
    """Poll ``cond`` until truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}" + ("\n" + detail() if detail else "")
    )


def leftovers(ex: LocalRayExecutor) -> list[int]:
    """PIDs still carrying this executor's owner marker."""
    return localproc.owned_pids(ex._token + ":")


def ray_pids_anywhere() -> list[int]:
    """PIDs of any process that looks like Ray (raylet, gcs_server), whoever started them."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"raylet" in cmd or b"gcs_server" in cmd:
                out.append(int(entry))
    return out
