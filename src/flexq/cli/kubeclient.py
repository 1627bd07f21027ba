"""The CLI's only way into a cluster: the official ``kubernetes`` Python client, from a kubeconfig.

Owns: ``connect(kubeconfig, context)`` (an ``ApiClient``; works against the twin's Kubernetes face and a
real GKE cluster alike, exec plugins such as ``gke-gcloud-auth-plugin`` included; a missing kubeconfig or
context is said with what to do: ``flexq up``, ``eval "$(flexq env)"``, ``kubectl config use-context
flexq``), ``list_objects`` (custom resources as plain dicts, trying the served API versions in order),
``list_core`` and ``list_core_path`` (core/v1 lists as plain camelCase dicts), ``get_json`` (a GET as the
server's JSON), ``fetch_snapshot`` (what ``flexq status`` needs),
``served_forecast`` (a twin's last forecast of its waiting jobs' starts, ``GET /flexq/eta``: what its ETA
service keeps, read instead of computed), ``check_not_placeholder`` (refuses to write to a twin's root API before it has a GKE cluster: what is
written there is hidden once the first cluster exists), ``submit_objects`` (``flexq submit``: the
LocalQueue must exist, a name that exists is refused without changing anything, the script's ConfigMap
is created or found identical, never replaced), ``find_job`` (a RayJob or Job and its Kueue row, for
``flexq logs``) and ``job_pods`` / ``stream_logs`` for ``flexq logs``.
Imports ``kubernetes`` lazily so the rest of the CLI works without it. Must not import flexq.assembly,
flexq.twin or flexq.http.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flexq.cli.status import FALLBACK_MOVED, Snapshot, WorkloadRow

__all__ = [
    "connect",
    "list_objects",
    "list_core",
    "list_core_path",
    "get_json",
    "fetch_snapshot",
    "served_forecast",
    "check_not_placeholder",
    "on_placeholder",
    "submit_objects",
    "find_job",
    "JobInfo",
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


def _api_error(exc: Exception) -> ClientError:
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
        raise _api_error(exc) from exc
    if not 200 <= resp.status < 300:  # worded as _api_error words the client's ApiException
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
        raise _api_error(exc) from exc
    except Exception as exc:
        raise _api_error(exc) from exc
    return list(out.get("items") or [])


def list_core_path(api: Any, plural: str, namespace: str | None = None) -> list[dict]:
    """A core/v1 list (``nodes``, ``events`` ...), cluster-wide or in ``namespace``, as the server's JSON."""
    where = f"namespaces/{namespace}/" if namespace else ""
    return list(get_json(api, f"/api/v1/{where}{plural}").get("items") or [])


def fetch_snapshot(api: Any, namespace: str | None = None) -> Snapshot:
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
    return Snapshot(workloads=workloads, provisioning_requests=prs, nodes=nodes, flavors=flavors, jobs=jobs)


ETA_PATH = (
    "/flexq/eta"  # flexq.http.app.ETA_PATH: a served twin's last forecast (the CLI imports no flexq.http)
)


def served_forecast(api: Any) -> dict | None:
    """The last forecast the cluster keeps of its waiting jobs' starts (a served twin's ETA service, ``GET
    /flexq/eta``), as JSON; None when it keeps none (a real cluster, a twin without an ETA service, a user who
    may not read it). A ClientError with status 503 when it keeps one but has not made it yet."""
    import orjson

    try:
        method, url, headers, _body, _post = api.param_serialize(
            "GET", ETA_PATH, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
        )
        resp = api.call_api(method, url, header_params=headers)
        resp.read()
    except Exception as exc:  # urllib3 connection errors
        raise _api_error(exc) from exc
    if resp.status == 503:
        raise ClientError("503 the twin's ETA service has not made its first forecast yet", status=503)
    if resp.status != 200:  # 404: no ETA service, or not a twin; 401/403: the user may not read it
        return None
    try:
        doc = orjson.loads(resp.data)
    except orjson.JSONDecodeError:
        return None  # not a twin's answer
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
    from flexq.cli.lifecycle import Home, TwinError, gke_request, running

    home = Home.resolve(None)
    info = running(home)
    if not info or api.configuration.host.rstrip("/") != str(info.get("url", "")).rstrip("/"):
        return False
    try:
        clusters = gke_request(home, "GET", f"/v1/projects/{home.project()}/locations/-/clusters")
    except TwinError:
        return False
    return not clusters.get("clusters")


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


