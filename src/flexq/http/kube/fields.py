"""Field selectors as the API server takes them: which fields each kind lets a selector name, and how.

Owns ``checked``: the ``fieldSelector`` of a list, watch or delete-collection, checked against the fields
the kind declares selectable (``ConvertFieldLabel``) and rewritten into what the store's matcher compares.
An unknown field is a 400 with the API server's message: the built-in kinds' conversion functions
(``pkg/apis/core/v1/conversion.go``, ``pkg/apis/batch/v1/conversion.go``) say ``field label not supported:
<field>``, the built-in kinds without one ``runtime.DefaultMetaV1FieldSelectorConversion`` (``"<field>" is
not a known field selector: only "metadata.name", "metadata.namespace"``), and custom resources
(``crConverter``) ``field label not supported: <field>`` for anything but ``metadata.name`` and, when
namespaced, ``metadata.namespace``. Fields whose selectable value is not the stored one at that path are
rewritten: ``spec.host`` is ``spec.nodeName``, an Event's ``source`` is ``source.component``, a Job's
``status.successful`` is ``status.succeeded``, and a boolean that defaults to false (``spec.unschedulable``,
``spec.hostNetwork``) matches ``false`` when absent.
Must not import domain packages.
"""

from __future__ import annotations

import re

from flexq.api.registry import KindInfo
from flexq.errors import BadRequest

_META = ("metadata.name", "metadata.namespace")

# resource key -> the fields ``ConvertFieldLabel`` accepts (kinds with their own conversion function)
SELECTABLE: dict[str, tuple[str, ...]] = {
    "pods": (
        *_META,
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
        "spec.host",
    ),
    "nodes": ("metadata.name", "spec.unschedulable"),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
        *_META,
    ),
    "namespaces": ("status.phase", "metadata.name"),
    "secrets": ("type", *_META),
    "services": (*_META, "spec.clusterIP", "spec.type"),
    "replicationcontrollers": (*_META, "status.replicas"),
    "jobs.batch": (*_META, "status.successful"),
}

# (resource key, selectable field) -> the stored path that holds its value
_PATHS = {
    ("pods", "spec.host"): "spec.nodeName",
    ("pods", "status.podIPs"): "status.podIP",  # the joined list: one address on a single-stack cluster
    ("events", "source"): "source.component",
    ("jobs.batch", "status.successful"): "status.succeeded",
}

# booleans the API server selects on as fmt.Sprint(bool): "false" when the field is absent
_FALSE_WHEN_ABSENT = {("nodes", "spec.unschedulable"), ("pods", "spec.hostNetwork")}

# the groups whose kinds are compiled into the API server (everything else the twin serves is a CRD)
_BUILTIN_GROUPS = {
    "",
    "apps",
    "batch",
    "rbac.authorization.k8s.io",
    "coordination.k8s.io",
    "scheduling.k8s.io",
    "autoscaling",
    "policy",
}

_TERM = re.compile(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$")


def _refusal(info: KindInfo, field: str) -> str | None:
    if info.key in SELECTABLE:
        return None if field in SELECTABLE[info.key] else f"field label not supported: {field}"
    if info.group in _BUILTIN_GROUPS:
        if field in _META:
            return None
        return f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"'
    if field == "metadata.name" or (info.namespaced and field == "metadata.namespace"):
        return None
    return f"field label not supported: {field}"


def checked(info: KindInfo, text: str | None) -> str | None:
    """``text`` (a ``fieldSelector``) as the store matches it, or BadRequest naming the unknown field."""
    if not text or not text.strip():
        return text
    out: list[str] = []
    for part in text.split(","):
        m = _TERM.match(part)
        if not m:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part.strip()}'")
        field, op, value = m.groups()
        why = _refusal(info, field)
        if why:
            raise BadRequest(why)
        path = _PATHS.get((info.key, field), field)
        if (info.key, field) in _FALSE_WHEN_ABSENT and value == "false":
            op, value = ("!=" if op != "!=" else "="), "true"
        out.append(f"{path}{op}{value}")
    return ",".join(out)
