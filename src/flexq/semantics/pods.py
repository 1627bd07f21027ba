"""Pod lifecycle facts every domain reads the same way."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "TERMINAL_PHASES",
    "is_terminal",
    "image_reference_error",
    "pod_updated_for_scheduling",
    "pods_differ_semantically",
]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodTerminal``: the pod's phase is Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


# what kube-scheduler's isPodUpdated strips from a pod's metadata before it compares two versions
_SCHEDULER_STRIPPED = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})


def pod_updated_for_scheduling(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """kube-scheduler's ``isPodUpdated`` (``pkg/scheduler/backend/queue/scheduling_queue.go``): did the update
    change the pod in a way that may make it schedulable? Everything is compared but the resourceVersion,
    generation, managedFields, finalizers and the status (bar ``status.resourceClaimStatuses``). An update it
    refuses leaves an unschedulable pod where it is (``PriorityQueue.Update``): a status write, such as the
    scheduler's own ``PodScheduled=False``, does not send it to be scheduled again."""
    if old.get("spec") != new.get("spec"):
        return True
    if (old.get("status") or {}).get("resourceClaimStatuses") != (new.get("status") or {}).get(
        "resourceClaimStatuses"
    ):
        return True
    for k in old.keys() | new.keys():
        if k not in ("metadata", "spec", "status") and old.get(k) != new.get(k):
            return True
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return any(om.get(k) != nm.get(k) for k in om.keys() | nm.keys() if k not in _SCHEDULER_STRIPPED)


def pods_differ_semantically(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The kubelet's ``podsDifferSemantically`` (``pkg/kubelet/config/config.go``): the spec, the labels, the
    annotations, the deletion mark or its grace period changed. An update that changes none of them (a status
    write) is not a reason to sync the pod (``checkAndUpdatePod`` only reconciles the status it keeps)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old.get("spec") != new.get("spec")
        or (om.get("labels") or {}) != (nm.get("labels") or {})
        or (om.get("annotations") or {}) != (nm.get("annotations") or {})
        or om.get("deletionTimestamp") != nm.get("deletionTimestamp")
        or om.get("deletionGracePeriodSeconds") != nm.get("deletionGracePeriodSeconds")
    )


# The container image reference grammar (distribution/reference, as the kubelet parses it before a pull):
# [domain[:port]/]path-component[/path-component...][:tag][@digest]
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(
    rf"(?:(?:{_DOMAIN})/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?"
)
MAX_IMAGE_NAME = 255  # distribution/reference NameTotalLengthMax


def image_reference_error(image: str) -> str | None:
    """Why the kubelet cannot parse ``image`` as a container image reference (its ``InvalidImageName``:
    ``couldn't parse image reference "X": invalid reference format``), or None when it can."""
    if len(image) > 4 * MAX_IMAGE_NAME:
        return f"couldn't parse image reference: it is {len(image)} characters long"
    if image and _REFERENCE.fullmatch(image):
        return None
    why = "invalid reference format"
    if image and image != image.lower() and _REFERENCE.fullmatch(image.lower()):
        why += ": repository name must be lowercase"
    return f'couldn\'t parse image reference "{image}": {why}'
