"""Decoding the Kubernetes protobuf bodies kubectl's typed clients send (``kubectl create configmap``,
``kubectl create namespace``): the ``k8s\\x00`` envelope (``runtime.Unknown``), the wire format, and the
field numbers of ``ObjectMeta``, ``ConfigMap`` and ``Namespace`` from k8s.io/api's ``generated.proto``.
Other kinds answer 415 so that the client sends JSON instead. Pure; no flexq imports but ``flexq.errors``.
"""

from __future__ import annotations

import base64
from typing import Any

from flexq.errors import BadRequest, UnsupportedMediaType

MAGIC = b"k8s\x00"

# message name -> field number -> (json name, type); types: string, bytes, int, bool, map:<value type>,
# msg:<message>, rep:<type> (repeated)
SCHEMAS: dict[str, dict[int, tuple[str, str]]] = {
    "Unknown": {1: ("typeMeta", "msg:TypeMeta"), 2: ("raw", "raw"), 3: ("contentEncoding", "string"),
                4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
                   5: ("uid", "string"), 6: ("resourceVersion", "string"), 7: ("generation", "int"),
                   11: ("labels", "map:string"), 12: ("annotations", "map:string"),
                   13: ("ownerReferences", "rep:msg:OwnerReference"), 14: ("finalizers", "rep:string")},
    "OwnerReference": {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                       5: ("apiVersion", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "ConfigMap": {1: ("metadata", "msg:ObjectMeta"), 2: ("data", "map:string"), 3: ("binaryData", "map:bytes"),
                  4: ("immutable", "bool")},
    "Namespace": {1: ("metadata", "msg:ObjectMeta"), 2: ("spec", "msg:NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "rep:string")},
}
KINDS = {"ConfigMap", "Namespace"}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise BadRequest("truncated protobuf body")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            val, pos = buf[pos:pos + n], pos + n
        elif wire == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise BadRequest(f"unsupported protobuf wire type {wire}")
        out.append((num, wire, val))
    return out


def _scalar(typ: str, val: Any) -> Any:
    if typ == "string":
        return val.decode("utf-8")
    if typ == "bytes":
        return base64.b64encode(val).decode() if isinstance(val, bytes) else val
    if typ in ("int", "raw"):
        return val
    if typ == "bool":
        return bool(val)
    if typ.startswith("msg:"):
        return decode_message(typ[4:], val)
    raise BadRequest(f"unsupported protobuf type {typ}")


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    schema = SCHEMAS[name]
    out: dict[str, Any] = {}
    for num, _wire, val in _fields(buf):
        if num not in schema:
            continue
        field, typ = schema[num]
        if typ.startswith("map:"):
            entry = {n: v for n, _w, v in _fields(val)}
            out.setdefault(field, {})[entry.get(1, b"").decode()] = _scalar(typ[4:], entry.get(2, b""))
        elif typ.startswith("rep:"):
            out.setdefault(field, []).append(_scalar(typ[4:], val))
        elif val not in (b"", 0):  # proto's zero values mean "not set"
            out[field] = _scalar(typ, val)
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A ``application/vnd.kubernetes.protobuf`` body -> the object as JSON-shaped data."""
    if not body.startswith(MAGIC):
        raise BadRequest("protobuf body without the k8s envelope")
    unknown = decode_message("Unknown", body[len(MAGIC):])
    tm = unknown.get("typeMeta") or {}
    kind = tm.get("kind", "")
    if kind not in KINDS:
        raise UnsupportedMediaType(f'the body of the request was in an unknown format - accepted media types '
                                   f'include: application/json, application/yaml (protobuf only for {sorted(KINDS)})')
    obj = decode_message(kind, unknown.get("raw") or b"")
    return {"apiVersion": tm.get("apiVersion", "v1"), "kind": kind, **obj}
