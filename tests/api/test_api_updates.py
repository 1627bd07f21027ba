"""Rules that need the old object: immutable fields, and what may not change while quota is reserved."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from flexq.api.kinds import REGISTRY
from flexq.api.scheme import admit, resolve_object
from flexq.errors import Invalid

from .test_api_malformed import BASES


def _set(d: dict, key: str, value: Any) -> None:
    d[key] = value


def _reserved(o: dict) -> None:
    o["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "Quota reserved in ClusterQueue cluster-queue",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }


# (id, base, prepare old, change new, [(field, reason)]); an empty list means the update is allowed
UPDATES: list[tuple[str, str, Callable[[dict], Any], Callable[[dict], Any], list[tuple[str, str]]]] = [
    (
        "lq-cluster-queue-is-immutable",
        "lq",
        lambda o: None,
        lambda o: _set(o["spec"], "clusterQueue", "other-queue"),
        [("spec.clusterQueue", "FieldValueInvalid")],
    ),
    ("lq-stop-policy-may-change", "lq", lambda o: None, lambda o: _set(o["spec"], "stopPolicy", "Hold"), []),
    (
        "ac-controller-name-is-immutable",
        "ac",
        lambda o: None,
        lambda o: _set(o["spec"], "controllerName", "example.com/other"),
        [("spec.controllerName", "FieldValueInvalid")],
    ),
    (
        "pr-pod-sets-are-immutable",
        "pr",
        lambda o: None,
        lambda o: _set(o["spec"]["podSets"][0], "count", 8),
        [("spec.podSets", "FieldValueInvalid")],
    ),
    (
        "pr-class-is-immutable",
        "pr",
        lambda o: None,
        lambda o: _set(o["spec"], "provisioningClassName", "check-capacity.autoscaling.x-k8s.io"),
        [("spec.provisioningClassName", "FieldValueInvalid")],
    ),
    (
        "wl-pod-sets-immutable-while-reserved",
        "wl",
        _reserved,
        lambda o: (_reserved(o), _set(o["spec"]["podSets"][1], "count", 8)),
        [("spec.podSets", "FieldValueInvalid")],
    ),
    (
        "wl-elastic-scale-down-allowed-while-reserved",
        "wl",
        _reserved,
        lambda o: (_reserved(o), _set(o["spec"]["podSets"][1], "count", 2)),
        [],
    ),
    (
        "wl-pod-sets-may-change-before-reservation",
        "wl",
        lambda o: None,
        lambda o: _set(o["spec"]["podSets"][1], "count", 8),
        [],
    ),
    (
        "cq-on-flavors-unknown-after-flavor-removed",
        "cq",
        lambda o: None,
        lambda o: _set(
            o["spec"]["resourceGroups"][0], "flavors", o["spec"]["resourceGroups"][0]["flavors"][:1]
        ),
        [("spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]", "FieldValueNotSupported")],
    ),
    (
        "rayjob-queue-name-immutable-while-running",
        "rayjob",
        lambda o: _set(o["spec"], "suspend", False),
        lambda o: (
            _set(o["spec"], "suspend", False),
            _set(o["metadata"]["labels"], "kueue.x-k8s.io/queue-name", "b"),
        ),
        [("metadata.labels[kueue.x-k8s.io/queue-name]", "FieldValueInvalid")],
    ),
    (
        "rayjob-queue-name-may-change-while-suspended",
        "rayjob",
        lambda o: _set(o["spec"], "suspend", True),
        lambda o: (
            _set(o["spec"], "suspend", True),
            _set(o["metadata"]["labels"], "kueue.x-k8s.io/queue-name", "b"),
        ),
        [],
    ),
]


@pytest.mark.parametrize(
    ("base", "prepare", "change", "expected"), [u[1:] for u in UPDATES], ids=[u[0] for u in UPDATES]
)
def test_update(base, prepare, change, expected):
    old_obj = BASES[base]()
    prepare(old_obj)
    info = resolve_object(REGISTRY, old_obj)
    old = admit(info, copy.deepcopy(old_obj))
    new_obj = BASES[base]()
    change(new_obj)
    if not expected:
        admit(info, new_obj, old=old)
        return
    with pytest.raises(Invalid) as exc:
        admit(info, new_obj, old=old)
    assert [(c.field, c.reason) for c in exc.value.causes] == expected
