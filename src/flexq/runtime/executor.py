"""The seam between the twin's kubelet and whatever "runs" a pod.

Owns: the ``PodExecutor`` protocol and the small value types passed across it. The kubelet controller
(``flexq.kube``) decides *when* a bound pod starts and stops and writes pod status; an executor decides
*how* it runs: the simulated executor sleeps on the virtual clock, the local-Ray executor
(``flexq.kuberay.local_ray_executor``) starts real Ray processes. Executors are chosen from one explicit list
built in ``flexq.assembly``; the first whose ``accepts`` is true runs the pod.

Executors never touch the store: they get everything in ``PodLaunch`` and report through ``poll``.
They may do slow work in their own threads, and call ``launch.notify()`` (thread-safe) to ask the
kubelet to poll again soon. Must not import anything in flexq but ``flexq.api``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

PodKey = tuple[str, str]  # (namespace, name)
Phase = Literal["Pending", "Running", "Succeeded", "Failed"]


class LogSink(Protocol):
    """Where a container's output goes (``kubectl logs`` reads it back). Thread-safe."""

    def write(self, namespace: str, pod: str, container: str, text: str) -> None:
        """Append ``text`` to the container's log."""


@dataclass(frozen=True)
class PodLaunch:
    """Everything an executor needs to start one pod, resolved by the kubelet."""

    pod: dict  # the Pod object as stored (spec.nodeName set): read-only, as the store's objects are
    node: dict  # the Node object the pod is bound to (labels carry TPU type/topology): read-only too
    files: dict[str, dict[str, str]]  # mountPath -> {filename: content} (ConfigMap volumes, materialised)
    env: dict[str, str]  # extra environment the node gives (e.g. TPU_* on TPU hosts)
    logs: LogSink
    notify: Callable[[], None]  # thread-safe: wake the kubelet to poll this pod now
    services: dict[str, str] = field(default_factory=dict)  # "<svc>.<ns>" / "<svc>" -> local "host:port" map
    now: Callable[[], float] | None = None  # the twin's clock (virtual or wall), seconds since the epoch
    wake_at: Callable[[float], None] | None = None  # call from start() only: poll this pod again at that time
    # the pod's chain of controllers, closest first (a submitter pod: its Job, then the RayJob), each the stored
    # object whose uid the controller reference names: who really created the pod (read-only)
    owners: tuple[dict, ...] = ()


@dataclass(frozen=True)
class PodRunState:
    """What an executor reports about one pod."""

    phase: Phase
    ready: bool = False
    message: str = ""
    reason: str = ""
    exit_code: int | None = None
    pod_ip: str = "127.0.0.1"
    # container port -> the local TCP port where it really listens (``kubectl port-forward`` goes there)
    ports: dict[int, int] = field(default_factory=dict)
    # container port -> HTTP headers ``kubectl port-forward`` adds to each request it carries there (the local
    # Ray dashboard's token: inside a pod network nothing asks for one, on this machine the dashboard does)
    http_headers: dict[int, dict[str, str]] = field(default_factory=dict)


class PodExecutor(Protocol):
    """Runs pods. Implementations: simulated (virtual clock) and local Ray (real processes)."""

    name: str

    def accepts(self, pod: dict, owners: Sequence[dict] = ()) -> bool:
        """True when this executor should run the pod (``owners``: its controller chain, as
        ``PodLaunch.owners``; the local Ray executor runs only pods KubeRay created, whatever their command)."""

    def start(self, launch: PodLaunch) -> None:
        """Begin running the pod; must return quickly (do slow work in a thread)."""

    def poll(self, key: PodKey) -> PodRunState | None:
        """Current state of a started pod, or None if unknown to this executor."""

    def stop(self, key: PodKey) -> None:
        """Stop the pod's processes (idempotent; returns quickly, cleanup may finish in background)."""

    def shutdown(self) -> None:
        """Stop everything this executor started (twin shutdown); blocks until done."""
