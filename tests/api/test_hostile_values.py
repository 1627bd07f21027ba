"""Values the API server refuses while decoding, refused here too with the field named: integers past Go's
int32 or int64 (a Job of 2**31 pods once hung the twin's loop creating them), finalizer names that are not
qualified names, YAML keys as the API server's YAML-to-JSON conversion turns them into strings, and lone
UTF-16 surrogates (Go's JSON decoder turns them into U+FFFD)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from flexq.api.decode import load_json, load_yaml
from flexq.api.kinds import REGISTRY
from flexq.api.scheme import admit, resolve_object
from flexq.errors import BadRequest, Invalid
from tests.api.test_api_malformed import BASES


def _job() -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def mutate(obj: dict) -> None:
        *head, last = path.split(".")
        node: Any = obj
        for part in head:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return mutate


WG = "spec.rayClusterSpec.workerGroupSpecs.0"
INT_CASES = [
    ("job-parallelism-2**31", _job, _set("spec.parallelism", 2**31), "spec.parallelism"),
    ("job-completions-2**63", _job, _set("spec.completions", 2**63), "spec.completions"),
    ("job-backoff-limit-2**40", _job, _set("spec.backoffLimit", 2**40), "spec.backoffLimit"),
    ("job-ttl-2**40", _job, _set("spec.ttlSecondsAfterFinished", 2**40), "spec.ttlSecondsAfterFinished"),
    ("job-deadline-2**64", _job, _set("spec.activeDeadlineSeconds", 2**64), "spec.activeDeadlineSeconds"),
    (
        "job-pod-priority-2**31",
        _job,
        _set("spec.template.spec.priority", 2**31),
        "spec.template.spec.priority",
    ),
    (
        "rayjob-replicas-2**31",
        BASES["rayjob"],
        _set(f"{WG}.replicas", 2**31),
        "spec.rayClusterSpec.workerGroupSpecs[0].replicas",
    ),
    (
        "rayjob-replicas-2**64",
        BASES["rayjob"],
        _set(f"{WG}.replicas", 2**64),
        "spec.rayClusterSpec.workerGroupSpecs[0].replicas",
    ),
    (
        "rayjob-num-of-hosts-2**40",
        BASES["rayjob"],
        _set(f"{WG}.numOfHosts", 2**40),
        "spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts",
    ),
    (
        "rayjob-max-replicas-2**31",
        BASES["rayjob"],
        _set(f"{WG}.maxReplicas", 2**31),
        "spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas",
    ),
    ("rayjob-backoff-limit-2**31", BASES["rayjob"], _set("spec.backoffLimit", 2**31), "spec.backoffLimit"),
    ("raycluster-replicas-2**31", BASES["rc"], _set("spec.workerGroupSpecs.0.replicas", 2**31), None),
]


@pytest.mark.parametrize(
    ("base", "mutate", "field"), [c[1:] for c in INT_CASES], ids=[c[0] for c in INT_CASES]
)
def test_integers_past_their_go_type_are_invalid(
    base: Callable[[], dict], mutate: Callable, field: str | None
) -> None:
    obj = base()
    admit(resolve_object(REGISTRY, obj), copy.deepcopy(obj))  # the base is valid
    mutate(obj)
    info = resolve_object(REGISTRY, obj)
    if not info.custom:
        # a compiled-in kind is decoded into its Go struct first: the decoder's 400, naming the field's path
        # (without list indices) and its Go type
        with pytest.raises(BadRequest) as bad:
            admit(info, obj)
        assert f"into Go struct field {_go_struct(field)}.{field} of type int" in bad.value.message, (
            bad.value.message
        )
        assert bad.value.message.startswith(
            f'{info.kind} in version "v1" cannot be handled as a {info.kind}: '
        )
        return
    with pytest.raises(Invalid) as exc:
        admit(info, obj)
    fields = [c.field for c in exc.value.causes]
    assert fields == [field or "spec.workerGroupSpecs[0].replicas"], fields
    assert "less than or equal to" in exc.value.causes[0].message


def _go_struct(field: str | None) -> str:
    return {"spec.template.spec.priority": "PodSpec"}.get(field or "", "JobSpec")


def test_the_largest_int32_is_still_valid() -> None:
    obj = _job()
    obj["spec"]["backoffLimit"] = 2**31 - 1
    assert admit(resolve_object(REGISTRY, obj), obj)["spec"]["backoffLimit"] == 2**31 - 1


@pytest.mark.parametrize("name", ["Not Valid!", "example.com/", "Bad_Prefix/x", "-x", "a" * 64])
def test_a_finalizer_must_be_a_qualified_name(name: str) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "finalizers": ["ok.example.com/f", name]},
    }
    with pytest.raises(Invalid) as exc:
        admit(resolve_object(REGISTRY, obj), obj)
    (cause,) = exc.value.causes
    assert cause.field == "metadata.finalizers" and cause.reason == "FieldValueInvalid"
    assert cause.message.startswith(f'Invalid value: "{name}": ')


def test_the_twins_own_finalizers_are_valid() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "finalizers": ["foregroundDeletion", "orphan", "kueue.x-k8s.io/resource-in-use"],
        },
    }
    assert admit(resolve_object(REGISTRY, obj), obj)["metadata"]["finalizers"][0] == "foregroundDeletion"


def test_yaml_keys_become_json_strings_as_the_api_server_converts_them() -> None:
    doc = load_yaml("data:\n  1: a\n  true: b\n  1.5: c\n  x: d\n")
    assert doc == {"data": {"1": "a", "true": "b", "1.5": "c", "x": "d"}}
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, **doc}
    assert admit(resolve_object(REGISTRY, obj), obj)["data"]["true"] == "b"


def test_a_null_yaml_key_is_a_bad_request() -> None:
    with pytest.raises(BadRequest) as exc:
        load_yaml("data:\n  ~: a\n")
    assert "unsupported map key of type: <nil>" in exc.value.message


def test_a_yaml_key_given_as_number_and_string_is_a_duplicate() -> None:
    with pytest.raises(BadRequest) as exc:
        load_yaml("data:\n  1: a\n  '1': b\n")
    assert 'key "1" already set in map' in exc.value.message


def test_merge_keys_still_merge() -> None:
    assert load_yaml("b: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n")["c"] == {"x": 1, "y": 3}


def test_a_lone_surrogate_in_json_becomes_the_replacement_character() -> None:
    doc = load_json('{"data": {"a": "x\\ud800y", "b": "\\ud83d\\ude00"}}')
    assert doc == {"data": {"a": "x\ufffdy", "b": "\U0001f600"}}
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, **doc}
    assert admit(resolve_object(REGISTRY, obj), obj)["data"]["a"] == "x\ufffdy"


@pytest.mark.parametrize(
    ("meta", "field", "message"),
    [
        (
            {"labels": {"a": "x" * 64}},
            "metadata.labels",
            f'Invalid value: "{"x" * 64}": must be no more than 63 characters',
        ),
        (
            {"labels": {"a" * 64: "x"}},
            "metadata.labels",
            f'Invalid value: "{"a" * 64}": name part must be no more than 63',
        ),
        (
            {"labels": {"a": "b c"}},
            "metadata.labels",
            'Invalid value: "b c": a valid label must be an empty string',
        ),
        (
            {"labels": {"Ex.com/a": "x"}},
            "metadata.labels",
            'Invalid value: "Ex.com/a": prefix part a lowercase RFC 1123',
        ),
        (
            {"annotations": {"Bad Key": "x"}},
            "metadata.annotations",
            'Invalid value: "Bad Key": name part must consist',
        ),
    ],
    ids=["long-value", "long-key", "bad-value", "bad-prefix", "bad-annotation-key"],
)
def test_a_bad_label_or_annotation_is_named_with_its_reason(meta: dict, field: str, message: str) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta}}
    with pytest.raises(Invalid) as exc:
        admit(resolve_object(REGISTRY, obj), obj)
    (cause,) = exc.value.causes
    assert cause.field == field and cause.message.startswith(message), cause.message


@pytest.mark.parametrize("value", ["false", "yes", 0, 1, "True"])
@pytest.mark.parametrize(
    ("base", "path", "field"),
    [
        (_job, "spec.suspend", "spec.suspend"),
        (BASES["rayjob"], "spec.shutdownAfterJobFinishes", "spec.shutdownAfterJobFinishes"),
        (
            lambda: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
            "immutable",
            "immutable",
        ),
    ],
    ids=["job-suspend", "rayjob-shutdown", "configmap-immutable"],
)
def test_a_boolean_must_be_a_json_boolean(
    base: Callable[[], dict], path: str, field: str, value: Any
) -> None:
    """Go's decoder takes only true and false for a bool ("false", 0 or "yes" would be coerced by a lax
    validator: "false" to False here, and a string "false" is truthy to any code reading it raw)."""
    obj = base()
    _set(path, value)(obj)
    info = resolve_object(REGISTRY, obj)
    if not info.custom:  # Go's decoder: 400, "cannot unmarshal string into Go struct field ... of type bool"
        with pytest.raises(BadRequest) as bad:
            admit(info, obj)
        assert f".{field} of type bool" in bad.value.message, bad.value.message
        return
    with pytest.raises(Invalid) as exc:
        admit(info, obj)
    assert [c.field for c in exc.value.causes] == [field]
    assert "in body must be of type boolean" in exc.value.causes[0].message
