"""The CLI's only way into a cluster: the official ``kubernetes`` Python client, from a kubeconfig, and its reads.

Owns: ``connect(kubeconfig, context)`` (an ``ApiClient``; works against the twin's Kubernetes face and a
real GKE cluster alike, exec plugins such as ``gke-gcloud-auth-plugin`` included; a missing kubeconfig or
context is said with what to do: ``flexq up``, ``eval "$(flexq env)"``, ``kubectl config use-context
flexq``), ``ClientError`` and ``api_error`` (a failure said plainly: where, why, what to do), ``list_objects``
(custom resources as plain dicts, trying the served API versions in order), ``list_core`` and ``list_core_path``
(core/v1 lists as plain camelCase dicts), ``get_json`` (a GET as the server's JSON), ``fetch_snapshot`` (what
``flexq status`` needs), ``fetch_cluster_state`` (what the ETA reads, as a ``ClusterState``), ``served_forecast``
(a twin's last forecast of its waiting jobs' starts, ``GET /flexq/eta``: what its ETA service keeps, read instead
of computed), ``check_not_placeholder`` (refuses to write to a twin's root API before it has a GKE cluster: what is
written there is hidden once the first cluster exists) and what a tutorial user meets on Kueue 0.20
(``queues_refused_as_v1beta1``). A job's writes and logs are ``flexq.cli.jobclient``'s.
Imports ``kubernetes`` lazily so the rest of the CLI works without it. Must not import flexq.assembly,
flexq.twin or flexq.http.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flexq.api.kueue_versions import from_served
from flexq.cli.status import FALLBACK_MOVED, StatusSnapshot

__all__ = [
    "connect",
    "list_objects",
    "list_core",
    "list_core_path",
    "get_json",
    "fetch_snapshot",
    "fetch_cluster_state",
    "served_forecast",
    "check_not_placeholder",
    "on_placeholder",
    "queues_refused_as_v1beta1",
    "api_error",
    "ClientError",
]

KUEUE = ("kueue.x-k8s.io", ("v1beta2", "v1beta1"))
AUTOSCALING = ("autoscaling.x-k8s.io", ("v1", "v1beta1"))
RAY = ("ray.io", ("v1",))
BATCH = ("batch", ("v1",))


class ClientError(RuntimeError):
    """A readable failure talking to the cluster (no kubeconfig, refused connection, 4xx/5xx)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status, when the cluster answered


TWIN_HINT = 'start the twin with `flexq up` and point kubectl at it with `eval "$(flexq env)"`'


def _kubeconfig_problem(kubeconfig: str | None, context: str | None, exc: Exception) -> str:
    """What is wrong with the kubeconfig, said with what to do (the loader's own words are cryptic:
    "Invalid kube-config file. Expected object with name  in … contexts list")."""
    import yaml

    raw = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    paths = [Path(p).expanduser() for p in raw.split(os.pathsep) if p]
    found = [p for p in paths if p.is_file()]
    shown = os.pathsep.join(str(p) for p in paths)
    if not found:
        where = (
            "--kubeconfig" if kubeconfig else ("$KUBECONFIG" if os.environ.get("KUBECONFIG") else "default")
        )
        return f"no kubeconfig at {shown} ({where}): {TWIN_HINT}, or pass --kubeconfig for another cluster"
    contexts: list[str] = []
    current = ""
    for path in found:
        try:
            cfg = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as err:
            return f"cannot read kubeconfig {path}: {str(err)[:200]}"
        if not isinstance(cfg, dict):
            return f"kubeconfig {path} is not a kubeconfig (a YAML mapping with contexts)"
        contexts += [c.get("name", "") for c in cfg.get("contexts") or [] if isinstance(c, dict)]
        current = current or str(cfg.get("current-context") or "")
    wanted = context or current
    have = ", ".join(sorted(set(contexts))) or "none"
    use = "kubectl config use-context flexq" if "flexq" in contexts else TWIN_HINT
    if not wanted:
        return f"kubeconfig {shown} names no current context (its contexts: {have}): {use}, or pass --context"
    if wanted not in contexts:
        how = "--context" if context else "its current context"
        return f'kubeconfig {shown} has no context "{wanted}" ({how}; its contexts: {have}): {use}'
    return f"cannot load kubeconfig {shown}: {str(exc)[:300]}"


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
        raise ClientError(_kubeconfig_problem(kubeconfig, context, exc)) from exc
    # A ``tokenFile`` is read verbatim by the client (and again before each request); kubectl trims the
    # trailing newline, so do the same after every refresh (the loader's hook re-installs itself: wrap again).
    hook: Callable[[Any], None] | None = cfg.refresh_api_key_hook

    def refresh(c: Any) -> None:
        nonlocal hook
        if hook is not None:
            hook(c)
            hook = c.refresh_api_key_hook if c.refresh_api_key_hook is not refresh else hook
            c.refresh_api_key_hook = refresh
        c.api_key = {k: v.strip() if isinstance(v, str) else v for k, v in (c.api_key or {}).items()}

    cfg.refresh_api_key_hook = refresh
    return client.ApiClient(cfg)


