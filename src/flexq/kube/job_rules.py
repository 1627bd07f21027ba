"""Pure pieces of the batch/v1 Job controller: pod templates, completion indexes, back-off, finishing.

Owns the fixed strings (labels ``batch.kubernetes.io/job-name`` / ``controller-uid`` and their legacy
twins, the ``batch.kubernetes.io/job-tracking`` finalizer, the completion-index label and annotation),
``pod_from_template`` (what the controller creates: template labels and annotations plus the job labels,
an owner reference with ``controller: true``, the tracking finalizer; for Indexed jobs the index
label/annotation, ``hostname`` ``<job>-<index>`` and ``JOB_COMPLETION_INDEX`` in every container),
``parse_indexes`` / ``format_indexes`` (``status.completedIndexes`` such as ``0-2,4``), the pod-creation
back-off (10 s doubling to 6 min after failures) and the condition sets written when a job finishes.
Pure; must not import the store, the runtime or other domains.
"""

from __future__ import annotations

from flexq.api.jsoncopy import clone
from flexq.semantics.conditions import set_core_condition

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
LABEL_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME = "job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LABEL_INDEX = "batch.kubernetes.io/job-completion-index"
ANN_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_CONTROLLER = "kubernetes.io/job-controller"
BACKOFF_BASE, BACKOFF_MAX = 10.0, 360.0

MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_COMPLETED = "Reached expected number of succeeded pods"


def pod_from_template(job: dict, name: str, index: int | None = None) -> dict:
    """The Pod the controller creates for ``job`` (no status)."""
    jm = job["metadata"]
    tmpl = (job.get("spec") or {}).get("template") or {}
    tmeta = tmpl.get("metadata") or {}
    uid = jm.get("uid", "")
    labels = {
        **(tmeta.get("labels") or {}),
        LABEL_CONTROLLER_UID: uid,
        LABEL_JOB_NAME: jm["name"],
        LEGACY_CONTROLLER_UID: uid,
        LEGACY_JOB_NAME: jm["name"],
    }
    annotations = dict(tmeta.get("annotations") or {})
    spec = clone(tmpl.get("spec") or {})
    if index is not None:
        labels[LABEL_INDEX] = str(index)
        annotations[ANN_INDEX] = str(index)
        spec.setdefault("hostname", f"{jm['name']}-{index}")
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            env = [e for e in c.get("env") or [] if e.get("name") != "JOB_COMPLETION_INDEX"]
            c["env"] = [*env, {"name": "JOB_COMPLETION_INDEX", "value": str(index)}]
    meta: dict = {
        "name": name,
        "namespace": jm.get("namespace") or "default",
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": jm["name"],
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "finalizers": [*(tmeta.get("finalizers") or []), TRACKING_FINALIZER],
    }
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_index(pod: dict) -> int | None:
    """The completion index of an Indexed job's pod."""
    raw = (pod["metadata"].get("annotations") or {}).get(ANN_INDEX) or (
        pod["metadata"].get("labels") or {}
    ).get(LABEL_INDEX)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def parse_indexes(text: str | None) -> set[int]:
    """``"0-2,4"`` -> {0, 1, 2, 4}."""
    out: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """{0, 1, 2, 4} -> ``"0-2,4"`` (ranges of consecutive indexes)."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def creation_backoff(failures: int) -> float:
    """Delay before new pods after ``failures`` failed pods (10 s doubling, at most 6 min)."""
    if failures <= 0:
        return 0.0
    return min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (failures - 1))


def finish(status: dict, failed_reason: str | None, message: str, now: float) -> None:
    """Add the terminal conditions (k8s >= 1.31: FailureTarget+Failed, or SuccessCriteriaMet+Complete)."""
    conds = status.setdefault("conditions", [])
    if failed_reason is not None:
        set_core_condition(conds, "FailureTarget", "True", failed_reason, message, now, probe=True)
        set_core_condition(conds, "Failed", "True", failed_reason, message, now, probe=True)
    else:
        set_core_condition(
            conds, "SuccessCriteriaMet", "True", "CompletionsReached", message, now, probe=True
        )
        set_core_condition(conds, "Complete", "True", "CompletionsReached", message, now, probe=True)


def finished_condition(status: dict) -> dict | None:
    """The job's Complete or Failed condition, if it has finished."""
    for c in status.get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c
    return None
