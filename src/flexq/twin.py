"""``Twin``: the SDK's front door.

    from flexq import Twin
    twin = Twin(clock="virtual")              # in memory, no servers, simulated executors
    twin.apply(open("dws-tpu-queue.yaml").read())
    twin.advance(60)
    twin.get("workload", "rayjob-...", "default")

A live twin (``Twin(clock="real", home=...)``) keeps its state in SQLite under ``home`` and runs its
loop in a background thread; every method then runs on that thread and waits for the result.
Objects go in and come out as plain Kubernetes JSON dicts. Methods act on the current cluster: the one
chosen with ``twin.cluster(name)``, else the root cluster: the one ``Twin(default_cluster=...)`` names, else the
first GKE cluster created (a second one never replaces it), else the twin's own cluster.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from flexq.api import scheme
from flexq.api.decode import check_decoded, load_yaml_all
from flexq.api.jsoncopy import no_gc
from flexq.api.registry import KindInfo
from flexq.assembly import ClusterRuntime, TwinCore
from flexq.clock import WallClock
from flexq.errors import BadRequest, CloudError, NotFound
from flexq.gke.billing import billing_of, flush_billing
from flexq.kuberay import confine
from flexq.loop import RealtimeLoop, tune_gc
from flexq.loop.core import INTERACTIVE_YOUNG_GC_THRESHOLD
from flexq.store import Store, clone
from flexq.store.patch import patch_schema, three_way_merge_patch, three_way_strategic_patch

T = TypeVar("T")

__all__ = ["Twin", "load_documents"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def load_documents(source: str | dict | Iterable[dict]) -> list[dict]:
    """YAML/JSON text (multi-document), one object, a list of objects, or a ``List`` kind -> objects."""
    if isinstance(source, dict):
        docs: list[Any] = [source]
    elif isinstance(source, str):
        docs = load_yaml_all(source)
    elif isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        docs = list(source)
    else:
        raise BadRequest(
            f"expected YAML or JSON text, an object or a list of objects, got {type(source).__name__}"
        )
    out: list[dict] = []
    for d in docs:
        if not isinstance(d, dict):
            raise BadRequest(f"expected an object, got {type(d).__name__}")
        check_decoded(d)  # the API server's limits: nesting depth, 3 MiB once expanded
        kind = d.get("kind")
        if isinstance(kind, str) and (kind == "List" or (kind.endswith("List") and "items" in d)):
            items = d.get("items") or []
            if not isinstance(items, list):
                raise BadRequest(
                    f"json: cannot unmarshal {type(items).__name__} into Go struct field "
                    f"{kind}.items of type []runtime.RawExtension"
                )
            for item in items:
                if not isinstance(item, dict):
                    raise BadRequest(f"expected an object in items, got {type(item).__name__}")
            out.extend(items)
        else:
            out.append(d)
    return out


class Twin:
    """A twin of one GCP project with its GKE clusters, Kueue, KubeRay and the cloud's capacity."""

    def __init__(
        self,
        clock: str = "virtual",
        *,
        home: str | Path | None = None,
        seed: int = 0,
        executor: str | None = None,
        start: float | None = None,
        **settings: Any,
    ) -> None:
        if clock not in ("virtual", "real"):
            raise ValueError('clock must be "virtual" or "real"')
        live = clock == "real"
        # a twin's heap is large (every stored version, caches, queues): the cyclic collector's youngest
        # generation at its default 700 allocations walked it again and again (0.8-1.4 ms of CPU per job in
        # bench/whole_twin_baseline.py, 13-17 %); as for MinimalKueue, only ever raised; less than a simulation's batch
        # runs raise it to (``flexq.loop.core``): here a pause is someone's wait
        tune_gc(INTERACTIVE_YOUNG_GC_THRESHOLD)
        settings.setdefault("executor", executor or ("ray" if live else "simulated"))
        settings.setdefault("clock", clock)
        self.core = TwinCore(live=live, home=home, seed=seed, settings=settings, start=start)
        self._cluster: str | None = None
        if live:
            assert isinstance(self.core.loop, RealtimeLoop)
            self.core.loop.start_thread()
            self._call(self.core.start)
        else:
            self.core.start()

    # -- plumbing ---------------------------------------------------------------------------------
    def _call(self, fn: Callable[[], T]) -> T:
        loop = self.core.loop
        if isinstance(loop, RealtimeLoop):
            return loop.call_sync(fn)
        return fn()

    @property
    def runtime(self) -> ClusterRuntime:
        return self.core.current(self._cluster)

    @property
    def store(self) -> Store:
        """The current cluster's store (for tests and tools; prefer the methods below)."""
        return self.runtime.store

    def cluster(self, name: str | None) -> Twin:
        """Make ``name`` the current cluster (None: automatic choice). Returns self."""
        if name is not None:
            self.core.current(name)
        self._cluster = name
        return self

    def now(self) -> float:
        return self.core.loop.now()

    def _info(self, kind: str) -> tuple[KindInfo, str | None]:
        info = self.store.info(kind)
        api_version = None
        parts = kind.split(".")
        if len(parts) >= 3 and parts[1] in info.models:
            api_version = info.api_version(parts[1])
        return info, api_version

    @staticmethod
    def _served(info: KindInfo, api_version: str | None) -> str | None:
        """``api_version`` when the kind is served in it (None: the storage version); NotFound as the API's
        RESTMapper says it otherwise (Kueue 0.20 serves no kueue.x-k8s.io/v1beta1)."""
        if api_version is not None:
            info_version = api_version.split("/", 1)[-1]
            group = api_version.split("/", 1)[0] if "/" in api_version else ""
            if group != info.group or info_version not in info.models:
                raise NotFound(f'no matches for kind "{info.kind}" in version "{api_version}"')
        return api_version

    # -- objects ----------------------------------------------------------------------------------
    def apply(self, source: str | dict | Iterable[dict], namespace: str | None = None) -> list[dict]:
        """Create or update each object, like ``kubectl apply`` (status in the input is not stored where the
        kind has a status subresource)."""
        objs = load_documents(source)

        def run() -> list[dict]:
            out = []
            for obj in objs:
                out.append(self._apply_one(obj, namespace))
            return out

        return self._call(run)

    def _apply_one(self, obj: dict, namespace: str | None) -> dict:
        """``kubectl apply`` (client-side): create with the ``last-applied-configuration`` annotation, or
        patch the live object with the three-way merge of the last applied manifest, this one and the live
        object, so fields set by defaults or controllers (a suspended RayJob, a Job's selector, a Service's
        clusterIP) stay and fields dropped from the manifest go. An unchanged manifest writes nothing.
        Built-in kinds get a strategic merge patch, as kubectl sends them: keyed lists (containers, env,
        ports, volumes, volumeMounts...) merge item by item, so an item a controller added stays and an item
        dropped from the manifest goes; custom resources get a JSON merge patch (lists replaced whole)."""
        store = self.store
        info = scheme.resolve_object(store.registry, obj)
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or namespace or ("default" if info.namespaced else None)
        modified = clone(obj)
        if modified.get("metadata") is None:
            modified["metadata"] = {}
        mmeta = modified["metadata"]
        if info.namespaced:
            mmeta["namespace"] = ns
        annotations = {k: v for k, v in (mmeta.get("annotations") or {}).items() if k != LAST_APPLIED}
        mmeta.pop("annotations", None)
        if annotations:
            mmeta["annotations"] = annotations
        annotations[LAST_APPLIED] = json.dumps(modified, sort_keys=True, separators=(",", ":")) + "\n"
        mmeta["annotations"] = annotations
        cur = store.try_get(info.kind, meta.get("name", ""), ns) if meta.get("name") else None
        if cur is None:
            return scheme.render(
                info, store.create(modified, namespace=ns, admission=scheme.ADMIT), obj.get("apiVersion")
            )
        view = scheme.render(info, cur, obj.get("apiVersion"))
        try:
            original = json.loads(
                ((view.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED, "")
            )
        except ValueError:
            original = None
        if info.status_subresource:
            modified.pop("status", None)
            if isinstance(original, dict):
                original.pop("status", None)
        original = original if isinstance(original, dict) else None
        schema = patch_schema(info.group, info.kind)
        if schema is not None:  # a built-in kind: kubectl sends a strategic merge patch (lists merge by key)
            patch, patch_type = three_way_strategic_patch(original, modified, view, schema), "strategic"
        else:  # a custom resource: a JSON merge patch (lists replaced whole)
            patch, patch_type = three_way_merge_patch(original, modified, view), "merge"
        if not patch:
            return view
        return scheme.render(
            info,
            store.patch(
                info.kind,
                meta["name"],
                patch,
                ns,
                patch_type=patch_type,
                api_version=obj.get("apiVersion"),
                admission=scheme.ADMIT,
            ),
            obj.get("apiVersion"),
        )

    def create(self, obj: dict, namespace: str | None = None) -> dict:
        if not isinstance(obj, dict):
            raise BadRequest(f"expected an object, got {type(obj).__name__}")
        # what JSON can carry (no NaN, string keys), within the API server's depth and size
        check_decoded(obj)
        info = scheme.resolve_object(self.store.registry, obj)
        return self._call(
            lambda: scheme.render(
                info,
                self.store.create(obj, namespace=namespace, admission=scheme.ADMIT),
                obj.get("apiVersion"),
            )
        )

    def get(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> dict:
        """One object; ``api_version`` (or ``kind`` as ``plural.version.group``) picks the served version."""
        info, v = self._info(kind)
        wanted = self._served(info, api_version or v)

        def run() -> dict:
            obj = self.store.peek(info.kind, name, namespace)
            if obj is None:  # get raises NotFound, worded as the API server's
                obj = self.store.get(info.kind, name, namespace)
            return scheme.render(info, obj, wanted)  # render copies: one copy, no more

        return self._call(run)

    def try_get(self, kind: str, name: str, namespace: str | None = None, **kw: Any) -> dict | None:
        try:
            return self.get(kind, name, namespace, **kw)
        except NotFound:
            return None

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
        api_version: str | None = None,
    ) -> list[dict]:
        info, v = self._info(kind)
        wanted = self._served(info, api_version or v)

        def run() -> list[dict]:
            objs = self.store.peek_list(info.kind, namespace, label_selector, field_selector)
            with no_gc():
                return scheme.render_many(info, objs, wanted, self.store.texts)  # copies

        return self._call(run)

    def delete(
        self, kind: str, name: str, namespace: str | None = None, *, propagation: str = "Background"
    ) -> dict:
        info, _ = self._info(kind)
        return self._call(
            lambda: clone(self.store.delete(info.kind, name, namespace, propagation=propagation))
        )

    def patch(
        self,
        kind: str,
        name: str,
        patch: dict | builtins.list,
        namespace: str | None = None,
        subresource: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> dict:
        """Merge patch (or ``patch_type="json"``/``"strategic"``); ``subresource="status"`` writes status."""
        if not isinstance(patch, (dict, list)):
            raise BadRequest(f"a patch must be an object or a list of operations, got {type(patch).__name__}")
        check_decoded(patch)
        info, v = self._info(kind)
        return self._call(
            lambda: scheme.render(
                info,
                self.store.patch(
                    info.kind,
                    name,
                    patch,
                    namespace,
                    patch_type=patch_type,
                    subresource=subresource,
                    api_version=v,
                    admission=scheme.ADMIT,
                ),
                v,
            )
        )

    def logs(self, pod: str, namespace: str = "default", container: str | None = None) -> str:
        """A pod's log; ``pod`` may also be ``job/<name>`` (the job's first pod), as kubectl takes it."""
        if pod.startswith("job/"):
            job = pod.split("/", 1)[1]
            pods = self.list("Pod", namespace, label_selector=f"job-name={job}")
            if not pods:
                raise NotFound(f'no pods found for job "{job}"')
            pod = pods[0]["metadata"]["name"]
        return self.runtime.logs.read(namespace, pod, container)

    # -- time -------------------------------------------------------------------------------------
    def advance(self, seconds: float) -> int:
        """Run everything due in the next ``seconds`` (virtual: instantly; real: waits that long)."""
        loop = self.core.loop
        if isinstance(loop, RealtimeLoop):
            WallClock().sleep(seconds)
            return 0
        return loop.run_until(loop.now() + seconds)

    def run_until_idle(self, max_seconds: float = 8 * 86400) -> int:
        """Run until nothing is scheduled any more, or ``max_seconds`` of (virtual) time have passed."""
        loop = self.core.loop
        if isinstance(loop, RealtimeLoop):
            deadline = loop.now() + max_seconds
            while loop.now() < deadline:
                nxt = loop.next_time()
                if (nxt is None or nxt > loop.now() + 1.0) and not loop.has_inbox():
                    return 0
                WallClock().sleep(0.05)
            return 0
        return loop.run_until_idle(max_seconds)

    # -- GKE ----------------------------------------------------------------------------------------
    def gke(self, method: str, path: str, body: dict | str | None = None) -> dict:
        """Call the GKE REST API in-process (``container.googleapis.com/v1`` paths and JSON bodies)."""
        data = json.loads(body) if isinstance(body, str) else body
        status, out = self._call(lambda: self.core.gke(method.upper(), path, data))
        if status >= 400:
            err = out.get("error", {})
            raise CloudError(status, err.get("status", "UNKNOWN"), err.get("message", ""))
        return out

    def billing(self) -> dict[str, Any]:
        """Cost so far of the current GKE cluster (USD): total, node-hours, and per pool, provisioning model,
        Kueue flavor and job. Open node records are valued up to now. Empty for a twin without GKE."""
        from fractions import Fraction

        def run() -> dict[str, Any]:
            name = self.runtime.name
            flush_billing(self.runtime.manager.controllers)
            for obj in self.core.project.list("GkeCluster"):
                spec = obj.get("spec") or {}
                if spec.get("name") == name:
                    project = obj["metadata"]["name"].split(".")[0]
                    flavors = self.store.list("ResourceFlavor")
                    return billing_of(
                        self.core.project,
                        project,
                        spec.get("location") or spec.get("zone", ""),
                        name,
                        self.now(),
                        flavors,
                    )
            return {}

        def plain(v: Any) -> Any:
            if isinstance(v, Fraction):
                return float(v)
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            return v

        return plain(self._call(run))

    def metrics(self) -> str:
        """The current cluster's ``/metrics`` page (Prometheus text format 0.0.4): Kueue's metrics with Kueue's
        names, labels and buckets, and the twin's ``flexq_`` ones, valued on the twin's clock."""
        from prometheus_client import generate_latest

        return self._call(lambda: generate_latest(self.runtime.metrics).decode())

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample of the current cluster's metrics (None when absent), as Prometheus names it:
        ``twin.metric("kueue_admitted_workloads_total", {"cluster_queue": "cluster-queue", ...})``. Labels
        left out match any value; the matching samples are summed."""
        want = labels or {}

        def run() -> float | None:
            found: float | None = None
            for fam in self.runtime.metrics.collect():
                for s in fam.samples:
                    if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
                        found = (found or 0.0) + s.value
            return found

        return self._call(run)

    def eta(self, job: str | None = None, namespace: str | None = None) -> Any:
        """The ETAs of the attached ETA service (``flexq.eta.service.EtaService(twin).start()``; ``flexq up`` attaches
        one): the last ``Forecast``, or with ``job`` that job's ``JobEta`` (None when it does not wait). For a
        one-off estimate without a service: ``flexq.eta.estimate(flexq.eta.state_from_twin(twin))``."""
        service = self.core.forecasts
        if service is None:
            raise BadRequest(
                "no ETA service is attached to this twin: flexq.eta.service.EtaService(twin).start(), or "
                "flexq.eta.estimate(flexq.eta.state_from_twin(twin)) once"
            )
        fc = service.latest()
        if job is None or fc is None:
            return fc
        return fc.find(job.split("/", 1)[-1], namespace)

    # -- lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop controllers, executors and the loop; flush state."""
        self.core.close()

    def discard(self) -> None:
        """``close``, then drop the twin's state (its objects, history and timers) so that it is freed at once,
        without a full collection: for a twin no one reads again."""
        self.core.discard()

    def __enter__(self) -> Twin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def executor_note(executor: str) -> str:
    """One line saying which executor runs pods and what that means for untrusted submitters (``flexq up``
    prints it; docs/security.md says more)."""
    if executor != "ray":
        return "executor: simulated - no pod's code runs on this machine: safe with untrusted submitters"
    if confine.abi() > 0:
        return (
            "executor: real Ray - RayJob entrypoints and Ray tasks run here as your user, confined by Landlock "
            "to their pod's own files (never the twin's home or yours), not in the network: let only people "
            "you would let run code on this machine create RayJobs or RayClusters (docs/security.md)"
        )
    return (
        "executor: real Ray - RayJob entrypoints run here as your user UNCONFINED (this kernel has no "
        "Landlock): whoever may create a RayJob can read your files and the twin's admin token; use "
        "--executor simulated with untrusted submitters (docs/security.md)"
    )
