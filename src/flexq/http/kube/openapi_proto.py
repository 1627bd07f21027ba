"""``/openapi/v2`` in protobuf: the Swagger 2.0 document as gnostic's ``openapi.v2.Document`` message, which is
what kubectl asks for (``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``) and parses as
protobuf whatever the answer's type: a JSON answer fails with "proto: cannot parse invalid wire-format data"
where kube-apiserver's answer lets kubectl go on to say "no matches for kind".

``encode(doc)`` writes the JSON document (``openapi._build_v2``) in the message's field numbers (gnostic's
``openapiv2/OpenAPIv2.proto``): the document's ``info``, ``paths`` (operations, their query, path and body
parameters and responses) and ``definitions`` (schemas with their properties, items, ``allOf``,
``additionalProperties``, bounds and enums); an extension (``x-kubernetes-group-version-kind``) or a default,
enum or example value is an ``Any`` holding its YAML text (JSON is YAML), as gnostic's compiler keeps them.
Keys Swagger 2.0 does not have are left out, as gnostic's compiler leaves them. Pure; no flexq imports.
"""

from __future__ import annotations

import json
import struct
from typing import Any

MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
)
# the answer's Content-Type: the spelling without "@", which Go's mime.ParseMediaType (client-go) accepts
ANSWER_TYPE = MEDIA_TYPES[1]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint(len(data)) + data


def _str(number: int, text: Any) -> bytes:
    return _bytes(number, str(text).encode()) if text not in (None, "") else b""


def _strs(number: int, texts: Any) -> bytes:
    if isinstance(texts, str):
        texts = [texts]
    return b"".join(_bytes(number, str(t).encode()) for t in texts or ())


def _bool(number: int, value: Any) -> bytes:
    return _key(number, 0) + b"\x01" if value is True else b""


def _int(number: int, value: Any) -> bytes:
    return _key(number, 0) + _varint(int(value)) if isinstance(value, int) and value else b""


def _double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value:
        return b""
    return _key(number, 1) + struct.pack("<d", float(value))


def _msg(number: int, data: bytes, always: bool = False) -> bytes:
    return _bytes(number, data) if data or always else b""


def _any(value: Any) -> bytes:
    """``Any``: field 2, the value's YAML text."""
    return _str(2, json.dumps(value, separators=(",", ":")) + "\n")


def _extensions(number: int, node: dict) -> bytes:
    """``repeated NamedAny vendor_extension``: every ``x-`` key, in order."""
    return b"".join(
        _bytes(number, _str(1, k) + _msg(2, _any(v), True)) for k, v in node.items() if k.startswith("x-")
    )


# -- Schema -----------------------------------------------------------------------------------------------
_SCHEMA_STR = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13, "discriminator": 26}
_SCHEMA_DOUBLE = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_SCHEMA_BOOL = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}
_SCHEMA_INT = {
    "maxLength": 11,
    "minLength": 12,
    "maxItems": 14,
    "minItems": 15,
    "maxProperties": 17,
    "minProperties": 18,
}


def schema(node: Any) -> bytes:
    """One JSON schema as ``Schema``."""
    if not isinstance(node, dict):
        return b""
    out = bytearray()
    for key, value in node.items():
        if key in _SCHEMA_STR:
            out += _str(_SCHEMA_STR[key], value)
        elif key in _SCHEMA_DOUBLE:
            out += _double(_SCHEMA_DOUBLE[key], value)
        elif key in _SCHEMA_BOOL:
            out += _bool(_SCHEMA_BOOL[key], value)
        elif key in _SCHEMA_INT:
            out += _int(_SCHEMA_INT[key], value)
        elif key == "default":
            out += _msg(5, _any(value), True)
        elif key == "example":
            out += _msg(30, _any(value), True)
        elif key == "required":
            out += _strs(19, value)
        elif key == "enum" and isinstance(value, list):
            out += b"".join(_msg(20, _any(v), True) for v in value)
        elif key == "additionalProperties":
            if isinstance(value, bool):
                inner = _key(2, 0) + (b"\x01" if value else b"\x00")
            else:
                inner = _msg(1, schema(value), True)
            out += _msg(21, inner, True)
        elif key == "type":
            out += _msg(22, _strs(1, value), True)
        elif key == "items":
            items = value if isinstance(value, list) else [value]
            out += _msg(23, b"".join(_msg(1, schema(i), True) for i in items), True)
        elif key == "allOf" and isinstance(value, list):
            out += b"".join(_msg(24, schema(s), True) for s in value)
        elif key == "properties" and isinstance(value, dict):
            named = b"".join(_bytes(1, _str(1, k) + _msg(2, schema(v), True)) for k, v in value.items())
            out += _msg(25, named, True)
    out += _extensions(31, node)
    return bytes(out)


