"""The CLI's only way into a cluster: the official ``kubernetes`` Python client, from a kubeconfig.

Owns: ``connect(kubeconfig, context)`` (an ``ApiClient``; works against the twin's Kubernetes face and a
real GKE cluster alike, exec plugins such as ``gke-gcloud-auth-plugin`` included), ``list_objects``
(custom resources as plain dicts, trying the served API versions in order), ``list_core`` (core/v1 lists as
plain camelCase dicts), ``fetch_snapshot`` (what ``flexq status`` needs), ``apply_objects`` (create, or
replace what exists) and ``job_pods`` / ``stream_logs`` for ``flexq logs``.
Imports ``kubernetes`` lazily so the rest of the CLI works without it. Must not import flexq.assembly,
flexq.twin or flexq.http.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flexq.cli.status import FALLBACK_MOVED, Snapshot

__all__ = [
    "connect",
    "list_objects",
    "list_core",
    "fetch_snapshot",
    "apply_objects",
    "job_pods",
    "stream_logs",
    "ClientError",
]

KUEUE = ("kueue.x-k8s.io", ("v1beta2", "v1beta1"))
AUTOSCALING = ("autoscaling.x-k8s.io", ("v1", "v1beta1"))
RAY = ("ray.io", ("v1",))
BATCH = ("batch", ("v1",))


class ClientError(RuntimeError):
    """A readable failure talking to the cluster (no kubeconfig, refused connection, 4xx/5xx)."""


def connect(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """An ``ApiClient`` for the kubeconfig (default: ``$KUBECONFIG`` or ``~/.kube/config``) and context."""
    try:
        from kubernetes import client, config
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ClientError("the 'kubernetes' Python package is needed: pip install kubernetes") from exc
    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    except Exception as exc:  # the loader raises ConfigException, TypeError, FileNotFoundError ...
        raise ClientError(f"cannot load kubeconfig: {exc}") from exc
    # A ``tokenFile`` is read verbatim by the client (and again before each request); kubectl trims the
    # trailing newline, so do the same after every refresh (the loader's hook re-installs itself: wrap again).
    hook = cfg.refresh_api_key_hook

    def refresh(c: Any) -> None:
        nonlocal hook
        if hook is not None:
            hook(c)
            hook = c.refresh_api_key_hook if c.refresh_api_key_hook is not refresh else hook
            c.refresh_api_key_hook = refresh
        c.api_key = {k: v.strip() if isinstance(v, str) else v for k, v in (c.api_key or {}).items()}

    cfg.refresh_api_key_hook = refresh
    return client.ApiClient(cfg)


def _api_error(exc: Exception) -> ClientError:
    status, reason, body = getattr(exc, "status", None), getattr(exc, "reason", ""), getattr(exc, "body", "")
    if status is None:
        return ClientError(f"cannot reach the cluster: {exc}")
    import json

    try:
        msg = json.loads(body).get("message") or reason
    except (ValueError, TypeError, AttributeError):
        msg = reason
    return ClientError(f"{status} {msg}")


def list_objects(
    api: Any,
    group_versions: tuple[str, tuple[str, ...]],
    plural: str,
    namespace: str | None = None,
    *,
    missing_ok: bool = True,
) -> list[dict]:
    """Items of a custom resource (first served version wins); [] when the kind is not served at all."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    group, versions = group_versions
    co = client.CustomObjectsApi(api)
    for v in versions:
        try:
            if namespace:
                out = co.list_namespaced_custom_object(group, v, namespace, plural)
            else:
                out = co.list_cluster_custom_object(group, v, plural)
            return list(out.get("items") or [])
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise _api_error(exc) from exc
        except Exception as exc:  # urllib3 connection errors
            raise _api_error(exc) from exc
    if missing_ok:
        return []
    raise ClientError(f"the cluster does not serve {plural}.{group}")


