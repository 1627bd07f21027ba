"""Decoding the Kubernetes protobuf bodies kubectl's typed clients send (``kubectl create job|service|
configmap|namespace``, ``kubectl run``): the ``k8s\\x00`` envelope (``runtime.Unknown``), the wire format,
and the objects themselves, into the JSON that ``encoding/json`` prints for the object the API server
decodes, so that a protobuf body and the same object sent as JSON store the same thing.

The field tables come from ``proto_schemas`` (generated from k8s.io/api and k8s.io/apimachinery by
``tools/gen_k8s_proto.py``). Go's JSON rules are applied per field: a pointer that is on the wire is set
even when zero; a non-pointer scalar is printed unless it is zero and ``omitempty``; a nil slice or map is
left out (``omitempty``) or ``null``; a non-pointer struct is always printed; an inline struct's fields go
into its parent. Fields the table does not know are skipped, as Go's generated unmarshalers do.
Kinds without a table answer 415. Pure; no flexq imports but ``flexq.errors``.

The work is linear in the body: a singular message sent many times is merged as Go merges it (its occurrences'
bytes gathered and joined once, not re-joined per occurrence). A value Go decodes but the API server cannot
hold — a Time outside years 0-9999, RawExtension or FieldsV1 JSON nested deeper than Go's decoder goes — is a
400 naming the field (``<Kind> in version "v1" cannot be handled as a <Kind>: metadata.creationTimestamp: ...``).
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

from flexq.errors import BadRequest, UnsupportedMediaType
from flexq.http.kube.proto_schemas import KINDS, SCHEMAS

MAGIC = b"k8s\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_GO_ZERO_TIME = -62135596800  # time.Time{}.Unix(): what a zero time that was marshalled anyway decodes to
_VARINT_TYPES = {"int32", "int64", "bool"}
_SPECIAL = {
    "Quantity",
    "IntOrString",
    "Time",
    "MicroTime",
    "Duration",
    "RawExtension",
    "FieldsV1",
    "StringList",
}
# JSON of a special type whose message is absent (the Go zero value's MarshalJSON)
_SPECIAL_ZERO: dict[str, Any] = {
    "Quantity": "0",
    "IntOrString": 0,
    "Time": None,
    "MicroTime": None,
    "Duration": "0s",
    "RawExtension": None,
    "FieldsV1": None,
    "StringList": None,
}


class _Invalid(Exception):
    """A value that decodes but cannot be held, raised where it is found; each enclosing field adds its name."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise BadRequest("truncated protobuf body")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """The (field number, wire type, value) triples of one message; varints as ints, the rest as bytes."""
    out, pos, end = [], 0, len(buf)
    while pos < end:
        key = buf[pos]  # one-byte varints (fields 1-15, lengths below 128) read inline: most of any body
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        val: int | bytes
        if wire == 0:
            val, pos = _varint(buf, pos)
        elif wire == 2:
            if pos < end and buf[pos] < 0x80:
                n, pos = buf[pos], pos + 1
            else:
                n, pos = _varint(buf, pos)
            if pos + n > end:
                raise BadRequest("truncated protobuf body")
            val, pos = buf[pos : pos + n], pos + n
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(buf):
                raise BadRequest("truncated protobuf body")
            val, pos = buf[pos : pos + size], pos + size
        else:
            raise BadRequest(f"proto: illegal wireType {wire}")
        if num == 0:
            raise BadRequest("proto: illegal tag 0")
        out.append((num, wire, val))
    return out


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _scalar(typ: str, wire: int, val: Any) -> Any:
    """One non-message value of ``typ`` from its wire form."""
    expected = 0 if typ in _VARINT_TYPES else 1 if typ == "double" else 2
    if wire != expected:
        raise BadRequest(f"proto: wrong wireType = {wire} for a field of type {typ}")
    if typ == "string":
        return val.decode("utf-8", errors="replace")
    if typ == "bytes":
        return base64.b64encode(val).decode()
    if typ == "int32":
        return _signed(val, 32)
    if typ == "int64":
        return _signed(val, 64)
    if typ == "bool":
        return val != 0
    if typ == "double":
        return struct.unpack("<d", val)[0]
    raise BadRequest(f"unsupported protobuf type {typ}")


def _packed(typ: str, buf: bytes) -> list[Any]:
    """A packed repeated scalar field's values."""
    if typ == "double":
        return [v for (v,) in struct.iter_unpack("<d", buf)]
    out, pos = [], 0
    while pos < len(buf):
        v, pos = _varint(buf, pos)
        out.append(_scalar(typ, 0, v))
    return out


