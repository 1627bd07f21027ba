"""The ``pods/ephemeralcontainers`` subresource's rules (``kubectl debug``), as kube-apiserver's
``EphemeralContainersREST``: an update through it changes only ``spec.ephemeralContainers`` — everything else
the request sends is replaced by the live pod's (``dropNonEphemeralContainerUpdates``) — and
``ValidatePodEphemeralContainersUpdate`` refuses removing or changing an existing ephemeral container and checks
the new ones (a name unique among all the pod's containers, an image, none of the fields an ephemeral container
may not set: ports, resources, probes, lifecycle; a ``targetContainerName`` that names a container), 422.
Pod Security evaluates the pod again when an ephemeral container is added (``podsecurity.admit``). A plain pod
update that touches ``spec.ephemeralContainers`` stays refused by ``core.validate_pod``. Must not import outside
``flexq.api``/``flexq.errors``."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticCustomError

from flexq.api.base import check_dns1123_label
from flexq.api.jsoncopy import clone
from flexq.api.registry import KindInfo
from flexq.api.scheme import Admission, admit, invalid
from flexq.errors import Cause

PATH = "spec.ephemeralContainers"
# EphemeralContainerCommon's fields an ephemeral container may not set (allowedEphemeralContainerFields' complement)
NOT_ALLOWED = (
    "ports",
    "resources",
    "resizePolicy",
    "lifecycle",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "restartPolicy",
)


def _items(spec: dict, key: str) -> list[Any]:
    value = spec.get(key)
    return value if isinstance(value, list) else []


def _diff(old: dict, new: dict) -> str:
    keys = sorted(set(old) | set(new))
    lines = [
        f"-  {k}: {json.dumps(old[k], sort_keys=True)[:200]}"
        for k in keys
        if k in old and old[k] != new.get(k)
    ]
    lines += [
        f"+  {k}: {json.dumps(new[k], sort_keys=True)[:200]}"
        for k in keys
        if k in new and new[k] != old.get(k)
    ]
    return "\n".join(["  core.EphemeralContainer{", *lines, "  }"])


def validate_update(new_spec: dict, old_spec: dict) -> list[Cause]:
    """``ValidatePodEphemeralContainersUpdate`` and ``validateEphemeralContainers`` over the pod specs."""
    causes: list[Cause] = []
    new_list, old_list = _items(new_spec, "ephemeralContainers"), _items(old_spec, "ephemeralContainers")
    others = {
        c.get("name")
        for key in ("containers", "initContainers")
        for c in _items(new_spec, key)
        if isinstance(c, dict)
    }
    seen: set[Any] = set()
    for i, c in enumerate(new_list):
        at = f"{PATH}[{i}]"
        if not isinstance(c, dict):
            causes.append(Cause(at, "FieldValueInvalid", "Invalid value: must be an object"))
            continue
        name = c.get("name")
        if not name:
            causes.append(Cause(f"{at}.name", "FieldValueRequired", "Required value"))
        elif not isinstance(name, str):
            causes.append(Cause(f"{at}.name", "FieldValueInvalid", f"Invalid value: {json.dumps(name)}"))
        else:
            try:
                check_dns1123_label(name)
            except PydanticCustomError as exc:
                causes.append(
                    Cause(f"{at}.name", "FieldValueInvalid", f'Invalid value: "{name}": {exc.message()}')
                )
            if name in seen or name in others:
                causes.append(Cause(f"{at}.name", "FieldValueDuplicate", f'Duplicate value: "{name}"'))
            seen.add(name)
        if not c.get("image"):
            causes.append(Cause(f"{at}.image", "FieldValueRequired", "Required value"))
        for field in NOT_ALLOWED:
            if c.get(field):  # a zero value (an empty resources) is allowed, as Go's zero struct is
                causes.append(
                    Cause(
                        f"{at}.{field}",
                        "FieldValueForbidden",
                        "Forbidden: cannot be set for an Ephemeral Container",
                    )
                )
        target = c.get("targetContainerName")
        if target and target not in others:
            causes.append(Cause(f"{at}.targetContainerName", "FieldValueNotFound", f'Not found: "{target}"'))
    by_name = {c.get("name"): c for c in new_list if isinstance(c, dict)}
    for old in old_list:
        if not isinstance(old, dict):
            continue
        name = old.get("name")
        new = by_name.get(name)
        if new is None:
            causes.append(
                Cause(
                    PATH,
                    "FieldValueForbidden",
                    f'Forbidden: existing ephemeral containers "{name}" may not be removed\n',
                )
            )
        elif new != old:
            causes.append(
                Cause(
                    f"{PATH}[{name}]",
                    "FieldValueForbidden",
                    f'Forbidden: existing ephemeral containers "{name}" may not be changed\n{_diff(old, new)}',
                )
            )
    return causes


class EphemeralContainersAdmission(Admission):
    """A client's write through ``pods/NAME/ephemeralcontainers``: the live pod with the request's ephemeral
    containers (nothing else it sent), validated by ``validate_update``, then admitted as any pod update."""

    __slots__ = ()

    def __call__(self, info: KindInfo, obj: dict, old: dict | None) -> dict:
        if old is None:  # pragma: no cover - the store only calls an update's admission with the live pod
            return admit(info, obj, old, self.unknown, private=True)
        sent_spec = obj.get("spec")
        sent: dict[str, Any] = sent_spec if isinstance(sent_spec, dict) else {}
        spec = dict(old.get("spec") or {})
        wanted = sent.get("ephemeralContainers")
        if wanted is None:
            spec.pop("ephemeralContainers", None)
        else:
            spec["ephemeralContainers"] = clone(wanted)
        name = (old.get("metadata") or {}).get("name", "")
        causes = validate_update(spec, old.get("spec") or {})
        if causes:
            raise invalid(info, name, causes)
        new = clone(old)  # the defaulters may fill it in place: never the stored version's parts
        if "ephemeralContainers" in spec:
            new["spec"]["ephemeralContainers"] = spec["ephemeralContainers"]  # the request's, cloned above
        else:
            new["spec"].pop("ephemeralContainers", None)
        # the rest of the spec is the live pod's: checked as a pod (schema, defaults for the new ephemeral
        # containers), with no pod-update rule left to break (``validate_update`` was the update's check)
        return admit(info, new, None, self.unknown, private=True)
