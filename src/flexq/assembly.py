"""The composition root: builds a twin (virtual or live) from its parts.

Owns: ``TwinCore`` — the loop, the journal, the project store (GKE objects), one ``ClusterRuntime`` per
Kubernetes cluster (its store, controller manager and context), pod logs, executors, the Kueue release the twin
runs (resolved once from its settings, else the one its state last ran: given to the kind registry and, through
the settings, to Kueue's controllers) — and the explicit list of domain packages whose ``registry`` modules
contribute controllers, bootstrap objects and executors. Only ``twin`` (and
through it the SDK, ``simulate`` and the CLI) and tests import this module.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from prometheus_client import CollectorRegistry

from flexq.api.kinds import default_registry
from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.api.registry import Registry
from flexq.clock import VirtualClock
from flexq.errors import Invalid, NotFound
from flexq.fallback import registry as fallback_registry
from flexq.gke import registry as gke_registry
from flexq.gke.project import profile_object
from flexq.kube import registry as kube_registry
from flexq.kuberay import registry as kuberay_registry
from flexq.kueue import registry as kueue_registry
from flexq.loop import EventLoop, RealtimeLoop, Rngs
from flexq.runtime import ClusterSettings, Context, Manager, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.runtime.livelock import LivelockGuard
from flexq.store import Journal, PodLogs, Store, WatchEvent
from flexq.store.private import private_home

log = logging.getLogger("flexq.assembly")

# Order matters only for determinism of wiring; packages never call each other.
DOMAINS = [kube_registry, kueue_registry, gke_registry, kuberay_registry, fallback_registry]
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "kueue-system")
DEFAULT_CLUSTER = ""  # the Kubernetes cluster of a twin that has no GKE cluster
ROOT_KEY = "root-cluster"  # journal meta: the GKE cluster the root Kubernetes API serves
KUEUE_KEY = "kueue-version"  # journal meta: the Kueue release the twin last ran
PROJECT_HISTORY = 100  # watch events the project store keeps (see ``TwinCore.__init__``)


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

    def declaration(self) -> dict[str, Any]:
        """What this twin's cluster declares of itself, which a real cluster keeps to itself
        (``flexq.forecast.declared``; ``GET /flexq/twin``): its CapacityProfile in force and whether its Ray
        pods run for real. Call on the loop."""
        real = any(getattr(e, "name", "simulated") != "simulated" for e in self.ctx.executors)
        return {"capacityProfile": profile_object(self.ctx), "executor": "ray" if real else "simulated"}


class TwinCore:
    """Everything a twin is made of, wired; no public convenience (that is ``flexq.twin.Twin``)."""

    def __init__(
        self,
        *,
        live: bool = False,
        home: str | Path | None = None,
        seed: int = 0,
        settings: Mapping[str, Any] | TwinSettings | None = None,
        start: float | None = None,
    ) -> None:
        self.live = live
        self.settings = TwinSettings.from_mapping(settings)
        kueue_given = isinstance(settings, TwinSettings) or "kueue" in (settings or {})
        self.loop: EventLoop = (
            RealtimeLoop() if live else EventLoop(VirtualClock(start) if start else VirtualClock())
        )
        # one livelock guard per loop, shared by the project's manager and every cluster's (owned here: a
        # twin dropped takes it along)
        self.guard = LivelockGuard(self.loop)
        self.home = Path(home) if home else None
        if self.home:
            private_home(self.home)  # 0700: it holds the twin's key, token and every stored object
        self.journal = Journal(self.home / "state.db") if self.home else None
        # a twin resumed from its state draws fresh names and uids: replaying the first run's streams would
        # hand a new object the uid of a stored one (owner references, Kueue's job lookup and the Job
        # controller's pod selector go by uid)
        self.rngs = Rngs(seed, self.journal.next_boot() if self.journal is not None else 0)
        self._choose_kueue(kueue_given)
        # the kinds as the twin's Kueue release serves them (discovery, REST, OpenAPI and the SDK agree)
        self.registry: Registry = default_registry(self.settings.kueue)
        project_registry = Registry(gke_registry.project_kinds())
        # ``check_readonly`` (a test setting): every store fails loudly when a stored object is changed in place
        self.check_readonly = self.settings.check_readonly
        self.project = Store(
            project_registry,
            self.loop.clock,
            name="project",
            journal=self.journal,
            check_readonly=self.check_readonly,
            rng=self.rngs.get("store/project"),
            # Nothing resumes a watch on the project store (the GKE API has no watch), and each version of
            # a cluster's billing ledger holds all its records: keep a window like kube-apiserver's default
            # watch cache (100 events), not 20,000 ledger versions (memory grew with time x jobs).
            history=PROJECT_HISTORY,
        )
        self.project_ctx = Context(
            store=self.project,
            loop=self.loop,
            rngs=self.rngs,
            logs=PodLogs(None),
            cluster="",
            project=self.project,
            executors=[],
            settings=self.settings,
        )
        self.project_manager = Manager(self.project_ctx, self.guard)
        self.gke_project = gke_registry.project(self.project_ctx)
        self.project_manager.add_all(gke_registry.project_controllers(self.gke_project))
        self.clusters: dict[str, ClusterRuntime] = {}  # owned by the loop thread
        # what other threads (the HTTP faces) read: a copy republished after each change, never mutated
        self._published: MappingProxyType[str, ClusterRuntime] = MappingProxyType({})
        # the GKE cluster the root Kubernetes API (the `flexq` kubeconfig context, the SDK's default) serves:
        # the first one created, for as long as it exists, unless settings.default_cluster names one
        self._root: str | None = self.journal.get_meta(ROOT_KEY) if self.journal is not None else None
        self._closed = False
        # what estimates when waiting jobs start (flexq.eta.service.EtaService, attached by `flexq up` or the SDK):
        # read by the dashboard through flexq.http.seam.Forecasts and by Twin.eta; None when nothing is attached
        self.forecasts: Any = None

    def _choose_kueue(self, given: bool) -> None:
        """The Kueue release this twin runs: the one asked for, else the one its state last ran (a restarted
        twin keeps its Kueue), else the default. A state that ran another release is upgraded (or downgraded)
        as ``helm upgrade`` does it: the stored objects stay (kept in v1beta2, the storage version of both), the
        CustomResourceDefinitions follow the new release."""
        if self.journal is None:
            return
        recorded = self.journal.get_meta(KUEUE_KEY)
        if not given and recorded:
            try:
                self.settings = dataclasses.replace(self.settings, kueue=resolve_kueue(recorded))
            except Invalid:
                log.warning(
                    "the state ran Kueue %s, which this flexq does not model: %s",
                    recorded,
                    self.settings.kueue,
                )
        elif recorded and recorded != self.settings.kueue.version:
            log.info(
                "Kueue %s -> %s (the stored objects stay; the CRDs follow)",
                recorded,
                self.settings.kueue.version,
            )
        if recorded != self.settings.kueue.version:
            self.journal.set_meta(KUEUE_KEY, self.settings.kueue.version)

    # -- clusters -------------------------------------------------------------------------------
    def start(self) -> None:
        """Bring up the default cluster and every GKE cluster the project store knows, then watch for more."""
        self.add_cluster(DEFAULT_CLUSTER, ClusterSettings())
        known = [
            obj
            for kk in [k.kind for k in self.project.registry]
            for obj in self.project.list(kk)
            if gke_registry.cluster_of(obj)
        ]
        known.sort(key=lambda o: (o["metadata"].get("creationTimestamp", ""), o["metadata"]["name"]))
        for obj in known:  # oldest first: a state without a recorded root cluster elects the first created
            found = gke_registry.cluster_of(obj)
            assert found is not None
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
            served = set(rt.store.disabled)
            rt.store.serve_addons(settings.addons)
            if (
                rt.store.disabled != served
            ):  # an addon was turned on: its CustomResourceDefinitions come with it
                for domain in DOMAINS:
                    domain.bootstrap(rt.store)

    def add_cluster(self, name: str, settings: ClusterSettings) -> ClusterRuntime:
        if name in self.clusters:
            return self.clusters[name]
        store = Store(
            self.registry,
            self.loop.clock,
            name=f"cluster/{name}",
            journal=self.journal,
            check_readonly=self.check_readonly,
            rng=self.rngs.get(f"store/{name}"),
            namespaces=DEFAULT_NAMESPACES,
        )
        if name != DEFAULT_CLUSTER:  # a GKE cluster serves addon kinds only when the addon is on
            store.serve_addons(settings.addons)
        ctx = Context(
            store=store,
            loop=self.loop,
            rngs=self.rngs,
            cluster=name,
            project=self.project,
            logs=PodLogs(self.home / "logs" / name if self.home else None, clock=self.loop.clock.now),
            executors=self._executors(name),
            settings=self.settings,
            cluster_settings=settings,
            metrics=CollectorRegistry(auto_describe=False),
        )
        for domain in DOMAINS:
            domain.bootstrap(store)
        manager = Manager(ctx, self.guard)
        for domain in DOMAINS:
            manager.add_all(domain.controllers(ctx))
        rt = ClusterRuntime(name, store, ctx, manager)
        self.clusters[name] = rt
        self._publish()
        if name != DEFAULT_CLUSTER and self._root not in self.clusters:
            self._set_root(name, "the first GKE cluster")
        manager.start()
        return rt

    def _set_root(self, name: str | None, why: str) -> None:
        if name == self._root:
            return
        self._root = name
        if self.journal is not None:
            self.journal.set_meta(ROOT_KEY, name)
        if name is None:
            log.warning("the root Kubernetes API now serves the twin's own cluster (%s)", why)
        else:
            log.info("the root Kubernetes API serves GKE cluster %s (%s)", name, why)

    def _publish(self) -> None:
        self._published = MappingProxyType(dict(self.clusters))

    def root_cluster(self) -> str:
        """The cluster the root Kubernetes API and the SDK act on when none is named: the one named by the
        ``default_cluster`` setting, else the first GKE cluster created (while it exists: creating another
        never moves it; deleting it moves it to the oldest left), else the twin's own cluster."""
        clusters = self._published
        explicit = self.settings.default_cluster
        if explicit:
            return explicit if explicit in clusters else DEFAULT_CLUSTER
        return self._root if self._root is not None and self._root in clusters else DEFAULT_CLUSTER

    def remove_cluster(self, name: str) -> None:
        rt = self.clusters.pop(name, None)
        if rt is None:
            return
        self._publish()
        if name == self._root:
            left = [c for c in self.clusters if c != DEFAULT_CLUSTER]
            self._set_root(left[0] if left else None, f"GKE cluster {name} was deleted")
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
        if self.home and not settings.ray_token_file:  # the local Ray clusters' token, owner-only
            settings = dataclasses.replace(settings, ray_token_file=str(self.home / "ray" / "auth_token"))
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
        """The named cluster, else the root one (``root_cluster``). Safe on any thread: it reads the published
        copy of the clusters, which the loop replaces (never mutates) when a cluster comes or goes."""
        clusters = self._published
        if name is not None:
            if name not in clusters:
                raise NotFound(f'cluster "{name}" not found')
            return clusters[name]
        return clusters[self.root_cluster()]

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

    def discard(self) -> None:
        """Close, then let the twin's state go: every store's objects, indexes and watch history, the loop's
        timers. For a twin whose results were taken and that no one reads again (each run of ``flexq simulate``).
        Its stored versions are acyclic, but the twin's controllers, timers and watch history held them in
        reference cycles, so only a full collection freed a closed twin: 0.12 s of CPU per tutorial-week run
        (a tenth of the run), walking its 84,000 objects. Discarded, reference counting frees it."""
        self.close()
        rooms = [
            (self.project_manager, self.project_ctx),
            *((rt.manager, rt.ctx) for rt in self.clusters.values()),
        ]
        for manager, ctx in rooms:
            manager.discard()
            ctx.event_index.clear()
            ctx.event_correlator.clear()
            ctx.store.watchers.discard()
            ctx.store.discard()
        self.loop.discard()