def _unreachable(exc: Exception) -> ClientError:
    """A connection that failed, said plainly: where, why, and (for a loopback server: a twin) what to do."""
    text = str(getattr(exc, "reason", None) or exc)
    why = "connection refused" if "refused" in text.lower() else text.rsplit(": ", 1)[-1][:200]
    m = re.search(r"host='([^']*)', port=(\d+)", text)
    host = f"{m.group(1)}:{m.group(2)}" if m else ""
    hint = ""
    if m and m.group(1) in ("127.0.0.1", "localhost", "::1"):
        hint = (
            f"; if it is flexq's twin, it is not running there: {TWIN_HINT} (a twin started again on another "
            "port needs the eval again)"
        )
    return ClientError(f"cannot reach the cluster{f' at {host}' if host else ''}: {why}{hint}")


def api_error(exc: Exception) -> ClientError:
    status, reason, body = getattr(exc, "status", None), getattr(exc, "reason", ""), getattr(exc, "body", "")
    if status is None or status == 0:
        return _unreachable(exc)
    import json

    try:
        msg = json.loads(body).get("message") or reason
    except (ValueError, TypeError, AttributeError):
        msg = reason
    return ClientError(f"{status} {msg}", status=status)


def get_json(
    api: Any, path: str, query: list[tuple[str, str]] | None = None, accept: str = "application/json"
) -> Any:
    """``GET path`` as the server's JSON, decoded once (orjson): no typed models, and none of the generated API
    modules loaded (``CoreV1Api``'s alone takes longer to import than 5,000 Workloads take to list). The
    kubeconfig's credentials as every call's; a refusal is a ClientError with the API's own message."""
    import orjson

    try:
        method, url, headers, _body, _post = api.param_serialize(
            "GET",
            path,
            query_params=query or None,
            header_params={"Accept": accept},
            auth_settings=["BearerToken"],
        )
        resp = api.call_api(method, url, header_params=headers)
        resp.read()
    except Exception as exc:  # urllib3 connection errors, an exec plugin that fails
        raise api_error(exc) from exc
    if not 200 <= resp.status < 300:  # worded as api_error words the client's ApiException
        try:
            message = orjson.loads(resp.data).get("message") or resp.reason
        except (orjson.JSONDecodeError, AttributeError):
            message = resp.reason
        raise ClientError(f"{resp.status} {message}", status=resp.status)
    try:
        return orjson.loads(resp.data)
    except orjson.JSONDecodeError as exc:
        raise ClientError(f"the server's answer to GET {path} is not JSON: {exc}") from None


def list_objects(
    api: Any,
    group_versions: tuple[str, tuple[str, ...]],
    plural: str,
    namespace: str | None = None,
    *,
    missing_ok: bool = True,
) -> list[dict]:
    """Items of a custom resource (first served version wins); [] when the kind is not served at all."""
    group, versions = group_versions
    for v in versions:
        where = f"namespaces/{namespace}/" if namespace else ""
        try:
            out = get_json(api, f"/apis/{group}/{v}/{where}{plural}")
        except ClientError as exc:
            if exc.status == 404:
                continue
            raise
        return list(out.get("items") or [])
    if missing_ok:
        return []
    hint = " (is Kueue installed?)" if group == KUEUE[0] else ""
    raise ClientError(f"the cluster does not serve {plural}.{group}{hint}")


def list_core(api: Any, method: str, **kwargs: Any) -> list[dict]:
    """A core/v1 list (``list_node``, ``list_namespaced_pod`` ...) as plain camelCase dicts: the server's JSON
    as sent (not decoded into the client's typed models and back, which costs seconds for thousands of Events)."""
    import json

    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        resp = getattr(client.CoreV1Api(api), method)(_preload_content=False, **kwargs)
        out = json.loads(resp.data)
    except ApiException as exc:
        raise api_error(exc) from exc
    except Exception as exc:
        raise api_error(exc) from exc
    return list(out.get("items") or [])