def _timestamp(buf: bytes) -> tuple[int, int]:
    secs = nanos = 0
    for num, wire, val in _fields(buf):
        if num == 1:
            secs = _scalar("int64", wire, val)
        elif num == 2:
            nanos = _scalar("int32", wire, val)
    return secs, nanos


def _go_duration(ns: int) -> str:
    """time.Duration.String(): ``1h2m3.5s``, ``1.5ms``, ``0s``."""
    if ns == 0:
        return "0s"
    sign, u = ("-" if ns < 0 else ""), abs(ns)

    def frac(v: int, digits: int) -> str:
        whole, rest = divmod(v, 10**digits)
        tail = f"{rest:0{digits}d}".rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if u < 1000:
        return f"{sign}{u}ns"
    if u < 10**6:
        return f"{sign}{frac(u, 3)}µs"
    if u < 10**9:
        return f"{sign}{frac(u, 6)}ms"
    secs, sub = divmod(u, 10**9)
    text = frac(secs % 60 * 10**9 + sub, 9) + "s"
    mins, hours = secs // 60 % 60, secs // 3600
    if hours:
        return f"{sign}{hours}h{mins}m{text}"
    return f"{sign}{mins}m{text}" if mins else f"{sign}{text}"


def _special(typ: str, buf: bytes) -> Any:
    """The JSON of a type apimachinery marshals by hand, from its message bytes."""
    if typ in ("Time", "MicroTime"):
        if not buf:
            return None
        secs, nanos = _timestamp(buf)
        if secs == _GO_ZERO_TIME and (typ == "Time" or nanos // 1000 == 0):
            return None
        try:
            if typ == "Time":  # metav1.Time keeps whole seconds only, as JSON does
                return (_EPOCH + timedelta(seconds=secs)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return (_EPOCH + timedelta(seconds=secs, microseconds=nanos // 1000)).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ"
            )
        except OverflowError:  # Go holds it, but cannot print it: the object could never be read back
            raise _Invalid(f"{typ}.MarshalJSON: year outside of range [0,9999]") from None
    if typ == "StringList":  # `type ExtraValue []string`: its items, a plain list in JSON
        return [_scalar("string", wire, val) for num, wire, val in _fields(buf) if num == 1]
    fields = {num: (wire, val) for num, wire, val in _fields(buf)}
    if typ == "Quantity":
        return _scalar("string", *fields[1]) if 1 in fields else "0"
    if typ == "IntOrString":
        kind = _scalar("int64", *fields[1]) if 1 in fields else 0
        if kind == 1:
            return _scalar("string", *fields[3]) if 3 in fields else ""
        return _scalar("int32", *fields[2]) if 2 in fields else 0
    if typ == "Duration":
        return _go_duration(_scalar("int64", *fields[1]) if 1 in fields else 0)
    # RawExtension and FieldsV1 carry JSON in their only field, printed as it is
    raw = fields.get(1, (2, b""))[1]
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (
        RecursionError
    ):  # deeper than Python's recursion limit; check_decoded refuses past 100 levels anyway
        raise _Invalid("json: exceeded max depth") from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest(f"{typ} in a protobuf body does not hold JSON") from None


def _element(typ: str, wire: int, val: Any) -> Any:
    """One value of a repeated field or map entry."""
    if typ in SCHEMAS or typ in _SPECIAL:
        if wire != 2:
            raise BadRequest(f"proto: wrong wireType = {wire} for a field of type {typ}")
        return decode_message(typ, val) if typ in SCHEMAS else _special(typ, val)
    return _scalar(typ, wire, val)


def _map_entry(typ: str, buf: bytes) -> tuple[str, Any]:
    value_type = typ[typ.index("]") + 1 :]
    key, value = "", None
    for num, wire, val in _fields(buf):
        if num == 1:
            key = _scalar("string", wire, val)
        elif num == 2:
            value = _element(value_type, wire, val)
    if value is None:  # an entry without its value holds the value type's zero
        value = (
            _element(value_type, 2, b"")
            if value_type in SCHEMAS or value_type in _SPECIAL
            else {"string": "", "bytes": "", "bool": False, "double": 0.0}.get(value_type, 0)
        )
    return key, value


def _collect(name: str, buf: bytes) -> dict[int, Any]:
    """Field number -> wire value(s) of one message: lists for repeated fields, dicts for maps, the list of
    every occurrence's bytes for a singular message (protobuf merges them: ``decode_message`` joins them once),
    else the last occurrence."""
    schema = SCHEMAS[name]
    seen: dict[int, Any] = {}
    for num, wire, val in _fields(buf):
        spec = schema.get(num)
        if spec is None:
            continue  # unknown field: skipped
        try:
            _collect_one(seen, num, spec[1], wire, val)
        except _Invalid as exc:
            if spec[0] != "-" and "i" not in spec[2]:
                exc.path.insert(0, spec[0])
            raise
    return seen


def _collect_one(seen: dict[int, Any], num: int, typ: str, wire: int, val: Any) -> None:
    if typ.startswith("[]"):
        elem = typ[2:]
        items = seen.setdefault(num, [])
        if wire == 2 and elem in _VARINT_TYPES | {"double"}:
            items.extend(_packed(elem, val))
        else:
            items.append(_element(elem, wire, val))
    elif typ.startswith("map["):
        if wire != 2:
            raise BadRequest(f"proto: wrong wireType = {wire} for a map field")
        k, v = _map_entry(typ, val)
        seen.setdefault(num, {})[k] = v
    elif typ in SCHEMAS:
        if wire != 2:
            raise BadRequest(f"proto: wrong wireType = {wire} for a field of type {typ}")
        seen.setdefault(num, []).append(val)
    elif typ in _SPECIAL:
        seen[num] = _element(typ, wire, val)
    else:
        seen[num] = _scalar(typ, wire, val)


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    """One message of ``proto_schemas.SCHEMAS`` -> the JSON Go prints for the struct it unmarshals into."""
    seen = _collect(name, buf)
    out: dict[str, Any] = {}
    for num, (field, typ, flags) in SCHEMAS[name].items():
        if field == "-":
            continue
        present = num in seen
        value = seen.get(num)
        if "i" in flags:
            out.update(decode_message(typ, b"".join(value or ())))
            continue
        if typ in SCHEMAS and present:
            try:
                value = decode_message(typ, b"".join(value or ()))
            except _Invalid as exc:
                exc.path.insert(0, field)
                raise
        nilable = "p" in flags or typ.startswith(("[]", "map[")) or typ == "bytes"
        if nilable:
            if not present or ("o" in flags and "p" not in flags and not value):
                if "o" not in flags:
                    out[field] = None
                continue
            out[field] = value
        elif typ in SCHEMAS:  # a struct is printed even when empty
            out[field] = value if present else decode_message(typ, b"")
        elif typ in _SPECIAL:
            out[field] = value if present else _SPECIAL_ZERO[typ]
        else:
            if not present:
                value = {"string": "", "bool": False, "double": 0.0}.get(typ, 0)
            if "o" in flags and not value:
                continue
            out[field] = value
    return out


def _envelope(buf: bytes) -> tuple[dict[str, Any], bytes]:
    """runtime.Unknown: typeMeta = 1 (a TypeMeta), raw = 2 (the object's own message)."""
    type_meta: list[bytes] = []
    raw = b""
    for num, wire, val in _fields(buf):
        if num in (1, 2) and wire != 2:
            raise BadRequest(f"proto: wrong wireType = {wire} for field {num} of runtime.Unknown")
        if num == 1:
            type_meta.append(val)
        elif num == 2:
            raw = val
    try:
        return decode_message("TypeMeta", b"".join(type_meta)), raw
    except _Invalid as exc:  # TypeMeta holds strings only
        raise BadRequest(exc.message) from None


def decode(body: bytes) -> dict[str, Any]:
    """A ``application/vnd.kubernetes.protobuf`` body -> the object as JSON-shaped data."""
    if not body.startswith(MAGIC):
        raise BadRequest("protobuf body without the k8s envelope")
    type_meta, raw = _envelope(body[len(MAGIC) :])
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = KINDS.get((api_version, kind))
    if message is None:
        served = sorted(f"{k} ({v})" for v, k in KINDS)
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types "
            f"include: application/json, application/yaml (protobuf only for {served})"
        )
    try:
        return {"kind": kind, "apiVersion": api_version, **decode_message(message, raw)}
    except _Invalid as exc:
        where = ".".join(exc.path)
        raise BadRequest(
            f'{kind} in version "{api_version.rpartition("/")[2]}" cannot be handled as a {kind}: '
            f"{where + ': ' if where else ''}{exc.message}"
        ) from None
