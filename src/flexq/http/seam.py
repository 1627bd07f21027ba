"""What the faces need from the twin, as Protocols: the one seam between ``flexq.http`` and the assembly.

The faces translate HTTP to store operations and back; they reach the twin only through ``TwinServices``
(which ``flexq.assembly.TwinCore`` implements) and each Kubernetes cluster only through ``ServedCluster``
(``flexq.assembly.ClusterRuntime``). Nothing here imports a domain or the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from flexq.api.kueue_versions import KueueVersion
from flexq.loop import EventLoop
from flexq.store import PodLogs, Store


class ClusterFacts(Protocol):
    """What the faces read of a cluster's settings (``flexq.runtime.ClusterSettings``): its addons and its GKE
    identity (the ServiceAccount token issuer is the GKE cluster's URL)."""

    @property
    def addons(self) -> list[str]: ...

    @property
    def gke_version(self) -> str | None: ...

    @property
    def gke_cluster(self) -> str: ...

    @property
    def gke_project(self) -> str: ...

    @property
    def gke_location(self) -> str: ...


class EndpointSettings(Protocol):
    """The twin-wide settings the server writes (``flexq.runtime.TwinSettings``): where the API listens (and the
    Kueue release it runs, which ``server.json`` records)."""

    kueue: KueueVersion
    kube_endpoint: str | None
    kube_ca_b64: str | None
    service_account_key: bytes | None

    def serve(self, endpoint: str, ca_b64: str, service_account_key: bytes | None = None) -> None:
        """Record where the API listens, its CA and its service-account signing key (and tell who waits)."""
        ...


class ServedCluster(Protocol):
    """One Kubernetes cluster as the faces see it."""

    name: str
    store: Store

    @property
    def settings(self) -> ClusterFacts:
        """What the cluster is (its addons, its GKE version)."""
        ...

    @property
    def executors(self) -> Sequence[Any]:
        """Pod executors (the port-forward face asks them where a pod's port really listens)."""
        ...

    @property
    def logs(self) -> PodLogs:
        """Container logs."""
        ...

    def declaration(self) -> dict[str, Any]:
        """What the twin declares of itself (``GET /flexq/twin``): its CapacityProfile in force, its executor."""
        ...


class Forecasts(Protocol):
    """When waiting jobs start (``flexq.eta.service.EtaService``, when one is attached to the twin as
    ``TwinCore.forecasts``): the dashboard and ``GET /flexq/eta`` (``flexq status``'s ETA column) show it, decide
    nothing from it."""

    def eta_of(self, cluster: str, namespace: str, workload: str) -> dict[str, Any] | None:
        """The ETA of one Workload (text, median/low/high seconds, plan, what it waits for, reasoning), or None."""
        ...

    def forecast_json(self, cluster: str) -> bytes | None:
        """The last forecast of ``cluster`` as JSON (``GET /flexq/eta``), or None before its first."""
        ...


class TwinServices(Protocol):
    """The twin as the faces see it: the loop they hop onto, its clusters, the GKE API."""

    loop: EventLoop

    @property
    def settings(self) -> EndpointSettings:
        """Twin-wide settings (the server records where the API listens in them)."""
        ...

    def current(self, name: str | None = None) -> ServedCluster:
        """The cluster ``name`` (the twin's default cluster when None); KeyError if there is none."""
        ...

    def gke(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """One container.googleapis.com call: (HTTP status, JSON body)."""
        ...