def _exists(fn: Any, *args: Any) -> bool:
    from kubernetes.client.rest import ApiException

    try:
        fn(*args)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise _api_error(exc) from exc
    except Exception as exc:  # urllib3 connection errors
        raise _api_error(exc) from exc


def check_queue(api: Any, queue: str, namespace: str) -> None:
    """The LocalQueue ``queue`` exists in ``namespace``, else a ClientError naming the ones there are (as
    ``flexq simulate`` refuses a trace's unknown queue). A user who may not list LocalQueues is not stopped:
    Kueue itself says so on the Workload."""
    try:
        queues = list_objects(api, KUEUE, "localqueues", namespace, missing_ok=False)
    except ClientError as exc:
        if exc.status == 403:
            return
        raise
    names = sorted(q["metadata"]["name"] for q in queues)
    if queue in names:
        return
    if not names and queues_refused_as_v1beta1(api):
        raise ClientError(f'LocalQueue "{queue}" not found in namespace "{namespace}": {V1BETA1_GONE}')
    there = f"LocalQueues there: {', '.join(names)}" if names else "there is none"
    import difflib

    close = difflib.get_close_matches(queue, names, n=1, cutoff=0.6)
    raise ClientError(
        f'LocalQueue "{queue}" not found in namespace "{namespace}" ({there}): '
        + (
            f"did you mean --queue {close[0]}?"
            if close
            else "pass --queue with one of them"
            if names
            else "create one first (the tutorial's dws-tpu-queue.yaml makes user-queue), or pass -n"
        )
    )


def _free_name(exists: Any, name: str, limit: int = 47) -> str:
    for i in range(2, 100):
        suffix = f"-{i}"
        candidate = name[: limit - len(suffix)].rstrip("-") + suffix
        if not exists(candidate):
            return candidate
    return f"{name[: limit - 4]}-new"