def list_core_path(api: Any, plural: str, namespace: str | None = None) -> list[dict]:
    """A core/v1 list (``nodes``, ``events`` ...), cluster-wide or in ``namespace``, as the server's JSON."""
    where = f"namespaces/{namespace}/" if namespace else ""
    return list(get_json(api, f"/api/v1/{where}{plural}").get("items") or [])


def fetch_snapshot(api: Any, namespace: str | None = None) -> StatusSnapshot:
    """Workloads (in ``namespace`` or all), their ProvisioningRequests, Nodes and ResourceFlavors."""
    workloads = list_objects(api, KUEUE, "workloads", namespace, missing_ok=False)
    prs = list_objects(api, AUTOSCALING, "provisioningrequests", namespace)
    flavors = list_objects(api, KUEUE, "resourceflavors")
    try:
        nodes = list_core_path(api, "nodes")
    except ClientError:
        nodes = []  # a namespace-scoped user may not list nodes; costs then come from the catalog alone
    # jobs that carry a note from flexq's fallback (fallback.flexq.dev/moved): shown in the WHY column; only
    # their metadata is read (a Table of them with each row's PartialObjectMetadata, as kubectl asks: 5,000
    # RayJobs' specs are most of a cluster's bytes)
    jobs = [
        {**j, "kind": kind}
        for plural, kind, gv in (("rayjobs", "RayJob", RAY), ("jobs", "Job", BATCH))
        for j in _metadata_quietly(api, gv, plural, namespace)
        if FALLBACK_MOVED in ((j.get("metadata") or {}).get("annotations") or {})
    ]
    return StatusSnapshot(
        workloads=workloads, provisioning_requests=prs, nodes=nodes, flavors=flavors, jobs=jobs
    )


ETA_PATH = (
    "/flexq/eta"  # flexq.http.app.ETA_PATH: a served twin's last forecast (the CLI imports no flexq.http)
)


TWIN_PATH = "/flexq/twin"  # flexq.http.app.TWIN_PATH: what a served twin declares of itself


def _get_twin_path(api: Any, path: str) -> tuple[int, Any]:
    """``GET path`` (a served twin's non-resource URL) through ``api``: (status, the JSON body or None)."""
    import orjson

    try:
        method, url, headers, _body, _post = api.param_serialize(
            "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
        )
        resp = api.call_api(method, url, header_params=headers)
        resp.read()
    except Exception as exc:  # urllib3 connection errors
        raise api_error(exc) from exc
    if resp.status != 200:
        return resp.status, None
    try:
        return 200, orjson.loads(resp.data)
    except orjson.JSONDecodeError:
        return 200, None  # not a twin's answer


def served_declaration(api: Any) -> dict | None:
    """What a served twin declares of itself (``GET /flexq/twin``: its CapacityProfile in force, its executor;
    ``flexq.forecast.declared``), or None (a real cluster, or a user who may not read it)."""
    _status, doc = _get_twin_path(api, TWIN_PATH)
    return doc if isinstance(doc, dict) and isinstance(doc.get("capacityProfile"), dict) else None


def served_forecast(api: Any) -> dict | None:
    """The last forecast the cluster keeps of its waiting jobs' starts (a served twin's ETA service, ``GET
    /flexq/eta``), as JSON; None when it keeps none (a real cluster, a twin without an ETA service, a user who
    may not read it). A ClientError with status 503 when it keeps one but has not made it yet."""
    status, doc = _get_twin_path(api, ETA_PATH)
    if status == 503:
        raise ClientError("503 the twin's ETA service has not made its first forecast yet", status=503)
    # 404: no ETA service, or not a twin; 401/403: the user may not read it
    return doc if isinstance(doc, dict) and isinstance(doc.get("jobs"), dict) else None


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"  # kubectl get's Accept


