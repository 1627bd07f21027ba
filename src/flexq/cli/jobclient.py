"""A job through the Kubernetes API: ``flexq submit``'s writes and what ``flexq logs`` reads of it.

Owns: ``submit_objects`` (``flexq submit``: the LocalQueue must exist — ``check_queue``, naming the ones there
are —, a name that exists is refused without changing anything, the script's ConfigMap is created or found
identical, never replaced), ``find_job`` (a RayJob or Job and its Kueue row: ``JobInfo``, what it waits for) and
``job_pods`` / ``stream_logs`` for ``flexq logs``. Connects and reads through ``flexq.cli.kubeclient``; imports
``kubernetes`` lazily so the rest of the CLI works without it. Must not import flexq.assembly, flexq.twin or
flexq.http.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flexq.cli.kubeclient import (
    KUEUE,
    V1BETA1_GONE,
    ClientError,
    api_error,
    fetch_snapshot,
    list_core,
    list_objects,
    queues_refused_as_v1beta1,
)
from flexq.cli.status import StatusSnapshot, WorkloadRow, workload_rows
from flexq.clock import WallClock


def _exists(fn: Any, *args: Any) -> bool:
    from kubernetes.client.rest import ApiException

    try:
        fn(*args)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise api_error(exc) from exc
    except Exception as exc:  # urllib3 connection errors
        raise api_error(exc) from exc


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
        raise api_error(exc) from exc
    except ClientError:
        raise
    except Exception as exc:  # urllib3 connection errors
        raise api_error(exc) from exc
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

    co = client.CustomObjectsApi(api)
    found: tuple[str, Any] | None = None
    try:
        found = ("RayJob", co.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", name))
    except ApiException as exc:
        if exc.status not in (404, 403):
            raise api_error(exc) from exc
    except Exception as exc:
        raise api_error(exc) from exc
    if found is None:
        try:
            got = client.BatchV1Api(api).read_namespaced_job(name, namespace)
            found = ("Job", api.sanitize_for_serialization(got))
        except ApiException as exc:
            if exc.status not in (404, 403):
                raise api_error(exc) from exc
            return None
        except Exception as exc:
            raise api_error(exc) from exc
    kind, obj = found
    try:
        snap = fetch_snapshot(api, namespace)
    except ClientError:
        snap = StatusSnapshot()
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
        # unread (``_preload_content=False``): the client's stubs type the result as the text it would read
        resp: Any = core.read_namespaced_pod_log(pod, namespace, **kw)
    except ApiException as exc:
        raise api_error(exc) from exc
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
