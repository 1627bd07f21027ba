"""The simulated pod executor: a pod "runs" for a declared time on the twin's clock, then exits.

Owns ``SimulatedExecutor`` (a ``PodExecutor`` that accepts every pod; the assembly puts it last):

- Pods that can complete (``restartPolicy`` ``Never`` or ``OnFailure``: batch Job pods, RayJob submitters)
  run for the ``twin.flexq.dev/run-seconds`` annotation (the KubeRay and Kueue integrations copy the job's
  annotations into pod templates), ``DEFAULT_BATCH_SECONDS`` without it, and then exit with
  ``twin.flexq.dev/outcome``: ``Succeeded`` (exit code 0, the default) or ``Failed`` (exit code 1).
- Pods with ``restartPolicy: Always`` (Ray heads and workers, servers) run until stopped, whatever their
  annotations say: a run time there would only make the kubelet restart them.

The end is a timer: ``start`` asks the kubelet (``PodLaunch.wake_at``) to poll the pod when it is due,
and ``poll`` compares ``PodLaunch.now()`` with it, so seven simulated days cost two callbacks. A pod
whose container was already running when the twin restarted keeps its original start time. Each pod
writes a few log lines (start, its TPU environment: the node's, overridden by the container's own,
mounted files, end). Must not import anything in flexq but
``flexq.api``, ``flexq.clock`` and ``flexq.runtime.executor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flexq.clock import parse_time
from flexq.runtime.executor import PodKey, PodLaunch, PodRunState

ANN_RUN_SECONDS = "twin.flexq.dev/run-seconds"
ANN_OUTCOME = "twin.flexq.dev/outcome"
DEFAULT_BATCH_SECONDS = 60.0


def run_seconds(pod: dict) -> float | None:
    """How long the pod runs, or None for "until stopped" (``restartPolicy: Always``)."""
    if ((pod.get("spec") or {}).get("restartPolicy") or "Always") == "Always":
        return None
    raw = (pod["metadata"].get("annotations") or {}).get(ANN_RUN_SECONDS)
    try:
        return max(0.0, float(raw)) if raw is not None else DEFAULT_BATCH_SECONDS
    except ValueError:
        return DEFAULT_BATCH_SECONDS


def outcome(pod: dict) -> str:
    """``Succeeded`` or ``Failed`` from ``twin.flexq.dev/outcome`` (anything else reads as Succeeded)."""
    raw = (pod["metadata"].get("annotations") or {}).get(ANN_OUTCOME, "Succeeded")
    return "Failed" if raw.strip().lower() == "failed" else "Succeeded"


def _running_since(pod: dict) -> float | None:
    """When the pod's first container started, if the stored status says it is still running."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    started = ((statuses[0].get("state") or {}).get("running") or {}).get("startedAt") if statuses else None
    return parse_time(started) if started else None


@dataclass
class _SimPod:
    launch: PodLaunch
    container: str
    started: float
    end: float | None
    outcome: str
    ip: str
    finished: bool = False


class SimulatedExecutor:
    """Runs every pod on the virtual (or wall) clock without running anything."""

    name = "simulated"

    def __init__(self) -> None:
        self._pods: dict[PodKey, _SimPod] = {}
        self._ips = 0

    def accepts(self, pod: dict, owners: Sequence[dict] = ()) -> bool:
        return True

    def start(self, launch: PodLaunch) -> None:
        meta = launch.pod["metadata"]
        key: PodKey = (meta.get("namespace") or "default", meta["name"])
        if key in self._pods:
            return
        now = launch.now() if launch.now is not None else 0.0
        started = _running_since(launch.pod) or now
        seconds = run_seconds(launch.pod)
        end = started + seconds if seconds is not None else None
        containers = (launch.pod.get("spec") or {}).get("containers") or [{}]
        self._ips += 1
        ip = f"10.64.{(self._ips >> 8) & 255}.{self._ips & 255}"
        pod = _SimPod(launch, containers[0].get("name", ""), started, end, outcome(launch.pod), ip)
        self._pods[key] = pod
        node = launch.node["metadata"]["name"]
        length = f"for {seconds:g}s" if seconds is not None else "until stopped"
        self._log(pod, f"[flexq simulated] pod {key[0]}/{key[1]} running on node {node} {length}")
        env = dict(launch.env)  # the node's, then the container's own values win (as in the pod's env)
        env.update(
            {
                e["name"]: e["value"]
                for e in containers[0].get("env") or []
                if isinstance(e.get("value"), str) and e.get("name")
            }
        )
        tpu = " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("TPU_"))
        if tpu:
            self._log(pod, f"[flexq simulated] TPU environment: {tpu}")
        for path, files in sorted(launch.files.items()):
            self._log(pod, f"[flexq simulated] mounted {path}: {', '.join(sorted(files))}")
        if end is not None and launch.wake_at is not None:
            launch.wake_at(end)

    def poll(self, key: PodKey) -> PodRunState | None:
        pod = self._pods.get(key)
        if pod is None:
            return None
        now = pod.launch.now() if pod.launch.now is not None else 0.0
        if pod.end is not None and now >= pod.end:
            ok = pod.outcome == "Succeeded"
            if not pod.finished:
                pod.finished = True
                self._log(pod, f"[flexq simulated] finished after {pod.end - pod.started:g}s: {pod.outcome}")
            return PodRunState(
                phase=pod.outcome,  # type: ignore[arg-type]
                exit_code=0 if ok else 1,
                reason="Completed" if ok else "Error",
                pod_ip=pod.ip,
            )
        return PodRunState(phase="Running", ready=True, pod_ip=pod.ip)

    def stop(self, key: PodKey) -> None:
        self._pods.pop(key, None)

    def shutdown(self) -> None:
        self._pods.clear()

    @staticmethod
    def _log(pod: _SimPod, line: str) -> None:
        m = pod.launch.pod["metadata"]
        pod.launch.logs.write(m.get("namespace") or "default", m["name"], pod.container, line + "\n")