def _metadata_quietly(
    api: Any, gv: tuple[str, tuple[str, ...]], plural: str, namespace: str | None
) -> list[dict]:
    """The objects' metadata (``{"metadata": ...}`` each), from a ``Table`` with ``includeObject=Metadata`` (the
    server's own default for a Table); a server that answers with the list itself is read as a list. [] when the
    kind is not served or the user may not list it."""
    group, versions = gv
    where = f"namespaces/{namespace}/" if namespace else ""
    for v in versions:
        try:
            out = get_json(
                api, f"/apis/{group}/{v}/{where}{plural}", [("includeObject", "Metadata")], accept=TABLE
            )
        except ClientError as exc:
            if exc.status == 404:
                continue
            return []  # a user who may not list jobs still gets the table
        if out.get("kind") == "Table":
            return [
                {"metadata": (r.get("object") or {}).get("metadata") or {}} for r in out.get("rows") or []
            ]
        return list(out.get("items") or [])
    return []


PLACEHOLDER = (
    "the twin has no GKE cluster yet: create one first (`gcloud container clusters create ...` as in the "
    "tutorial, or `flexq tutorial setup`). Until then its Kubernetes API serves a placeholder cluster with no "
    "nodes, whose objects are hidden once a GKE cluster exists"
)


def on_placeholder(api: Any) -> bool:
    """Whether ``api`` is a twin's root Kubernetes API while the twin has no GKE cluster.

    Until the first ``gcloud container clusters create``, the twin's root API (the ``flexq`` context) serves a
    placeholder cluster with no nodes; once a GKE cluster exists, the root API serves that cluster, and what
    was written to the placeholder is out of sight. A real cluster has no such state. Only the twin of
    ``$FLEXQ_HOME`` (or ``~/.flexq``) is recognised; when it cannot be asked, the answer is False."""
    found = _twin_clusters(api, root=True)
    return found is not None and not found[1]


def check_not_placeholder(api: Any) -> None:
    """Refuse to write through a twin's root API before it has a GKE cluster (``on_placeholder``): the job
    would be acknowledged, then lost from sight."""
    if on_placeholder(api):
        raise ClientError(f"{PLACEHOLDER}; nothing was created")


def served_versions(api: Any, group: str) -> list[str] | None:
    """The versions the cluster serves of ``group`` (``GET /apis``, as ``kubectl api-versions`` asks); None
    when it cannot be asked."""
    from kubernetes import client

    try:
        groups = client.ApisApi(api).get_api_versions().groups or []
    except Exception:  # an old or unreachable server: say nothing rather than guess
        return None
    return [v.version for g in groups if g.name == group for v in g.versions or []]


# What a user of the tutorial meets on Kueue 0.20 and later, and what to do (flexq status, tutorial, submit).
V1BETA1_GONE = (
    "this cluster's Kueue serves kueue.x-k8s.io/v1beta2 only (Kueue 0.20 and later no longer serve v1beta1, "
    "kueue#14558; 0.20.7 is what the tutorial's unpinned `helm install kueue` gives today), so `kubectl apply` "
    'refused the tutorial\'s dws-tpu-queue.yaml (v1beta1: `no matches for kind "ResourceFlavor" in version '
    '"kueue.x-k8s.io/v1beta1"`) and its queues do not exist. Either apply it converted: `envsubst < '
    "dws-tpu-queue.yaml | flexq convert - | kubectl apply -f -` (`flexq tutorial init` also writes "
    "dws-tpu-queue.v1beta2.yaml), or install Kueue 0.19, which still serves v1beta1: add `--version 0.19.2` to "
    "the tutorial's `helm install kueue` (the twin: `flexq down && flexq up --kueue 0.19.2`)"
)


def v1beta1_gone(api: Any) -> bool:
    """Whether the cluster serves Kueue's v1beta2 but not v1beta1 (Kueue 0.20 and later)."""
    versions = served_versions(api, KUEUE[0])
    return bool(versions) and "v1beta2" in (versions or []) and "v1beta1" not in (versions or [])


def queues_refused_as_v1beta1(api: Any) -> bool:
    """What a tutorial user meets on Kueue 0.20 and later: the cluster serves Kueue's v1beta2 only and has no
    ClusterQueue at all (its v1beta1 configuration was refused). False when either cannot be told."""
    if not v1beta1_gone(api):
        return False
    try:
        return not list_objects(api, (KUEUE[0], ("v1beta2",)), "clusterqueues", missing_ok=False)
    except ClientError:  # a user who may not list ClusterQueues: say nothing rather than guess
        return False


