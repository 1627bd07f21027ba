"""The API server's answer when a compiled-in kind's JSON does not decode into its Go struct.

kube-apiserver decodes a built-in object with ``encoding/json`` (``sigs.k8s.io/json``) before validating it: a
value of the wrong JSON type, or a number past its field's Go type (``replicas: 1e40`` into an ``int32``), is
an ``UnmarshalTypeError``, and the create/update/patch handlers answer **400** with
``<Kind> in version "<v>" cannot be handled as a <Kind>: json: cannot unmarshal <value> into Go struct field
<Struct>.<path> of type <type>`` (``transformDecodeError``), not the 422 of a validation error. Custom
resources are decoded as unstructured JSON and checked against their schema, so theirs stay 422.

``decode_error`` finds the first such error among pydantic's and words it as Go does: the innermost struct's
name, the JSON path of struct fields (list indices and map keys are not in Go's path), the Go type of the
field (``int32``, ``int64``, ``string``, ``bool``, ``map[string]string``, ``[]v1.Container``...). Pure; no
flexq imports but ``flexq.errors``.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from flexq.errors import BadRequest

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

# pydantic's error types that are a JSON value of the wrong type for its field
_TYPE_ERRORS = frozenset(
    {
        "int_type",
        "int_parsing",
        "int_from_float",
        "int_parsing_size",
        "float_type",
        "float_parsing",
        "string_type",
        "bool_type",
        "bool_parsing",
        "dict_type",
        "list_type",
        "model_type",
        "model_attributes_type",
    }
)
_BOUNDS = frozenset({"less_than_equal", "greater_than_equal", "less_than", "greater_than"})
_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def _unwrap(tp: Any) -> tuple[Any, list[Any]]:
    """(the type without Optional/Annotated, the metadata of every Annotated layer)."""
    meta: list[Any] = []
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            args = typing.get_args(tp)
            tp, meta = args[0], meta + list(args[1:])
            continue
        if origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return tp, meta  # a real union (IntOrString): not a plain Go type
            tp = members[0]
            continue
        return tp, meta


def _bounds(meta: list[Any]) -> tuple[int | None, int | None]:
    low = high = None
    for m in meta:
        for item in [m, *getattr(m, "metadata", [])]:
            if getattr(item, "ge", None) is not None:
                low = item.ge if low is None else max(low, item.ge)
            if getattr(item, "le", None) is not None:
                high = item.le if high is None else min(high, item.le)
    return low, high


def _go_type(tp: Any, meta: list[Any]) -> str | None:
    if tp is bool:
        return "bool"
    if tp is int:
        low, high = _bounds(meta)
        if high is not None and high <= INT32[1] and (low is None or low >= INT32[0]):
            return "int32"
        return "int64"
    if tp is float:
        return "float64"
    if tp is str:
        return "string"
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "string"
    if origin in (list, tuple):
        (item,) = typing.get_args(tp)[:1] or (Any,)
        inner = _go_type(*_unwrap(item))
        return f"[]{inner}" if inner else None
    if origin is dict:
        key, value = typing.get_args(tp) or (str, Any)
        inner = _go_type(*_unwrap(value))
        # a free-form object here is a Go type with its own decoder (FieldsV1, RawExtension): not ours to word
        return f"map[string]{inner}" if inner else None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return f"v1.{tp.__name__}"
    return None


def _walk(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[str, list[str], str] | None:
    """(Go struct name, JSON field path, Go type) of the field at ``loc``, or None where the model does not
    say (a union, ``Any``, an extra field)."""
    struct, path = model.__name__, []
    tp: Any = model
    meta: list[Any] = []
    for part in loc:
        tp, meta = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if not isinstance(part, str):
                return None
            fields = tp.model_fields
            info = fields.get(part) or next(
                (f for n, f in fields.items() if (f.alias or n) == part),
                None,
            )
            if info is None:
                return None
            struct = tp.__name__
            path.append(info.alias or part)
            tp, meta = info.annotation, list(info.metadata)
            continue
        origin = typing.get_origin(tp)
        if origin in (list, tuple) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
            continue
        if origin is dict and isinstance(part, str):
            tp = typing.get_args(tp)[1]
            continue
        return None
    tp, more = _unwrap(tp)
    go = _go_type(tp, meta + more)
    return (struct, path, go) if go else None


def _value(value: Any, etype: str) -> str:
    """Go's ``UnmarshalTypeError.Value``: the JSON type, and a number's literal when it overflows."""
    kind = _JSON_TYPES.get(type(value), "number" if isinstance(value, float) else "object")
    if kind == "number" and (
        etype in _BOUNDS | {"int_from_float", "int_parsing_size"}
        or (etype == "int_type" and isinstance(value, float))
    ):
        # a number with a fraction or an exponent into an integer field: its literal as sent
        return f"number {getattr(value, 'literal', value)}"
    return kind


def _out_of_range(etype: str, ctx: dict, go: str) -> bool:
    """A bound error that is the Go type's own range (a number that does not fit), not a validation rule."""
    if etype not in _BOUNDS:
        return False
    limits = INT32 if go == "int32" else INT64
    return any(ctx.get(k) in limits for k in ("le", "ge", "lt", "gt"))


def _position(obj: Any, loc: tuple[Any, ...]) -> tuple[int, ...]:
    """Where ``loc`` is in the document (the keys' order as sent): Go reports the earliest error."""
    out: list[int] = []
    for part in loc:
        if isinstance(obj, dict) and part in obj:
            out.append(list(obj).index(part))
            obj = obj[part]
        elif isinstance(obj, list) and isinstance(part, int) and 0 <= part < len(obj):
            out.append(part)
            obj = obj[part]
        else:
            break
    return tuple(out)


def decode_error(
    kind: str, version: str, model: type[BaseModel], err: ValidationError, obj: Any = None
) -> BadRequest | None:
    """The 400 the API server answers for the first value of ``err`` (in ``obj``'s order) that does not
    decode, or None."""
    errors = err.errors(include_url=False)
    if obj is not None:
        errors = sorted(errors, key=lambda e: _position(obj, tuple(e["loc"])))
    for e in errors:
        # a metav1.Time that does not parse: its UnmarshalJSON's error ends the decode at once (a hard error
        # wins over the type errors encoding/json saves), worded as time.Parse words it
        ctx = e.get("ctx") or {}
        if e["type"] == "flexq" and ctx.get("unmarshal"):
            return BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: {ctx.get("message", "")}'
            )
    for e in errors:
        etype = e["type"]
        if etype not in _TYPE_ERRORS and etype not in _BOUNDS or e.get("input") is None:
            continue  # a JSON null decodes into any Go field (a no-op): what it leaves is validation's
        found = _walk(model, tuple(e["loc"]))
        if found is None:
            continue
        struct, path, go = found
        if etype in _BOUNDS and not _out_of_range(etype, e.get("ctx") or {}, go):
            continue
        return BadRequest(
            f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot unmarshal '
            f"{_value(e.get('input'), etype)} into Go struct field {struct}.{'.'.join(path)} of type {go}"
        )
    return None