def submit_objects(api: Any, objs: list[dict], namespace: str) -> list[str]:
    """``flexq submit``: create the ConfigMap holding the script and the RayJob, in ``namespace``. Refused,
    with nothing changed, when the LocalQueue does not exist, when a RayJob of that name exists (the name to
    use instead is suggested) or when a ConfigMap of that name holds something else (a queued or running
    job's script is never replaced). Returns ``kind/name created|unchanged`` lines."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core, co = client.CoreV1Api(api), client.CustomObjectsApi(api)
    cm: Any = next(o for o in objs if o["kind"] == "ConfigMap")
    job = next(o for o in objs if o["kind"] == "RayJob")
    name, cm_name = job["metadata"]["name"], cm["metadata"]["name"]
    queue = (job["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name", "")

    def rayjob_exists(n: str) -> bool:
        return _exists(co.get_namespaced_custom_object, "ray.io", "v1", namespace, "rayjobs", n)

    def taken() -> ClientError:
        return ClientError(
            f'rayjob.ray.io "{name}" already exists in namespace "{namespace}" (AlreadyExists, 409): nothing '
            f"was changed; submit it under another name, e.g. --name {_free_name(rayjob_exists, name)}"
        )

    if queue:
        check_queue(api, queue, namespace)
    if rayjob_exists(name):
        raise taken()
    done = []
    created_cm = False
    try:
        try:
            core.create_namespaced_config_map(namespace, cm)
            created_cm = True
            done.append(f"configmap/{cm_name} created")
        except ApiException as exc:
            if exc.status != 409:
                raise
            have = core.read_namespaced_config_map(cm_name, namespace)
            if dict(have.data or {}) != cm["data"] or have.binary_data:
                free = _free_name(lambda n: _exists(core.read_namespaced_config_map, n, namespace), cm_name)
                raise ClientError(
                    f'configmap "{cm_name}" already exists in namespace "{namespace}" with other contents '
                    "(another job's script?): nothing was changed, so a queued or running job keeps its "
                    f"script; pass --configmap {free} (or another --name)"
                ) from None
            done.append(f"configmap/{cm_name} unchanged (the same script)")
        try:
            co.create_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", job)
        except ApiException as exc:
            if (
                exc.status == 409
            ):  # created by someone else since the check: leave no ConfigMap of ours behind
                if created_cm:
                    _delete_quietly(core, cm_name, namespace)
                raise taken() from None
            raise
        done.append(
            f"rayjob.ray.io/{name} created (queue {queue})" if queue else f"rayjob.ray.io/{name} created"
        )
    except ApiException as exc:
        if created_cm:
            _delete_quietly(core, cm_name, namespace)
        raise _api_error(exc) from exc
    except ClientError:
        raise
    except Exception as exc:  # urllib3 connection errors
        raise _api_error(exc) from exc
    return done


def _delete_quietly(core: Any, name: str, namespace: str) -> None:
    with contextlib.suppress(Exception):  # best effort: the error being reported matters more
        core.delete_namespaced_config_map(name, namespace)


@dataclass(frozen=True)
class JobInfo:
    """A RayJob or batch Job found by name, with its Kueue row when it has a Workload."""

    kind: str  # "RayJob" or "Job"
    obj: dict
    row: WorkloadRow | None

    @property
    def finished(self) -> bool:
        st = self.obj.get("status") or {}
        if self.kind == "RayJob":
            return st.get("jobDeploymentStatus") in ("Complete", "Failed")
        return any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in st.get("conditions") or []
        )

    def waiting_for(self) -> str:
        """What the job waits for before its pod runs, in one line."""
        r = self.row
        if r is not None and r.state in ("Pending", "QuotaReserved", "Evicted"):
            why = f"{r.reason.code}: {r.reason.detail}" if r.reason and r.reason.detail else r.why
            what = {
                "Pending": "Kueue has not admitted it yet",
                "QuotaReserved": "quota is reserved; its admission checks are not ready yet",
                "Evicted": "Kueue evicted it; it waits to be admitted again",
            }[r.state]
            return f"{what} (queue {r.queue}{'; ' + why if why else ''})"
        if r is not None and r.state == "Deactivated":
            return f"Kueue deactivated it: {r.why}"
        st = self.obj.get("status") or {}
        plan = f" on {r.plan_text}" if r is not None and r.plan else ""
        if self.kind == "RayJob":
            phase = st.get("jobDeploymentStatus") or "New"
            return f"admitted{plan}; its Ray cluster and submitter are starting (deployment status {phase})"
        return f"admitted{plan}; its pod is starting"


def find_job(api: Any, name: str, namespace: str) -> JobInfo | None:
    """The RayJob (else the batch Job) ``name`` in ``namespace`` and its Kueue row; None when neither exists."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from flexq.cli.status import workload_rows
    from flexq.clock import WallClock

    co = client.CustomObjectsApi(api)
    found: tuple[str, Any] | None = None
    try:
        found = ("RayJob", co.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", name))
    except ApiException as exc:
        if exc.status not in (404, 403):
            raise _api_error(exc) from exc
    except Exception as exc:
        raise _api_error(exc) from exc
    if found is None:
        try:
            got = client.BatchV1Api(api).read_namespaced_job(name, namespace)
            found = ("Job", api.sanitize_for_serialization(got))
        except ApiException as exc:
            if exc.status not in (404, 403):
                raise _api_error(exc) from exc
            return None
        except Exception as exc:
            raise _api_error(exc) from exc
    kind, obj = found
    try:
        snap = fetch_snapshot(api, namespace)
    except ClientError:
        snap = Snapshot()
    rows = [
        r
        for r in workload_rows(snap, WallClock().now())
        if r.job == f"{kind}/{name}" and r.state != "Replaced"
    ]
    return JobInfo(kind, obj, rows[-1] if rows else None)


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
    zones = {
        ((n.get("metadata") or {}).get("labels") or {}).get("topology.kubernetes.io/zone", "")
        for n in st.nodes
    } - {""}
    if zones:
        st.cluster["location"] = sorted(zones)[0]
    if node_pools is None:
        node_pools = _twin_node_pools(api, st)
    st.node_pools = pools_from_gke(node_pools) if node_pools else infer_pools(st)
    return st


def _twin_node_pools(api: Any, st: Any) -> list[dict] | None:
    """The node pools of the twin's GKE cluster behind ``api`` (the twin of ``$FLEXQ_HOME``), or None."""
    from flexq.cli.lifecycle import Home, TwinError, gke_request, running

    home = Home.resolve(None)
    info = running(home)
    host = api.configuration.host.rstrip("/")
    if not info or not host.startswith(str(info.get("url", "")).rstrip("/")):
        return None
    try:
        clusters = gke_request(home, "GET", f"/v1/projects/{home.project()}/locations/-/clusters").get(
            "clusters"
        )
    except TwinError:
        return None
    found: list[dict] = list(clusters or [])
    for c in found:
        name, location = c.get("name", ""), c.get("location") or c.get("zone", "")
        if host.endswith(f"/clusters/{name}") or len(found) == 1 or not host.count("/clusters/"):
            st.cluster = {"project": home.project(), "location": location, "name": name}
            return list(c.get("nodePools") or [])
    return None