def fetch_cluster_state(
    api: Any,
    node_pools: list[dict] | None = None,
    now: float | None = None,
    *,
    all_events: list[dict] | None = None,
) -> Any:
    """What the ETA reads (``flexq.forecast.state.KINDS``, cluster-wide, read-only), as a ``ClusterState``. Node pools:
    ``node_pools`` (the GKE API's descriptions) when given, else the twin's GKE API when ``api`` is the twin of
    ``$FLEXQ_HOME``, else inferred from what Kubernetes shows (each guess in the state's notes). A kind the
    cluster does not serve reads as empty; a kind the user may not list is refused with the rule it needs.
    ``all_events``: filled with every Event as listed (the state keeps the autoscaler's only), for a caller
    that shows others from the same read (``flexq status``)."""

    from flexq.clock import WallClock
    from flexq.forecast.state import (
        EVENT_REASONS,
        KINDS,
        KUEUE_CONFIG,
        ClusterState,
        infer_pools,
        pools_from_gke,
    )

    st = ClusterState(now=WallClock().now() if now is None else now)
    for attr, group, versions, plural in KINDS:
        try:
            if group == "":
                items = list_core_path(api, plural)
            else:
                items = list_objects(api, (group, versions), plural)
        except ClientError as exc:
            if exc.status == 403:
                raise ClientError(
                    f"{exc}: the ETA reads {plural}{'.' + group if group else ''} cluster-wide "
                    "(`flexq eta manifests` prints the read-only ClusterRole it needs)",
                    status=403,
                ) from None
            raise
        if attr == "events":
            if all_events is not None:
                all_events.extend(items)
            items = [e for e in items if e.get("reason") in EVENT_REASONS]
        if attr in ("rayjobs", "batch_jobs"):
            kind = "RayJob" if attr == "rayjobs" else "Job"
            items = [{**i, "kind": kind} for i in items]
        setattr(st, attr, items)
    try:
        st.kueue_config = get_json(api, f"/api/v1/namespaces/{KUEUE_CONFIG[0]}/configmaps/{KUEUE_CONFIG[1]}")
    except ClientError as exc:
        if exc.status not in (403, 404):
            raise
    # the release: a cluster tells which kueue.x-k8s.io versions it serves, not which Kueue it runs
    served = served_versions(api, KUEUE[0])
    release = from_served(served)
    if release is not None:
        st.kueue_version = release.version
        st.notes.append(
            f"Kueue taken as {release.version}: the newest release flexq models that serves kueue.x-k8s.io "
            f"{', '.join(sorted(served or []))}, as this cluster does"
        )
    zones = {
        ((n.get("metadata") or {}).get("labels") or {}).get("topology.kubernetes.io/zone", "")
        for n in st.nodes
    } - {""}
    if zones:
        st.cluster["location"] = sorted(zones)[0]
    if node_pools is None:
        node_pools = _twin_node_pools(api, st)
    st.node_pools = pools_from_gke(node_pools) if node_pools else infer_pools(st)
    st.twin = served_declaration(api)  # a served twin's CapacityProfile and executor (None: a real cluster)
    return st


def _twin_node_pools(api: Any, st: Any) -> list[dict] | None:
    """The node pools of the twin's GKE cluster behind ``api`` (the twin of ``$FLEXQ_HOME``), or None."""
    found = _twin_clusters(api, root=False)
    if found is None:
        return None
    project, clusters = found
    host = api.configuration.host.rstrip("/")
    for c in clusters:
        name, location = c.get("name", ""), c.get("location") or c.get("zone", "")
        if host.endswith(f"/clusters/{name}") or len(clusters) == 1 or not host.count("/clusters/"):
            st.cluster = {"project": project, "location": location, "name": name}
            return list(c.get("nodePools") or [])
    return None


def _twin_clusters(api: Any, *, root: bool) -> tuple[str, list[dict]] | None:
    """The project and GKE clusters of the twin of ``$FLEXQ_HOME`` (or ``~/.flexq``) when ``api`` is that twin's
    root Kubernetes API (``root``) or any of its APIs (a cluster's is below the root's); None when it is not the
    twin, or the twin cannot be asked."""
    from flexq.cli.lifecycle import Home, TwinError, gke_request, running

    home = Home.resolve(None)
    info = running(home)
    host, url = api.configuration.host.rstrip("/"), str((info or {}).get("url", "")).rstrip("/")
    if not info or not (host == url if root else host.startswith(url)):
        return None
    try:
        clusters = gke_request(home, "GET", f"/v1/projects/{home.project()}/locations/-/clusters")
    except TwinError:
        return None
    return home.project(), list(clusters.get("clusters") or [])
