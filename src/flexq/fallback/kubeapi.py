"""``ClusterAPI`` over a real Kubernetes API server, through the official ``kubernetes`` Python client.

What ``flexq fallback`` runs against GKE (or against a served twin, through the same kubeconfig): plain REST
calls through the client's ``ApiClient`` (its authentication: kubeconfig tokens, exec plugins such as
``gke-gcloud-auth-plugin``, in-cluster service-account tokens), objects as plain camelCase dicts:

- Kueue's ``kueue.x-k8s.io/v1beta2`` Workloads, LocalQueues, ClusterQueues, ResourceFlavors, AdmissionChecks and
  ProvisioningRequestConfigs; ``autoscaling.x-k8s.io/v1`` ProvisioningRequests; KubeRay's ``ray.io/v1`` RayJobs
  and RayClusters; ``batch/v1`` Jobs; core Pods, Events and ConfigMaps (the policy's state).
- ``replace`` is a PUT carrying the object's ``resourceVersion`` (a concurrent change: ``Conflict``),
  ``merge_patch`` a JSON merge patch, ``delete`` ignores NotFound, ``event`` creates a ``core/v1`` Event
  (source component ``flexq-fallback``; a repeat of the same reason and message on the same object bumps the
  first one's ``count`` and ``lastTimestamp``, as client-go's recorder does).
- The API server's failures become ``flexq.errors`` types (404 ``NotFound``, 409 ``Conflict`` or
  ``AlreadyExists``, 422 ``Invalid``, 403 ``Forbidden`` …) carrying the server's ``Status`` message; an
  unreachable server is an ``ApiError`` saying so.

Imports ``kubernetes`` lazily. The CLI makes the ``ApiClient`` (``flexq.cli.kubeclient.connect`` from a
kubeconfig, or ``in_cluster_client``).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from flexq import errors
from flexq.clock import WallClock, format_time
from flexq.fallback.api import CAPACITY_EVENT_REASONS, ClusterAPI
from flexq.fallback.model import MANAGER

__all__ = ["KINDS", "KubernetesAPI", "in_cluster_client"]


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        return base + (f"/{quote(name, safe='')}" if name else "")


_KUEUE = "kueue.x-k8s.io"
KINDS: dict[str, Resource] = {
    "Workload": Resource(_KUEUE, "v1beta2", "workloads", True),
    "LocalQueue": Resource(_KUEUE, "v1beta2", "localqueues", True),
    "ClusterQueue": Resource(_KUEUE, "v1beta2", "clusterqueues", False),
    "ResourceFlavor": Resource(_KUEUE, "v1beta2", "resourceflavors", False),
    "AdmissionCheck": Resource(_KUEUE, "v1beta2", "admissionchecks", False),
    "ProvisioningRequestConfig": Resource(_KUEUE, "v1beta2", "provisioningrequestconfigs", False),
    "ProvisioningRequest": Resource("autoscaling.x-k8s.io", "v1", "provisioningrequests", True),
    "RayJob": Resource("ray.io", "v1", "rayjobs", True),
    "RayCluster": Resource("ray.io", "v1", "rayclusters", True),
    "Job": Resource("batch", "v1", "jobs", True),
    "Pod": Resource("", "v1", "pods", True),
    "Node": Resource("", "v1", "nodes", False),
    "Event": Resource("", "v1", "events", True),
    "ConfigMap": Resource("", "v1", "configmaps", True),
    "Lease": Resource("coordination.k8s.io", "v1", "leases", True),
}
_ERRORS: dict[int, type[errors.ApiError]] = {
    400: errors.BadRequest,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    405: errors.MethodNotAllowed,
    409: errors.Conflict,
    410: errors.Gone,
    413: errors.RequestEntityTooLarge,
    415: errors.UnsupportedMediaType,
    422: errors.Invalid,
    500: errors.InternalError,
}
_REQUIRED = {"Workload", "LocalQueue", "ClusterQueue", "ResourceFlavor"}
# pods that are done can no longer be stocked out (what StoreAPI's pod cache leaves out too)
_LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


def in_cluster_client() -> Any:
    """An ``ApiClient`` for the pod this runs in (its service account's token and the cluster's CA)."""
    from kubernetes import client, config

    cfg = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=cfg)
    except config.ConfigException as exc:
        raise errors.ApiError(f"not running in a cluster: {exc}") from exc
    return client.ApiClient(cfg)


def _error(status: int, body: Any, reason: str = "") -> errors.ApiError:
    try:
        st = json.loads(body) if isinstance(body, (str, bytes)) and body else {}
    except ValueError:
        st = {}
    if not isinstance(st, dict):
        st = {}
    message = st.get("message") or (body.decode() if isinstance(body, bytes) else str(body or "")) or reason
    details = st.get("details") or {}
    cls = _ERRORS.get(status, errors.InternalError if status >= 500 else errors.ApiError)
    if status == 409 and st.get("reason") == "AlreadyExists":
        cls = errors.AlreadyExists
    causes = [
        errors.Cause(c.get("field", ""), c.get("reason", ""), c.get("message", ""))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]
    err = cls(
        message,
        kind=details.get("kind", ""),
        name=details.get("name", ""),
        group=details.get("group", ""),
        causes=causes,
    )
    if cls is errors.ApiError or cls is errors.InternalError:
        err.status = status  # keep what the server said (429, 503 …) on the base types
    return err


class KubernetesAPI(ClusterAPI):
    """The fallback policy's reads and writes as Kubernetes API calls (see the module docstring)."""

    def __init__(self, api_client: Any, *, clock: Any = None, timeout: float = 30.0) -> None:
        self.client = api_client
        self.clock = clock or WallClock()
        self.timeout = timeout
        self.host = socket.gethostname()
        self._events: dict[
            tuple[str, str, str, str], str
        ] = {}  # (object uid, type, reason, message) -> Event

    # -- transport ---------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> dict:
        """One call; the decoded JSON answer, or a ``flexq.errors.ApiError``."""
        from kubernetes.client.rest import ApiException

        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            _m, full, hdrs, data, _ = self.client.param_serialize(
                method,
                path,
                query_params=sorted((query or {}).items()) or None,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = self.client.call_api(
                _m, full, header_params=hdrs, body=data, _request_timeout=self.timeout
            )
            raw = resp.read() if hasattr(resp, "read") else resp.data
        except ApiException as exc:
            raise _error(exc.status or 0, exc.body, exc.reason or "") from exc
        except Exception as exc:  # urllib3's connection errors, TLS failures
            raise errors.ApiError(
                f"cannot reach the cluster at {self.client.configuration.host}: {exc}"
            ) from exc
        status = getattr(resp, "status", 200)
        if status >= 400:
            raise _error(status, raw)
        return json.loads(raw) if raw else {}

    @staticmethod
    def resource(kind: str) -> Resource:
        try:
            return KINDS[kind]
        except KeyError:
            raise errors.NotFound(f'the fallback does not use the kind "{kind}"') from None

    def _items(self, kind: str, res: Resource, doc: dict) -> builtins.list[dict]:
        items = doc.get("items") or []
        for it in items:  # list items come without apiVersion/kind
            it.setdefault("apiVersion", res.api_version)
            it.setdefault("kind", kind)
        return items

    # -- ClusterAPI --------------------------------------------------------------------------------
    def now(self) -> float:
        return float(self.clock.now())

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[dict]:
        res = self.resource(kind)
        query = {"fieldSelector": _LIVE_PODS} if kind == "Pod" else None
        try:
            doc = self.request("GET", res.path(namespace), query=query)
        except errors.NotFound as exc:
            if kind in _REQUIRED:  # without Kueue's v1beta2 API the policy would silently see nothing
                raise errors.NotFound(
                    f"the cluster does not serve {res.plural}.{res.group}/{res.version}: "
                    "the fallback needs Kueue 0.15 or later"
                ) from exc
            return []  # a kind this cluster does not serve (no KubeRay, no ProvisioningRequests)
        return self._items(kind, res, doc)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        res = self.resource(kind)
        try:
            return self.request("GET", res.path(namespace, name))
        except errors.NotFound:
            return None

    def capacity_events(self, namespace: str) -> builtins.list[dict]:
        res = KINDS["Event"]
        out: builtins.list[dict] = []
        for reason in CAPACITY_EVENT_REASONS:
            doc = self.request("GET", res.path(namespace), query={"fieldSelector": f"reason={reason}"})
            out += self._items("Event", res, doc)
        return out

    def _path_of(self, obj: dict) -> str:
        md = obj.get("metadata") or {}
        return self.resource(obj.get("kind", "")).path(md.get("namespace"), md.get("name"))

    def replace(self, obj: dict) -> dict:
        return self.request("PUT", self._path_of(obj), body=obj)

    def merge_patch(self, kind: str, name: str, namespace: str | None, patch: dict) -> dict:
        return self.request(
            "PATCH",
            self.resource(kind).path(namespace, name),
            body=patch,
            content_type="application/merge-patch+json",
        )

    def delete(self, kind: str, name: str, namespace: str | None) -> None:
        with contextlib.suppress(errors.NotFound):
            self.request(
                "DELETE",
                self.resource(kind).path(namespace, name),
                body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
            )

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        md = obj.get("metadata") or {}
        ns = md.get("namespace") or "default"
        now = format_time(self.now())
        key = (md.get("uid", ""), type_, reason, message)
        res = KINDS["Event"]
        name = self._events.get(key)
        if name is not None:  # the same event again: count it, as client-go's recorder aggregates
            ev = self.get("Event", name, ns)
            if ev is not None:
                try:
                    self.merge_patch(
                        "Event", name, ns, {"count": int(ev.get("count") or 1) + 1, "lastTimestamp": now}
                    )
                    return
                except errors.ApiError:
                    pass
        name = f"{md.get('name', 'object')}.{int(self.now() * 1e9):x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": md.get("name", ""),
                "namespace": ns,
                "uid": md.get("uid", ""),
                "resourceVersion": md.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": MANAGER, "host": self.host},
            "reportingComponent": MANAGER,
            "reportingInstance": self.host,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.request("POST", res.path(ns), body=body)
        self._events[key] = name

    def node_pools(self) -> builtins.list[dict]:
        """A real cluster's node pools are in the GKE API, which this client does not call (it holds only a
        Kubernetes token): the forecast infers them, and ``--pool-limit POOL=N`` gives their maximum sizes."""
        return []

    def load_state(self, namespace: str, name: str) -> dict[str, str]:
        cm = self.get("ConfigMap", name, namespace)
        return dict((cm or {}).get("data") or {})

    def create(self, obj: dict) -> dict:
        res = self.resource(obj["kind"])
        return self.request("POST", res.path(obj["metadata"].get("namespace")), body=obj)

    def save_state(self, namespace: str, name: str, data: dict[str, str]) -> None:
        res = KINDS["ConfigMap"]
        cm = self.get("ConfigMap", name, namespace)
        if cm is None:
            self.request(
                "POST",
                res.path(namespace),
                body={
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "labels": {"app.kubernetes.io/managed-by": MANAGER},
                    },
                    "data": data,
                },
            )
        elif (cm.get("data") or {}) != data:
            cm["data"] = data
            self.request("PUT", res.path(namespace, name), body=cm)
