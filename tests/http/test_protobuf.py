"""Kubernetes protobuf bodies: the decoder over hand-encoded objects, the generated tables against the kinds
the twin serves, and real kubectl's protobuf-speaking generators (``kubectl create job|service|configmap|
namespace|deployment|role|rolebinding|clusterrole|clusterrolebinding``, ``kubectl run``) storing exactly what the same command stores when sent as JSON."""

from __future__ import annotations

import json
import re
import struct
from typing import Any

import pytest

from flexq.api.apps import KINDS as APPS_KINDS
from flexq.api.coordination import KINDS as COORDINATION_KINDS
from flexq.api.core import KINDS as CORE_KINDS
from flexq.api.rbac import KINDS as RBAC_KINDS
from flexq.errors import BadRequest, UnsupportedMediaType
from flexq.http.kube import proto_schemas, protobuf
from tests.http.conftest import Served
from tests.http.test_units import _pb_body, _pb_field


def test_every_builtin_kind_has_a_table() -> None:
    builtin = [
        *CORE_KINDS,
        *APPS_KINDS,
        *RBAC_KINDS,
        *COORDINATION_KINDS,
    ]  # kubectl's generators speak protobuf
    # kubectl has no generator for a ReplicaSet (only its controller makes them): it never sends one as protobuf
    served = {(f"{k.group}/v1" if k.group else "v1", k.kind) for k in builtin if k.kind != "ReplicaSet"}
    assert served <= set(proto_schemas.KINDS)
    assert re.fullmatch(r"[0-9a-f]{40}", proto_schemas.API_COMMIT)
    for name, fields in proto_schemas.SCHEMAS.items():  # every referenced message is in the table
        for _json, typ, _flags in fields.values():
            base = typ.removeprefix("[]").split("]")[-1]
            assert base in proto_schemas.SCHEMAS or base in {
                "string",
                "int32",
                "int64",
                "bool",
                "bytes",
                "double",
                *protobuf._SPECIAL,
            }, (name, typ)


def _meta(name: str, **labels: str) -> bytes:
    out = _pb_field(1, name)
    for k, v in labels.items():
        out += _pb_field(11, _pb_field(1, k) + _pb_field(2, v))
    return out


def test_job_pointers_zero_values_and_repeated_scalars() -> None:
    # Container: name 1, image 2, command 3 (repeated string), args 4, ports 6, env 7, resources 8
    port = _pb_field(3, 8080) + _pb_field(4, "TCP")
    env = _pb_field(1, "A") + _pb_field(2, "")
    limits = _pb_field(1, _pb_field(1, "cpu") + _pb_field(2, _pb_field(1, "500m")))
    container = (
        _pb_field(1, "c")
        + _pb_field(2, "busybox")
        + _pb_field(3, "sleep")
        + _pb_field(3, "5")
        + _pb_field(6, port)
        + _pb_field(7, env)
        + _pb_field(8, limits)
        + _pb_field(14, "")
    )
    pod_spec = _pb_field(2, container) + _pb_field(3, "Never")
    template = _pb_field(1, b"") + _pb_field(2, pod_spec)
    # JobSpec: backoffLimit 7 (*int32, zero is set), suspend 10 (*bool, false is set), template 6
    spec = _pb_field(7, 0) + _pb_field(10, False) + _pb_field(6, template) + _pb_field(99, "unknown field")
    raw = _pb_field(1, _meta("j1")) + _pb_field(2, spec) + _pb_field(3, b"")
    assert protobuf.decode(_pb_body("batch/v1", "Job", raw)) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j1", "creationTimestamp": None},
        "spec": {
            "backoffLimit": 0,
            "suspend": False,
            "template": {
                "metadata": {"creationTimestamp": None},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "c",
                            "image": "busybox",
                            "command": ["sleep", "5"],
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "env": [{"name": "A"}],
                            "resources": {"limits": {"cpu": "500m"}},
                        }
                    ],
                },
            },
        },
        "status": {},
    }


