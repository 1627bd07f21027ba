"""The composition root: builds a twin (virtual or live) from its parts.

Owns: ``TwinCore`` — the loop, the journal, the project store (GKE objects), one ``ClusterRuntime`` per
Kubernetes cluster (its store, controller manager and context), pod logs, executors — and the explicit
list of domain packages whose ``registry`` modules contribute controllers, bootstrap objects and
executors. Only ``twin``, ``cli``, ``scenario`` and tests import this module.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from flexq.api.kinds import default_registry
from flexq.api.registry import Registry
from flexq.clock import VirtualClock
from flexq.gke import registry as gke_registry
from flexq.kube import registry as kube_registry
from flexq.kuberay import registry as kuberay_registry
from flexq.kueue import registry as kueue_registry
from flexq.loop import EventLoop, RealtimeLoop, Rngs
from flexq.runtime import ClusterSettings, Context, Manager, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Journal, PodLogs, Store, WatchEvent
from flexq.store.private import private_home

log = logging.getLogger("flexq.assembly")

# Order matters only for determinism of wiring; packages never call each other.
DOMAINS = [kube_registry, kueue_registry, gke_registry, kuberay_registry]
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "kueue-system")
DEFAULT_CLUSTER = ""  # the Kubernetes cluster of a twin that has no GKE cluster


@dataclass
class ClusterRuntime:
    """One Kubernetes cluster: its objects and the controllers acting on them."""

    name: str
    store: Store
    ctx: Context
    manager: Manager

    @property
    def settings(self) -> ClusterSettings:
        """What this cluster is (its GKE identity and addons): replaced as a whole when its GkeCluster changes."""
        return self.ctx.cluster_settings

    @property
    def executors(self) -> list[PodExecutor]:
        """This cluster's own pod executors (pods are keyed by namespace and name, which clusters share)."""
        return self.ctx.executors

    @property
    def metrics(self) -> CollectorRegistry:
        """This cluster's Prometheus registry: Kueue's metrics and the twin's ``flexq_`` ones."""
        registry: CollectorRegistry = self.ctx.metrics
        return registry

    @property
    def logs(self) -> PodLogs:
        """This cluster's container logs."""
        return self.ctx.logs