# -- paths ------------------------------------------------------------------------------------------------
def _parameter(p: dict) -> bytes:
    """``ParametersItem`` -> ``Parameter``: a body parameter, or a non-body one (query, path, header)."""
    if "$ref" in p:
        return _msg(2, _str(1, p["$ref"]) + _str(2, p.get("description")), True)
    where = p.get("in")
    if where == "body":
        body = (
            _str(1, p.get("description"))
            + _str(2, p.get("name"))
            + _str(3, where)
            + _bool(4, p.get("required"))
            + _msg(5, schema(p.get("schema") or {}), True)
            + _extensions(6, p)
        )
        return _msg(1, _msg(1, body, True), True)
    # Query and form-data sub-schemas have allow_empty_value at 5 and their type from 6; path and header
    # sub-schemas have their type at 5.
    shift = 1 if where in ("query", "formData") else 0
    sub = (
        _bool(1, p.get("required"))
        + _str(2, where)
        + _str(3, p.get("description"))
        + _str(4, p.get("name"))
        + _str(5 + shift, p.get("type"))
        + _str(6 + shift, p.get("format"))
        + _bool(19 + shift, p.get("uniqueItems"))
    )
    which = {"header": 1, "formData": 2, "query": 3, "path": 4}.get(str(where), 3)
    return _msg(1, _msg(2, _msg(which, sub, True), True), True)


def _operation(op: dict) -> bytes:
    responses = b""
    for code, r in (op.get("responses") or {}).items():
        response = _str(1, r.get("description")) + (
            _msg(2, _msg(1, schema(r["schema"]), True), True) if "schema" in r else b""
        )
        responses += _bytes(1, _str(1, code) + _msg(2, _msg(1, response, True), True))
    return (
        _strs(1, op.get("tags"))
        + _str(2, op.get("summary"))
        + _str(3, op.get("description"))
        + _str(5, op.get("operationId"))
        + _strs(6, op.get("produces"))
        + _strs(7, op.get("consumes"))
        + b"".join(_msg(8, _parameter(p), True) for p in op.get("parameters") or ())
        + _msg(9, responses, True)
        + _strs(10, op.get("schemes"))
        + _bool(11, op.get("deprecated"))
        + _extensions(13, op)
    )


_VERBS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: dict) -> bytes:
    out = _str(1, item.get("$ref"))
    for verb, number in _VERBS.items():
        if verb in item:
            out += _msg(number, _operation(item[verb]), True)
    out += b"".join(_msg(9, _parameter(p), True) for p in item.get("parameters") or ())
    return out + _extensions(10, item)


def encode(doc: dict) -> bytes:
    """A Swagger 2.0 document (JSON data) as an ``openapi.v2.Document`` message."""
    info = doc.get("info") or {}
    paths = b"".join(
        _bytes(2, _str(1, path) + _msg(2, _path_item(item), True))
        for path, item in (doc.get("paths") or {}).items()
    )
    definitions = b"".join(
        _bytes(1, _str(1, name) + _msg(2, schema(s), True))
        for name, s in (doc.get("definitions") or {}).items()
    )
    return (
        _str(1, doc.get("swagger", "2.0"))
        + _msg(
            2,
            _str(1, info.get("title")) + _str(2, info.get("version")) + _str(3, info.get("description")),
            True,
        )
        + _str(3, doc.get("host"))
        + _str(4, doc.get("basePath"))
        + _strs(5, doc.get("schemes"))
        + _strs(6, doc.get("consumes"))
        + _strs(7, doc.get("produces"))
        + _msg(8, paths, True)
        + _msg(9, definitions, True)
        + _extensions(16, doc)
    )


def wants(accept: str) -> bool:
    """Whether a request's ``Accept`` asks for the protobuf document before JSON."""
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in MEDIA_TYPES:
            return True
        if media in ("application/json", "*/*", "application/*"):
            return False
    return False
