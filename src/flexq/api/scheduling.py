"""scheduling.k8s.io/v1 PriorityClass and the API server's ``Priority`` admission plugin.

- ``PriorityClass``: cluster-scoped, short name ``pc``; ``SetDefaults_PriorityClass`` (``preemptionPolicy``
  PreemptLowerPriority), ``ValidatePriorityClass`` (names with the ``system-`` prefix are reserved for the two
  built-in classes, a user class's ``value`` is at most 1,000,000,000, ``preemptionPolicy`` Never or
  PreemptLowerPriority) and ``ValidatePriorityClassUpdate`` (``value`` and ``preemptionPolicy`` immutable).
- ``SYSTEM_PRIORITY_CLASSES``: ``system-node-critical`` and ``system-cluster-critical``, which the API server
  creates at start (``flexq.kube.registry.bootstrap`` does here) and whose deletion its REST storage refuses.
- ``admit_priority_class`` / ``admit_pod``: ``plugin/pkg/admission/priority``. A PriorityClass may not be the
  second global default; a new Pod gets ``priority`` and ``preemptionPolicy`` from its ``priorityClassName``
  (403 when no such class exists, or when the pod carries another priority or policy), and one without a
  class name gets the global default class (its name set on the pod) or priority 0.
The global default is found through the store's ``globalDefault`` index (``GLOBAL_DEFAULT_INDEX``), a class by
name with one lookup. No behaviour. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, StrictBool, model_validator

from flexq.api.base import ObjectBase
from flexq.api.registry import KindInfo, ObjectReader, PrinterColumn
from flexq.errors import Cause, Forbidden

SYSTEM_PREFIX = "system-"
HIGHEST_USER_PRIORITY = 1_000_000_000  # scheduling.HighestUserDefinablePriority
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_PRIORITY
DEFAULT_PRIORITY = 0  # scheduling.DefaultPriorityWhenNoDefaultClassExists
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
GLOBAL_DEFAULT_INDEX = "globalDefault"  # the store's index of PriorityClasses: "true" for global defaults

SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if "
        "necessary.",
    ),
}


def system_priority_classes() -> list[dict]:
    """The built-in classes as the API server's bootstrap creates them."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for name, (value, description) in SYSTEM_PRIORITY_CLASSES.items()
    ]


def global_default_index(pc: dict) -> list[str]:
    """The store's ``globalDefault`` indexer: ``["true"]`` for a global default class."""
    return ["true"] if pc.get("globalDefault") is True else []


class PriorityClass(ObjectBase):
    # required in the OpenAPI schema (``kubectl explain`` says so); the API server itself decodes an absent
    # ``value`` as 0, as Go's int32 zero value
    model_config = ConfigDict(json_schema_extra={"required": ["value"]})

    value: int = Field(default=0, ge=-(2**31), le=2**31 - 1)
    global_default: StrictBool | None = None
    description: str | None = None
    preemption_policy: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preemptionPolicy") is None:
            data = {**data, "preemptionPolicy": "PreemptLowerPriority"}
        return data

    @model_validator(mode="after")
    def _omit_empty(self) -> PriorityClass:
        # ``globalDefault`` and ``description`` are omitempty: false and "" are not written back
        if self.global_default is False:
            self.global_default = None
        if self.description == "":
            self.description = None
        return self


def validate_priority_class(new: dict, old: dict | None) -> list[Cause]:
    """``ValidatePriorityClass`` (and, on update, ``ValidatePriorityClassUpdate``)."""
    causes: list[Cause] = []
    name = (new.get("metadata") or {}).get("name") or ""
    value = new.get("value", 0)
    if name.startswith(SYSTEM_PREFIX):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        if known is None:
            why = f"{name} is not a known system priority class"
        elif value != known[0]:
            why = f"value of {name} PriorityClass must be {known[0]}"
        elif new.get("globalDefault"):
            why = f"globalDefault of {name} PriorityClass must be false"
        else:
            why = ""
        if why:
            causes.append(
                Cause(
                    "metadata.name",
                    "FieldValueForbidden",
                    f"Forbidden: priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system "
                    f"use only. error: {why}",
                )
            )
    elif value > HIGHEST_USER_PRIORITY:
        causes.append(
            Cause(
                "value",
                "FieldValueForbidden",
                f"Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}",
            )
        )
    policy = new.get("preemptionPolicy")
    if policy not in PREEMPTION_POLICIES:
        causes.append(
            Cause(
                "preemptionPolicy",
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Never", "PreemptLowerPriority"',
            )
        )
    if old is not None:
        if value != old.get("value", 0):
            causes.append(
                Cause("value", "FieldValueForbidden", "Forbidden: may not be changed in an update.")
            )
        if policy != old.get("preemptionPolicy"):
            causes.append(
                Cause(
                    "preemptionPolicy", "FieldValueInvalid", f'Invalid value: "{policy}": field is immutable'
                )
            )
    return causes