class TwinCore:
    """Everything a twin is made of, wired; no public convenience (that is ``flexq.twin.Twin``)."""

    def __init__(self, *, live: bool = False, home: str | Path | None = None, seed: int = 0,
                 settings: Mapping[str, Any] | TwinSettings | None = None, start: float | None = None) -> None:
        self.live = live
        self.settings = TwinSettings.from_mapping(settings)
        self.loop: EventLoop = RealtimeLoop() if live else EventLoop(VirtualClock(start) if start else VirtualClock())
        self.home = Path(home) if home else None
        if self.home:
            private_home(self.home)  # 0700: it holds the twin's key, token and every stored object
        self.journal = Journal(self.home / "state.db") if self.home else None
        # a twin resumed from its state draws fresh names and uids: replaying the first run's streams would
        # hand a new object the uid of a stored one (owner references, Kueue's job lookup and the Job
        # controller's pod selector go by uid)
        self.rngs = Rngs(seed, self.journal.next_boot() if self.journal is not None else 0)
        self.registry: Registry = default_registry()
        project_registry = Registry(gke_registry.project_kinds())
        self.project = Store(project_registry, self.loop.clock, name="project", journal=self.journal,
                             rng=self.rngs.get("store/project"))
        self.project_ctx = Context(store=self.project, loop=self.loop, rngs=self.rngs, logs=PodLogs(None),
                                   cluster="", project=self.project, executors=[],
                                   settings=self.settings)
        self.project_manager = Manager(self.project_ctx)
        self.gke_project = gke_registry.project(self.project_ctx)
        self.project_manager.add_all(gke_registry.project_controllers(self.gke_project))
        self.clusters: dict[str, ClusterRuntime] = {}
        self._closed = False

    # -- clusters -------------------------------------------------------------------------------
    def start(self) -> None:
        """Bring up the default cluster and every GKE cluster the project store knows, then watch for more."""
        self.add_cluster(DEFAULT_CLUSTER, ClusterSettings())
        for kk in [k.kind for k in self.project.registry]:
            for obj in self.project.list(kk):
                found = gke_registry.cluster_of(obj)
                if found:
                    self.add_cluster(found[0], found[1])
        self.project.watch(self._on_project_event)
        self.project_manager.start()

    def _on_project_event(self, ev: WatchEvent) -> None:
        found = gke_registry.cluster_of(ev.object)
        if not found:
            return
        name, settings = found
        if ev.type == "DELETED":
            self.remove_cluster(name)
        elif name not in self.clusters:
            self.add_cluster(name, settings)
        else:
            rt = self.clusters[name]
            rt.ctx.cluster_settings = settings
            rt.store.serve_addons(settings.addons)

    def add_cluster(self, name: str, settings: ClusterSettings) -> ClusterRuntime:
        if name in self.clusters:
            return self.clusters[name]
        store = Store(self.registry, self.loop.clock, name=f"cluster/{name}", journal=self.journal,
                      rng=self.rngs.get(f"store/{name}"), namespaces=DEFAULT_NAMESPACES)
        if name != DEFAULT_CLUSTER:  # a GKE cluster serves addon kinds only when the addon is on
            store.serve_addons(settings.addons)
        ctx = Context(store=store, loop=self.loop, rngs=self.rngs, cluster=name, project=self.project,
                      logs=PodLogs(self.home / "logs" / name if self.home else None), executors=self._executors(name),
                      settings=self.settings, cluster_settings=settings,
                      metrics=CollectorRegistry(auto_describe=False))
        for domain in DOMAINS:
            domain.bootstrap(store)
        manager = Manager(ctx)
        for domain in DOMAINS:
            manager.add_all(domain.controllers(ctx))
        rt = ClusterRuntime(name, store, ctx, manager)
        self.clusters[name] = rt
        manager.start()
        return rt

    def remove_cluster(self, name: str) -> None:
        rt = self.clusters.pop(name, None)
        if rt is None:
            return
        rt.manager.stop()
        for ns_pod in [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in rt.store.list("Pod")]:
            for ex in rt.executors:
                ex.stop(ns_pod)
        self._shutdown(rt.executors)
        if self.journal is not None:
            self.journal.drop_store(rt.store.name)

    def _executors(self, cluster: str) -> list[PodExecutor]:
        """A cluster's own pod executors: pods are keyed by namespace and name, which two clusters share."""
        settings = self.settings
        if settings.ray_dir:  # one directory per cluster under the one asked for
            settings = dataclasses.replace(settings, ray_dir=str(Path(settings.ray_dir) / cluster))
        out: list[PodExecutor] = []
        for domain in (kuberay_registry, kube_registry):  # real executors first, the simulated one last
            out += domain.executors(settings)
        return out

    @staticmethod
    def _shutdown(executors: list[PodExecutor]) -> None:
        for ex in executors:
            try:
                ex.shutdown()
            except Exception:
                log.exception("executor shutdown failed")

    def current(self, name: str | None = None) -> ClusterRuntime:
        """The named cluster, else the only GKE cluster, else the default one."""
        if name is not None:
            if name not in self.clusters:
                from flexq.errors import NotFound

                raise NotFound(f'cluster "{name}" not found')
            return self.clusters[name]
        gke = [c for c in self.clusters if c != DEFAULT_CLUSTER]
        if len(gke) == 1:
            return self.clusters[gke[0]]
        return self.clusters[DEFAULT_CLUSTER]

    def gke(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        return gke_registry.gke_api(self.gke_project, method, path, body)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for name in list(self.clusters):
            self.clusters[name].manager.stop()
        self.project_manager.stop()
        for rt in self.clusters.values():
            self._shutdown(rt.executors)
        if isinstance(self.loop, RealtimeLoop):
            self.loop.stop()
        if self.journal is not None:
            self.journal.close()