def test_packed_and_unpacked_repeated_scalars() -> None:
    # PodSecurityContext.supplementalGroups (repeated int64, field 4): packed, then one more unpacked
    packed = _pb_field(4, b"".join(bytes([v]) for v in (1, 2, 3))) + _pb_field(4, 300)
    pod_spec = _pb_field(14, packed)
    raw = _pb_field(1, _meta("p")) + _pb_field(2, pod_spec)
    got = protobuf.decode(_pb_body("v1", "Pod", raw))
    assert got["spec"]["securityContext"] == {"supplementalGroups": [1, 2, 3, 300]}
    assert got["spec"]["containers"] is None  # `json:"containers"` without omitempty: a nil slice is null


def test_intorstring_quantity_negative_ints_and_bytes() -> None:
    # ServicePort: name 1, port 3, targetPort 4 (IntOrString: type 1, intVal 2, strVal 3)
    by_number = _pb_field(1, "a") + _pb_field(3, 80) + _pb_field(4, _pb_field(1, 0) + _pb_field(2, 8080))
    by_name = _pb_field(1, "b") + _pb_field(3, 81) + _pb_field(4, _pb_field(1, 1) + _pb_field(3, "http"))
    spec = _pb_field(1, by_number) + _pb_field(1, by_name) + _pb_field(4, "ClusterIP")
    svc = protobuf.decode(_pb_body("v1", "Service", _pb_field(1, _meta("s")) + _pb_field(2, spec)))
    assert svc["spec"]["ports"] == [
        {"name": "a", "port": 80, "targetPort": 8080},
        {"name": "b", "port": 81, "targetPort": "http"},
    ]
    assert svc["spec"]["type"] == "ClusterIP" and svc["status"] == {"loadBalancer": {}}
    # ConfigMap.binaryData -> base64; ObjectMeta.generation (int64) negative on the wire
    raw = _pb_field(1, _meta("cm") + _pb_field(7, -2)) + _pb_field(
        3, _pb_field(1, "b") + _pb_field(2, b"\x00\xff")
    )
    cm = protobuf.decode(_pb_body("v1", "ConfigMap", raw))
    assert cm["binaryData"] == {"b": "AP8="} and cm["metadata"]["generation"] == -2