def default_class(reader: ObjectReader) -> dict | None:
    """The global default class; of several (a race can make two), the one of lowest value."""
    found = reader.peek_indexed("PriorityClass", GLOBAL_DEFAULT_INDEX, "true")
    return min(found, key=lambda pc: pc.get("value", 0), default=None)


def admit_priority_class(op: str, new: dict, old: dict | None, reader: ObjectReader, name: str) -> None:
    """The Priority plugin's ``validatePriorityClass`` (one global default only) and the REST storage's
    refusal to delete a system class."""
    if op == "DELETE":
        if name in SYSTEM_PRIORITY_CLASSES:
            raise _forbidden(
                "priorityclasses",
                "scheduling.k8s.io",
                name,
                "this is a system priority class and cannot be deleted",
            )
        return
    if not new.get("globalDefault"):
        return
    current = default_class(reader)
    if current is not None and (op == "CREATE" or current["metadata"]["name"] != name):
        raise _forbidden(
            "priorityclasses",
            "scheduling.k8s.io",
            name,
            f"PriorityClass {current['metadata']['name']} is already marked as default. Only one default can exist",
        )


def admit_pod(op: str, pod: dict, old: dict | None, reader: ObjectReader, name: str) -> None:
    """The Priority plugin's ``admitPod``: on create, ``priority`` and ``preemptionPolicy`` from the pod's
    class (or the global default's, or 0 and PreemptLowerPriority); on update, the old pod's values kept when
    the new one leaves them out (validation then refuses any other change)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    if op == "UPDATE":
        old_spec = (old or {}).get("spec") or {}
        for key in ("priority", "preemptionPolicy"):
            if spec.get(key) is None and old_spec.get(key) is not None:
                spec[key] = old_spec[key]
        return
    if op != "CREATE":
        return
    class_name = spec.get("priorityClassName") or ""
    if not class_name:
        pc = default_class(reader)
        if pc is not None:
            class_name = pc["metadata"]["name"]
    else:
        pc = reader.peek("PriorityClass", class_name) if isinstance(class_name, str) else None
        if pc is None:
            raise _forbidden("pods", "", name, f"no PriorityClass with name {class_name} was found")
    priority = pc.get("value", 0) if pc is not None else DEFAULT_PRIORITY
    policy = (pc.get("preemptionPolicy") if pc is not None else None) or "PreemptLowerPriority"
    if class_name:
        spec["priorityClassName"] = class_name
    given = spec.get("priority")
    if given is not None and given != priority:
        raise _forbidden(
            "pods",
            "",
            name,
            f"the integer value of priority ({given}) must not be provided in pod spec; priority admission "
            f"controller computed {priority} from the given PriorityClass name",
        )
    spec["priority"] = priority
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != policy:
        raise _forbidden(
            "pods",
            "",
            name,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; priority "
            f"admission controller computed {policy} from the given PriorityClass name",
        )
    spec["preemptionPolicy"] = policy


def _forbidden(resource: str, group: str, name: str, why: str) -> Forbidden:
    what = f"{resource}.{group}" if group else resource
    return Forbidden(f'{what} "{name}" is forbidden: {why}', kind=resource, group=group, name=name)


KINDS = [
    KindInfo(
        "scheduling.k8s.io",
        "PriorityClass",
        "priorityclasses",
        {"v1": PriorityClass},
        namespaced=False,
        short_names=("pc",),
        generation=False,
        status_subresource=False,
        validate=validate_priority_class,
        admission=admit_priority_class,
        printer_columns=[
            PrinterColumn("Value", ".value", "integer"),
            PrinterColumn("Global-Default", ".globalDefault", "boolean"),
            PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
            PrinterColumn("PreemptionPolicy", ".preemptionPolicy"),
        ],
    ),
]

__all__ = ["KINDS", "PriorityClass", "admit_pod", "admit_priority_class", "system_priority_classes"]