def list_core(api: Any, method: str, **kwargs: Any) -> list[dict]:
    """A core/v1 list (``list_node``, ``list_namespaced_pod`` ...) as plain camelCase dicts."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        out = getattr(client.CoreV1Api(api), method)(**kwargs)
    except ApiException as exc:
        raise _api_error(exc) from exc
    except Exception as exc:
        raise _api_error(exc) from exc
    return [api.sanitize_for_serialization(item) for item in out.items]


def fetch_snapshot(api: Any, namespace: str | None = None) -> Snapshot:
    """Workloads (in ``namespace`` or all), their ProvisioningRequests, Nodes and ResourceFlavors."""
    workloads = list_objects(api, KUEUE, "workloads", namespace, missing_ok=False)
    prs = list_objects(api, AUTOSCALING, "provisioningrequests", namespace)
    flavors = list_objects(api, KUEUE, "resourceflavors")
    try:
        nodes = list_core(api, "list_node")
    except ClientError:
        nodes = []  # a namespace-scoped user may not list nodes; costs then come from the catalog alone
    # jobs that carry a note from flexq's fallback (fallback.flexq.dev/moved): shown in the WHY column
    jobs = [
        {**j, "kind": kind}
        for plural, kind, gv in (("rayjobs", "RayJob", RAY), ("jobs", "Job", BATCH))
        for j in _list_quietly(api, gv, plural, namespace)
        if FALLBACK_MOVED in ((j.get("metadata") or {}).get("annotations") or {})
    ]
    return Snapshot(workloads=workloads, provisioning_requests=prs, nodes=nodes, flavors=flavors, jobs=jobs)


def _list_quietly(
    api: Any, gv: tuple[str, tuple[str, ...]], plural: str, namespace: str | None
) -> list[dict]:
    try:
        return list_objects(api, gv, plural, namespace)
    except ClientError:  # a user who may not list jobs still gets the table
        return []


def apply_objects(api: Any, objs: list[dict], namespace: str) -> list[str]:
    """Create each object (ConfigMap or RayJob); an existing ConfigMap is replaced, an existing RayJob is an
    error (a finished job is not resubmitted by changing it). Returns ``kind/name created|configured``."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core, co = client.CoreV1Api(api), client.CustomObjectsApi(api)
    done = []
    for obj in objs:
        name, kind = obj["metadata"]["name"], obj["kind"]
        try:
            if kind == "ConfigMap":
                try:
                    core.create_namespaced_config_map(namespace, obj)
                    done.append(f"configmap/{name} created")
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                    core.replace_namespaced_config_map(name, namespace, obj)
                    done.append(f"configmap/{name} configured")
            elif kind == "RayJob":
                co.create_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", obj)
                done.append(f"rayjob.ray.io/{name} created")
            else:
                raise ClientError(f"cannot apply kind {kind}")
        except ApiException as exc:
            raise _api_error(exc) from exc
    return done


def job_pods(api: Any, job: str, namespace: str) -> list[dict]:
    """Pods of ``job``: a RayJob's submitter Job (label ``job-name``), else a pod of that name."""
    pods = list_core(api, "list_namespaced_pod", namespace=namespace, label_selector=f"job-name={job}")
    if pods:
        return sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "")
    return [
        p for p in list_core(api, "list_namespaced_pod", namespace=namespace) if p["metadata"]["name"] == job
    ]


def stream_logs(
    api: Any, pod: str, namespace: str, *, follow: bool = False, container: str | None = None
) -> Iterator[str]:
    """A pod's log, line by line; with ``follow`` until the container stops."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api)
    kw: dict[str, Any] = {"follow": follow, "_preload_content": False}
    if container:
        kw["container"] = container
    try:
        resp = core.read_namespaced_pod_log(pod, namespace, **kw)
    except ApiException as exc:
        raise _api_error(exc) from exc
    buf = b""
    try:
        for chunk in resp.stream(1024):
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line.decode("utf-8", "replace")
        if buf:
            yield buf.decode("utf-8", "replace")
    finally:
        resp.release_conn()