def test_times_and_inline_structs() -> None:
    # Event: firstTimestamp 6 (Time: seconds only), eventTime 10 (MicroTime: microseconds)
    stamp = _pb_field(1, 1_700_000_000) + _pb_field(2, 123_456_789)
    raw = (
        _pb_field(1, _meta("e"))
        + _pb_field(2, _pb_field(1, "Pod"))
        + _pb_field(6, stamp)
        + _pb_field(10, stamp)
        + _pb_field(8, 3)
    )
    ev = protobuf.decode(_pb_body("v1", "Event", raw))
    assert ev["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert ev["eventTime"] == "2023-11-14T22:13:20.123456Z"
    assert ev["lastTimestamp"] is None and ev["count"] == 3 and ev["involvedObject"] == {"kind": "Pod"}
    # Volume: name 1, volumeSource 2 (inlined): emptyDir 2 {sizeLimit 2: Quantity}; Probe.handler inlined
    volume = _pb_field(1, "scratch") + _pb_field(2, _pb_field(2, _pb_field(2, _pb_field(1, "1Gi"))))
    probe = _pb_field(1, _pb_field(1, _pb_field(1, "true"))) + _pb_field(2, 5)
    container = _pb_field(1, "c") + _pb_field(10, probe)
    pod = protobuf.decode(_pb_body("v1", "Pod", _pb_field(2, _pb_field(1, volume) + _pb_field(2, container))))
    assert pod["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}]
    assert pod["spec"]["containers"][0]["livenessProbe"] == {
        "exec": {"command": ["true"]},
        "initialDelaySeconds": 5,
    }


def test_go_duration_and_doubles() -> None:
    assert [
        protobuf._go_duration(n)
        for n in (0, 1, 1500, 1_500_000, 1_500_000_000, 3_600_000_000_000, -61_000_000_000)
    ] == ["0s", "1ns", "1.5µs", "1.5ms", "1.5s", "1h0m0s", "-1m1s"]
    assert protobuf._packed("double", struct.pack("<2d", 0.5, 2.0)) == [0.5, 2.0]


def test_malformed_bodies_are_400() -> None:
    with pytest.raises(BadRequest):  # a string field sent as a varint
        protobuf.decode(_pb_body("v1", "ConfigMap", _pb_field(1, _pb_field(1, 5))))
    with pytest.raises(BadRequest):  # length runs past the end
        protobuf.decode(_pb_body("v1", "ConfigMap", b"\x0a\x05ab"))
    with pytest.raises(BadRequest):
        protobuf.decode(protobuf.MAGIC + b"\x0f")
    with pytest.raises(UnsupportedMediaType):
        protobuf.decode(_pb_body("v1", "LimitRange", b""))


# --- real kubectl: protobuf (the generator) vs JSON (--dry-run=client -o json | kubectl create -f -) ---

CASES = {
    "job": (["create", "job", "{name}", "--image=busybox", "--", "sleep", "5"], "job"),
    "service-clusterip": (
        ["create", "service", "clusterip", "{name}", "--tcp=80:8080", "--tcp=443:https"],
        "service",
    ),
    "service-nodeport": (["create", "service", "nodeport", "{name}", "--tcp=80:8080"], "service"),
    "run": (
        [
            "run",
            "{name}",
            "--image=busybox",
            "--labels=app=x,tier=t",
            "--env=A=1",
            "--env=B=",
            "--port=8080",
            "--restart=Never",
            "--command",
            "--",
            "sleep",
            "5",
        ],
        "pod",
    ),
    "run-plain": (["run", "{name}", "--image=busybox", "--", "sleep", "5"], "pod"),
    "configmap": (
        ["create", "configmap", "{name}", "--from-literal=a=1", "--from-literal=b=two words"],
        "configmap",
    ),
    "namespace": (["create", "namespace", "{name}"], "namespace"),
    "deployment": (
        ["create", "deployment", "{name}", "--image=nginx", "--replicas=2", "--port=80"],
        "deployment",
    ),
    "role": (["create", "role", "{name}", "--verb=get,list", "--resource=pods,jobs.batch"], "role"),
    "rolebinding": (
        ["create", "rolebinding", "{name}", "--role=r", "--user=alice", "--serviceaccount=default:default"],
        "rolebinding",
    ),
    "clusterrole": (["create", "clusterrole", "{name}", "--verb=list", "--resource=nodes"], "clusterrole"),
    "clusterrolebinding": (
        ["create", "clusterrolebinding", "{name}", "--clusterrole=c", "--group=devs"],
        "clusterrolebinding",
    ),
}
VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def _normalized(served: Served, resource: str, name: str, placeholder: str) -> Any:
    obj = json.loads(served.kubectl("get", resource, name, "-o", "json").stdout)
    uid = obj["metadata"]["uid"]
    for key in VOLATILE:
        obj["metadata"].pop(key, None)
    obj.pop("status", None)  # written by the twin's controllers afterwards, not by the body
    spec = obj.get("spec", {})
    for key in ("clusterIP", "clusterIPs", "nodeName"):  # allocated / scheduled
        spec.pop(key, None)
    for port in spec.get("ports", []) if resource == "service" else []:
        port.pop("nodePort", None)
    return json.loads(json.dumps(obj).replace(uid, "UID").replace(name, placeholder))


@pytest.mark.parametrize("case", list(CASES))
def test_kubectl_protobuf_matches_json(served: Served, case: str) -> None:
    args, resource = CASES[case]
    pb_name, js_name = f"pb-{case}", f"js-{case}"
    served.kubectl(*[a.format(name=pb_name) for a in args])
    js_args = [a.format(name=js_name) for a in args]
    cut = js_args.index("--") if "--" in js_args else len(js_args)  # flags before the container command
    manifest = served.kubectl(*js_args[:cut], "--dry-run=client", "-o", "json", *js_args[cut:]).stdout
    served.kubectl("create", "-f", "-", input=manifest)
    via_pb = _normalized(served, resource, pb_name, "NAME")
    via_json = _normalized(served, resource, js_name, "NAME")
    assert via_pb == via_json
    assert via_pb["metadata"]["name"] == "NAME"
